#!/bin/sh
# End-to-end test of sn demo (docs/cmd-demo.md): a bounded run of the live
# system (snd, 16 simulated agents, 120 jobs of ITP cluster04, a slow GPU,
# a power-domain failure and its repair) with --json. Asserts from the
# summary that jobs were submitted and finished, that the power-domain
# failure interrupted running jobs and requeued them (the demo compares
# each job's requeues before and after, and snd's
# sn_scheduler_interruptions_total rose), that the domain was repaired, and
# that no process the demo started outlives it, that the health engine
# cordoned the slow GPU, and that the interruptions lowered goodput; and
# the scenes (docs/cmd-demo.md "Scenes"), from the summary's "scenes"
# object (read with jq): the tensor-parallel job in one supernode with each
# group in one server; the spread job over two power domains, hit only in
# part by the failure and requeued; the quota job held with reason "quota"
# and a detail naming the limit; the checkpointed job resumed from its
# checkpoint (its own log prints SN_RESUME_FROM). Bad flags exit 2 before
# anything starts.
# Skips (exit 0) when the ITP trace is absent (../shared/traces).
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TRACE=../shared/traces/microsoft-itp/cluster04.csv
if [ ! -r "$TRACE" ]; then
    echo "demo: skipped (no $TRACE)"
    exit 0
fi
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-demo-test-XXXXXX")
trap 'rm -rf "$D"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Bad input: exit 2, nothing started.
"$SN" demo --duration soon >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--duration soon: exit $rc, want 2"
mkdir "$D/full" && touch "$D/full/x"
out=$("$SN" demo --state "$D/full" --duration 5 2>&1); rc=$?
[ "$rc" = 2 ] || fail "--state of a non-empty directory: exit $rc, want 2"
echo "$out" | grep -q "must be new or empty" || fail "no 'must be new or empty' in: $out"

"$SN" demo --duration 30 --json --port 0 --jobs 120 --speed 20000 --trace "itp:$TRACE" \
    --state "$D/run" >"$D/summary.json" 2>"$D/status.txt"
rc=$?
cat "$D/status.txt"
[ "$rc" = 0 ] || fail "sn demo exited $rc, want 0"

# field KEY: the value of the first line "KEY": VALUE of the summary.
field() { sed -n "s/^ *\"$1\": \\([^,]*\\),*\$/\\1/p" "$D/summary.json" | head -n 1; }
num() { v=$(field "$1"); case $v in '' | *[!0-9.]*) echo -1 ;; *) echo "${v%%.*}" ;; esac; }
submitted=$(num jobs_submitted) finished=$(num jobs_finished)
interrupted=$(num interrupted_jobs) requeued=$(num jobs_requeued)
before=$(num interruptions_metric_before) after=$(num interruptions_metric_after)
[ "$submitted" -gt 0 ] || fail "jobs_submitted $submitted, want > 0"
[ "$finished" -gt 0 ] || fail "jobs_finished $finished, want > 0"
[ "$interrupted" -gt 0 ] || fail "interrupted_jobs $interrupted, want > 0"
[ "$requeued" -ge "$interrupted" ] || fail "jobs_requeued $requeued < interrupted $interrupted"
# Interrupted runs lose GPU-time, so the daemon's goodput falls below 1.
goodput=$(field goodput)
case $goodput in
0.* | 0) ;;
*) fail "goodput '$goodput' after interruptions, want a value below 1" ;;
esac
[ "$after" -ge $((before + interrupted)) ] ||
    fail "sn_scheduler_interruptions_total $before -> $after, want +$interrupted or more"
grep -q '^    "failed": true,$' "$D/summary.json" || fail "the power domain was not failed"
grep -q '^    "repaired": true,$' "$D/summary.json" || fail "the power domain was not repaired"
grep -q "FAULT power domain .* failed: " "$D/status.txt" || fail "no FAULT line in the status"
grep -q "REPAIR power domain" "$D/status.txt" || fail "no REPAIR line in the status"
grep -q "jobs .* submitted: .* running" "$D/status.txt" || fail "no status line"
# The leak scene: the last rack's BMC leak detector trips; snd powers the
# rack off (every GPU down, power-off-zone in the reason) and requeues the
# jobs that ran there.
grep -q "FAULT leak: .* BMC leak detector trips" "$D/status.txt" || fail "no FAULT leak line"
grep -q "LEAK .* powered off by snd:health: \([0-9]*\) of \1 GPUs down (health: power-off-zone" \
    "$D/status.txt" || fail "the leak's rack was not powered off"
grep -q "leak: .* powered off; [0-9]* of [0-9]* job" "$D/status.txt" || fail "no leak requeue line"
if grep -q "leak: .* powered off; 0 of [1-9]" "$D/status.txt"; then
    fail "jobs on the leak's rack were not requeued"
fi

# Every process the demo started (snd, agents, their jobs) is gone.
for c in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' <"$c" 2>/dev/null | grep -q "$D/run"; then
        fail "still running: $(tr '\0' ' ' <"$c")"
    fi
done

# The health engine in snd scores the slow GPU from its agent's benchmark
# and telemetry and cordons it.
[ "$(field cordoned)" = true ] || fail "the slow GPU was not cordoned by the health engine"
# The scenes. jq reads the summary; without jq (not in the image) they are
# skipped with a message.
if command -v jq >/dev/null 2>&1; then
    q() { jq -r "$@" "$D/summary.json"; }
    [ "$(q .scenes.tensor_parallel.supernodes)" = 1 ] ||
        fail "tensor-parallel scene: $(q .scenes.tensor_parallel.supernodes) supernodes, want 1"
    groups=$(q .scenes.tensor_parallel.groups)
    [ "$groups" -ge 2 ] && [ "$(q .scenes.tensor_parallel.groups_in_one_server)" = "$groups" ] ||
        fail "tensor-parallel scene: groups not each in one server: $(q -c .scenes.tensor_parallel)"
    case $(q .scenes.power_spread.power_domains) in
    *,*) ;;
    *) fail "spread scene: one power domain: $(q .scenes.power_spread.power_domains)" ;;
    esac
    hit=$(q .scenes.power_spread.gpus_hit) all=$(q .scenes.power_spread.gpus)
    [ "$hit" -gt 0 ] && [ "$hit" -lt "$all" ] ||
        fail "spread scene: the failure hit $hit of $all GPUs, want part of them"
    [ "$(q .scenes.power_spread.interrupted)" = true ] || fail "spread scene: not interrupted"
    [ "$(q .scenes.quota.held)" = true ] && [ "$(q .scenes.quota.pending_reason)" = quota ] ||
        fail "quota scene: not held by its quota: $(q -c .scenes.quota)"
    q .scenes.quota.pending_detail | grep -q "tenant research in pool training holds 8 of 8 GPUs" ||
        fail "quota scene: detail '$(q .scenes.quota.pending_detail)'"
    [ "$(q .scenes.checkpoint.reported)" = true ] || fail "checkpoint scene: no checkpoint"
    [ "$(q .scenes.checkpoint.resumed)" = true ] &&
        [ "$(q .scenes.checkpoint.resume_from)" = "$(q .scenes.checkpoint.path)" ] ||
        fail "checkpoint scene: not resumed from its checkpoint: $(q -c .scenes.checkpoint)"
    for s in "SCENE tensor-parallel: job" "SCENE power spread: the failure of" "SCENE quota: job" \
        "SCENE checkpoint: job .* resumed from"; do
        grep -q "$s" "$D/status.txt" || fail "no status line '$s'"
    done
else
    echo "demo: scenes not checked (no jq)"
fi
echo "demo: submitted $submitted, finished $finished, interrupted and requeued $interrupted"
[ "$fails" = 0 ] || { cat "$D/summary.json"; exit 1; }
echo "demo: ok"
