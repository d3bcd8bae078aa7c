#!/bin/sh
# sn-agent's built-in GEMM/HBM probe (docs/agent.md, "GEMM and HBM probe")
# through a FAKE CUDA runtime and cuBLAS (tests/fakes/, built into
# BUILD/tests/fakes/cuda): host memory, memcpy and clock_gettime events. It
# checks the wiring only (libraries found and resolved, one hbm and one gemm
# row per GPU, unit conversions, per-GPU CUDA errors, not-available), not a
# GPU: the probe has not run on a real GPU in this project's tests.
#  - 2 fake GPUs: one hbm and one gemm row each (read back by the
#    sn-bench reader through the runner, below);
#  - FAKE_CUDA_EVENT_MS=100 fixes every timed span at 100 ms: 50 copies of
#    4 MiB (a quarter of 16 MiB free) = 2*4194304*50/0.1 s = 4.1943 GB/s;
#    50 GEMMs at M=N=K=1024 (bounded by free memory) = 2*1024^3*50/0.1 s =
#    1.07374 TFLOP/s;
#  - an injected cudaMalloc / cublasGemmEx error on GPU 1: that GPU's CUDA
#    error string, the other GPU's rows kept, runner status failed;
#  - no libraries: not-available "libcudart.so not found"; no device:
#    not-available with cudaGetDeviceCount's error;
#  - sn-agent bench without --probe-command runs the built-in probe.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BUILD=$(dirname "$SN")
AGENT=$BUILD/sn-agent
FAKE=$BUILD/tests/fakes/cuda
T=$(mktemp -d "${TMPDIR:-/tmp}/sn-probe-XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ -e "$FAKE/libcudart.so.12" ] && [ -e "$FAKE/libcublas.so.12" ] ||
    { echo "FAIL: no fake CUDA libraries in $FAKE (build the fake_cublas target)"; exit 1; }
unset FAKE_CUDA_FAIL FAKE_CUDA_EVENT_MS FAKE_CUDA_DEVICES FAKE_CUDA_FREE_MIB SN_CUDA_LIBRARY_PATH

out=$("$AGENT" gemm-hbm-probe --cuda-lib "$FAKE" sn00-t00)
rc=$?
[ $rc = 0 ] || fail "fake probe: exit $rc: $out"
[ "$(printf '%s\n' "$out" | grep -c '^sn00-t00,[01],hbm,[0-9.e+]*,GB/s$')" = 2 ] || fail "hbm rows: $out"
[ "$(printf '%s\n' "$out" | grep -c '^sn00-t00,[01],gemm,[0-9.e+]*,TFLOP/s$')" = 2 ] || fail "gemm rows: $out"
printf '%s\n' "$out" | grep -q '^# gpu 1: gemm: M=N=K=1024 (bounded by free memory), 50 GEMMs' || fail "gemm size: $out"

out=$(FAKE_CUDA_EVENT_MS=100 "$AGENT" gemm-hbm-probe --cuda-lib "$FAKE" sn00-t00)
printf '%s\n' "$out" | grep -q '^sn00-t00,0,hbm,4.1943,GB/s$' || fail "hbm conversion: $out"
printf '%s\n' "$out" | grep -q '^sn00-t00,1,gemm,1.07374,TFLOP/s$' || fail "gemm conversion: $out"
out=$(FAKE_CUDA_EVENT_MS=100 FAKE_CUDA_FREE_MIB=64 "$AGENT" gemm-hbm-probe --cuda-lib "$FAKE" sn00-t00)
printf '%s\n' "$out" | grep -q '^sn00-t00,0,hbm,16.7772,GB/s$' || fail "hbm of 16 MiB: $out"
printf '%s\n' "$out" | grep -q '^sn00-t00,0,gemm,8.58993,TFLOP/s$' || fail "gemm at 2048: $out"

out=$(FAKE_CUDA_FAIL=1:cudaMalloc "$AGENT" gemm-hbm-probe --cuda-lib "$FAKE" sn00-t00)
rc=$?
[ $rc = 1 ] || fail "a failed GPU should give exit 1, got $rc"
printf '%s\n' "$out" | grep -q '^# gpu 1: failed: cudaMalloc: out of memory$' || fail "cudaMalloc error: $out"
[ "$(printf '%s\n' "$out" | grep -c '^sn00-t00,0,')" = 2 ] || fail "GPU 0's rows should stay: $out"
printf '%s\n' "$out" | grep -q '^sn00-t00,1,' && fail "no figure for the failed GPU: $out"
out=$(FAKE_CUDA_FAIL=0:cublasGemmEx "$AGENT" gemm-hbm-probe --cuda-lib "$FAKE" sn00-t00)
printf '%s\n' "$out" | grep -q '^# gpu 0: failed: cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED$' || fail "cuBLAS error: $out"
printf '%s\n' "$out" | grep -q '^sn00-t00,0,hbm,' || fail "GPU 0's hbm row should stay: $out"

out=$("$AGENT" gemm-hbm-probe --cuda-lib "$T")
rc=$?
[ $rc = 69 ] || fail "no libraries: exit $rc"
printf '%s\n' "$out" | grep -q '^# not available: libcudart.so not found' || fail "no libraries: $out"
out=$(FAKE_CUDA_DEVICES=0 SN_CUDA_LIBRARY_PATH="$FAKE" "$AGENT" gemm-hbm-probe)
[ $? = 69 ] || fail "no device: should be 69"
printf '%s\n' "$out" | grep -q '^# not available: cudaGetDeviceCount: no CUDA-capable device is detected$' || fail "no device: $out"
"$AGENT" gemm-hbm-probe --bogus >/dev/null 2>&1
[ $? = 2 ] || fail "a bad option should give 2"

# The host's real CUDA runtime, when it has one and no GPU (this machine:
# CUDA 13.0 without a driver): every symbol resolves, and no driver or device
# is not-available, never a figure.
if [ ! -e /dev/nvidia0 ]; then
    out=$("$AGENT" gemm-hbm-probe sn00-t00)
    rc=$?
    [ $rc = 69 ] || fail "no GPU here: exit should be 69, got $rc: $out"
    printf '%s\n' "$out" | grep -q '^# not available: \(libcudart.so not found\|cudaGetDeviceCount: \)' ||
        fail "no GPU here: $out"
    printf '%s\n' "$out" | grep -q ',GB/s$\|,TFLOP/s$' && fail "a figure without a GPU: $out"
fi

# Through the gemm-hbm-probe runner of sn-agent bench (no --probe-command).
mkdir -p "$T/empty"
out=$(PATH="$T/empty" "$AGENT" bench --node sn00-t00 --cuda-lib "$FAKE" --out "$T/out")
printf '%s\n' "$out" | grep -q '^gemm-hbm-probe  *built-in  *ok .*4 sn-bench rows' || fail "runner: $out"
grep -q "^gemm-hbm-probe	ok	sn-bench$" "$T/out/results.tsv" || fail "results.tsv: $(cat "$T/out/results.tsv")"
out=$(FAKE_CUDA_FAIL=1:cudaMemcpy PATH="$T/empty" "$AGENT" bench --node sn00-t00 --cuda-lib "$FAKE")
[ $? = 1 ] || fail "runner with a failed GPU: exit should be 1"
printf '%s\n' "$out" | grep -q '^gemm-hbm-probe  *built-in  *failed .*gpu 1: failed: cudaMemcpy: invalid argument; 2 sn-bench rows' || fail "runner failure: $out"
out=$(PATH="$T/empty" "$AGENT" bench --node sn00-t00 --cuda-lib "$T/empty")
printf '%s\n' "$out" | grep -q '^gemm-hbm-probe  *built-in  *not-available .*not available: libcudart.so not found' || fail "runner not-available: $out"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "agent_probe: the built-in probe's wiring through a fake CUDA runtime and cuBLAS holds"
