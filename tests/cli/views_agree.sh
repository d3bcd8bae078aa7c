#!/bin/sh
# Every view counts GPUs the same way (issue 24, "Done when"): a real snd on
# examples/good-64.yaml (sn00-rack0: sn00-t00..t03, sn01-rack0:
# sn01-t00..t03) and a real sn-agent (sim backend) on sn00-t00 whose BMC
# leak detector trips at its third sample (--fault leak=3), so snd's health
# pass powers off sn00-rack0 (32 GPUs down, snd:health). Meanwhile a GPU of
# sn01 is cordoned and the server of a running 8-GPU job drained (its GPUs
# draining). Then a second failure: sn01-t03 failed by hand (8 more down).
# At each step sn nodes (-o json gpu_states), sn gpus (-o json), sn top,
# sn pools, /metrics (sn_cluster_gpus) and the dashboard summary
# (gpu_states) are sampled together and must give the same down,
# cordoned, draining and drained counts, and the figures worked out by hand.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(dirname "$SN")
for tool in curl jq; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-views-XXXXXX")
PIDS=
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$BIN/snd" --cluster examples/good-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
    --set sched_event_delay_ms=0 --set health_interval_ms=200 --ready-fd 3 3>"$D/port" \
    2>"$D/snd.log" &
PIDS="$!"
i=0
while [ ! -s "$D/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
[ -n "$PORT" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
export SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$(cat "$D/state/admin.token")"
unset SN_CONFIG
export HOME="$D"
"$SN" tenants create acme --prefix /data/acme >/dev/null || fail "tenant"
"$SN" token create --agent sn00-t00 --scope telemetry:write,cluster:read >"$D/agent.token" ||
    fail "agent token"
"$BIN/sn-agent" --server "$SN_SERVER" --token "$D/agent.token" --node sn00-t00 --backend sim \
    --cluster examples/good-64.yaml --interval 0.2 --work-dir "$D/work" \
    --unsafe-jobs-as-agent-user --cgroup-root none --fault leak=3 2>"$D/agent.log" &
PIDS="$PIDS $!"

api() { curl -s -m 20 -H "Authorization: Bearer $SN_TOKEN" "$SN_SERVER$1"; }

# sample: every view's count of each state, one line per view:
# "VIEW down cordoned draining drained".
sample() {
    "$SN" nodes -o json >"$D/nodes.json" || fail "sn nodes -o json"
    "$SN" gpus -o json >"$D/gpus.json" || fail "sn gpus -o json"
    "$SN" top --once >"$D/top.txt" || fail "sn top --once"
    "$SN" pools >"$D/pools.txt" || fail "sn pools"
    api /metrics >"$D/metrics.txt"
    api /v1/dashboard/summary >"$D/summary.json"
    for s in down cordoned draining drained; do
        n=$(jq "[.[] | .gpu_states.$s // 0] | add" "$D/nodes.json")
        g=$(jq "[.[] | select(.state == \"$s\")] | length" "$D/gpus.json")
        t=$(sed -n "s/^GPUs .* $s \([0-9]*\).*/\1/p" "$D/top.txt")
        m=$(sed -n "s/^sn_cluster_gpus{state=\"$s\"} \([0-9]*\)$/\1/p" "$D/metrics.txt")
        y=$(jq ".gpu_states.$s" "$D/summary.json")
        echo "$s nodes=$n gpus=$g top=$t metrics=$m summary=$y"
    done >"$D/sample.txt"
    free_m=$(sed -n 's/^sn_cluster_gpus{state="free"} \([0-9]*\)$/\1/p' "$D/metrics.txt")
    free_p=$(awk '$1 == "training" { print $7 }' "$D/pools.txt")
    free_t=$(sed -n 's/^GPUs .* free \([0-9]*\).*/\1/p' "$D/top.txt")
    echo "free metrics=$free_m pools=$free_p top=$free_t" >>"$D/sample.txt"
}

# agree STATE N: every view counts N GPUs in STATE.
agree() {
    line=$(grep "^$1 " "$D/sample.txt")
    for v in $(printf '%s' "$line" | cut -d' ' -f2-); do
        [ "${v#*=}" = "$2" ] || fail "$1: $v, want $2 ($line)"
    done
}

# Wait for the leak: the health pass marks the rack's 32 GPUs down.
i=0
until api /metrics | grep -q '^sn_cluster_gpus{state="down"} 32$'; do
    i=$((i + 1))
    [ $i -gt 600 ] && { fail "the leak never powered off sn00-rack0"; break; }
    sleep 0.1
done
# A running job on sn01 (snd places it; no agent needed there), its server
# drained: its 8 GPUs are draining while it runs. And one GPU cordoned.
J=$("$SN" submit --tenant acme --name long --gpus 8 --group 8 --command "sleep 600" 2>&1 |
    sed -n 's/^submitted job \([0-9]*\).*/\1/p')
[ -n "$J" ] || fail "submit: no job id"
i=0
until "$SN" job show "$J" 2>/dev/null | grep -Eq "^state +running$"; do
    i=$((i + 1))
    [ $i -gt 200 ] && { fail "job $J never ran"; break; }
    sleep 0.05
done
node=$(api "/v1/jobs/$J" | jq -r '.nodes[0]')
case "$node" in sn01-t0[0-3]) ;; *) fail "job $J runs on '$node', not on sn01" ;; esac
other=sn01-t00
[ "$node" = sn01-t00 ] && other=sn01-t01
"$SN" drain "$node" --reason "maintenance" >/dev/null || fail "drain $node"
"$SN" cordon "$other-gpu1" --reason "xid 79 by hand" >/dev/null || fail "cordon $other-gpu1"

sample
agree down 32
agree cordoned 1
agree draining 8
agree drained 0
# 64 - 32 down - 1 cordoned - 8 draining (the job's) = 23 free.
agree free 23
"$SN" nodes --state down | grep -c "^ *sn00" >/dev/null || fail "sn nodes --state down lists no sn00 server"

# A second failure: a server of the other rack failed by hand (idle: the
# job's server is not it).
last=sn01-t03
[ "$node" = sn01-t03 ] && last=sn01-t02
"$SN" fail "$last" --reason "power supply lost" >/dev/null || fail "fail $last"
sample
agree down 40
agree cordoned 1
agree draining 8
agree free 15
# The job ends: its drained server's 8 GPUs count as drained.
"$SN" cancel "$J" >/dev/null || fail "cancel $J"
i=0
until api /metrics | grep -q '^sn_cluster_gpus{state="drained"} 8$'; do
    i=$((i + 1))
    [ $i -gt 200 ] && { fail "$node never became drained"; break; }
    sleep 0.05
done
sample
agree down 40
agree cordoned 1
agree draining 0
agree drained 8
agree free 15

if [ $fails -ne 0 ]; then
    cat "$D/sample.txt"
    echo "$fails check(s) failed"
    exit 1
fi
echo "views_agree: all checks passed"
