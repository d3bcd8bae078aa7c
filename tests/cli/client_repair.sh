#!/bin/sh
# End-to-end test of `sn repair` against a real snd on 127.0.0.1
# (examples/std-unit-64.yaml, no agents): recording replacements (the old
# part's record closed, the new part in the slot), the history and repair
# views, the refusals (an id with a record, a re-qualification of a part that
# is not quarantined, an unknown GPU), the usage checks, and the audit rows.
# The quarantine itself, which needs telemetry, is tests/unit/test_offenders_e2e.c.
#   sh tests/cli/client_repair.sh path/to/sn   (snd is next to sn)
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(dirname "$SN")
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-repair-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() {
    want=$1 pat=$2
    shift 2
    out=$("$@" 2>&1)
    rc=$?
    [ "$rc" = "$want" ] || fail "$*: exit $rc, want $want: $out"
    printf '%s\n' "$out" | grep -Eq -- "$pat" || fail "$*: no '$pat' in: $out"
}

"$BIN/snd" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
    --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
PID=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$D/port" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
export SN_SERVER="http://127.0.0.1:$(cat "$D/port")" SN_TOKEN="$(cat "$D/state/admin.token")"
unset SN_CONFIG
export HOME="$D"

check 0 "^0 part\(s\) on record: 0 ok, 0 quarantined, 0 closed$" "$SN" repair --history
check 2 "give one of GPU, --list, --history or --requalify GPU" "$SN" repair
check 2 "give one of GPU" "$SN" repair --list --history
check 2 "--note is required" "$SN" repair sn00-t00-gpu3
check 2 "--requalify needs --acceptance FILE" "$SN" repair --requalify sn00-t00-gpu3
check 2 "--requalify needs --acceptance FILE" "$SN" repair --requalify sn00-t00-gpu3 --override
printf '{"format": "sn-health-accept"' >"$D/bad.json"
check 2 "--acceptance $D/bad.json:1:" "$SN" repair --requalify sn00-t00-gpu3 --acceptance "$D/bad.json"
check 2 "--state 'quarantine': expected ok, quarantined or closed \(did you mean 'quarantined'\?\)" \
    "$SN" repair --history --state quarantine
check 4 "no gpu 'sn99-t00-gpu0'" "$SN" repair sn99-t00-gpu0 --note x

# A replacement with its new UUID, then another: the first part's record closes.
check 0 "^repaired: part GPU-aaaa in sn00-t00-gpu3 \(ok\)$" \
    "$SN" repair sn00-t00-gpu3 --note "RMA 1" --new-part GPU-aaaa
check 0 "^GPU-aaaa +ok +sn00-t00-gpu3 +0 +20[0-9-]+T[0-9:]+Z +installed by a repair$" \
    "$SN" repair --history
check 0 "^repaired: part GPU-bbbb in sn00-t00-gpu3 \(ok\)$" \
    "$SN" repair sn00-t00-gpu3 --note "RMA 2: board swapped" --new-part GPU-bbbb
check 0 "^GPU-aaaa +closed +sn00-t00-gpu3 +0 +20[0-9-]+T[0-9:]+Z +RMA 2: board swapped; replaced by GPU-bbbb$" \
    "$SN" repair --list
check 0 "^2 part\(s\) on record: 1 ok, 0 quarantined, 1 closed$" "$SN" repair --list --gpu sn00-t00-gpu3
[ "$("$SN" repair --history --gpu sn00-t00-gpu3 | grep -c '^GPU-')" = 2 ] ||
    fail "sn repair --history --gpu: not the slot's 2 parts"
check 0 '"replaced_by": "GPU-bbbb"' "$SN" repair --list -o json
# Without a new UUID: the next one the agent reports becomes the slot's part.
check 0 "^repaired: the slot's new part is recorded when its agent reports it$" \
    "$SN" repair sn00-t00-gpu4 --note "RMA 3"

# Refusals.
check 1 "new_part 'GPU-aaaa' already has a record" \
    "$SN" repair sn00-t00-gpu5 --note x --new-part GPU-aaaa
check 1 "not quarantined" "$SN" repair --requalify sn00-t00-gpu3 --override --evidence "tested by hand"
printf '{"format": "sn-health-accept", "version": 1, "nodes": [{"node": "sn00-t00", "verdict": "accepted"}]}' >"$D/acc.json"
check 1 "not quarantined" "$SN" repair --requalify sn00-t00-gpu3 --acceptance "$D/acc.json"
check 1 "expected 1 to 63 printable characters" \
    "$SN" repair sn00-t00-gpu5 --note x --new-part "slot:x"

# Audited, and the GPU view names the slot's part.
check 0 "gpu repair" "$SN" audit
check 0 '"part": "GPU-bbbb"' "$SN" gpus --node sn00-t00 -o json

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "client_repair: all checks passed"
