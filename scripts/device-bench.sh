#!/bin/sh
# Runs sn-agent's real benchmark runners on a GPU host and prints what they
# found (docs/agent.md, "Benchmark runners"): nccl-tests all_reduce_perf and
# all_gather_perf over the host's GPUs, dcgmi diag -r 1, and the GEMM/HBM
# probe: SN_PROBE when it names one, else the built-in one (sn-agent
# gemm-hbm-probe: CUDA runtime and cuBLAS loaded at run time; SN_CUDA_LIB
# names their directory), whose rows and comments are printed after the table. Each tool's raw output is kept under OUT_DIR (or
# $OUT when set, as on the project's device machines) next to the table, so
# the readers' results can be checked against what the tools printed.
# A tool the host lacks is reported not-available; nothing is made up.
#
#   sh scripts/device-bench.sh [BUILD_DIR (build)] [OUT_DIR ($OUT or /tmp/sn-device-bench)]
set -u
BUILD=${1:-build}
OUTDIR=${2:-${OUT:-/tmp/sn-device-bench}}
AGENT=$BUILD/sn-agent
[ -x "$AGENT" ] || { echo "device-bench: no $AGENT; build first (cmake --build $BUILD --target sn-agent)"; exit 2; }
mkdir -p "$OUTDIR"
GPUS=0
command -v nvidia-smi >/dev/null 2>&1 && GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
{
    echo "# sn-agent bench on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv 2>&1
    else
        echo "nvidia-smi: not found"
    fi
    echo "GPUs: $GPUS"
    for t in all_reduce_perf all_gather_perf dcgmi; do
        printf '%s: %s\n' "$t" "$(command -v "$t" 2>/dev/null || echo 'not in PATH')"
    done
} | tee "$OUTDIR/host.txt"
[ "$GPUS" -ge 1 ] 2>/dev/null || GPUS=1
set -- --node "$(hostname -s)" --gpus "$GPUS" --diag-level 1 --timeout 900 --out "$OUTDIR/runs"
[ -n "${SN_PROBE:-}" ] && set -- "$@" --probe-command "$SN_PROBE"
[ -n "${SN_CUDA_LIB:-}" ] && set -- "$@" --cuda-lib "$SN_CUDA_LIB"
"$AGENT" bench "$@" >"$OUTDIR/bench.txt"
rc=$?
cat "$OUTDIR/bench.txt"
if [ -f "$OUTDIR/runs/gemm-hbm-probe.txt" ]; then
    echo "gemm-hbm-probe output:"
    cat "$OUTDIR/runs/gemm-hbm-probe.txt"
fi
echo "device-bench: outputs in $OUTDIR (exit $rc)"
exit $rc
