#!/bin/sh
# Token keys and revocations through a real snd on 127.0.0.1 (the snd
# binary sits next to sn in the build directory); docs/operations.md
# "Token keys" and "Revocations".
#  1. Key rotation: a tenant token A and an agent token G of key 0, `sn admin
#     rotate-key`; A, G and the old admin token still verify, a new token B
#     names key 1, admin.token is replaced; the rotation is audited; after a
#     restart the ring (token.keys, 0600) still holds both keys; with the
#     retirement moved past the window A and G get 401 naming key 0 while B
#     works; two rotations inside a window retire the oldest at once; with
#     key_overlap_s=2 a token of the previous key gets 401 once 2 s passed.
#     A ring file readable by others, or malformed, stops the start.
#  2. Revocations: revoke T1, back up, revoke T2, restore the backup: T2 is
#     still refused (re-applied from token.revoked) and state.db has it
#     again; a malformed token.revoked stops the start with what to do.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-keys-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for tool in curl jq; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

start_snd() {
    rm -f "$D/port"
    "$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
        --set sched_event_delay_ms=0 "$@" --ready-fd 3 3>"$D/port" 2>>"$D/snd.log" &
    PID=$!
    i=0
    while [ ! -s "$D/port" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
    PORT=$(cat "$D/port")
    [ -n "$PORT" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
    URL="http://127.0.0.1:$PORT"
    ADMIN=$(cat "$D/state/admin.token")
}
stop_snd() {
    kill "$PID"
    wait "$PID"
    st=$?
    [ "$st" = 0 ] || fail "snd exited $st on SIGTERM: $(tail -20 "$D/snd.log")"
    PID=
}
# api METHOD PATH TOKEN [BODY]: prints the status; the body goes to $D/body.
api() {
    if [ "$1" = GET ]; then
        curl -s -o "$D/body" -w '%{http_code}' -H "Authorization: Bearer $3" "$URL$2"
    else
        curl -s -o "$D/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $3" \
            -H 'Content-Type: application/json' --data-binary "${4-{\}}" "$URL$2"
    fi
}
admin() { # admin METHOD PATH [BODY]
    m=$1 p=$2
    shift 2
    api "$m" "$p" "$ADMIN" "$@"
}
issue() { # issue KIND SUBJECT SCOPES: a token in $TOK, its id in $TID
    [ "$(admin POST /v1/tokens "{\"kind\":\"$1\",\"subject\":\"$2\",\"scopes\":\"$3\",\"ttl_s\":3600}")" = 201 ] ||
        fail "token for $2: $(cat "$D/body")"
    TID=$(jq -r .id "$D/body")
    TOK=$(jq -r .token "$D/body")
}
expect() { # expect STATUS LABEL METHOD PATH TOKEN [REGEX]: the answer and its message
    got=$(api "$3" "$4" "$5")
    [ "$got" = "$1" ] || fail "$2: $3 $4 answered $got, expected $1: $(cat "$D/body")"
    if [ $# -ge 6 ] && ! grep -Eq "$6" "$D/body"; then
        fail "$2: the answer lacks /$6/: $(cat "$D/body")"
    fi
}
rotate() { # sn admin rotate-key with the current admin token; output in $D/rot
    SN_SERVER=$URL SN_TOKEN=$(cat "$D/state/admin.token") "$SN" admin rotate-key >"$D/rot" 2>&1 ||
        fail "sn admin rotate-key: $(cat "$D/rot")"
}
mode_of() { stat -c %a "$1"; }

# ---- 1. key rotation --------------------------------------------------------
start_snd
[ "$(mode_of "$D/state/token.keys")" = 600 ] || fail "token.keys has mode $(mode_of "$D/state/token.keys")"
grep -q '^key 0 [0-9a-f]\{64\} current$' "$D/state/token.keys" || fail "ring: $(cat "$D/state/token.keys")"
[ "$(admin POST /v1/tenants '{"name":"acme","prefix":"/data/acme"}')" = 201 ] || fail "tenant acme"
issue tenant acme jobs:read,jobs:write
A=$TOK
case "$A" in sn2.0.*) ;; *) fail "a token of key 0 reads '$A'" ;; esac
issue agent sn00-t00 telemetry:write,cluster:read
G=$TOK
OLD_ADMIN=$ADMIN
rotate
grep -q '^token key 1 is current; key 0 verifies until [0-9]* (86400 s)$' "$D/rot" ||
    fail "rotate-key printed: $(cat "$D/rot")"
grep -q "^admin token: $D/state/admin.token$" "$D/rot" || fail "rotate-key printed: $(cat "$D/rot")"
ADMIN=$(cat "$D/state/admin.token")
case "$ADMIN" in sn2.1.*) ;; *) fail "admin.token after the rotation reads '$ADMIN'" ;; esac
[ "$(mode_of "$D/state/admin.token")" = 600 ] || fail "admin.token has mode $(mode_of "$D/state/admin.token")"
expect 200 "A inside the window" GET /v1/jobs "$A"
expect 200 "G inside the window" GET /v1/agents "$G"
expect 200 "the old admin token inside the window" GET /v1/tenants "$OLD_ADMIN"
issue tenant acme jobs:read
B=$TOK
case "$B" in sn2.1.*) ;; *) fail "a token after the rotation reads '$B'" ;; esac
expect 200 "B" GET /v1/jobs "$B"
admin GET "/v1/audit?route=POST%20/v1/admin/rotate-key" >/dev/null
[ "$(jq '[.items[] | select(.status == 200 and .target == "key 1" and .actor == "admin:admin")] | length' "$D/body")" = 1 ] ||
    fail "the rotation's audit row: $(cat "$D/body")"
stop_snd

# The ring survives a restart.
start_snd
grep -q '^key 1 [0-9a-f]\{64\} current$' "$D/state/token.keys" || fail "ring: $(cat "$D/state/token.keys")"
grep -q '^key 0 [0-9a-f]\{64\} retired [0-9]*$' "$D/state/token.keys" || fail "ring: $(cat "$D/state/token.keys")"
expect 200 "A after a restart" GET /v1/jobs "$A"
expect 200 "B after a restart" GET /v1/jobs "$B"
stop_snd

# Past the window (the retirement moved 25 h back): A and G are refused.
RETIRED=$(sed -n 's/^key 0 .* retired \([0-9]*\)$/\1/p' "$D/state/token.keys")
sed -i "s/ retired $RETIRED\$/ retired $((RETIRED - 90000))/" "$D/state/token.keys"
start_snd
expect 401 "A past the window" GET /v1/jobs "$A" 'signed with key 0, retired at [0-9]+: its overlap window of 86400 s ended'
expect 401 "G past the window" GET /v1/agents "$G" 'signed with key 0'
expect 401 "the old admin token past the window" GET /v1/tenants "$OLD_ADMIN" 'signed with key 0'
expect 200 "B past key 0's window" GET /v1/jobs "$B"
admin GET "/v1/audit?status=401&route=GET%20/v1/agents" >/dev/null
jq -e '.items[-1].detail | test("signed with key 0")' "$D/body" >/dev/null || fail "G's refusal audit: $(cat "$D/body")"

# Two rotations inside a window: the oldest (key 1, B's) is retired at once.
rotate
ADMIN=$(cat "$D/state/admin.token")
expect 200 "B after one more rotation" GET /v1/jobs "$B"
rotate
grep -q '^key 1 is retired now: its tokens get 401$' "$D/rot" || fail "rotate-key printed: $(cat "$D/rot")"
ADMIN=$(cat "$D/state/admin.token")
expect 401 "B after a second rotation in the window" GET /v1/jobs "$B" 'signed with key 1, which is retired \(the current key is 3'
expect 200 "the admin token of key 3" GET /v1/tenants "$ADMIN"
stop_snd

# A short window in the live daemon: C (key 3) gets 401 once 2 s passed.
start_snd --set key_overlap_s=2
issue tenant acme jobs:read
C=$TOK
rotate
ADMIN=$(cat "$D/state/admin.token")
i=0
while [ "$(api GET /v1/jobs "$C")" = 200 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
expect 401 "C after its 2 s window" GET /v1/jobs "$C" 'key 3, retired at [0-9]+: its overlap window of 2 s ended'
expect 200 "the admin token of key 4" GET /v1/tenants "$ADMIN"
stop_snd

# A ring that others may read, or a malformed one, stops the start (exit 2).
chmod 644 "$D/state/token.keys"
"$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 2>"$D/err"
st=$?
[ "$st" = 2 ] && grep -q "token.keys' has mode 0644" "$D/err" || fail "a 0644 ring: exit $st, $(cat "$D/err")"
chmod 600 "$D/state/token.keys"
cp "$D/state/token.keys" "$D/ring.good"
sed -i 's/ current$/ current!/' "$D/state/token.keys"
"$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 2>"$D/err"
st=$?
[ "$st" = 2 ] && grep -q "token.keys:2:[0-9]*: expected the line's end" "$D/err" ||
    fail "a malformed ring: exit $st, $(cat "$D/err")"
cp "$D/ring.good" "$D/state/token.keys"

# ---- 2. revocations survive a restore ------------------------------------
start_snd
issue tenant acme jobs:read
T1=$TOK T1_ID=$TID
issue tenant acme jobs:read
T2=$TOK T2_ID=$TID
[ "$(admin POST "/v1/tokens/$T1_ID/revoke")" = 200 ] || fail "revoke T1: $(cat "$D/body")"
GEN1=$(sed -n 's/^generation //p' "$D/state/token.revoked")
SN_SERVER=$URL SN_TOKEN=$ADMIN "$SN" admin backup "$D/older.db" >/dev/null || fail "backup"
[ "$(admin POST "/v1/tokens/$T2_ID/revoke")" = 200 ] || fail "revoke T2: $(cat "$D/body")"
[ "$(sed -n 's/^generation //p' "$D/state/token.revoked")" = $((GEN1 + 1)) ] ||
    fail "the generation after T2: $(cat "$D/state/token.revoked")"
grep -qx "$T2_ID" "$D/state/token.revoked" || fail "T2 not in token.revoked: $(cat "$D/state/token.revoked")"
[ "$(mode_of "$D/state/token.revoked")" = 600 ] || fail "token.revoked has mode $(mode_of "$D/state/token.revoked")"
expect 401 "T2 revoked" GET /v1/jobs "$T2" 'revoked'
stop_snd
# The restore of the older backup (docs/operations.md).
rm -f "$D/state/state.db-wal" "$D/state/state.db-shm"
cp "$D/older.db" "$D/state/state.db"
start_snd
grep -q "state.db lacked 1 of the 2 revocations in $D/state/token.revoked (generation $((GEN1 + 1))" "$D/snd.log" ||
    fail "no re-apply message: $(tail -5 "$D/snd.log")"
expect 401 "T2 after restoring an older backup" GET /v1/jobs "$T2" "token '$T2_ID' has been revoked"
expect 401 "T1 after restoring an older backup" GET /v1/jobs "$T1" 'revoked'
stop_snd
# state.db has T2 again: a list rebuilt from it alone still refuses T2.
mv "$D/state/token.revoked" "$D/revoked.good"
start_snd
grep -qx "$T2_ID" "$D/state/token.revoked" || fail "state.db lacks T2: $(cat "$D/state/token.revoked")"
expect 401 "T2 from state.db alone" GET /v1/jobs "$T2" 'revoked'
stop_snd
# A malformed list stops the start and says what to do.
printf 'sn-revocations 1\ngeneration 2\nnot-hex\n' >"$D/state/token.revoked"
chmod 600 "$D/state/token.revoked"
"$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 2>"$D/err"
st=$?
[ "$st" = 2 ] && grep -q "token.revoked:3:1: expected a token id" "$D/err" &&
    grep -q "delete it to rebuild it from state.db" "$D/err" ||
    fail "a malformed token.revoked: exit $st, $(cat "$D/err")"

[ $fails = 0 ] && echo "token keys: all checks passed"
exit $((fails > 0))
