#!/bin/sh
# The simulator's Slurm baseline against the real Slurm (docs/slurm.md,
# "The simulator against the real Slurm"): a time-compressed slice of the
# Microsoft ITP trace (cluster04.csv) as sleep jobs on a real Slurm 22.05
# with one slurmd per server of examples/demo-cluster.yaml (16 nodes of 8
# GPUs, tree topology from sn design export), and the same slice through
# `sn sim --policy tree-best-fit` (failures, communication slowdowns off, one
# tenant). Prints the agreement: start order (pairs of jobs started in the
# same order, and the positions of the start sequence that agree), node sets
# (jobs placed on exactly the same servers), and the makespan of both.
#
# The slice: N jobs from row OFFSET, submit times and durations divided by
# COMPRESS and rounded to whole seconds (durations kept in [2, 40] s). Every
# job asks --gpus=G --time=1 (Slurm keeps limits in minutes), sleeps its
# duration, and is submitted at its compressed time by this script. Slurm
# gets DefMemPerGPU (1/8 of a node's memory) and DefCpuPerGPU (14 of 112), as
# GPU clusters set them; DEFMEM=whole leaves them out (Slurm's default: a job
# without --mem takes all of its nodes' memory).
#
# usage (from the repository root, as root, after a build):
#   sh bench/slurm_vs_sim.sh [BUILD_DIR (build)] [N (60)] [OFFSET (2000)] [COMPRESS (600)]
set -u
BUILD=${1:-build} N=${2:-60} OFFSET=${3:-2000} COMPRESS=${4:-600}
SN=$(cd "$BUILD" && pwd)/sn
SPEC=examples/demo-cluster.yaml
TRACE=${SN_TRACES_DIR:-../shared/traces}/microsoft-itp/cluster04.csv
[ -r "$TRACE" ] || { echo "slurm_vs_sim: skipped (no $TRACE)"; exit 0; }
command -v python3 >/dev/null 2>&1 || { echo "slurm_vs_sim: skipped (no python3 for the comparison)"; exit 0; }
. tests/cli/slurm.inc
slurm_check_or_skip slurm_vs_sim
slurm_init
trap slurm_cleanup EXIT

# The slice, in the ITP format sn sim reads.
awk -F, -v off="$OFFSET" -v n="$N" -v c="$COMPRESS" '
    NR == 1 { print; next }
    NR - 1 > off && NR - 1 <= off + n {
        if (t0 == "") t0 = $2
        d = int($3 / c + 0.5); if (d < 2) d = 2; if (d > 40) d = 40
        printf "%s,%d,%d,%d\n", $1, int(($2 - t0) / c + 0.5), d, $4
    }' "$TRACE" >"$D/slice.csv"
echo "slice: $(($(wc -l <"$D/slice.csv") - 1)) jobs of $TRACE from row $OFFSET, times / $COMPRESS"

"$SN" sim --cluster "$SPEC" --trace "itp:$D/slice.csv" --policy tree-best-fit --failures off \
    --comm-tp 0 --comm-dp 0 --tenants 1 --jobs-csv "$D/sim.csv" >"$D/sim.txt" ||
    { echo "sn sim failed"; cat "$D/sim.txt"; exit 1; }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
# DEFMEM=whole: no DefMemPerGPU, so a job without --mem holds its nodes'
# whole memory (one job per node), as Slurm does out of the box.
if [ "${DEFMEM:-gpu}" = whole ]; then MEM=; else MEM="DefMemPerGPU=240000
DefCpuPerGPU=14"; fi
slurm_start "SchedulerParameters=sched_interval=1,bf_interval=1,bf_resolution=1
MinJobAge=3600
$MEM" || { echo "slurmctld did not start"; exit 1; }
nodes=$(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$D/nodes.conf")
for n in $nodes; do slurm_slurmd "$n" || { echo "slurmd $n did not start"; exit 1; }; done
# shellcheck disable=SC2086
slurm_wait_idle $nodes || exit 1

# Submit each job at its time (relative to the first submit).
t0=$(date +%s.%N)
tail -n +2 "$D/slice.csv" | while IFS=, read -r id at dur gpus; do
    now=$(date +%s.%N)
    sleep "$(echo "$t0 $at $now" | awk '{ d = $1 + $2 - $3; printf "%.3f", (d > 0 ? d : 0) }')"
    j=$(sbatch --parsable -o /dev/null -J "itp" --gpus="$gpus" --time=1 --wrap "sleep $dur") ||
        { echo "sbatch failed"; exit 1; }
    echo "$j" >>"$D/ids"
done
echo "submitted $(wc -l <"$D/ids") jobs; waiting for them to end"
i=0
until [ -z "$(squeue -h -o %i)" ]; do
    i=$((i + 1))
    [ $i -gt 1200 ] && { echo "jobs still queued after 10 min"; squeue; exit 1; }
    sleep 0.5
done
while read -r j; do
    scontrol -o show job "$j" | tr ' ' '\n' | awk -v j="$j" -F= '
        $1 == "SubmitTime" { s = $2 } $1 == "StartTime" { b = $2 } $1 == "EndTime" { e = $2 }
        $1 == "NodeList" { n = $2 } END { print j, s, b, e, n }'
done <"$D/ids" | while read -r j s b e n; do
    echo "$j,$(date -d "$s" +%s),$(date -d "$b" +%s),$(date -d "$e" +%s),$(scontrol show hostnames "$n" | sort | tr '\n' ';' | sed 's/;$//')"
done >"$D/slurm.csv"

python3 - "$D/slice.csv" "$D/sim.csv" "$D/slurm.csv" <<'PY'
import csv, sys
slice_rows = list(csv.DictReader(open(sys.argv[1])))
sim = {int(r["job"]): r for r in csv.DictReader(open(sys.argv[2]))}
real = [l.strip().split(",") for l in open(sys.argv[3]) if l.strip()]
n = len(slice_rows)
t0 = min(int(r[1]) for r in real)
rs = {i: (int(r[2]) - t0, int(r[3]) - t0, r[4]) for i, r in enumerate(real)}
ss = {i: (float(sim[i]["start_s"]), float(sim[i]["end_s"]), sim[i]["servers"]) for i in range(n)}
# Start order: pairs whose starts differ by more than 1 s on both sides.
agree = total = 0
for i in range(n):
    for k in range(i + 1, n):
        a, b = rs[i][0] - rs[k][0], ss[i][0] - ss[k][0]
        if abs(a) > 1 and abs(b) > 1:
            total += 1
            agree += (a > 0) == (b > 0)
order_r = sorted(range(n), key=lambda i: (rs[i][0], i))
order_s = sorted(range(n), key=lambda i: (ss[i][0], i))
same_pos = sum(1 for a, b in zip(order_r, order_s) if a == b)
same_nodes = sum(1 for i in range(n) if rs[i][2] == ss[i][2])
same_count = sum(1 for i in range(n) if len(rs[i][2].split(";")) == len(ss[i][2].split(";")))
mk_r = max(v[1] for v in rs.values())
mk_s = max(v[1] for v in ss.values()) - float(slice_rows[0]["submission_time"])
delay = sum(abs(rs[i][0] - ss[i][0]) for i in range(n)) / n
lag = sum(int(real[i][1]) - t0 - float(slice_rows[i]["submission_time"]) for i in range(n)) / n
print(f"jobs                         {n}")
print(f"start order, job pairs       {agree}/{total} agree ({100 * agree / max(total, 1):.1f} %)")
print(f"start sequence positions     {same_pos}/{n} agree")
print(f"node sets                    {same_nodes}/{n} identical; {same_count}/{n} same node count")
print(f"mean |start difference|      {delay:.1f} s")
print(f"mean sbatch lag behind trace {lag:.1f} s (submit times as Slurm recorded them)")
print(f"makespan                     slurm {mk_r:.0f} s, sim {mk_s:.0f} s ({100 * (mk_s - mk_r) / mk_r:+.1f} %)")
for i in range(n):
    if rs[i][2] != ss[i][2] or abs(rs[i][0] - ss[i][0]) > 2:
        print(f"  job {i:3d} {slice_rows[i]['num_gpu']:>3} GPUs: slurm start {rs[i][0]:5.0f} {rs[i][2]:<40} sim start {ss[i][0]:5.0f} {ss[i][2]}")
PY
