#!/bin/sh
# sn-agent preflight-check (docs/agent.md, "Preflight"): the real
# backends' check of exactly a job's GPUs, with the fakes of
# tests/fakes/preflight (a probe; all_reduce_perf printing REAL nccl-tests
# outputs, peak busbw 839.16 and 97.37 GB/s):
#  - the probe and all_reduce_perf see CUDA_VISIBLE_DEVICES = the GPUs,
#    all_reduce_perf runs -g N (N the GPUs);
#  - quick: a GPU whose gemm is below half the expected figure fails, by
#    its index; full: a slow all-reduce fails every GPU, a healthy one
#    passes with its figures;
#  - tools absent (no CUDA for the built-in probe, no all_reduce_perf): na;
#  - bad usage: exit 2.
set -u
AGENT=$(cd "$(dirname "$1")" && pwd)/sn-agent
F=$(pwd)/tests/fakes/preflight
T=$(mktemp -d "${TMPDIR:-/tmp}/sn-pf-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir -p "$T/empty"
SYS=/usr/bin:/bin

out=$(PATH="$F/healthy:$SYS" FAKE_RECORD="$T/rec" "$AGENT" preflight-check --node sn00-t00 \
    --gpus 2,5 --mode full --probe-command "$F/probe" --expect-tflops 989 \
    --expect-hbm-gb-per-s 3350 --expect-busbw-gb-per-s 360 --out "$T/v")
rc=$?
[ $rc = 0 ] || fail "healthy full: exit $rc: $out"
[ "$(sed -n 1p "$T/v")" = pass ] || fail "healthy full verdict: $(cat "$T/v")"
grep -q "all-reduce -g 2 peak busbw 839.2 GB/s >= 360.0 GB/s expected" "$T/v" || fail "healthy evidence: $(cat "$T/v")"
grep -q "^probe sn00-t00 CUDA_VISIBLE_DEVICES=2,5$" "$T/rec" || fail "probe call: $(cat "$T/rec")"
grep -q "^all_reduce_perf -b 8 -e 1G -f 2 -g 2 CUDA_VISIBLE_DEVICES=2,5$" "$T/rec" || fail "all_reduce_perf call: $(cat "$T/rec")"

out=$(PATH="$F/slow:$SYS" "$AGENT" preflight-check --node sn00-t00 --gpus 2,5 --mode full \
    --probe-command "$F/probe" --expect-tflops 989 --expect-busbw-gb-per-s 360)
rc=$?
[ $rc = 1 ] || fail "slow full: exit $rc: $out"
[ "$out" = "fail:2/5
full: all-reduce peak busbw 97.4 GB/s < 360.0 GB/s expected" ] || fail "slow full: $out"

out=$(PATH="$SYS" FAKE_PROBE_SLOW_GPU=1 "$AGENT" preflight-check --node sn00-t00 --gpus 0,3,6 \
    --probe-command "$F/probe" --expect-tflops 989)
rc=$?
[ $rc = 1 ] || fail "slow GPU quick: exit $rc: $out"
[ "$out" = "fail:3
quick: GPU 3 gemm 382.1 TFLOP/s < 0.50 x 989.0 TFLOP/s (GPU model)" ] || fail "slow GPU quick: $out"

out=$(PATH="$SYS" "$AGENT" preflight-check --gpus 0,1 --mode full --probe-command "$F/probe")
[ "$(printf '%s\n' "$out" | sed -n 1p)" = na ] || fail "no all_reduce_perf should be na: $out"
printf '%s\n' "$out" | grep -q "all-reduce all_reduce_perf not found in PATH" || fail "na evidence: $out"

out=$(PATH="$T/empty" "$AGENT" preflight-check --gpus 0 --cuda-lib "$T/empty")
rc=$?
[ $rc = 0 ] || fail "no CUDA: exit $rc"
[ "$(printf '%s\n' "$out" | sed -n 1p)" = na ] || fail "no CUDA should be na: $out"
printf '%s\n' "$out" | grep -q "quick: GPU probe not available: " || fail "no CUDA evidence: $out"

for bad in "--gpus x" "--gpus 0 --mode slow" "--mode quick" "--gpus 0 --timeout 0"; do
    # shellcheck disable=SC2086
    "$AGENT" preflight-check $bad >/dev/null 2>&1
    [ $? = 2 ] || fail "'$bad' should be refused with 2"
done

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "agent_preflight: the check runs on exactly the GPUs given, judges against the expected figures, na without tools"
