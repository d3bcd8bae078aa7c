#!/bin/sh
# One-host binding (docs/health.md "One-host files"): a file named after a
# server whose content names one host the inventory does not know is read as
# that server, with a note; --host binds explicitly and is checked; a GPU
# given two UUIDs by two files is a gpu-uuid-conflict finding, the same
# whatever the order of the files. The three real files are the ones that
# made lib/health order dependent once: dcgm-exporter text of host
# "workstation" (GPU 0, one UUID), a kernel log with GPU 01:00.0 fallen off
# the bus, and an nvidia-smi CSV giving GPU 0 (bus 01:00.0) another UUID.
set -u
sn=${1:?usage: health_bind.sh SN_BINARY}
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=tests/data/real
prom=$d/dcgm-exporter/sn00-t00.dcgm-exporter239-xid-count.prom
kmsg=$d/kernel-log/sn00-t00.bumblebee554-gpu-at-fallen-off.log
csv=$d/nvidia-smi-csv/sn00-t00.gpu-exporter-query.csv
spec=examples/good-64.yaml
fail() { echo "FAIL: $*"; exit 1; }

"$sn" health analyze --cluster $spec "$prom" "$kmsg" "$csv" >"$tmp/fwd" 2>&1
a=$?
"$sn" health analyze --cluster $spec "$csv" "$kmsg" "$prom" >"$tmp/rev" 2>&1
b=$?
[ "$a" = 1 ] && [ "$b" = 1 ] || fail "exit $a forwards, $b backwards (want 1: findings)"
grep -v '^input ' "$tmp/fwd" >"$tmp/fwd.f"
grep -v '^input ' "$tmp/rev" >"$tmp/rev.f"
diff -u "$tmp/fwd.f" "$tmp/rev.f" || fail "the findings depend on the order of the files"
grep -q "^input $prom: .*; bound by file name to sn00-t00 (content names workstation, line 3)$" \
    "$tmp/fwd" || fail "no binding note for $prom"
grep -q '^warning   gpu-uuid-conflict     sn00-t00-gpu0 .*GPU-b9f9e81b-bee7-34bc-af17-132ef6592740.*GPU-df6e7a7c\|^warning   gpu-uuid-conflict     sn00-t00-gpu0 .*GPU-df6e7a7c-7314-46f8-abc4-b88b36dcf3aa.*GPU-b9f9e81b' \
    "$tmp/fwd" || fail "no gpu-uuid-conflict naming both UUIDs on sn00-t00-gpu0"
grep -q '^critical  gpu-off-bus           sn00-t00-gpu0 ' "$tmp/fwd" ||
    fail "the kernel log's Xid 79 is not on sn00-t00-gpu0"
grep -q '^warning   xid-unknown           sn00-t00-gpu0 ' "$tmp/fwd" ||
    fail "the bound dcgm-exporter Xid is not on sn00-t00-gpu0"
grep -q 'hosts unresolved 0' "$tmp/fwd" || fail "a host stayed unresolved"

# --host: binds the files that follow; checked against the cluster.
"$sn" health analyze --cluster $spec --host sn01-t03 "$prom" >"$tmp/host" 2>&1
[ $? = 1 ] || fail "--host sn01-t03: exit not 1"
grep -q "bound by --host to sn01-t03 (content names workstation" "$tmp/host" ||
    fail "--host: no note"
grep -q '^warning   xid-unknown           sn01-t03-gpu0 ' "$tmp/host" ||
    fail "--host: finding not on sn01-t03-gpu0"
"$sn" health analyze --cluster $spec --host gpu-node-17 "$prom" >"$tmp/bad" 2>&1
[ $? = 2 ] || fail "--host naming no server: exit not 2"
grep -q "^sn health analyze: --host 'gpu-node-17' (for $prom): names no server of the cluster" \
    "$tmp/bad" || fail "--host naming no server: message"
"$sn" health analyze --cluster $spec "$prom" --host >"$tmp/bare" 2>&1
[ $? = 2 ] || fail "bare --host: exit not 2"
grep -q '^sn health analyze: --host needs a value$' "$tmp/bare" || fail "bare --host: message"
"$sn" health analyze --cluster $spec --host '' "$prom" >"$tmp/empty" 2>&1
[ $? = 2 ] || fail "--host '': exit not 2"

# Several unknown hosts in one file: not bound, located.
two=$tmp/sn00-t01.two-hosts.prom
sed 's/Hostname="workstation"/Hostname="node-a"/' "$prom" >"$two"
sed 's/Hostname="workstation"/Hostname="node-b"/; s/gpu="0"/gpu="1"/; s/GPU-b9f9/GPU-c9f9/' "$prom" |
    grep -v '^#' >>"$two"
"$sn" health analyze --cluster $spec "$two" >"$tmp/two" 2>&1
[ $? = 2 ] || fail "two unknown hosts: exit not 2 (nothing judged)"
grep -q "not bound to sn00-t01: content names 2 hosts the inventory does not know (node-a line 3, node-b line 4)" \
    "$tmp/two" || fail "two unknown hosts: no located refusal note"
grep -q "^hosts not resolved to the cluster, not judged: 2 " "$tmp/two" ||
    fail "two unknown hosts: not both listed as unresolved"

# Two files binding one name to two servers: bound to neither.
cp "$prom" "$tmp/sn00-t02.a.prom"
cp "$prom" "$tmp/sn00-t03.b.prom"
"$sn" health analyze --cluster $spec "$tmp/sn00-t02.a.prom" "$tmp/sn00-t03.b.prom" >"$tmp/disp" 2>&1
[ $? = 2 ] || fail "disputed binding: exit not 2"
[ "$(grep -c 'not bound: workstation (line 3) is bound by another input to another server' "$tmp/disp")" = 2 ] ||
    fail "disputed binding: notes"
# Two files of one host giving its GPU 0 two UUIDs (no binding involved):
# both kept, the same findings in either order, and the conflict reported.
cp "$csv" "$tmp/sn00-t03.a.csv"
sed 's/GPU-df6e7a7c/GPU-0e6f7a7c/' "$csv" >"$tmp/sn00-t03.b.csv"
"$sn" health analyze --cluster $spec "$tmp/sn00-t03.a.csv" "$tmp/sn00-t03.b.csv" >"$tmp/ab" 2>&1
"$sn" health analyze --cluster $spec "$tmp/sn00-t03.b.csv" "$tmp/sn00-t03.a.csv" >"$tmp/ba" 2>&1
grep -v '^input ' "$tmp/ab" >"$tmp/ab.f"
grep -v '^input ' "$tmp/ba" >"$tmp/ba.f"
diff -u "$tmp/ab.f" "$tmp/ba.f" || fail "one host's two UUIDs for GPU 0 depend on the file order"
grep -q '^warning   gpu-uuid-conflict     sn00-t03-gpu0 .*GPU-0e6f7a7c-.*GPU-df6e7a7c-' "$tmp/ab" ||
    fail "no gpu-uuid-conflict for one host's two UUIDs"
echo "health_bind: order, note, --host, several and disputed bindings, one host's two UUIDs checked"
