#!/bin/sh
# Every view counts GPUs the same way (issue 24, "Done when"), during a leak
# and a power-domain failure: a real snd on examples/demo-cluster.yaml (4
# supernodes of 4 servers x 8 GPUs, 128 GPUs, one rack each; every server
# has one feed, its supernode's power domain A or B, alternating: losing a
# domain takes half a supernode) and a real sn-agent (sim backend) on
# sn00-t00 whose BMC leak detector trips at its third sample (--fault
# leak=3), so snd's health pass powers off sn00-rack0 (32 GPUs down,
# snd:health). Meanwhile a GPU is cordoned and the server of a running
# 8-GPU job drained (its GPUs draining). Then the power domain of that
# supernode that feeds neither of them fails: the real agents on its two
# servers are killed at once (SIGKILL, as a power cut takes the host), snd
# sees both silent past heartbeat_timeout_s, and since 2 of 16 servers is
# more than partition_share_pct (10 %) it fences rather than evict; the
# operator, knowing the domain is lost, runs sn admin unfence, which
# declares them down (16 more GPUs down). The domain's servers are read
# from the model (sn design export -o json: power). At each step sn nodes
# (-o json gpu_states), sn gpus (-o json), sn top, sn pools, /metrics
# (sn_cluster_gpus) and the dashboard summary (gpu_states) are sampled
# together and must give the same down, cordoned, draining and drained
# counts, and the figures worked out by hand.
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

SPEC=examples/demo-cluster.yaml
"$SN" design export "$SPEC" --format json >"$D/model.json" || fail "sn design export"
"$BIN/snd" --cluster "$SPEC" --state "$D/state" --listen 127.0.0.1:0 \
    --set sched_event_delay_ms=0 --set health_interval_ms=200 --set heartbeat_timeout_s=2 \
    --set partition_window_s=1 --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
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
    --cluster "$SPEC" --interval 0.2 --work-dir "$D/work" \
    --unsafe-jobs-as-agent-user --cgroup-root none --fault leak=3 2>"$D/agent.log" &
PIDS="$PIDS $!"

api() { curl -s -m 20 -H "Authorization: Bearer $SN_TOKEN" "$SN_SERVER$1"; }

# sample: every view's count of each state, one line per view:
# "STATE nodes=N gpus=N top=N metrics=N summary=N".
sample() {
    "$SN" nodes -o json >"$D/nodes.json" || fail "sn nodes -o json"
    "$SN" gpus -o json >"$D/gpus.json" || fail "sn gpus -o json"
    "$SN" top --once >"$D/top.txt" || fail "sn top --once"
    "$SN" pools >"$D/pools.txt" || fail "sn pools"
    api /metrics >"$D/metrics.txt"
    api /v1/dashboard/summary >"$D/summary.json"
    for s in down cordoned draining drained held; do
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
case "$node" in sn0[1-3]-t0[0-3]) ;; *) fail "job $J runs on '$node', not on sn01..sn03" ;; esac
# From the model: the job's supernode and power domain; the cordoned GPU's
# server shares both (it stays up), the doomed domain feeds the other two.
sn=$(jq -r --arg n "$node" '.servers[] | select(.name == $n) | .supernode' "$D/model.json")
pd=$(jq -r --arg n "$node" '.servers[] | select(.name == $n) | .power[0]' "$D/model.json")
other=$(jq -r --arg n "$node" --argjson s "$sn" --argjson p "$pd" \
    '[.servers[] | select(.supernode == $s and .power[0] == $p and .name != $n)][0].name' \
    "$D/model.json")
doomed=$(jq -r --argjson s "$sn" --argjson p "$pd" \
    '.servers[] | select(.supernode == $s and .power[0] != $p and .power[1] == null) | .name' \
    "$D/model.json")
domain=$(jq -r --argjson s "$sn" --argjson p "$pd" \
    '[.servers[] | select(.supernode == $s and .power[0] != $p)][0].power[0] as $d |
     .power_domains[] | select(.id == $d) | .name' "$D/model.json")
[ "$(printf '%s\n' $doomed | wc -l)" = 2 ] || fail "domain $domain feeds '$doomed', not two servers alone"
"$SN" drain "$node" --reason "maintenance" >/dev/null || fail "drain $node"
"$SN" cordon "$other-gpu1" --reason "xid 79 by hand" >/dev/null || fail "cordon $other-gpu1"

sample
agree down 32
agree cordoned 1
agree draining 8
agree drained 0
# 128 - 32 down - 1 cordoned - 8 draining (the job's) = 87 free.
agree free 87
agree held 0
"$SN" nodes --state down | grep -c "^ *sn00" >/dev/null || fail "sn nodes --state down lists no sn00 server"

# The power domain: a real agent on each of its servers, heartbeating,
# then both killed at once.
apids=
for n in $doomed; do
    "$SN" token create --agent "$n" --scope telemetry:write,cluster:read >"$D/$n.token" ||
        fail "agent token $n"
    "$BIN/sn-agent" --server "$SN_SERVER" --token "$D/$n.token" --node "$n" --backend sim \
        --cluster "$SPEC" --interval 0.2 --work-dir "$D/work-$n" \
        --unsafe-jobs-as-agent-user --cgroup-root none 2>"$D/agent-$n.log" &
    apids="$apids $!"
done
PIDS="$PIDS $apids"
for n in $doomed; do
    i=0
    until [ "$(api "/v1/nodes/$n" | jq '.heartbeat_age_s')" != null ]; do
        i=$((i + 1))
        [ $i -gt 200 ] && { fail "the agent of $n never heartbeated"; break; }
        sleep 0.05
    done
done
for p in $apids; do kill -9 "$p"; done
# Silent past the timeout together: 2 of 16 servers (> 10 %) fence snd,
# which evicts nothing until the operator unfences.
i=0
until api /metrics | grep -q '^sn_partition_fenced 1$'; do
    i=$((i + 1))
    [ $i -gt 300 ] && { fail "domain $domain's servers silent did not fence snd"; break; }
    sleep 0.05
done
if api /metrics | grep -q '^sn_partition_fenced 1$'; then
    "$SN" admin fence | grep -q "fenced" || fail "sn admin fence does not say fenced"
    # Fenced: the silent servers are held out of placement, not down; the
    # views agree that their 16 GPUs are neither free nor down (sn top,
    # /metrics and the summary count them held).
    sample
    agree down 32
    agree free 71
    # sn nodes and sn gpus say so too (issue 24: they showed them up, no reason).
    agree held 16
    "$SN" nodes --long >"$D/long.txt" || fail "sn nodes --long"
    "$SN" nodes --state held >"$D/held.txt" || fail "sn nodes --state held"
    "$SN" gpus >"$D/gpus.txt" || fail "sn gpus"
    "$SN" gpus -o wide --state held >"$D/gpus-wide.txt" || fail "sn gpus -o wide"
    for n in $doomed; do
        for f in long held; do
            grep -Eq "(^| )$n +held +8 .*agent silent [0-9]+ s; fenced: 2 of 16 servers silent" \
                "$D/$f.txt" || fail "fenced: sn nodes ($f) does not show $n held: $(cat "$D/$f.txt")"
        done
        [ "$(grep -Ec "^$n-gpu[0-9]+ +held .*agent silent [0-9]+ s; fenced" "$D/gpus.txt")" = 8 ] ||
            fail "fenced: sn gpus does not show $n's 8 GPUs held: $(grep "^$n-" "$D/gpus.txt")"
        [ "$(grep -Ec "^$n-gpu[0-9]+ +held .* snd:heartbeat " "$D/gpus-wide.txt")" = 8 ] ||
            fail "fenced: sn gpus -o wide does not show $n's 8 GPUs held by snd:heartbeat"
    done
    [ "$(grep -c ' held ' "$D/held.txt")" = 2 ] || fail "fenced: sn nodes --state held: $(cat "$D/held.txt")"
    [ "$(grep -c ' held ' "$D/gpus-wide.txt")" = 16 ] || fail "fenced: sn gpus --state held"
    # The summary: one line of the 2 held servers, their 16 GPUs unavailable.
    "$SN" nodes | grep -Eq " held +2 +16 +0 +16$" || fail "fenced: sn nodes summary: $("$SN" nodes)"
    grep -q '^sn_cluster_gpus{state="held"} 16$' "$D/metrics.txt" || fail "fenced: metrics held"
    grep -Eq '^GPUs .* held 16 ' "$D/top.txt" || fail "fenced: sn top held"
    [ "$(jq '.gpu_states.held' "$D/summary.json")" = 16 ] || fail "fenced: summary held"
    "$SN" admin unfence >/dev/null || fail "sn admin unfence"
fi
i=0
until api /metrics | grep -q '^sn_cluster_gpus{state="down"} 48$'; do
    i=$((i + 1))
    [ $i -gt 300 ] && { fail "domain $domain's servers were never declared down"; break; }
    sleep 0.05
done
sample
agree down 48
agree cordoned 1
agree draining 8
# 128 - 48 down - 1 cordoned - 8 draining = 71 free.
agree free 71
for n in $doomed; do
    "$SN" nodes --state down >"$D/down.txt"
    grep -Eq "(^| )$n +down +8 .*(silent|heartbeat)" "$D/down.txt" ||
        fail "sn nodes --state down does not list $n down for its silence: $(cat "$D/down.txt")"
done
# The job ends: its drained server's 8 GPUs count as drained.
"$SN" cancel "$J" >/dev/null || fail "cancel $J"
i=0
until api /metrics | grep -q '^sn_cluster_gpus{state="drained"} 8$'; do
    i=$((i + 1))
    [ $i -gt 200 ] && { fail "$node never became drained"; break; }
    sleep 0.05
done
sample
agree down 48
agree cordoned 1
agree draining 0
agree drained 8
agree free 71

if [ $fails -ne 0 ]; then
    cat "$D/sample.txt"
    echo "$fails check(s) failed"
    exit 1
fi
echo "views_agree: all checks passed"
