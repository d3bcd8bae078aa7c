#!/bin/sh
# Property: a CSV whose last row is cut short never gives gpu-missing (or any
# finding) for GPUs the file does not fully name. The real corpus file
# nvidia-smi-csv/sn00-t00.gpu-exporter-query.csv (two GPUs, index last) is
# cut at every byte of its last row; each cut is analysed alone. Whole, the
# file enumerates sn00-t00's GPUs (2 of 8: gpu-missing for the other six,
# which shows the check can fire); cut, it is an excerpt: no gpu-missing,
# the cut is reported as truncated, and GPU 0 (whole row) is still read.
set -u
sn=${1:?usage: health_cut_row.sh SN_BINARY}
cd "$(dirname "$0")/../.." || exit 1
src=tests/data/real/nvidia-smi-csv/sn00-t00.gpu-exporter-query.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sn" health analyze --cluster examples/good-64.yaml "$src" >"$tmp/whole" 2>&1
grep -q 'gpu-missing' "$tmp/whole" || { echo "FAIL: the whole file gave no gpu-missing"; exit 1; }
total=$(wc -c <"$src")
last_start=$(($(head -n 2 "$src" | wc -c) + 1))
# Cuts from the second cell of the last row to just before its end: every
# fifth byte, and each of its last three (inside the index, after its comma).
n=0
for cut in $(seq $((last_start + 45)) 5 $((total - 4))) $((total - 4)) $((total - 3)) $((total - 2)); do
    f="$tmp/sn00-t00.cut.csv"
    head -c "$cut" "$src" >"$f"
    "$sn" health analyze --cluster examples/good-64.yaml "$f" >"$tmp/out" 2>&1
    if grep -q 'gpu-missing' "$tmp/out"; then
        echo "FAIL: cut at byte $cut gave gpu-missing"
        cat "$tmp/out"
        exit 1
    fi
    grep -q 'truncated 1' "$tmp/out" || { echo "FAIL: cut at byte $cut: no truncated skip"; cat "$tmp/out"; exit 1; }
    grep -q 'GPUs with evidence [12] of 64' "$tmp/out" || { echo "FAIL: cut at byte $cut: GPU 0 not read"; cat "$tmp/out"; exit 1; }
    n=$((n + 1))
done
echo "health_cut_row: $n cuts of the last row, none gave gpu-missing"
