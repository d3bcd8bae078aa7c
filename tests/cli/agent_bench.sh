#!/bin/sh
# sn-agent's benchmark runners (docs/agent.md, "Benchmark runners"):
#  - with none of the tools in PATH, every runner says not-available (and
#    the exit status is 0: nothing failed, nothing was made up);
#  - stand-in all_reduce_perf and dcgmi that print REAL outputs from
#    tests/data/real/ are run and read by the nccl-tests and dcgmi-diag
#    readers (5 rows with a peak busbw of 839.16 GB/s; 7 diag results);
#    a tool that fails is "failed" (exit 1); a probe command's sn-bench rows
#    are read by the sn-bench reader;
#  - through snd: an agent on the nvidia-smi backend, asked by snd's
#    heartbeat answer for benchmarks, runs them in a child and ships the
#    nccl-tests and dcgmi-diag outputs as telemetry, which snd accepts.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
AGENT=$(dirname "$SN")/sn-agent
ROOT=$(pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/sn-bench-XXXXXX")
PIDS=
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir -p "$T/empty" "$T/bin"

out=$(PATH="$T/empty" "$AGENT" bench --node sn00-t00)
rc=$?
[ $rc = 0 ] || fail "no tools: exit $rc"
for r in nccl-all-reduce nccl-all-gather dcgm-diag gemm-hbm-probe; do
    printf '%s\n' "$out" | grep -q "^$r .* not-available " || fail "$r should be not-available: $out"
done

cat >"$T/bin/all_reduce_perf" <<SH
#!/bin/sh
echo "\$*" >"$T/nccl.args"
exec /bin/cat "$ROOT/tests/data/real/nccl-tests/sn00-t00.coreweave43-nvl72.log"
SH
cat >"$T/bin/dcgmi" <<SH
#!/bin/sh
echo "\$*" >"$T/dcgmi.args"
exec /bin/cat "$ROOT/tests/data/real/dcgmi-diag/sn00-t00.go-dcgm52-r2-cut.txt"
SH
printf '#!/bin/sh\necho "all_gather_perf: no GPUs"\nexit 3\n' >"$T/bin/all_gather_perf"
printf '#!/bin/sh\nprintf "host,gpu,test,value,unit\\n%%s,0,gemm,690.5,TFLOP/s\\n%%s,0,hbm,3.02,TB/s\\n" "$1" "$1"\n' >"$T/bin/probe"
chmod 755 "$T/bin"/*
out=$(PATH="$T/bin" "$AGENT" bench --node sn00-t00 --gpus 4 --diag-level 2 --probe-command "$T/bin/probe" --out "$T/out")
rc=$?
[ $rc = 1 ] || fail "a failed tool should give exit 1, got $rc"
printf '%s\n' "$out" | grep -q "^nccl-all-reduce .* ok .*5 rows, peak busbw 839.16 GB/s" || fail "all_reduce_perf: $out"
printf '%s\n' "$out" | grep -q "^nccl-all-gather .* failed .*exit status 3" || fail "all_gather_perf: $out"
printf '%s\n' "$out" | grep -q "^dcgm-diag .* ok .*8 test results, 0 failed" || fail "dcgmi: $out"
printf '%s\n' "$out" | grep -q "^gemm-hbm-probe .* ok .*2 sn-bench rows" || fail "probe: $out"
[ "$(cat "$T/nccl.args")" = "-b 8 -e 1G -f 2 -g 4" ] || fail "all_reduce_perf args: $(cat "$T/nccl.args")"
[ "$(cat "$T/dcgmi.args")" = "diag -r 2" ] || fail "dcgmi args: $(cat "$T/dcgmi.args")"
grep -q "^nccl-all-reduce	ok	nccl-tests$" "$T/out/results.tsv" || fail "results.tsv: $(cat "$T/out/results.tsv")"
cmp -s "$T/out/nccl-all-reduce.txt" tests/data/real/nccl-tests/sn00-t00.coreweave43-nvl72.log || fail "the output was not kept as printed"
"$AGENT" bench --gpus 0 >/dev/null 2>&1
[ $? = 2 ] || fail "--gpus 0 should be refused with 2"
out=$(PATH="$T/empty" "$AGENT" bench --node sn00-t01 --cluster examples/demo-cluster.yaml --backend sim --fault slow-gpu=1)
printf '%s\n' "$out" | grep -q "^sim-benchmarks .* ok .*16 sn-bench rows" || fail "sim rows: $out"

# Through snd and the agent protocol.
"$SND" --cluster examples/demo-cluster.yaml --state "$T/snd" --listen 127.0.0.1:0 --ready-fd 3 \
    --set health_bench_interval_s=1 3>"$T/port" 2>"$T/snd.log" &
PIDS="$PIDS $!"
i=0
while [ ! -s "$T/port" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$T/port")
[ -n "$PORT" ] || { fail "snd did not start: $(cat "$T/snd.log")"; exit 1; }
SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$(cat "$T/snd/admin.token")" HOME="$T" \
    "$SN" token create --agent sn00-t00 >"$T/agent.token" || fail "agent token"
rm -f "$T/bin/all_gather_perf"
PATH="$T/bin:/usr/bin:/bin" "$AGENT" --server "127.0.0.1:$PORT" --token "$T/agent.token" \
    --node sn00-t00 --backend nvidia-smi --interval 0.2 --work-dir "$T/work" --cgroup-root none \
    --smi-command "cat '$ROOT/tests/unit/../data/telemetry/smi_query_units.csv'; :" \
    --status "$T/status.json" 2>"$T/agent.log" &
PIDS="$PIDS $!"
shipped() { grep -q '"benchmarks":[2-9]' "$T/status.json" 2>/dev/null && grep -q '"buffered":0' "$T/status.json"; }
i=0
until shipped; do
    i=$((i + 1))
    [ $i -gt 300 ] && break
    sleep 0.1
done
shipped || fail "the agent did not ship the runners' outputs: $(cat "$T/status.json" 2>/dev/null); $(tail -3 "$T/agent.log")"
grep -q '"rejected":0' "$T/status.json" || fail "snd refused a batch: $(cat "$T/status.json"); $(grep refused "$T/agent.log" | head -3)"
[ -s "$T/work/bench/nccl-all-reduce.txt" ] || fail "no runner output under the work dir"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "agent_bench: missing tools are not-available; real nccl-tests and dcgmi outputs are read by the same parsers and reach snd"
