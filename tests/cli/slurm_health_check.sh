#!/bin/sh
# sn-agent health-check as the HealthCheckProgram of a real Slurm 22.05
# (docs/slurm.md): slurmctld with HealthCheckInterval=1 and two real slurmds
# of examples/demo-cluster.yaml. The program runs the sim backend with the
# benchmarks; a node's faults come from $D/faults-NODE, so the test can make
# a GPU slow and let it recover while slurmd keeps running the program.
#  - sn00-t01 with a slow GPU 3 is drained with Reason="sn: slow-gpu
#    sn00-t01-gpu3: ..." and resumed after the GPU recovers;
#  - sn00-t00 drained by an administrator is never resumed, and its reason
#    is never overwritten, even when a finding appears on it.
# Skips (exit 0) without Slurm or munge, or when not root.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
AGENT=$(dirname "$SN")/sn-agent
SPEC=$(pwd)/examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_health_check
slurm_init
trap slurm_cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf" || fail "export slurm-conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf" || fail "export slurm-gres"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf" || fail "export slurm-tree"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
# slurmd runs the program with SLURMD_NODENAME and without PATH, SLURM_CONF
# or arguments (this cluster's slurm.conf is not the default one).
cat >"$D/health-check.sh" <<HC
#!/bin/sh
export SLURM_CONF="$D/slurm.conf"
exec "$AGENT" health-check --cluster "$SPEC" --backend sim --bench --state-dir "$D/hc" \\
    --resume-after 2 \$(cat "$D/faults-\$SLURMD_NODENAME" 2>/dev/null) >>"$D/log/hc-\$SLURMD_NODENAME.log" 2>&1
HC
chmod 755 "$D/health-check.sh"
echo "--fault slow-gpu=3" >"$D/faults-sn00-t01"
slurm_start "HealthCheckProgram=$D/health-check.sh
HealthCheckInterval=1
HealthCheckNodeState=ANY" || { fail "munged or slurmctld did not start"; exit 1; }
for n in sn00-t00 sn00-t01; do slurm_slurmd "$n" || fail "slurmd $n did not start"; done

node_state() { scontrol show node "$1" | sed -n 's/^ *State=\([^ ]*\).*/\1/p'; }
node_reason() { scontrol show node "$1" | sed -n 's/^ *Reason=//p'; }
runs() { n=$(grep -c "^sn-agent health-check: $1:" "$D/log/hc-$1.log" 2>/dev/null); echo "${n:-0}"; }
# wait_for SECONDS CMD...: polls CMD every 0.5 s.
wait_for() {
    t=$(($1 * 2))
    shift
    until "$@"; do
        t=$((t - 1))
        [ $t -le 0 ] && return 1
        sleep 0.5
    done
}
drained_by_sn() { node_state sn00-t01 | grep -q DRAIN && node_reason sn00-t01 | grep -q '^sn: slow-gpu sn00-t01-gpu3: '; }
wait_for 120 drained_by_sn ||
    fail "sn00-t01 was not drained by the health check: $(node_state sn00-t01) '$(node_reason sn00-t01)'; $(tail -3 "$D/log/hc-sn00-t01.log" 2>/dev/null)"
reason=$(node_reason sn00-t01)
case "$reason" in
*"gemm "*" TFLOP/s vs peer median "*) ;;
*) fail "the reason lacks the evidence: $reason" ;;
esac
[ "$(grep -c '^drained 1' "$D/hc/sn00-t01.state" 2>/dev/null)" = 1 ] || fail "no state file says sn00-t01 was drained"

# An administrator drains the healthy sn00-t00.
wait_for 60 sh -c "scontrol show node sn00-t00 | grep -q 'State=IDLE'" || fail "sn00-t00 did not register"
scontrol update NodeName=sn00-t00 State=DRAIN Reason="admin: fan replacement" || fail "admin drain"

# The slow GPU recovers: resumed after two clean checks.
rm -f "$D/faults-sn00-t01"
resumed() { ! node_state sn00-t01 | grep -q DRAIN; }
wait_for 120 resumed || fail "sn00-t01 was not resumed after recovering: $(node_state sn00-t01) '$(node_reason sn00-t01)'"
logged_resume() { grep -q "action resume" "$D/log/hc-sn00-t01.log"; }
wait_for 30 logged_resume || fail "the health check log lacks the resume"

# sn00-t00 stays drained by the admin while the health check keeps running,
# also once a finding appears on it.
echo "--fault slow-gpu=5" >"$D/faults-sn00-t00"
r0=$(runs sn00-t00)
more_runs() { [ "$(runs sn00-t00)" -ge $((r0 + 3)) ]; }
wait_for 120 more_runs || fail "the health check did not run on sn00-t00 ($(runs sn00-t00) runs)"
grep -q "sn00-t00: .*findings; sn: slow-gpu sn00-t00-gpu5" "$D/log/hc-sn00-t00.log" ||
    fail "the health check did not see the finding on sn00-t00"
rm -f "$D/faults-sn00-t00"
r0=$(runs sn00-t00)
wait_for 120 more_runs || fail "the health check stopped running on sn00-t00"
node_state sn00-t00 | grep -q DRAIN || fail "the admin-drained sn00-t00 was resumed: $(node_state sn00-t00)"
[ "$(node_reason sn00-t00 | sed 's/ \[root@[^]]*\]$//')" = "admin: fan replacement" ] || fail "the admin's reason was overwritten: '$(node_reason sn00-t00)'"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    tail -5 "$D/log/hc-sn00-t00.log" "$D/log/hc-sn00-t01.log" 2>/dev/null
    exit 1
fi
echo "slurm_health_check: a slow GPU drains its node in Slurm 22.05 with the reason and is resumed after it recovers; an admin drain stays"
