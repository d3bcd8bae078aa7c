#!/bin/sh
# End-to-end test of sn demo --ha (docs/cmd-demo.md, "High availability"):
# PostgreSQL, two snd and sim agents; the leader is killed mid-run and the
# standby must take over with every job kept and completed.
#   sh tests/cli/demo_ha.sh path/to/sn   (snd and sn-agent beside it)
# Exit 77 (skipped) when PostgreSQL's server binaries are not installed.
set -u
SN=$1
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "SKIPPED: PostgreSQL is not installed (Debian: apt-get install postgresql)"
    exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 240 "$SN" demo --ha --jobs 8 >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" = 0 ] || fail "sn demo --ha exited $rc, want 0"
grep -q "^snd b took over in [0-9]* ms$" "$out" || fail "no takeover line"
grep -q "^before:  8 jobs:" "$out" || fail "before: not 8 jobs"
grep -q "^after:   8 jobs:" "$out" || fail "after: not 8 jobs"
grep -q "^end:     8 jobs: 0 pending, 0 running, 8 completed, 0 other$" "$out" || fail "not all completed"
grep -q "^ok: every acknowledged job survived the takeover and completed$" "$out" || fail "no ok line"
# bad flags: exit 2 with a message
"$SN" demo --ha --jobs 0 >/dev/null 2>"$out"; rc=$?
[ "$rc" = 2 ] || fail "--jobs 0: exit $rc, want 2"
grep -q "expected 1 to 1000" "$out" || fail "--jobs 0: no message"
echo "demo_ha: ok"
