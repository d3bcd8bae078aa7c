#!/bin/sh
# snd's Slurm mirror against a real Slurm 22.05 (docs/slurm.md): slurmctld
# with three real slurmds (sn00-t00..t02 of examples/demo-cluster.yaml), a
# real snd with slurm_mirror=scontrol, and two real sim sn-agents.
#  - snd's health engine cordons the slow GPU 2 of sn00-t01 (benchmarks
#    from its agent): the mirror drains sn00-t01 in Slurm with
#    Reason="sn: snd cordoned gpu sn00-t01-gpu2: health: ...";
#  - an operator's cordon in snd drains the Slurm node, resume resumes it,
#    and fail sets it DOWN;
#  - a node drained in Slurm by an administrator shows in snd as cordoned
#    by actor slurm with Slurm's reason, is never resumed in Slurm by snd,
#    and snd lifts its cordon when Slurm resumes the node.
# Skips (exit 0) without Slurm or munge, or when not root.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
AGENT=$(dirname "$SN")/sn-agent
SPEC=examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_mirror
slurm_init
PIDS=
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
    slurm_cleanup
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf" || fail "export slurm-conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf" || fail "export slurm-gres"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf" || fail "export slurm-tree"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
slurm_start "" || { fail "munged or slurmctld did not start"; exit 1; }
for n in sn00-t00 sn00-t01 sn00-t02; do slurm_slurmd "$n" || fail "slurmd $n did not start"; done
slurm_wait_idle sn00-t00 sn00-t01 sn00-t02 || fail "the slurmds did not register"

"$SND" --cluster "$SPEC" --state "$D/snd" --listen 127.0.0.1:0 --ready-fd 3 \
    --set slurm_mirror=scontrol --set slurm_mirror_interval_ms=300 \
    --set health_interval_ms=500 --set health_bench_interval_s=1 \
    3>"$D/port" 2>"$D/log/snd.log" &
PIDS="$PIDS $!"
i=0
while [ ! -s "$D/port" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
[ -n "$PORT" ] || { fail "snd did not start: $(cat "$D/log/snd.log")"; exit 1; }
export SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$(cat "$D/snd/admin.token")" HOME="$D"
unset SN_CONFIG
for n in sn00-t00 sn00-t01; do
    "$SN" token create --agent "$n" >"$D/$n.token" || fail "token for $n"
done
"$AGENT" --server "127.0.0.1:$PORT" --token "$D/sn00-t00.token" --node sn00-t00 --backend sim \
    --cluster "$SPEC" --interval 0.5 --work-dir "$D/a0" --cgroup-root none 2>"$D/log/agent0.log" &
PIDS="$PIDS $!"
"$AGENT" --server "127.0.0.1:$PORT" --token "$D/sn00-t01.token" --node sn00-t01 --backend sim \
    --cluster "$SPEC" --interval 0.5 --fault slow-gpu=2 --work-dir "$D/a1" --cgroup-root none \
    2>"$D/log/agent1.log" &
PIDS="$PIDS $!"

node_state() { scontrol show node "$1" | sed -n 's/^ *State=\([^ ]*\).*/\1/p'; }
node_reason() { scontrol show node "$1" | sed -n 's/^ *Reason=//p' | sed 's/ \[[^]]*@[^]]*\]$//'; }
# snd_node NODE: "STATE REASON" of the node in `sn nodes --long`.
snd_node() { "$SN" nodes --long | awk -v n="$1" '$2 == n { $1 = ""; $2 = ""; print }' | sed 's/^ *//'; }
wait_for() {
    t=$(($1 * 2))
    shift
    until "$@"; do
        t=$((t - 1))
        [ $t -le 0 ] && return 1
        sleep 0.5
    done
}

# 1. snd's health cordons the slow GPU; the mirror drains its Slurm node.
slow_drained() { node_state sn00-t01 | grep -q DRAIN && node_reason sn00-t01 | grep -q '^sn: snd cordoned gpu sn00-t01-gpu2: health: '; }
wait_for 120 slow_drained ||
    fail "sn00-t01 not drained for its slow GPU: $(node_state sn00-t01) '$(node_reason sn00-t01)'; $(grep -i 'health\|slurm' "$D/log/snd.log" | tail -3)"
node_state sn00-t00 | grep -q DRAIN && fail "the healthy sn00-t00 was drained: $(node_reason sn00-t00)"

# 2. An operator's cordon, resume and fail in snd.
"$SN" cordon sn00-t02 --reason "rack maintenance" >/dev/null || fail "sn cordon"
cordoned() { node_state sn00-t02 | grep -q DRAIN && [ "$(node_reason sn00-t02)" = "sn: snd cordoned node: rack maintenance" ]; }
wait_for 60 cordoned || fail "sn cordon not mirrored: $(node_state sn00-t02) '$(node_reason sn00-t02)'"
"$SN" resume sn00-t02 >/dev/null || fail "sn resume"
up() { ! node_state sn00-t02 | grep -q -E 'DRAIN|DOWN'; }
wait_for 60 up || fail "sn resume not mirrored: $(node_state sn00-t02) '$(node_reason sn00-t02)'"
"$SN" fail sn00-t02 --reason "psu" >/dev/null || fail "sn fail"
down() { node_state sn00-t02 | grep -q '^DOWN'; }
wait_for 60 down || fail "sn fail not mirrored: $(node_state sn00-t02)"
"$SN" resume sn00-t02 >/dev/null || fail "sn resume after fail"
wait_for 60 up || fail "resume after fail not mirrored: $(node_state sn00-t02) '$(node_reason sn00-t02)'"

# 3. An administrator drains sn00-t00 in Slurm: snd reads it back.
scontrol update NodeName=sn00-t00 State=DRAIN Reason="admin: bios update" || fail "admin drain"
in_snd() { snd_node sn00-t00 | grep -q "^cordoned .*slurm: admin: bios update"; }
wait_for 60 in_snd || fail "the Slurm drain is not a cordon in snd: '$(snd_node sn00-t00)'"
"$SN" node show sn00-t00 -o json 2>/dev/null | grep -q '"actor": "slurm"' ||
    "$SN" nodes --long -o json 2>/dev/null | grep -q '"slurm"' || fail "the cordon's actor is not slurm"
sleep 2 # several mirror rounds: the admin's drain stays
node_state sn00-t00 | grep -q DRAIN || fail "snd resumed the admin's drain in Slurm"
[ "$(node_reason sn00-t00)" = "admin: bios update" ] || fail "the admin's reason changed: '$(node_reason sn00-t00)'"
scontrol update NodeName=sn00-t00 State=RESUME || fail "admin resume"
lifted() { snd_node sn00-t00 | grep -q "^up"; }
wait_for 60 lifted || fail "snd kept the cordon after Slurm resumed: '$(snd_node sn00-t00)'"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    grep "slurm mirror" "$D/log/snd.log" | tail -8
    exit 1
fi
echo "slurm_mirror: snd's cordons, drains and failures reach Slurm 22.05 and Slurm's drains come back as cordons, each side lifting only its own"
