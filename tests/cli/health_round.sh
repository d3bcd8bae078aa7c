#!/bin/sh
# Inter-node pair rounds through real snd and sn-agent processes
# (docs/api.md "Health rounds", docs/agent.md "Pair rounds"). The mpirun on
# PATH is a stand-in that prints a REAL nccl-tests log
# (tests/data/real/nccl-tests/sn00-t00.coreweave43-nvl72.log): this checks
# the wiring (snd holds the pair, asks the first agent in its heartbeat
# answer, the agent runs the launcher template against the peer, ships the
# output as nccl-tests telemetry naming both hosts and reports the pair),
# not a real two-node NCCL run. The health engine's pass is held off
# (health_interval_ms): the stand-in nvidia-smi CSV does not report every GPU.
#  - every server but sn00-t00 and sn00-t01 is cordoned; job A (16 GPUs)
#    runs on those two; the round waits for A ("waiting for the jobs on");
#    job B (16 GPUs), submitted meanwhile, stays pending while the round
#    holds the servers, even after A is cancelled; it starts once the pair
#    is done and the round released them;
#  - the launcher ran as "mpirun -np 16 -H SELF:8,PEER:8 .../all_reduce_perf
#    -b 8 -e 1G -f 2 -g 1", SELF and PEER being the agents' addresses;
#  - a plan file in the format of sn health accept --plan --json, with
#    mpirun gone: the pair is not-available ("mpirun not found in PATH");
#  - an unknown server is refused (422 naming pairs[0][1]).
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
AGENT=$(dirname "$SN")/sn-agent
ROOT=$(pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/sn-round-XXXXXX")
PIDS=
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# Polls (0.1 s steps, up to 60 s) until the command succeeds.
until_ok() {
    i=0
    until "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 600 ] && return 1
        sleep 0.1
    done
}
mkdir -p "$T/bin"
cat >"$T/bin/mpirun" <<SH
#!/bin/sh
echo "mpirun \$*" >"$T/mpirun.args.tmp" && mv "$T/mpirun.args.tmp" "$T/mpirun.args"
i=0
while [ ! -e "$T/release" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
exec /bin/cat "$ROOT/tests/data/real/nccl-tests/sn00-t00.coreweave43-nvl72.log"
SH
printf '#!/bin/sh\necho "run through mpirun only"\nexit 1\n' >"$T/bin/all_reduce_perf"
chmod 755 "$T/bin"/*

"$SND" --cluster examples/demo-cluster.yaml --state "$T/snd" --listen 127.0.0.1:0 --ready-fd 3 \
    --set health_bench_interval_s=0 --set health_interval_ms=3600000 3>"$T/port" 2>"$T/snd.log" &
PIDS="$PIDS $!"
i=0
while [ ! -s "$T/port" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$T/port")
[ -n "$PORT" ] || { fail "snd did not start: $(cat "$T/snd.log")"; exit 1; }
export SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$(cat "$T/snd/admin.token")" HOME="$T"
"$SN" tenants create acme --prefix /data/acme >/dev/null || fail "tenant"
for n in $("$SN" nodes -o json | sed -n 's/.*"name": "\(sn[0-9]*-t[0-9]*\)".*/\1/p'); do
    case $n in sn00-t00 | sn00-t01) ;; *) "$SN" cordon "$n" --reason round-test >/dev/null || fail "cordon $n" ;; esac
done
start_agent() { # NODE ADDRESS
    "$SN" token create --agent "$1" >"$T/$1.token" || fail "agent token $1"
    PATH="$T/bin:/usr/bin:/bin" "$AGENT" --server "127.0.0.1:$PORT" --token "$T/$1.token" \
        --node "$1" --backend nvidia-smi --interval 0.2 --work-dir "$T/work-$1" \
        --cgroup-root none --host-root none --unsafe-jobs-as-agent-user --address "$2" \
        --cuda-lib "$T/no-cuda" \
        --smi-command "cat '$ROOT/tests/data/telemetry/smi_query_units.csv'; :" \
        --status "$T/$1.status" 2>"$T/$1.log" &
    PIDS="$PIDS $!"
}
start_agent sn00-t00 127.0.0.10
start_agent sn00-t01 127.0.0.11
until_ok grep -q '"connected":true' "$T/sn00-t00.status" || fail "agent t00 not connected"
until_ok grep -q '"connected":true' "$T/sn00-t01.status" || fail "agent t01 not connected"

job_state() { "$SN" job show "$1" -o json | sed -n 's/^ *"state": "\([a-z]*\)".*/\1/p' | head -1; }
is_state() { [ "$(job_state "$1")" = "$2" ]; }
"$SN" submit --tenant acme --name a --gpus 16 --command "sleep 300" >/dev/null || fail "submit a"
until_ok is_state 1 running || fail "job a should run: $(job_state 1)"

out=$("$SN" health round --pairs sn00-t00:sn00-t01)
[ "$out" = "round 1: nccl-all-reduce, 1 pairs submitted" ] || fail "submit round: $out"
item() { "$SN" health round -o json | tr -d '\n ' | sed -n "s/.*\"id\":$1,.*\"items\":\[{[^]]*\"state\":\"\([a-z-]*\)\".*/\1/p"; }
until_ok sh -c "'$SN' health round | grep -q 'waiting for the jobs on sn00-t0[01] to finish'" ||
    fail "the pair should wait for job a: $("$SN" health round)"
"$SN" submit --tenant acme --name b --gpus 16 --command "sleep 300" >/dev/null || fail "submit b"
"$SN" cancel 1 >/dev/null || fail "cancel a"
until_ok test -e "$T/mpirun.args" || fail "the agent never ran mpirun: $("$SN" health round); $(tail -3 "$T/sn00-t00.log")"
"$SN" health round | grep -q '^1 .* running .*sn00-t00:sn00-t01 .* running ' || fail "pair running: $("$SN" health round)"
is_state 2 pending || fail "job b should wait while the round holds the servers: $(job_state 2)"
touch "$T/release"
out=$("$SN" health round --wait 1 --timeout 60)
rc=$?
[ $rc = 0 ] || fail "round 1: exit $rc: $out"
printf '%s\n' "$out" | grep -q '^1 .* finished .*sn00-t00:sn00-t01 .* done .*5 rows, peak busbw 839.16 GB/s' || fail "round 1: $out"
case "$(cat "$T/mpirun.args")" in
"mpirun -np 16 -H 127.0.0.10:8,127.0.0.11:8 $T/bin/all_reduce_perf -b 8 -e 1G -f 2 -g 1") ;;
*) fail "mpirun args: $(cat "$T/mpirun.args")" ;;
esac
until_ok is_state 2 running || fail "job b should start once the round released the servers: $(job_state 2); $("$SN" job show 2); $("$SN" health round)"
until_ok grep -q '"buffered":0' "$T/sn00-t00.status" || fail "agent t00 did not ship"
grep -q '"rejected":0' "$T/sn00-t00.status" || fail "snd refused a batch of t00: $(grep refused "$T/sn00-t00.log" | head -3)"
"$SN" cancel 2 >/dev/null || fail "cancel b"

# Not available: no mpirun; the plan file format of sn health accept --plan --json.
rm -f "$T/bin/mpirun"
cat >"$T/plan.json" <<'JSON'
{"rounds": [{"round": 1, "pairs": [{"servers": ["sn00-t01", "sn00-t00"], "command": "mpirun ..."}]},
            {"round": 2, "kind": "all-nodes"}]}
JSON
out=$("$SN" health round --plan "$T/plan.json" --wait --timeout 60)
rc=$?
[ $rc = 1 ] || fail "a not-available pair should give exit 1 with --wait, got $rc"
printf '%s\n' "$out" | grep -q '^2 .* finished .*sn00-t01:sn00-t00 .* not-available .*mpirun not found in PATH' || fail "round 2: $out"

out=$("$SN" health round --pairs sn00-t00:nope 2>&1)
[ $? = 1 ] || fail "an unknown server should be refused (exit 1)"
printf '%s\n' "$out" | grep -q "pairs\[0\]\[1\]" || fail "the refusal should name pairs[0][1]: $out"
"$SN" health round --pairs sn00-t00 >/dev/null 2>&1
[ $? = 2 ] || fail "--pairs without a colon should be a usage error"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "health_round: snd holds the pair, the agent runs the launcher against its peer, ships and reports"
