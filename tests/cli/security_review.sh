#!/bin/sh
# Security review of snd, replayed against a real daemon on 127.0.0.1 (the
# snd binary sits next to sn in the build directory). For every route of
# the table (docs/api.md, kept equal to `snd --routes` by api_routes.sh) it
# presents each wrong credential: none, malformed, forged (another key),
# expired, revoked, issued in the future, and a tenant or agent token
# without the route's scope; it checks the answer (401 or 403) and that
# exactly one audit row records it with the route, status, source address,
# token id and reason. Then the tenant-isolation refusals (another tenant's
# job read, cancelled or listed, submits for another tenant or outside the
# prefix), the sn_auth_failures_total counter, `sn audit` and its filters,
# a flood of bad tokens (429, sampled audit rows, bounded store growth),
# impossible telemetry and sequence numbers, encoded control characters in
# paths, per-tenant job caps, and the start-up refusals (state.db missing
# beside token.key, a token.key readable by others). The daemon must stay up
# throughout.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-secrev-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for tool in curl jq openssl xxd; do
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
}
# Stops snd with SIGTERM; it must exit 0 (under ASan: no leak or error report).
stop_snd() {
    kill "$PID"
    wait "$PID"
    st=$?
    [ "$st" = 0 ] || fail "snd exited $st on SIGTERM: $(tail -20 "$D/snd.log")"
    PID=
}
start_snd --set auth_fail_burst=100000
ADMIN=$(cat "$D/state/admin.token")

b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
# mint KEYFILE ID KIND SUB SCOPES IAT EXP: a token signed with KEYFILE's key.
mint() {
    p=$(printf 'id=%s&kind=%s&sub=%s&scopes=%s&iat=%s&exp=%s' "$2" "$3" "$4" "$5" "$6" "$7" | b64url)
    m=$(printf 'sn1.%s' "$p" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(xxd -p -c 64 "$1")" \
        -binary | b64url)
    printf 'sn1.%s.%s' "$p" "$m"
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

NOW=$(date +%s)
[ "$(admin POST /v1/tenants '{"name":"acme","prefix":"/data/acme"}')" = 201 ] || fail "tenant acme"
[ "$(admin POST /v1/tenants '{"name":"beta","prefix":"/data/beta"}')" = 201 ] || fail "tenant beta"
[ "$(admin POST /v1/jobs '{"name":"b","gpus":1,"tenant":"beta"}')" = 201 ] || fail "beta's job"
BJ=$(jq -r .id "$D/body")
issue() { # issue KIND SUBJECT SCOPES: a token from the API in $TOK, its id in $TID
    [ "$(admin POST /v1/tokens "{\"kind\":\"$1\",\"subject\":\"$2\",\"scopes\":\"$3\",\"ttl_s\":3600}")" = 201 ] ||
        fail "token for $2: $(cat "$D/body")"
    TID=$(jq -r .id "$D/body")
    TOK=$(jq -r .token "$D/body")
}
issue tenant acme jobs:read,jobs:write
TENANT=$TOK TENANT_ID=$TID
issue agent sn00-t00 telemetry:write
AGENT=$TOK AGENT_ID=$TID
issue tenant acme jobs:read,jobs:write
REVOKED=$TOK REVOKED_ID=$TID
[ "$(admin POST "/v1/tokens/$REVOKED_ID/revoke")" = 200 ] || fail "revoke"
head -c 32 /dev/urandom >"$D/other.key"
FORGED=$(mint "$D/other.key" 0badc0de tenant acme jobs:read,jobs:write "$NOW" $((NOW + 3600)))
EXPIRED=$(mint "$D/state/token.key" e0e0e0e0 tenant acme jobs:read $((NOW - 7200)) $((NOW - 3600)))
FUTURE=$(mint "$D/state/token.key" f0f0f0f0 admin admin admin $((NOW + 86400)) $((NOW + 90000)))
# Sanity: the minting matches snd's (a fresh one verifies).
GOOD=$(mint "$D/state/token.key" 600d600d tenant acme jobs:read "$NOW" $((NOW + 3600)))
[ "$(api GET /v1/jobs "$GOOD")" = 200 ] || fail "a token minted here does not verify: $(cat "$D/body")"

# The last audit row's sequence number.
last_seq() {
    after=0
    while :; do
        curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/audit?limit=1000&after=$after" >"$D/page"
        n=$(jq '.items | length' "$D/page")
        [ "$n" -gt 0 ] && after=$(jq '.items[-1].seq' "$D/page")
        [ "$(jq .next "$D/page")" = null ] && break
    done
    echo "$after"
}
SEQ0=$(last_seq)
# Probes are written as one curl config (one process, requests in order, each
# answered only after its audit row is durable) and the answers expected:
# probe LABEL METHOD PATH TOKEN STATUS TOKEN_ID DETAIL_REGEX [BODY]
: >"$D/curl.conf"
: >"$D/expect"
probe() {
    {
        printf 'url = "%s%s"\nrequest = "%s"\noutput = "/dev/null"\n' "$URL" "$3" "$2"
        printf 'write-out = "%%{http_code}\\n"\n'
        [ -n "$4" ] && printf 'header = "Authorization: Bearer %s"\n' "$4"
        if [ "$2" != GET ]; then
            printf 'header = "Content-Type: application/json"\n'
            printf 'data-binary = "%s"\n' "$(printf '%s' "${8-{\}}" | sed 's/"/\\"/g')"
        fi
        printf 'next\n'
    } >>"$D/curl.conf"
    printf '%s\t%s %s\t%s\t%s\t%s %s %s\n' "$5" "$2" "${3%%\?*}" "$6" "$7" "$1" "$2" "$3" >>"$D/expect"
}

# Every authenticated route, each wrong credential.
routes=$(sed -n 's/^| \(GET\|POST\|PUT\) | `\([^`?]*\)[^`]*` | \([a-z:]*\) |.*/\1 \2 \3/p' docs/api.md |
    sed 's/{[^}]*}/{}/g' | grep -v ' none$')
echo "$routes" >"$D/routes"
count=0
while read -r method pattern scope; do
    path=$(printf '%s' "$pattern" | sed "s#/v1/jobs/{}#/v1/jobs/$BJ#; s#/v1/nodes/{}/{}#/v1/nodes/sn00-t01/cordon#;
        s#/v1/gpus/{}/{}#/v1/gpus/sn00-t01-gpu0/cordon#; s#/v1/tenants/{}/quotas/{}#/v1/tenants/acme/quotas/training#;
        s#/v1/tokens/{}/revoke#/v1/tokens/abcd/revoke#; s#/v1/telemetry/gpus/{}#/v1/telemetry/gpus/sn00-t00-gpu0#;
        s#/v1/gpus/{}#/v1/gpus/sn00-t00-gpu0#; s#/v1/nodes/{}#/v1/nodes/sn00-t00#; s#/v1/agents/{}#/v1/agents/sn00-t00#;
        s#/v1/tenants/{}#/v1/tenants/acme#; s#/v1/health/rounds/{}#/v1/health/rounds/1#")
    probe none "$method" "$path" "" 401 "" "no bearer token"
    probe malformed "$method" "$path" "sn1.not-a-token" 401 "" "not a token|malformed"
    probe forged "$method" "$path" "$FORGED" 401 "" "signature does not match"
    probe expired "$method" "$path" "$EXPIRED" 401 e0e0e0e0 "expired"
    probe revoked "$method" "$path" "$REVOKED" 401 "$REVOKED_ID" "revoked"
    probe future "$method" "$path" "$FUTURE" 401 f0f0f0f0 "in the future"
    case $scope in jobs:read | jobs:write) ;; *)
        probe "tenant-token" "$method" "$path" "$TENANT" 403 "$TENANT_ID" "missing scope" ;;
    esac
    [ "$scope" = telemetry:write ] ||
        probe "agent-token" "$method" "$path" "$AGENT" 403 "$AGENT_ID" "missing scope"
    count=$((count + 1))
done <"$D/routes"
[ "$count" -ge 30 ] || fail "walked $count routes"

# Tenant isolation: another tenant's job is 404 as if absent, and audited.
probe other-tenant GET "/v1/jobs/$BJ" "$TENANT" 404 "$TENANT_ID" "another tenant"
probe other-tenant GET "/v1/jobs/$BJ/events" "$TENANT" 404 "$TENANT_ID" "another tenant"
probe other-tenant POST "/v1/jobs/$BJ/cancel" "$TENANT" 404 "$TENANT_ID" "another tenant"
probe other-tenant GET "/v1/jobs?tenant=beta" "$TENANT" 403 "$TENANT_ID" "forbidden tenant"
probe other-tenant POST /v1/jobs "$TENANT" 403 "$TENANT_ID" "another tenant" \
    '{"name":"x","gpus":1,"tenant":"beta"}'
probe outside-prefix POST /v1/jobs "$TENANT" 403 "$TENANT_ID" "path_outside_prefix data_path" \
    '{"name":"x","gpus":1,"data_path":"/data/beta/x"}'
n_probes=$(grep -c . "$D/expect")
sed -i '$d' "$D/curl.conf" # no "next" after the last request
curl -s -K "$D/curl.conf" >"$D/got" 2>"$D/curl.err" || fail "curl: $(cat "$D/curl.err")"
curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/audit?limit=1000&after=$SEQ0" |
    jq -r --arg now "$NOW" '.items[] | [.status, .action, .token_id, .source,
        (if .time_s >= ($now | tonumber) then "now" else "old" end), .detail] | @tsv' >"$D/audit"
# Answer i and audit row i against expectation i.
paste "$D/got" "$D/audit" | awk -F '\t' -v want="$D/expect" '
    { if ((getline e < want) <= 0) { print "FAIL: extra audit row: " $0; bad++; next }
      split(e, x, "\t")
      if ($1 != x[1]) { print "FAIL: " x[5] ": status " $1 ", want " x[1]; bad++ }
      if ($2 != x[1] || $3 != x[2] || $4 != x[3] || $5 != "127.0.0.1" || $6 != "now" || $7 !~ x[4]) {
          print "FAIL: " x[5] ": audit row " $2 " " $3 " token=" $4 " source=" $5 " " $6 " detail=" $7 \
                ", want " x[1] " " x[2] " token=" x[3] " detail~/" x[4] "/"; bad++ }
      n++ }
    END { while ((getline e < want) > 0) { print "FAIL: no answer or audit row for " e; bad++ }
          exit bad > 0 }' || fails=$((fails + 1))
[ "$(grep -c . "$D/got")" = "$n_probes" ] || fail "$(grep -c . "$D/got") answers for $n_probes probes"
[ "$(admin GET "/v1/jobs/$BJ")" = 200 ] && [ "$(jq -r .state "$D/body")" != cancelled ] ||
    fail "beta's job changed: $(cat "$D/body")"
# An absent job is a plain 404 (not audited), with the same body as a hidden one.
SEQ=$(last_seq)
[ "$(api GET /v1/jobs/999999 "$TENANT")" = 404 ] || fail "absent job"
curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/audit?after=$SEQ" | jq -e '.items == []' >/dev/null ||
    fail "an absent job's 404 is audited"
[ "$(api GET "/v1/jobs/$BJ" "$TENANT")" = 404 ] && jq -e ".error.message == \"no job '$BJ'\"" "$D/body" >/dev/null ||
    fail "hidden job's 404 body: $(cat "$D/body")"

# Every refusal above is counted.
curl -s "$URL/metrics" >"$D/metrics"
failures=$(sed -n 's/^sn_auth_failures_total \([0-9]*\)$/\1/p' "$D/metrics")
want=$((n_probes - 3))
[ -n "$failures" ] && [ "$failures" -ge "$want" ] || fail "sn_auth_failures_total $failures, want >= $want"

# sn audit: filters and -o json.
export SN_SERVER="$URL" SN_TOKEN="$ADMIN" HOME="$D"
unset SN_CONFIG
out=$("$SN" audit --status 404 --tenant acme -o json 2>&1) || fail "sn audit: $out"
[ "$(echo "$out" | jq 'length')" = 4 ] || fail "sn audit --status 404 --tenant acme: $out"
[ "$(echo "$out" | jq '[.[] | select(.status != 404 or .actor != "tenant:acme")] | length')" = 0 ] ||
    fail "sn audit filters leak: $out"
out=$("$SN" audit --token "$REVOKED_ID" --route "POST /v1/jobs" -o json 2>&1)
[ "$(echo "$out" | jq 'length')" -ge 1 ] && [ "$(echo "$out" | jq -r '[.[].action | startswith("POST /v1/jobs")] | all')" = true ] ||
    fail "sn audit --token --route: $out"
out=$("$SN" audit --since 1h --status 403 --limit 5 2>&1) || fail "sn audit table: $out"
[ "$(echo "$out" | grep -c ' 403 127.0.0.1 ')" = 5 ] || fail "sn audit table: $out"
out=$("$SN" audit --since 3d --until 2d -o json 2>&1)
[ "$out" = "[]" ] || fail "sn audit of two days ago: $out"
out=$("$SN" audit --status abc 2>&1); rc=$?
[ "$rc" = 1 ] && echo "$out" | grep -q "status" || fail "sn audit --status abc: $rc $out"
out=$(SN_TOKEN="$TENANT" "$SN" audit 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q 403 || fail "sn audit with a tenant token: $rc $out"

# An online backup (admin only: the route walk above refused every other
# token), then a restore from it keeps the state of its commit.
out=$("$SN" admin backup "$D/backup.db" 2>&1) || fail "sn admin backup: $out"
echo "$out" | grep -Eq "^backup written to $D/backup.db \([0-9]+ bytes\)$" || fail "sn admin backup: $out"
[ "$(stat -c %a "$D/backup.db")" = 600 ] || fail "backup mode $(stat -c %a "$D/backup.db")"
out=$("$SN" admin backup "$D/backup.db" 2>&1); rc=$?
[ "$rc" = 1 ] && echo "$out" | grep -q "409" || fail "backup over an existing file: $rc $out"
out=$("$SN" admin backup relative.db 2>&1); rc=$?
[ "$rc" = 2 ] || fail "relative backup path: $rc $out"
[ "$(admin POST /v1/admin/backup '{"path":"/a/../b"}')" = 400 ] || fail "unnormalised path: $(cat "$D/body")"
[ "$(admin POST /v1/jobs '{"name":"after-backup","gpus":1,"tenant":"beta"}')" = 201 ] || fail "job after backup"
kill -0 "$PID" 2>/dev/null || fail "snd died during the review"
stop_snd
mkdir "$D/restored" && cp -p "$D/state/token.key" "$D/state/admin.token" "$D/restored/" &&
    cp -p "$D/backup.db" "$D/restored/state.db"
mv "$D/state" "$D/state.live" && mv "$D/restored" "$D/state"
start_snd
[ "$(admin GET "/v1/jobs/$BJ")" = 200 ] || fail "restored backup lacks job $BJ: $(cat "$D/body")"
[ "$(admin GET "/v1/jobs?tenant=beta")" = 200 ] && ! grep -q after-backup "$D/body" ||
    fail "restored backup has a job submitted after it: $(cat "$D/body")"
stop_snd
rm -rf "$D/state" && mv "$D/state.live" "$D/state"

# A flood of bad tokens from one address: its first auth_fail_burst
# refusals are 401 and audited one by one, the rest 429 with Retry-After and
# counted in one summary row per source and interval; the audit log and the
# WAL grow by a bounded amount and good requests are served throughout.
start_snd --set auth_fail_burst=20 --set auth_fail_per_s=2 --set audit_flood_interval_s=1
SEQ=$(last_seq)
size0=$(cat "$D/state/state.db" "$D/state/state.db-wal" 2>/dev/null | wc -c)
: >"$D/flood.conf"
i=0
while [ $i -lt 3000 ]; do
    printf 'url = "%s/v1/cluster"\nheader = "Authorization: Bearer sn1.flood"\noutput = "/dev/null"\nwrite-out = "%%{http_code} %%header{retry-after}\\n"\nnext\n' "$URL"
    i=$((i + 1))
done >>"$D/flood.conf"
sed -i '$d' "$D/flood.conf"
t0=$(date +%s)
curl -s -K "$D/flood.conf" >"$D/flood.got" 2>"$D/flood.err" &
FLOOD=$!
good=0
while kill -0 $FLOOD 2>/dev/null && [ $good -lt 20 ]; do
    s=$(api GET /v1/jobs "$TENANT")
    [ "$s" = 200 ] || fail "a good request during the flood: $s $(cat "$D/body")"
    good=$((good + 1))
done
wait $FLOOD
t1=$(date +%s)
n401=$(grep -c '^401' "$D/flood.got")
n429=$(grep -c '^429 [0-9]' "$D/flood.got")
[ $((n401 + n429)) = 3000 ] || fail "flood: $n401 401s and $n429 429s (with Retry-After) of 3000: $(sort "$D/flood.got" | uniq -c | head)"
[ "$n401" -le $((20 + 2 * (t1 - t0 + 1) + 1)) ] || fail "flood: $n401 401s in $((t1 - t0)) s"
[ "$good" -ge 1 ] || fail "no good request ran during the flood"
# The summary rows arrive within an interval of the flood's end.
i=0
while :; do
    curl -s -H "Authorization: Bearer $ADMIN" "$URL/v1/audit?after=$SEQ&limit=1000" >"$D/rows"
    summed=$(jq '[.items[] | select(.action == "refusals") | .detail | split(" ")[0] | tonumber] | add // 0' "$D/rows")
    [ "$summed" = "$n429" ] && break
    i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
done
[ "$summed" = "$n429" ] || fail "summary rows count $summed rate-limited refusals, want $n429"
rows=$(jq '.items | length' "$D/rows")
summaries=$(jq '[.items[] | select(.action == "refusals")] | length' "$D/rows")
[ "$rows" = $((n401 + summaries)) ] || fail "flood: $rows audit rows for $n401 401s and $summaries summaries"
[ "$summaries" -le $((t1 - t0 + 3)) ] || fail "flood: $summaries summary rows in $((t1 - t0)) s"
jq -e '[.items[] | select(.action == "refusals")][0] | .status == 429 and .source == "127.0.0.1"' "$D/rows" >/dev/null ||
    fail "summary row: $(jq -c '.items[-1]' "$D/rows")"
size1=$(cat "$D/state/state.db" "$D/state/state.db-wal" 2>/dev/null | wc -c)
[ $((size1 - size0)) -lt 1048576 ] || fail "flood grew the store by $((size1 - size0)) bytes"
echo "flood: 3000 bad-token requests in $((t1 - t0)) s: $n401 audited 401s, $n429 429s in $summaries summary rows, store +$((size1 - size0)) bytes, $good good requests served"
kill -0 "$PID" 2>/dev/null || fail "snd died during the flood"

# Impossible telemetry is refused per field, naming it and the value; it is
# not stored. Sequence numbers beyond 2^53 are refused, not clamped.
tele() { # tele SEQ CSV: posts one nvidia-smi-csv batch for sn00-t00
    curl -s -o "$D/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $AGENT" \
        --data-binary "$2" "$URL/v1/telemetry?node=sn00-t00&format=nvidia-smi-csv&boot=ab&seq=$1"
}
H='index, temperature.gpu, power.draw [W], utilization.gpu [%], clocks.sm [MHz]'
check_tele() { # check_tele WHAT SEQ ROW FIELD VALUE_PATTERN
    s=$(tele "$2" "$(printf '%s\n%s\n' "$H" "$3")")
    [ "$s" = 400 ] && jq -e ".error.code == \"out_of_range\" and .error.field == \"$4\"" "$D/body" >/dev/null &&
        jq -r .error.message "$D/body" | grep -Eq -- "$5" || fail "telemetry $1: $s $(cat "$D/body")"
}
check_tele "-273 C" 1 "0, -273, 100, 50, 1500" temp_gpu "temp_gpu -273 C"
check_tele "1e308 C" 1 "0, 1e308, 100, 50, 1500" temp_gpu "1e\\+308"
check_tele "negative power" 1 "0, 40, -5, 50, 1500" power "power -5 W"
check_tele "utilisation 101" 1 "0, 40, 100, 101 %, 1500" util_gpu "util_gpu 101"
check_tele "clock 1e9 MHz" 1 "0, 40, 100, 50, 1000000000" clock_sm "clock_sm 1000000000 MHz"
[ "$(tele 9223372036854775808 "$(printf '%s\n0, 40, 100, 50, 1500\n' "$H")")" = 400 ] &&
    jq -e '.error.field == "seq"' "$D/body" >/dev/null || fail "seq 2^63: $(cat "$D/body")"
[ "$(tele 9007199254740993 "$(printf '%s\n0, 40, 100, 50, 1500\n' "$H")")" = 400 ] || fail "seq 2^53+1"
# One pass (cmd/snd/telem_buffer.c): the good rows before the bad one are
# not stored either.
check_tele "a good row, then -273 C" 1 "$(printf '0, 55, 100, 50, 1500\n1, -273, 100, 50, 1500')" temp_gpu "line 3: temp_gpu -273 C"
[ "$(tele 1 "$(printf '%s\n0, 41, 100, 50, 1500\n' "$H")")" = 200 ] || fail "a good batch: $(cat "$D/body")"
[ "$(api GET /v1/telemetry/gpus/sn00-t00-gpu0 "$ADMIN")" = 200 ] || fail "gpu telemetry"
grep -q -- '-273' "$D/body" && fail "an impossible value was stored: $(cat "$D/body")"
grep -q '55' "$D/body" && fail "a row of a refused batch was stored: $(cat "$D/body")"
grep -q '41' "$D/body" || fail "the good batch was not stored: $(cat "$D/body")"

# Encoded control characters in the path or query are refused, not cut off.
for u in "/v1/jobs/$BJ%00" "/v1/jobs/$BJ%0a" "/v1/jobs?tenant=beta%00x"; do
    [ "$(admin GET "$u")" = 400 ] && jq -e '.error.code == "invalid_path"' "$D/body" >/dev/null ||
        fail "$u: $(cat "$D/body")"
done
[ "$(admin GET "/v1/jobs/$BJ")" = 200 ] || fail "the plain path"
stop_snd

# Per-tenant job caps: live and total, each named in the refusal; another
# tenant is not held back by them.
start_snd --set tenant_max_live_jobs=2 --set tenant_max_jobs=3
sub() { api POST /v1/jobs "$TENANT" '{"name":"c","gpus":1}'; }
[ "$(sub)" = 201 ] && J1=$(jq .id "$D/body") && [ "$(sub)" = 201 ] || fail "first two submits: $(cat "$D/body")"
[ "$(sub)" = 429 ] && jq -e '.error.code == "tenant_cap" and .error.field == "tenant_max_live_jobs"' "$D/body" >/dev/null ||
    fail "third live job: $(cat "$D/body")"
[ "$(api POST "/v1/jobs/$J1/cancel" "$TENANT")" = 200 ] || fail "cancel: $(cat "$D/body")"
[ "$(sub)" = 201 ] || fail "submit after a cancel: $(cat "$D/body")"
[ "$(api POST /v1/jobs/$((J1 + 1))/cancel "$TENANT")" = 200 ] || fail "cancel 2: $(cat "$D/body")"
[ "$(sub)" = 409 ] && jq -e '.error.code == "tenant_cap" and .error.field == "tenant_max_jobs"' "$D/body" >/dev/null ||
    fail "fourth job in all: $(cat "$D/body")"
[ "$(admin POST /v1/tenants '{"name":"gamma","prefix":"/data/gamma"}')" = 201 ] || fail "tenant gamma"
[ "$(admin POST /v1/jobs '{"name":"g","gpus":1,"tenant":"gamma"}')" = 201 ] || fail "gamma held back: $(cat "$D/body")"
stop_snd

# Start-up refusals: a state.db lost beside token.key; a readable key.
mv "$D/state/state.db" "$D/state.db.bak"
rm -f "$D/state/state.db-wal" "$D/state/state.db-shm"
out=$("$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "token.key' exists but .*state.db' is missing.*--init" ||
    fail "state-less start: $rc $out"
: >"$D/state/state.db"
out=$("$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "state.db' is empty" || fail "empty state.db: $rc $out"
rm -f "$D/state/state.db"
chmod 644 "$D/state/token.key"
out=$("$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 --init 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "token.key' has mode 0644" || fail "readable key: $rc $out"
chmod 600 "$D/state/token.key"
chmod 640 "$D/state/admin.token"
out=$("$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 --init 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "admin.token' has mode 0640" || fail "readable admin token: $rc $out"
chmod 600 "$D/state/admin.token"
start_snd --init
[ "$(api GET /v1/jobs "$TENANT")" = 200 ] || fail "--init start: $(cat "$D/body")"

[ "$fails" = 0 ] && echo "security review: $count routes, all refusals answered and audited"
exit "$fails"
