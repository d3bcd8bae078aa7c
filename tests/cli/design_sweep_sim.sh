#!/bin/sh
# scripts/sweep-sim on the ITP trace excerpt (tests/data/traces; skipped
# when it is absent): the sweep of Llama 3 8B on 64 GPUs of the standard
# unit at sizes 8 and 64, each size's cluster replayed by sn sim with the
# sweep's own job and with the trace. Checks the whole report against its
# golden (tests/cli/golden/design_sweep_sim/excerpt.out; regenerate with
# SN_UPDATE_GOLDEN=1), and, independently of the script, that each row's
# cluster is the sweep's job domains plus its spares and that its trace
# figures are those of sn sim run directly on that cluster.
set -u
sn=${1:?usage: design_sweep_sim.sh SN_BINARY}
cd "$(dirname "$0")/../.." || exit 1
trace=tests/data/traces/microsoft-itp/cluster04-300.csv
golden=tests/cli/golden/design_sweep_sim/excerpt.out
if [ ! -f "$trace" ]; then
    echo "design_sweep_sim: skipped ($trace absent)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh scripts/sweep-sim --sn "$sn" --trace "itp:$trace" examples/std-unit-64.yaml 8,64 \
    llama3-8b 64 64 >"$tmp/out" 2>&1 || { echo "FAIL: sweep-sim exited $?"; cat "$tmp/out"; exit 1; }
if [ "${SN_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$tmp/out" "$golden"
elif ! diff -u "$golden" "$tmp/out"; then
    echo "FAIL: sweep-sim output differs from $golden"
    exit 1
fi
"$sn" design sweep examples/std-unit-64.yaml --supernode-size 8,64 --model llama3-8b --gpus 64 \
    --global-batch 64 >"$tmp/sweep" || { echo "FAIL: sn design sweep"; exit 1; }
fail=0
for size in 8 64; do
    spares=$(awk -v s="$size" '$1 == s && /^  [0-9]/ { print $11 }' "$tmp/sweep")
    shape="$(((64 + size - 1) / size + spares))x$((size / 8))x8"
    row=$(awk -v s="$size" '$1 == s' "$tmp/out")
    case "$row" in
    *" $shape "*) ;;
    *) echo "FAIL: size $size: want cluster $shape in '$row'"; fail=1 ;;
    esac
    util=$("$sn" sim --cluster "shape:$shape" --trace "itp:$trace" --limit-jobs 300 --seed 1 |
        awk 'index($0, "GPU utilisation") == 1 { print $NF }')
    [ "$(printf '%s\n' "$row" | awk '{ print $NF }')" = "$util" ] ||
        { echo "FAIL: size $size: trace utilisation is not sn sim's $util: '$row'"; fail=1; }
done
[ "$(grep -c '^  [0-9]' "$tmp/out")" = 2 ] || { echo "FAIL: want 2 size rows"; fail=1; }
[ $fail = 0 ] && echo "design_sweep_sim: passed"
exit $fail
