#!/bin/sh
# Disk full through a real snd and a real sn-agent on 127.0.0.1
# (docs/operations.md "Disk full"). snd runs with the test-only
# SND_TEST_DISK_FULL_FLAG: its store writes through the fault VFS
# (lib/store/store_faultvfs.c), whose writes fail with SQLITE_FULL while the
# flag file exists. Checks: the write that meets the full disk is held and
# answered 201 once space returns (and survives a restart); meanwhile new
# writes get 507 disk_full with a message naming the state directory, reads
# (jobs, nodes, metrics, dashboard, audit) are served, the agent's
# heartbeats and telemetry go on, a bad token gets its 401 at once, the
# metric sn_store_disk_full is 1 and snd's log says so; after the flag is
# removed writes resume by themselves. Stopped while the disk is full, snd
# exits 3 at once and the held write is lost, never acknowledged. At start,
# a full disk stops snd with "disk full" in words and exit 3.
# Not covered: a real full filesystem (making one needs root or a loop
# mount); the fault VFS fails SQLite's writes as the unix VFS does on ENOSPC.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(dirname "$SN")
SND=$BIN/snd
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-full-XXXXXX")
PID= APID= WPID=
cleanup() {
    [ -n "$APID" ] && kill "$APID" 2>/dev/null && wait "$APID" 2>/dev/null
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for tool in curl jq; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
FLAG=$D/full

start_snd() {
    rm -f "$D/port"
    SND_TEST_DISK_FULL_FLAG=$FLAG "$SND" --cluster examples/std-unit-64.yaml --state "$D/state" \
        --listen 127.0.0.1:0 --set sched_event_delay_ms=0 "$@" --ready-fd 3 3>"$D/port" \
        2>>"$D/snd.log" &
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
api() { # api METHOD PATH TOKEN [BODY]: prints the status; the body goes to $D/body
    if [ "$1" = GET ]; then
        curl -s -m 20 -o "$D/body" -w '%{http_code}' -H "Authorization: Bearer $3" "$URL$2"
    else
        curl -s -m 20 -o "$D/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $3" \
            -H 'Content-Type: application/json' --data-binary "${4-{\}}" "$URL$2"
    fi
}
metric() { curl -s "$URL/metrics" | sed -n "s/^$1 //p"; }
wait_metric() { # wait_metric NAME VALUE: polls for up to 30 s
    i=0
    while [ "$(metric "$1")" != "$2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(metric "$1")" = "$2" ] || fail "$1 stayed $(metric "$1"), expected $2"
}
heartbeats() {
    api GET /v1/agents/sn00-t00 "$ADMIN" >/dev/null
    jq -r '.heartbeats // 0' "$D/body"
}

start_snd
grep -q "test mode: the store's disk is full while '$FLAG' exists" "$D/snd.log" || fail "no test-mode line"
[ "$(api POST /v1/tenants "$ADMIN" '{"name":"acme","prefix":"/data/acme"}')" = 201 ] || fail "tenant"
[ "$(api POST /v1/tokens "$ADMIN" '{"kind":"tenant","subject":"acme","scopes":"jobs:read,jobs:write","ttl_s":3600}')" = 201 ] ||
    fail "tenant token"
T=$(jq -r .token "$D/body")
[ "$(api POST /v1/tokens "$ADMIN" '{"kind":"agent","subject":"sn00-t00","scopes":"telemetry:write","ttl_s":3600}')" = 201 ] ||
    fail "agent token"
jq -r .token "$D/body" >"$D/agent.token"
chmod 600 "$D/agent.token"
mkdir -p "$D/work"
"$BIN/sn-agent" --server "$URL" --token "$D/agent.token" --node sn00-t00 --backend sim \
    --cluster examples/std-unit-64.yaml --interval 0.1 --work-dir "$D/work" --seed 3 \
    --backoff-max 0.3 --unsafe-jobs-as-agent-user --cgroup-root none 2>"$D/agent.log" &
APID=$!
[ "$(api POST /v1/jobs "$T" '{"name":"before","gpus":1}')" = 201 ] || fail "submit before: $(cat "$D/body")"
i=0
while [ "$(heartbeats)" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(heartbeats)" -ge 3 ] || fail "the agent does not heartbeat: $(tail -5 "$D/agent.log")"

# The disk fills. The next write is held: its answer waits for space.
touch "$FLAG"
curl -s -m 60 -o "$D/held" -w '%{http_code}' -X POST -H "Authorization: Bearer $T" \
    -H 'Content-Type: application/json' --data-binary '{"name":"held","gpus":1}' \
    "$URL/v1/jobs" >"$D/held.status" &
WPID=$!
wait_metric sn_store_disk_full 1
grep -q "snd: disk full: a commit to $D/state/state.db found no space; writes get 507" "$D/snd.log" ||
    fail "no disk-full line: $(tail -3 "$D/snd.log")"
[ "$(api POST /v1/jobs "$T" '{"name":"refused","gpus":1}')" = 507 ] || fail "submit while full: $(cat "$D/body")"
jq -e --arg dir "$D/state" '.error.code == "disk_full" and (.error.message | startswith("disk full:")) and
    (.error.message | contains("free space on " + $dir + " and retry"))' "$D/body" >/dev/null ||
    fail "507 body: $(cat "$D/body")"
[ "$(api POST /v1/tokens/0badc0de/revoke "$ADMIN")" = 507 ] || fail "revoke while full: $(cat "$D/body")"
[ "$(api POST /v1/admin/rotate-key "$ADMIN")" = 507 ] || fail "rotate-key while full: $(cat "$D/body")"
[ "$(api POST /v1/nodes/sn00-t01/cordon "$ADMIN" '{"reason":"x"}')" = 507 ] || fail "cordon while full: $(cat "$D/body")"
for path in /v1/jobs /v1/nodes /v1/nodes/sn00-t00 /v1/dashboard/summary /v1/audit /v1/cluster; do
    [ "$(api GET "$path" "$ADMIN")" = 200 ] || fail "GET $path while full: $(cat "$D/body")"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics")" = 200 ] || fail "/metrics while full"
[ "$(api GET /v1/jobs "sn2.0.bad.bad")" = 401 ] || fail "a bad token while full: $(cat "$D/body")"
hb=$(heartbeats)
i=0
while [ "$(heartbeats)" -lt $((hb + 5)) ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(heartbeats)" -ge $((hb + 5)) ] || fail "heartbeats stopped while full: $hb -> $(heartbeats)"
[ "$(metric sn_http_disk_full_refused_total)" -ge 4 ] || fail "refused counter $(metric sn_http_disk_full_refused_total)"
[ "$(cat "$D/held.status" 2>/dev/null)" = "" ] || fail "the held submit was answered while full: $(cat "$D/held.status")"

# Space returns: the held write commits, writes resume by themselves.
rm -f "$FLAG"
wait_metric sn_store_disk_full 0
wait "$WPID"
WPID=
[ "$(cat "$D/held.status")" = 201 ] || fail "the held submit: $(cat "$D/held.status") $(cat "$D/held")"
HELD=$(jq -r .id "$D/held")
[ "$(api POST /v1/jobs "$T" '{"name":"after","gpus":1}')" = 201 ] || fail "submit after: $(cat "$D/body")"
[ "$(metric sn_store_disk_full_total)" = 1 ] || fail "disk_full_total $(metric sn_store_disk_full_total)"
i=0
while ! grep -q "snd: disk space returned" "$D/snd.log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "snd: disk space returned" "$D/snd.log" || fail "no space-returned line"
kill "$APID" && wait "$APID" 2>/dev/null
APID=
stop_snd
start_snd
[ "$(api GET "/v1/jobs/$HELD" "$T")" = 200 ] && jq -e '.name == "held"' "$D/body" >/dev/null ||
    fail "the held job after a restart: $(cat "$D/body")"
api GET /v1/jobs "$T" >/dev/null
[ "$(jq '[.items[].name] | sort | join(",")' "$D/body")" = '"after,before,held"' ] ||
    fail "jobs after a restart: $(jq -c '[.items[].name]' "$D/body")"

# Stopped while the disk is full: exit 3 at once, the held write is lost,
# never acknowledged (its client gets no 201), and a restart recovers.
touch "$FLAG"
curl -s -m 60 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $T" \
    -H 'Content-Type: application/json' --data-binary '{"name":"lost","gpus":1}' \
    "$URL/v1/jobs" >"$D/lost.status" &
WPID=$!
wait_metric sn_store_disk_full 1
kill "$PID"
wait "$PID"
st=$?
PID=
[ "$st" = 3 ] || fail "SIGTERM with the disk full: exit $st"
grep -q "snd: stopping with the disk full: the commit held for space and the 0 writes queued behind it are lost" "$D/snd.log" ||
    fail "no lost-writes line: $(tail -3 "$D/snd.log")"
wait "$WPID"
WPID=
[ "$(cat "$D/lost.status")" != 201 ] || fail "the lost submit was answered 201"
rm -f "$FLAG"
start_snd
api GET /v1/jobs "$T" >/dev/null
[ "$(jq '[.items[].name] | sort | join(",")' "$D/body")" = '"after,before,held"' ] ||
    fail "jobs after a stop with the disk full: $(jq -c '[.items[].name]' "$D/body")"
stop_snd

# At start, a full disk: "disk full" in words, exit 3.
touch "$FLAG"
SND_TEST_DISK_FULL_FLAG=$FLAG "$SND" --cluster examples/std-unit-64.yaml --state "$D/fresh" \
    --listen 127.0.0.1:0 2>"$D/err"
st=$?
[ "$st" = 3 ] && grep -q "^snd: store: disk full: .*free space on the disk of the state directory" "$D/err" ||
    fail "start on a full disk: exit $st, $(cat "$D/err")"

[ $fails = 0 ] && echo "disk full: all checks passed"
exit $((fails > 0))
