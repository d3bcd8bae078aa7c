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
# Then, in the same run, submit to start for QUEUED (1000) queued jobs on
# the same 16 nodes: one real slurmd per node for Slurm, one real sn-agent
# (sim backend, real job processes) per node for a fresh snd. Every node is
# held (Slurm: drained; snd: cordoned), the QUEUED jobs (one GPU each,
# running `true`) are submitted by CLIENTS shells, then every node is
# released at once; from that moment the queue drains through 128 GPUs.
# Prints, for both, the time from the release to the last start, the median
# and p95 of the jobs' release-to-start (1 s resolution on both sides), and
# the ratios.
#
# usage (from the repository root, as root, after a build):
#   sh bench/slurm_vs_snd.sh [BUILD_DIR (build)] [CLIENTS (4)] [JOBS_EACH (100)] [QUEUED (1000)]
set -u
BUILD=${1:-build} CLIENTS=${2:-4} EACH=${3:-100} QUEUED=${4:-1000}
SN=$(cd "$BUILD" && pwd)/sn
SND=$(cd "$BUILD" && pwd)/snd
SPEC=examples/demo-cluster.yaml
. tests/cli/slurm.inc
slurm_check_or_skip slurm_vs_snd
slurm_init
PID=
PIDS=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    slurm_cleanup
}
trap cleanup EXIT
now() { date +%s.%N; }

"$SN" design export --format slurm-conf "$SPEC" >"$D/nodes.conf"
"$SN" design export --format slurm-gres "$SPEC" >"$D/gres.conf"
"$SN" design export --format slurm-tree "$SPEC" >"$D/topology.conf"
slurm_nodes "$D/nodes.conf"
sed -i "s|File=/dev/nvidia|File=$D/dev/nvidia|" "$D/gres.conf"
slurm_start "MaxJobCount=100000
MinJobAge=3600" || { echo "slurmctld did not start"; exit 1; }

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

# ---- submit to start for $QUEUED queued jobs ---------------------------------

# stats FILE: "p50 p95" of the numbers in FILE (one a line).
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { p = int(NR * 0.5 + 0.999); q = int(NR * 0.95 + 0.999); print v[p ? p : 1], v[q ? q : 1] }'; }
per=$(((QUEUED + CLIENTS - 1) / CLIENTS))

scancel --state=PENDING 2>/dev/null
nodes=$(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$D/nodes.conf")
for n in $nodes; do slurm_slurmd "$n" || { echo "slurmd $n did not start"; exit 1; }; done
# shellcheck disable=SC2086
slurm_wait_idle $nodes || exit 1
all=$(echo $nodes | tr ' ' ',')
scontrol update NodeName="$all" State=DRAIN Reason=bench-hold
pids=
for c in $(seq "$CLIENTS"); do
    (for j in $(seq "$per"); do sbatch --parsable -o /dev/null -J "q$c-$j" --gpus=1 --wrap true; done) >"$D/q.$c" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
queued=$(squeue -h -t PD -o %i | wc -l)
t_rel=$(date +%s)
scontrol update NodeName="$all" State=RESUME
i=0
until [ -z "$(squeue -h -o %i)" ]; do
    i=$((i + 1))
    [ $i -gt 3600 ] && { echo "Slurm jobs still queued after 30 min"; break; }
    sleep 0.5
done
scontrol -o show job | tr ' ' '\n' | awk -F= '
    $1 == "JobName" { q = ($2 ~ /^q[0-9]+-[0-9]+$/) }
    q && $1 == "StartTime" { print $2 }' |
    while read -r b; do echo "$t_rel $(date -d "$b" +%s)"; done >"$D/slurm.times"
slurm_n=$(wc -l <"$D/slurm.times")
awk '{ print $2 - $1 }' "$D/slurm.times" >"$D/slurm.wait"
slurm_span=$(sort -n "$D/slurm.wait" | tail -1)
set -- $(stats "$D/slurm.wait")
slurm_p50=$1 slurm_p95=$2
echo "slurm: $queued jobs queued, $slurm_n started"

"$SND" --cluster "$SPEC" --state "$D/snd2" --listen 127.0.0.1:0 --ready-fd 3 \
    --set rate_per_s=1000000 --set rate_burst=1000000 --set sched_event_delay_ms=5 \
    3>"$D/port2" 2>"$D/snd2.log" &
PIDS="$PIDS $!"
i=0
while [ ! -s "$D/port2" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
PORT2=$(cat "$D/port2")
export SN_SERVER="http://127.0.0.1:$PORT2" SN_TOKEN="$(cat "$D/snd2/admin.token")"
"$SN" tenants create acme --prefix /data/acme >/dev/null
AGENT=$(dirname "$SN")/sn-agent
echo "acme nobody" >"$D/users" # jobs never run as root
for n in $nodes; do
    "$SN" token create --agent "$n" >"$D/$n.token"
    "$AGENT" --server "127.0.0.1:$PORT2" --token "$D/$n.token" --node "$n" --backend sim \
        --cluster "$SPEC" --interval 0.5 --work-dir "$D/w-$n" --cgroup-root none \
        --user-map "$D/users" 2>"$D/agent-$n.log" &
    PIDS="$PIDS $!"
done
sleep 2 # every agent's first heartbeat
for n in $nodes; do "$SN" cordon "$n" --reason bench-hold >/dev/null; done
pids=
for c in $(seq "$CLIENTS"); do
    (for j in $(seq "$per"); do "$SN" submit --tenant acme --name "q$c-$j" --gpus 1 --command true >/dev/null || echo fail; done) >"$D/sq.$c" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
t_rel=$(date +%s)
pids=
for n in $nodes; do
    "$SN" resume "$n" >/dev/null &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
# jobs_page STATE: submit and start times of every job of STATE.
snd_times() {
    after=
    while :; do
        page=$(curl -s -H "Authorization: Bearer $SN_TOKEN" "$SN_SERVER/v1/jobs?state=$1&limit=1000${after:+&after=$after}")
        printf '%s\n' "$page" | python3 -c 'import json, sys
d = json.load(sys.stdin)
for j in d["items"]:
    if j.get("start_time_s"):
        print(j["start_time_s"])
print("NEXT", d.get("next") or "")'
        after=$(printf '%s\n' "$page" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("next") or "")')
        [ -z "$after" ] && break
    done | grep -v '^NEXT'
}
i=0
until [ "$(snd_times completed | wc -l)" -ge "$QUEUED" ]; do
    i=$((i + 1))
    [ $i -gt 900 ] && { echo "snd jobs not all completed after 30 min"; break; }
    sleep 2
done
snd_times completed >"$D/snd.times"
snd_n=$(wc -l <"$D/snd.times")
awk -v r="$t_rel" '{ print $1 - r }' "$D/snd.times" >"$D/snd.wait"
snd_span=$(sort -n "$D/snd.wait" | tail -1)
set -- $(stats "$D/snd.wait")
snd_p50=$1 snd_p95=$2

awk -v q="$QUEUED" -v sn="$slurm_n" -v nn="$snd_n" -v ss="$slurm_span" -v ns="$snd_span" \
    -v s50="$slurm_p50" -v s95="$slurm_p95" -v n50="$snd_p50" -v n95="$snd_p95" 'BEGIN {
    printf "queued to start, %d queued 1-GPU jobs (true) released at once on 16 nodes / 128 GPUs:\n", q
    printf "  slurmctld + 16 slurmd:  %d started; release to last start %d s; per job p50 %d s, p95 %d s\n", sn, ss, s50, s95
    printf "  snd + 16 sn-agent:      %d started; release to last start %d s; per job p50 %d s, p95 %d s\n", nn, ns, n50, n95
    printf "  ratio slurm / snd:      span %.2f, p50 %.2f, p95 %.2f\n", ss / (ns ? ns : 1), s50 / (n50 ? n50 : 1), s95 / (n95 ? n95 : 1)
}'
