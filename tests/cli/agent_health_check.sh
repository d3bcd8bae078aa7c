#!/bin/sh
# sn-agent health-check without a Slurm: a stand-in scontrol (a shell
# script) prints the node's state from files and records the updates, so
# this runs on every machine (tests/cli/slurm_health_check.sh is the same
# against a real Slurm). Checks: a slow GPU drains with its reason and a
# state file; the resume waits for --resume-after clean checks; an admin
# drain is never touched; --dry-run changes nothing; bad state files and
# usage are refused with their exit status.
set -u
AGENT=$(cd "$(dirname "$1")" && pwd)/sn-agent
SPEC=examples/demo-cluster.yaml
T=$(mktemp -d "${TMPDIR:-/tmp}/sn-hc-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cat >"$T/scontrol" <<SC
#!/bin/sh
echo "\$*" >>"$T/calls"
case "\$1" in
show)
    printf 'NodeName=%s Arch=x86_64 CoresPerSocket=56\n   State=%s ThreadsPerCore=1\n' "\$3" "\$(cat "$T/state")"
    [ -s "$T/reason" ] && printf '   Reason=%s [root@2026-12-01T22:25:22]\n' "\$(cat "$T/reason")"
    ;;
update)
    case "\$3" in
    State=DRAIN) echo IDLE+DRAIN >"$T/state"; printf '%s' "\${4#Reason=}" >"$T/reason" ;;
    State=RESUME) echo IDLE >"$T/state"; : >"$T/reason" ;;
    esac
    ;;
esac
exit 0
SC
chmod 755 "$T/scontrol"
echo IDLE >"$T/state"
: >"$T/reason"
hc() { "$AGENT" health-check --cluster "$SPEC" --node sn00-t01 --backend sim --bench \
    --state-dir "$T/st" --scontrol "$T/scontrol" "$@"; }

hc --fault slow-gpu=3 >"$T/out" 2>&1 || fail "check with a slow GPU: $(cat "$T/out")"
grep -q "action drain" "$T/out" || fail "no drain: $(cat "$T/out")"
grep -q "^update NodeName=sn00-t01 State=DRAIN Reason=sn: slow-gpu sn00-t01-gpu3: sn00-t01:8: gemm " "$T/calls" ||
    fail "scontrol update: $(cat "$T/calls")"
grep -q "^drained 1" "$T/st/sn00-t01.state" || fail "state file: $(cat "$T/st/sn00-t01.state")"
: >"$T/calls"
hc --fault slow-gpu=3 >"$T/out" 2>&1
grep -q "^update" "$T/calls" && fail "drained twice: $(cat "$T/calls")"
# Recovered: the first clean check waits, the second resumes.
hc >"$T/out" 2>&1
grep -q "action none" "$T/out" || fail "resumed after one clean check: $(cat "$T/out")"
hc --dry-run >"$T/out" 2>&1
grep -q "action resume (dry run)" "$T/out" || fail "dry run: $(cat "$T/out")"
grep -q "^update" "$T/calls" && fail "the dry run changed Slurm"
hc >"$T/out" 2>&1
grep -q "^update NodeName=sn00-t01 State=RESUME" "$T/calls" || fail "no resume: $(cat "$T/calls")"
# An admin drain is never resumed nor overwritten.
echo IDLE+DRAIN >"$T/state"
printf 'admin: fan' >"$T/reason"
: >"$T/calls"
hc --fault slow-gpu=3 >/dev/null 2>&1
hc >/dev/null 2>&1
hc >/dev/null 2>&1
grep -q "^update" "$T/calls" && fail "touched an admin drain: $(cat "$T/calls")"
# The nvidia-smi backend on a captured CSV that lists 2 of the node's 8
# GPUs: gpu-missing (action reboot) drains the node.
: >"$T/calls"
echo IDLE >"$T/state"
: >"$T/reason"
"$AGENT" health-check --cluster "$SPEC" --node sn00-t00 --backend nvidia-smi \
    --smi-command "cat tests/data/telemetry/smi_query_units.csv; :" --state-dir "$T/st" \
    --scontrol "$T/scontrol" >"$T/out" 2>&1 || fail "nvidia-smi check: $(cat "$T/out")"
grep -q "^update NodeName=sn00-t00 State=DRAIN Reason=sn: gpu-missing sn00-t00-gpu2: sn00-t00 enumerates 2 of 8 GPUs" "$T/calls" ||
    fail "nvidia-smi backend: $(cat "$T/out") $(cat "$T/calls")"
# nvidia-smi failing: not checked, nothing changed, status 1.
: >"$T/calls"
"$AGENT" health-check --cluster "$SPEC" --node sn00-t00 --backend nvidia-smi \
    --smi-command "false" --state-dir "$T/st" --scontrol "$T/scontrol" >"$T/out" 2>&1
[ $? = 1 ] || fail "a failing nvidia-smi should give status 1"
grep -q "not checked" "$T/out" || fail "failing nvidia-smi message: $(cat "$T/out")"
grep -q "^update" "$T/calls" && fail "changed Slurm without data: $(cat "$T/calls")"
# Bad state file: named with its line, nothing changed, status 1.
printf 'sn-slurm-hc 1\nclean many\n' >"$T/st/sn00-t01.state"
hc >"$T/out" 2>&1
[ $? = 1 ] || fail "a bad state file should give status 1"
grep -q "sn00-t01.state:2:1: 'clean'" "$T/out" || fail "bad state file message: $(cat "$T/out")"
# Usage.
"$AGENT" health-check --node sn00-t01 >/dev/null 2>&1
[ $? = 2 ] || fail "missing --cluster should give status 2"
"$AGENT" health-check --cluster "$SPEC" --node nosuch >"$T/out" 2>&1
[ $? = 2 ] && grep -q "no such server" "$T/out" || fail "unknown node: $(cat "$T/out")"
"$AGENT" health-check --help | grep -q "HealthCheckProgram" || fail "--help"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "agent_health_check: drains on a slow GPU, resumes after two clean checks, never touches an admin drain"
