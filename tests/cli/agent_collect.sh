#!/bin/sh
# The sn-agent host collectors (cmd/sn-agent/collect_host.c) on this
# machine's real /proc and /sys, checked against the files themselves, and
# on a captured mlx5/IB tree (tests/data/host/procfs-mlx5), whose slow and
# narrow ports sn health names. The agent's --collect output is the batches
# it sends snd; sn health analyze reads them as any other input.
#
#   agent_collect.sh SN_BINARY      (from the repository root; sn-agent is
#                                    beside it)
set -u
sn=$1
agent=$(dirname "$sn")/sn-agent
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL agent_collect: $*"
    exit 1
}

# ---- this machine -------------------------------------------------------------
"$agent" --collect "$tmp" --node sn00-t00 >"$tmp/avail.out" 2>&1 || { cat "$tmp/avail.out"; fail "--collect on / failed"; }
irq=$tmp/sn00-t00.interrupts.txt
sys=$tmp/sn00-t00.sysfs.txt
[ -s "$irq" ] || fail "no interrupts batch on this machine"
# interrupts: the same header and the same interrupt lines (labels) as /proc/interrupts
[ "$(head -1 "$irq")" = "$(head -1 /proc/interrupts)" ] || fail "the interrupts header differs from /proc/interrupts"
labels() { awk -F: 'NF > 1 && $1 ~ /^ *[0-9]+$/ { gsub(/ /, "", $1); print $1 }' "$1" | sort; }
awk '/^ *[0-9]+:/' "$irq" >"$tmp/irq.rows"
awk '/^ *[0-9]+:/' /proc/interrupts >"$tmp/proc.rows"
[ "$(labels "$tmp/irq.rows")" = "$(labels "$tmp/proc.rows")" ] || fail "device interrupts differ from /proc/interrupts"
# softirqs: NET_RX with one count per CPU column of /proc/softirqs
ncpu=$(head -1 /proc/softirqs | wc -w)
got=$(awk '$1 == "NET_RX:" { print NF - 1 }' "$irq")
[ "$got" = "$ncpu" ] || fail "NET_RX has '$got' counts, /proc/softirqs has $ncpu CPUs"
# CPU time: every per-CPU line of /proc/stat
[ "$(grep -c '^cpu[0-9]' "$irq")" = "$(grep -c '^cpu[0-9]' /proc/stat)" ] || fail "per-CPU /proc/stat lines differ"
# governor: the value of cpufreq, or "not available" (a VM has no cpufreq)
gov=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
if [ -r "$gov" ]; then
    grep -qx "$gov:$(cat "$gov")" "$sys" || fail "governor of cpu0 not '$(cat "$gov")'"
else
    grep -q '^governor  *not available$' "$tmp/avail.out" || { cat "$tmp/avail.out"; fail "no cpufreq here, yet governor not reported not available"; }
    ! grep -q scaling_governor "$sys" 2>/dev/null || fail "a governor line without cpufreq"
fi
grep -q '^interrupts  *1 files$' "$tmp/avail.out" || fail "interrupts not reported read"
# sn health reads every line it can: one record per device interrupt, NET_RX
# and NET_TX, and two per CPU of /proc/stat
want=$(( $(wc -l <"$tmp/irq.rows") + 2 + 2 * $(grep -c '^cpu[0-9]' "$irq") ))
"$sn" health analyze --cluster examples/good-64.yaml "$irq" >"$tmp/a.out" 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$tmp/a.out"; fail "analyze of this machine's batch: exit $rc"; }
grep -q "^input $irq: proc-interrupts, [0-9]* lines, $want records" "$tmp/a.out" ||
    { head -3 "$tmp/a.out"; fail "analyze did not read $want records from this machine's batch"; }

# ---- the captured mlx5/IB tree ----------------------------------------------
rm -f "$tmp"/*.txt
"$agent" --collect "$tmp" --node sn00-t01 --host-root tests/data/host/procfs-mlx5 >"$tmp/avail.out" 2>&1 ||
    fail "--collect on the captured tree failed"
for item in interrupts softirqs cpu-time governor numa irq-affinity; do
    grep -q "^$item  *not available$" "$tmp/avail.out" || { cat "$tmp/avail.out"; fail "$item not 'not available' on the captured tree"; }
done
grep -q '^infiniband  *86 files$' "$tmp/avail.out" || { cat "$tmp/avail.out"; fail "infiniband files of the tree"; }
grep -q '^kernel-log  *1 files$' "$tmp/avail.out" || { cat "$tmp/avail.out"; fail "the tree's kernel log"; }
"$sn" health analyze --cluster examples/good-64.yaml -f kernel-log "$tmp/sn00-t01.kmsg.log" >"$tmp/k.out" 2>&1
grep -q "^warning   link-flap  *sn00-t01 .*swp1 went down 2 times and up 1 times" "$tmp/k.out" ||
    { cat "$tmp/k.out"; fail "captured tree: the flapping link was not named"; }
[ ! -e "$tmp/sn00-t01.interrupts.txt" ] || fail "an interrupts batch without /proc"
grep -qx '/sys/class/infiniband/mlx5_0/ports/1/rate:25 Gb/sec (1X EDR)' "$tmp/sn00-t01.sysfs.txt" || fail "the tree's path is not stripped of its root"
"$sn" health analyze --cluster examples/good-64.yaml "$tmp/sn00-t01.sysfs.txt" >"$tmp/b.out" 2>&1
rc=$?
[ "$rc" = 1 ] || { cat "$tmp/b.out"; fail "captured tree: exit $rc, want 1 (findings)"; }
grep -q "^warning   net-link-slow  *sn00-t01 .*mlx4_0 port 1 active at 40 Gb/s, the spec's NIC rate is 400 Gb/s (3 of 3 active ports)" "$tmp/b.out" ||
    { cat "$tmp/b.out"; fail "captured tree: the slow ports were not named"; }
echo "agent_collect: this machine's interrupts, softirqs, CPU time and governor match /proc; the captured tree's slow ports and flapping link are found"
