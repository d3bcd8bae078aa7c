#!/bin/sh
# End-to-end test of the sn client against a real snd on 127.0.0.1 (the
# snd binary sits next to sn in the build directory). Checks each command's
# output and the exit statuses scripts rely on (docs/cmd-client.md), the
# server/token lookup (flags, SN_SERVER/SN_TOKEN, the config file), server
# address forms and TLS option errors, -o json,
# and that sn top exits cleanly on SIGINT and prints one frame with --once.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-client-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# check WANT_RC PATTERN CMD...: runs CMD, wants its exit status and PATTERN
# (grep -E) in its stdout+stderr.
check() {
    want=$1 pat=$2
    shift 2
    out=$("$@" 2>&1)
    rc=$?
    [ "$rc" = "$want" ] || fail "$*: exit $rc, want $want: $out"
    printf '%s\n' "$out" | grep -Eq -- "$pat" || fail "$*: no '$pat' in: $out"
}

"$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
    --set sched_event_delay_ms=0 --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
PID=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
[ -n "$PORT" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
ADMIN=$(cat "$D/state/admin.token")
export SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$ADMIN"
unset SN_CONFIG
export HOME="$D" # no ~/.config/supernode/client.conf of the user's

# Tenants: sn tenants create makes one (admin); a token for a missing one
# is refused (exit 1).
check 1 "422 no tenant 'acme'" "$SN" token create --tenant acme
check 0 "tenant acme created" "$SN" tenants create acme --prefix /data/acme
check 1 "prefix" "$SN" tenants create bad --prefix /a/../b
check 0 "^submitted job 1 \(pending\)$" "$SN" submit --tenant acme --name llm --gpus 16 --time-limit 2h
check 0 "submitted job 2" "$SN" submit --tenant acme --name big --gpus 64 --idempotency-key k2
check 0 "submitted job 2" "$SN" submit --tenant acme --name big --gpus 64 --idempotency-key k2
printf '{"name":"filejob","gpus":8,"tenant":"acme"}' >"$D/job.json"
check 0 '"name": "filejob"' "$SN" submit -f "$D/job.json" -o json
printf '{"name":' >"$D/bad.json"
check 2 "bad.json:1:" "$SN" submit -f "$D/bad.json"
check 2 "expected a positive integer" "$SN" submit --gpus many
check 2 "time-limit" "$SN" submit --gpus 1 --time-limit 5
check 1 "422 .*unsatisfiable|GPUs asked" "$SN" submit --tenant acme --name x --gpus 65
# Jobs: squeue-like columns; job 1 runs, job 2 waits with a reason.
i=0
until "$SN" jobs | grep -Eq "^ +1 acme +llm +running +16 "; do
    i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.05
done
check 0 "JOBID TENANT +NAME +STATE +GPUS +TIME NODES\(REASON\)" "$SN" jobs
check 0 "^ +1 acme +llm +running +16 .* sn00-t00,sn00-t01$" "$SN" jobs
check 0 "^ +2 acme +big +pending +64 +- \(no-supernode-fits\)$" "$SN" jobs --state pending
check 0 '"state": "running"' "$SN" jobs --state running -o json
check 0 "^placement +16 GPUs, ranks 0..15 on sn00-t00-gpu0,sn00-t00-gpu1,sn00-t00-gpu2," "$SN" job show 1
check 0 "started +placed on 16 GPUs" "$SN" job show 1
check 0 '"events"' "$SN" job show 1 -o json
check 4 "404 no job '99'" "$SN" job show 99
check 2 "unknown subcommand" "$SN" job list 1
# Nodes: summary per supernode and state, and one line per node.
check 0 "node sn00-t05: cordoned \(fan\)" "$SN" cordon sn00-t05 --reason fan
check 2 "--reason is required" "$SN" drain sn00-t04
check 0 "gpu sn00-t04-gpu1: drained \(ecc\)" "$SN" drain sn00-t04-gpu1 --reason ecc
check 0 "^sn00 +cordoned +1 +8 +0 +8$" "$SN" nodes
check 0 "^sn00 +mixed +1 +8 +0 +1$" "$SN" nodes
check 0 "^sn00 +sn00-t00 +up +8 +8 " "$SN" nodes --long
check 0 "sn00-t05 +cordoned +8 +0 +- fan" "$SN" nodes --state cordoned
check 1 "409 cannot cordon a cordoned node" "$SN" cordon sn00-t05 --reason again
check 0 "node sn00-t05: up" "$SN" resume sn00-t05
check 4 "no node" "$SN" cordon sn99-t00 --reason x
check 0 "^acme +/data/acme +-$" "$SN" tenants
check 0 '"prefix": "/data/acme"' "$SN" tenants -o json
# Tokens: a tenant token sees only its tenant; bad tokens exit 5.
TT=$("$SN" token create --tenant acme --ttl 1h)
case "$TT" in sn2.*) ;; *) fail "token create printed '$TT'" ;; esac
check 0 "llm" env SN_TOKEN="$TT" "$SN" jobs
check 0 "^placement +16 GPUs, ranks 0..15 on sn00-t00-gpu0," env SN_TOKEN="$TT" "$SN" job show 1
# Without cluster:read, sn job show falls back to GPU ids.
TJ=$("$SN" token create --tenant acme --scope jobs:read,jobs:write)
check 0 "^placement +16 GPUs, ranks 0..15 on GPU ids 0,1,2," env SN_TOKEN="$TJ" "$SN" job show 1
check 5 "403" env SN_TOKEN="$TJ" "$SN" nodes
check 5 "403 a tenant token sees only its own" env SN_TOKEN="$TT" "$SN" acct --tenant other
check 5 "403" env SN_TOKEN="$TT" "$SN" tenants
check 5 "401" env SN_TOKEN=sn1.bad.bad "$SN" jobs
check 2 "exactly one of" "$SN" token create
check 0 '"scopes": "telemetry:write"' "$SN" token create --agent sn00-t01 -o json
# Cancel: 0, then 1 for a second cancel (409).
check 0 "cancelled job 1" "$SN" cancel 1
check 1 "409 job 1 is cancelled" "$SN" cancel 1
# sn jobs lists active jobs; --all also ended ones. An ended job keeps its
# record: nodes, placement, times.
"$SN" jobs | grep -Eq "^ +1 acme" && fail "sn jobs lists the cancelled job 1"
check 0 "^ +1 acme +llm +cancelled +16 +- sn00-t00,sn00-t01$" "$SN" jobs --all
check 0 "^ +1 acme +llm +cancelled" "$SN" jobs --state cancelled,completed
check 2 "--state 'gone': expected pending, running, requeued, completed, failed, cancelled or timeout" "$SN" jobs --state running,gone
check 0 "^placement +16 GPUs, ranks 0..15 on sn00-t00-gpu0,sn00-t00-gpu1,sn00-t00-gpu2," "$SN" job show 1
check 0 "^end_time_s +[0-9]+$" "$SN" job show 1
# sn acct: the history of ended jobs, filtered; -o json with GPU-seconds.
check 0 "JOBID TENANT +NAME +STATE +GPUS +ELAPSED EXIT NODES" "$SN" acct
check 0 "^ +1 acme +llm +cancelled +16 +[0-9hms]+ +- sn00-t00,sn00-t01$" "$SN" acct
check 0 "^ +1 acme +llm +cancelled" "$SN" acct --tenant acme --name llm --since 1h
check 0 '"gpu_seconds": [0-9]+' "$SN" acct -o json
check 0 '^\[\]$' "$SN" acct --since 2099-01-01 -o json
check 0 '^\[\]$' "$SN" acct --until 0 -o json
check 0 '^\[\]$' "$SN" acct --name nosuchjob -o json
check 0 '"state": "pending"' "$SN" acct --state pending -o json
check 2 "expected Unix seconds, a UTC date" "$SN" acct --since yesterday
check 1 "400 state 'over'" "$SN" acct --state over
# --after-ok: held for its dependency; the cancelled job 1 cancels it.
check 0 "^submitted job [0-9]+ \(pending\)$" "$SN" submit --tenant acme --name dep --gpus 1 --after-ok 1
check 1 "422 after_ok: no job 99" "$SN" submit --tenant acme --name dep --gpus 1 --after-ok 99
i=0
until "$SN" jobs --all | grep -Eq "^ +[0-9]+ acme +dep +cancelled"; do
    i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.05
done
check 0 "^ +[0-9]+ acme +dep +cancelled" "$SN" jobs --all
check 0 "^detail +dependency job 1 cancelled$" "$SN" job show "$("$SN" jobs --all -o json | sed -n 's/^ *"id": \([0-9]*\),*$/\1/p' | tail -n 1)"
# Server and token lookup: flag over env over config file.
printf 'server = http://127.0.0.1:%s\ntoken_file = %s\n' "$PORT" "$D/state/admin.token" >"$D/client.conf"
check 0 "filejob" env -u SN_SERVER -u SN_TOKEN SN_CONFIG="$D/client.conf" "$SN" jobs
mkdir -p "$D/.config/supernode" && cp "$D/client.conf" "$D/.config/supernode/client.conf"
check 0 "filejob" env -u SN_SERVER -u SN_TOKEN "$SN" jobs
check 6 "cannot connect" env SN_CONFIG="$D/client.conf" "$SN" jobs --server http://127.0.0.1:1
printf 'colour = blue\n' >"$D/bad.conf"
check 2 "bad.conf:1: unknown key 'colour'" env SN_CONFIG="$D/bad.conf" "$SN" jobs
check 2 "config '.*missing.conf'" env SN_CONFIG="$D/missing.conf" "$SN" jobs
check 6 "cannot connect" "$SN" jobs --server http://127.0.0.1:1
# Server forms (libcurl): a host name, HOST:PORT without a scheme, and the
# errors for a missing port, a path, a missing CA file and a lone --cert.
check 0 "filejob" "$SN" jobs --server "localhost:$PORT"
check 0 "filejob" "$SN" jobs --server "http://localhost:$PORT/"
check 2 "server 'localhost': a port is needed" "$SN" jobs --server localhost
check 2 "no path, query or credentials" "$SN" jobs --server "http://127.0.0.1:$PORT/v1"
check 2 "CA file '/nonexistent/ca.pem'" "$SN" jobs --server "https://localhost:$PORT" \
    --cacert /nonexistent/ca.pem
check 2 "certificate and its key go together" "$SN" jobs --cert "$D/client.conf"
printf 'ca_file = /nonexistent/ca.pem\n' >"$D/tls.conf"
check 2 "CA file '/nonexistent/ca.pem'" env SN_CONFIG="$D/tls.conf" "$SN" jobs
# https to a plain-HTTP port: a TLS error naming the server, exit 6.
check 6 "https://127.0.0.1:$PORT: " "$SN" jobs --server "https://127.0.0.1:$PORT"
check 2 "unknown option '--bogus'" "$SN" jobs --bogus
check 2 "expected json, table or wide" "$SN" jobs -o yaml
# sn top: one frame with --once; a live one quits on SIGINT with status 0.
check 0 "^GPUs +busy [0-9]+ free [0-9]+ held [0-9]+ cordoned [0-9]+ draining [0-9]+ drained [0-9]+ down 0$" "$SN" top --once
check 0 "^Pending \(1 shown\)$" "$SN" top --once
"$SN" top --interval 0.1s >"$D/top.out" 2>&1 </dev/null &
TOP=$!
i=0
until [ "$(grep -c '^sn top' "$D/top.out")" -ge 2 ] || [ $i -gt 100 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $TOP
wait $TOP
rc=$?
[ $rc = 0 ] || fail "sn top after SIGINT: exit $rc"
[ "$(grep -c '^sn top' "$D/top.out")" -ge 2 ] || fail "sn top did not refresh: $(cat "$D/top.out")"
# Job shape: flags, the stored fields and the shape line of sn job show.
check 0 "^submitted job [0-9]+" "$SN" submit --tenant acme --name tp --gpus 8 --group 8 \
    --exclusive server --xsn-bandwidth 25GB/s --preemptible no --walltime 1h --idempotency-key tp1
TP=$("$SN" submit --tenant acme --name tp --gpus 8 --group 8 --exclusive server \
    --xsn-bandwidth 25GB/s --preemptible no --walltime 1h --idempotency-key tp1 | sed 's/^submitted job \([0-9]*\).*/\1/')
check 0 "^group_gpus +8$" "$SN" job show "$TP"
check 0 "^xsn_bytes_per_s +25000000000$" "$SN" job show "$TP"
check 0 "^time_limit_s +3600$" "$SN" job show "$TP"
check 0 "^preemptible +false$" "$SN" job show "$TP"
check 0 "^shape +8 GPUs in groups of 8, exclusive server, 25.0 GB/s per GPU across supernodes, not preemptible$" "$SN" job show "$TP"
check 1 "422 group_gpus 3 does not divide gpus 8 .*field 'group_gpus'" "$SN" submit --tenant acme --name x --gpus 8 --group 3
check 1 "422 exclusive server with 4 GPUs: a fraction of a server .*field 'exclusive'" "$SN" submit --tenant acme --name x --gpus 4 --exclusive server
check 2 "expected yes or no" "$SN" submit --tenant acme --name x --gpus 4 --preemptible maybe
check 2 "--group 'x'" "$SN" submit --gpus 4 --group x
# Quotas and pools: limits set without a restart, usage against limits.
check 0 "^tenant acme: limits set$" "$SN" quota set acme --max-job-gpus 64 --gpus-per-supernode 64 --max-xsn-bandwidth 30GB/s
check 0 "^acme +64 +64 +- +30000000000$" "$SN" quota
check 0 '"max_job_gpus": 64' "$SN" quota -o json
check 1 "409 the limits would break running or waiting jobs: .*'gpus' 64 exceeds" "$SN" quota set acme --max-job-gpus 48
check 1 "422 quota: 40000000000 bytes/s per GPU across supernodes asked, tenant 'acme' has a per-job cap of 30000000000 .*field 'xsn_bytes_per_s'" "$SN" submit --tenant acme --name x --gpus 8 --xsn-bandwidth 40GB/s
check 2 "--max-job-gpus 'many'" "$SN" quota set acme --max-job-gpus many
check 4 "no tenant 'nobody'" "$SN" quota set nobody --max-job-gpus 4
check 0 "^tenant acme: limits set$" "$SN" quota set acme
check 0 "^training +dedicated +spec +1 +64 +[0-9]+ +[0-9]+ +[0-9]+$" "$SN" pools
check 0 '"supernodes": 1' "$SN" pools -o json
# USED, FREE and UNAVAILABLE sum to GPUS (the shared counts, docs/monitoring.md).
"$SN" pools | awk '$3 == "spec" && $6 + $7 + $8 != $5 { bad = 1; print } END { exit bad }' ||
    fail "sn pools: USED + FREE + UNAVAILABLE differs from GPUS"
check 0 "^fenced +no$" "$SN" admin fence
check 0 '"fenced": false' "$SN" admin unfence -o json
check 0 "^open +no$" "$SN" admin breaker
check 0 "^limits +cluster 0, supernode 0, rack 0 per 3600 s" "$SN" admin breaker
check 0 "^closed +0$" "$SN" admin breaker-reset
check 0 '"closed": 0' "$SN" admin breaker-reset -o json
check 2 "takes no argument" "$SN" admin breaker x
check 2 "unknown subcommand 'x'" "$SN" admin x

# -o json on every client command: each prints one JSON document.
json_ok() {
    if command -v node >/dev/null 2>&1; then
        node -e 'JSON.parse(require("fs").readFileSync(0, "utf8"))'
    elif command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json, sys; json.load(sys.stdin)'
    else
        cat >/dev/null
    fi
}
for c in "tenants" "jobs" "jobs --state pending" "job show 1" "nodes" "top --once" \
    "cordon sn00-t06 --reason json-check" "drain sn00-t06 --reason json-check" \
    "resume sn00-t06" "token create --tenant acme"; do
    # shellcheck disable=SC2086
    out=$("$SN" $c -o json 2>&1) || fail "sn $c -o json: exit $?: $out"
    printf '%s' "$out" | json_ok 2>/dev/null || fail "sn $c -o json is not JSON: $out"
done
"$SN" top --once -o json | grep -q '"waiting":{"none":' || fail "sn top -o json lacks waiting counts"
out=$("$SN" submit --tenant acme --name json --gpus 8 -o json)
printf '%s' "$out" | json_ok 2>/dev/null || fail "sn submit -o json is not JSON: $out"
id=$(printf '%s' "$out" | sed -n 's/.*"id": *\([0-9]*\).*/\1/p' | head -n 1)
out=$("$SN" cancel "$id" -o json 2>&1) || fail "sn cancel $id -o json: $out"
printf '%s' "$out" | json_ok 2>/dev/null || fail "sn cancel -o json is not JSON: $out"

# docs/cmd-client.md lists each client command of `sn --help` once: every
# one has a row, and no row's command cell repeats.
rows=$(sed -n 's/^| `\(sn [^`]*\)`.*/\1/p' docs/cmd-client.md)
dup=$(printf '%s\n' "$rows" | sort | uniq -d)
[ -z "$dup" ] || fail "docs/cmd-client.md lists more than once: $dup"
for c in $("$SN" --help | awk '/^  [a-z]/ { print $1 }'); do
    case $c in design | plan | sim | health | demo) continue ;; esac
    printf '%s\n' "$rows" | grep -q "^sn $c\( \|$\)" || fail "docs/cmd-client.md has no row for sn $c"
done

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "client: all checks passed"
