#!/bin/sh
# sn health watch follows a file that grows between polls: the first poll
# sees a healthy fleet; the test then appends a row (sn00-t01 gpu2 with two
# uncorrectable ECC errors) and sends SIGUSR1, which makes watch poll at once
# instead of after its 10-minute interval; the second (last, --polls 2) poll
# must report the new finding. Synchronised on watch's own output through a
# FIFO, so nothing waits on the clock.
#
#   health_watch.sh SN_BINARY      (from the repository root)
set -u
sn=$1
tmp=$(mktemp -d)
pid=''
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL health_watch: $*"
    exit 1
}
cp tests/data/health/healthy.csv "$tmp/fleet.csv"
mkfifo "$tmp/out"
"$sn" health watch --cluster examples/good-64.yaml --polls 2 --interval-ms 600000 \
    "$tmp/fleet.csv" >"$tmp/out" 2>&1 &
pid=$!
exec 3<"$tmp/out"
# Reads are bounded by timeout(1): a watch that hangs fails the test in 60 s.
# Only the first poll's one line is in the FIFO when head reads it.
first=$(timeout 60 head -n 1 <&3) || fail "no output from the first poll"
[ "$first" = "poll 1: findings 0 (critical 0, warning 0), excluded GPUs 0" ] ||
    fail "first poll: '$first'"
printf '%s\n' "sn00-t01: 2024/05/01 12:01:00.000, 2, GPU-5f1c0a6e-8f3d-4b0e-9a7e-000000000010, 00000000:3A:00.0, NVIDIA H100 80GB HBM3, 63, 698.00 W, 100 %, 1980 MHz, 70002 MiB, 5, 5, 16, 16, 0x0000000000000000, 2, No, No" >>"$tmp/fleet.csv"
kill -USR1 "$pid" || fail "watch ended after one poll"
rest=$(timeout 60 cat <&3) || fail "the second poll never came"
wait "$pid"
rc=$?
pid=''
[ "$rc" = 0 ] || fail "exit status $rc"
want="poll 2: findings 1 (critical 1, warning 0), excluded GPUs 1
  ecc-dbe sn00-t01-gpu2 reset-gpu"
[ "$rest" = "$want" ] || fail "second poll:
$rest
expected:
$want"
echo "health_watch: ok"
