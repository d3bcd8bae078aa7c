#!/bin/sh
# The generated job_submit.lua in a real Slurm 22.05: a slurmctld with
# JobSubmitPlugins=lua and the slurm-tree topology of examples/demo-cluster.yaml
# (4 supernodes of 4 servers of 8 GPUs), and one real slurmd for each of the 8
# servers of sn00 and sn01. Jobs submitted with sbatch must:
#  - fit one supernode (32 GPUs or fewer): get --switches=1 and run on the
#    servers of one supernode, even when the free servers are spread;
#  - not fit one: get no switch requirement;
#  - declare --comment=sn:tp=4 with 6 GPUs: be rounded to 8.
# Skips (exit 0) without Slurm or munge, or when not root.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SPEC=examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_job_submit
slurm_init
trap slurm_cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf" || fail "export slurm-conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf" || fail "export slurm-gres"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf" || fail "export slurm-tree"
"$SN" design export --format slurm-job-submit "$SPEC" >"$D/job_submit.lua" || fail "export job_submit.lua"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
slurm_start "JobSubmitPlugins=lua" || { fail "munged or slurmctld did not start"; exit 1; }
servers="sn00-t00 sn00-t01 sn00-t02 sn00-t03 sn01-t00 sn01-t01 sn01-t02 sn01-t03"
for n in $servers; do slurm_slurmd "$n" || fail "slurmd $n did not start"; done
slurm_wait_idle $servers || fail "the slurmds did not register"

# job_field ID FIELD: the value of FIELD=... in scontrol show job.
job_field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
submit() { sbatch --parsable -o /dev/null "$@" --wrap "sleep 120" 2>&1; }
running() {
    i=0
    until [ "$(job_field "$1" JobState)" = RUNNING ]; do
        i=$((i + 1))
        [ $i -gt 300 ] && return 1
        sleep 0.1
    done
}
# The supernodes of a job's node list ("sn00-t[01-02]" -> sn00).
supernodes_of() { scontrol show hostnames "$(job_field "$1" NodeList)" | cut -c1-4 | sort -u | tr '\n' ' '; }

# A 1-server job on sn00 and one on sn01 leave 3 free servers in each: a
# 3-server job then fits either, and must take one whole, not 2 + 1.
a=$(submit -J one-a --gpus=8 -w sn00-t00)
b=$(submit -J one-b --gpus=8 -w sn01-t00)
running "$a" && running "$b" || fail "the pinned jobs did not start"
c=$(submit -J fit24 --gpus=24)
running "$c" || fail "job fit24 did not start: $(scontrol show job "$c" | grep -E 'Reason|JobState')"
sw=$(scontrol show job "$c" | grep -o 'Switches=[^ ]*')
case "$sw" in Switches=1@*) ;; *) fail "fit24 should ask for one switch: $sw" ;; esac
set -- $(supernodes_of "$c")
[ $# = 1 ] || fail "fit24 spans supernodes: $(job_field "$c" NodeList)"

# 40 GPUs do not fit one supernode: no switch requirement (it waits for room).
d=$(submit -J big40 --gpus=40)
sw=$(scontrol show job "$d" | grep -o 'Switches=[^ ]*')
case "$sw" in Switches=1@*) fail "big40 should not be held to one switch: $sw" ;; esac

# Tensor-parallel rounding: 6 GPUs in groups of 4 become 8.
e=$(submit -J tp4 --gpus=6 --comment=sn:tp=4 --hold)
tres=$(job_field "$e" TresPerJob)
case "$tres" in *gpu:8) ;; *) fail "tp4 should ask for 8 GPUs: TresPerJob=$tres" ;; esac
grep -q "sn: job tp4: 6 GPUs rounded to 8 (tp 4)" "$D/log/slurmctld.log" ||
    fail "slurmctld's log lacks the rounding"
scancel "$a" "$b" "$c" "$d" "$e" 2>/dev/null

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "slurm_job_submit: the generated job_submit.lua keeps fitting jobs in one supernode and rounds TP groups in Slurm 22.05"
