#!/bin/sh
# Property: the order of the input files never changes the findings. Every
# file of the real corpus (tests/data/real/, byte for byte) goes through one
# sn health analyze, forwards and backwards; the findings and scores
# (everything but the per-input lines, which follow the argument order) must
# be the same bytes. DCGM results that name no GPU, Xids that need another file's bus
# ids and nccl runs over several files are where order used to matter.
set -u
sn=${1:?usage: health_real_order.sh SN_BINARY}
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each file of a format folder gets its own server of the cluster (the host
# is the file name up to its first dot), so that no two snapshots of one
# kind claim the same host: a host's files of different kinds (its CSV, its
# topo -m, its dmesg, its nccl-tests log) are what is permuted.
hosts="sn00-t00 sn00-t01 sn00-t02 sn00-t03 sn01-t00 sn01-t01 sn01-t02 sn01-t03"
for dir in tests/data/real/*/; do
    d=$(basename "$dir")
    mkdir -p "$tmp/in/$d"
    set -- $hosts
    for f in $(find "$dir" -type f | LC_ALL=C sort); do
        [ $# -gt 0 ] || set -- $hosts
        b=$(basename "$f")
        cp "$f" "$tmp/in/$d/$1.${b#*.}"
        shift
    done
done
files=$(find "$tmp/in" -type f | LC_ALL=C sort)
rev=$(printf '%s\n' $files | LC_ALL=C sort -r)
# shellcheck disable=SC2086
"$sn" health analyze --cluster examples/good-64.yaml $files >"$tmp/fwd" 2>/dev/null
a=$?
# shellcheck disable=SC2086
"$sn" health analyze --cluster examples/good-64.yaml $rev >"$tmp/rev" 2>/dev/null
b=$?
[ "$a" = "$b" ] || { echo "FAIL: exit $a forwards, $b backwards"; exit 1; }
grep -v '^input ' "$tmp/fwd" >"$tmp/fwd.f"
grep -v '^input ' "$tmp/rev" >"$tmp/rev.f"
n=$(grep -c '' "$tmp/fwd.f")
[ "$n" -gt 10 ] || { echo "FAIL: only $n lines of output"; cat "$tmp/fwd"; exit 1; }
grep -q 'nccl-wrong-results' "$tmp/fwd.f" || { echo "FAIL: the corpus gave no nccl-wrong-results"; exit 1; }
if ! diff -u "$tmp/fwd.f" "$tmp/rev.f"; then
    echo "FAIL: the findings depend on the order of the input files"
    exit 1
fi
echo "health_real_order: $(grep -c . "$tmp/fwd.f") lines, same both ways"
