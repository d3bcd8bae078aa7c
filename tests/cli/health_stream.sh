#!/bin/sh
# sn health analyze streams its inputs: a CSV file larger than 256 MiB (the
# old cut of whole-file reads) whose last row carries a double-bit ECC error
# is read to its end and the error is found; the same from stdin ('-') on
# 8 MiB (the same chunked loop; kept small so the ASan run stays short).
# The data is generated (tests/data/health/stream/smi_rows.awk) into a pipe
# and into a temporary file that is deleted at the end.
#
#   health_stream.sh SN_BINARY      (from the repository root)
set -u
sn=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL health_stream: $*"
    exit 1
}
gen() { awk -v mib="$1" -f tests/data/health/stream/smi_rows.awk; }

gen 8 | "$sn" health analyze --cluster examples/good-64.yaml -f nvidia-smi-csv - >"$tmp/pipe.out" 2>&1
rc=$?
[ "$rc" = 1 ] || { cat "$tmp/pipe.out"; fail "stdin: exit $rc, want 1 (findings)"; }
grep -q "^critical  ecc-dbe  *sn01-t03-gpu7 .*<stdin>:[0-9]*: ecc_dbe_volatile = 1" "$tmp/pipe.out" ||
    { cat "$tmp/pipe.out"; fail "stdin: the ECC error on the last row was not found"; }

gen 270 >"$tmp/big.csv"
size=$(wc -c <"$tmp/big.csv")
[ "$size" -gt 268435456 ] || fail "the generated file has $size bytes, want more than 256 MiB"
"$sn" health analyze --cluster examples/good-64.yaml "$tmp/big.csv" >"$tmp/file.out" 2>&1
rc=$?
[ "$rc" = 1 ] || { cat "$tmp/file.out"; fail "file: exit $rc, want 1 (findings)"; }
grep -q "^critical  ecc-dbe  *sn01-t03-gpu7 .*big.csv:1926018: ecc_dbe_volatile = 1" "$tmp/file.out" ||
    { cat "$tmp/file.out"; fail "file: the ECC error on the last row was not found"; }
rm -f "$tmp/big.csv"
echo "health_stream: ok (a file of $size bytes; stdin)"
