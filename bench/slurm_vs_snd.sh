#!/bin/sh
# Job submissions per second into a real slurmctld (Debian's Slurm 22.05)
# and into snd, side by side in one run on the same machine, both driven the
# way a user drives them: CLIENTS parallel shells, each running JOBS_EACH
# submit commands (sbatch --hold --wrap true, and sn submit), one process per
# submission. Both clusters are examples/demo-cluster.yaml (16 nodes, 128
# GPUs): Slurm from sn design export (nodes, gres, tree topology) with its own
# munged; snd with its SQLite store (every submit durable before it is
# answered). Prints both rates and their ratio (snd / slurmctld).
#
# usage (from the repository root, as root, after a build):
#   sh bench/slurm_vs_snd.sh [BUILD_DIR (build)] [CLIENTS (4)] [JOBS_EACH (100)]
set -u
BUILD=${1:-build} CLIENTS=${2:-4} EACH=${3:-100}
SN=$(cd "$BUILD" && pwd)/sn
SND=$(cd "$BUILD" && pwd)/snd
SPEC=examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_vs_snd
slurm_init
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    slurm_cleanup
}
trap cleanup EXIT
now() { date +%s.%N; }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
slurm_start "MaxJobCount=100000" || { echo "slurmctld did not start"; exit 1; }

t0=$(now)
pids=
for c in $(seq "$CLIENTS"); do
    (for j in $(seq "$EACH"); do sbatch --hold -o /dev/null -J "b$c-$j" --gpus=8 --wrap true >/dev/null || echo fail; done) >"$D/sbatch.$c" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
t1=$(now)
slurm_fail=$(cat "$D"/sbatch.* | grep -c fail)
slurm_jobs=$(squeue -h -o %i | wc -l)

"$SND" --cluster "$SPEC" --state "$D/snd" --listen 127.0.0.1:0 --ready-fd 3 \
    --set rate_per_s=1000000 --set rate_burst=1000000 3>"$D/port" 2>"$D/snd.log" &
PID=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
export SN_SERVER="http://127.0.0.1:$(cat "$D/port")" SN_TOKEN="$(cat "$D/snd/admin.token")"
"$SN" tenants create acme --prefix /data/acme >/dev/null
t2=$(now)
pids=
for c in $(seq "$CLIENTS"); do
    (for j in $(seq "$EACH"); do "$SN" submit --tenant acme --name "b$c-$j" --gpus 8 >/dev/null || echo fail; done) >"$D/snsub.$c" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
t3=$(now)
snd_fail=$(cat "$D"/snsub.* | grep -c fail)
snd_jobs=$(curl -s -H "Authorization: Bearer $SN_TOKEN" "$SN_SERVER/metrics" |
    awk '/^sn_jobs\{/ { n += $2 } END { print n + 0 }')

awk -v n="$((CLIENTS * EACH))" -v c="$CLIENTS" -v a="$t0" -v b="$t1" -v x="$t2" -v y="$t3" \
    -v sj="$slurm_jobs" -v nj="$snd_jobs" -v sf="$slurm_fail" -v nf="$snd_fail" 'BEGIN {
    rs = n / (b - a); rn = n / (y - x)
    printf "submissions from %d clients, %d each, one process per submit:\n", c, n / c
    printf "  slurmctld 22.05 (sbatch --hold): %.1f /s (%d jobs queued, %d failed)\n", rs, sj, sf
    printf "  snd (sn submit, durable):        %.1f /s (%d jobs stored, %d failed)\n", rn, nj, nf
    printf "  ratio snd / slurmctld:           %.2f\n", rn / rs
}'
