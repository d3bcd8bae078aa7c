#!/bin/sh
# End-to-end test of the sn client views that need a live cluster: a real
# snd on 127.0.0.1 and two real sn-agent processes (sim backend, jobs run as
# the test's user, no cgroups) on sn00-t00 and sn00-t01. Checks sn nodes
# (states derived from the GPUs, the sinfo -R view, --state checked
# locally), sn gpus (state, reason, health, job, telemetry), arrays as one
# unit (ranges, folding, cancel of the whole array), the local argument
# checks and "did you mean", and sn job log --follow on a pending job.
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
BIN=$(dirname "$SN")
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-cluster-XXXXXX")
PIDS=
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
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
# until_out PATTERN CMD...: waits up to 10 s for PATTERN in CMD's output.
until_out() {
    pat=$1
    shift
    i=0
    until "$@" 2>&1 | grep -Eq -- "$pat"; do
        i=$((i + 1))
        [ $i -gt 200 ] && { fail "timed out waiting for '$pat' from $*"; return 1; }
        sleep 0.05
    done
}

"$BIN/snd" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
    --set sched_event_delay_ms=0 --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
PIDS="$!"
i=0
while [ ! -s "$D/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
[ -n "$PORT" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
export SN_SERVER="http://127.0.0.1:$PORT" SN_TOKEN="$(cat "$D/state/admin.token")"
unset SN_CONFIG
export HOME="$D"
for n in sn00-t00 sn00-t01; do
    "$SN" token create --agent "$n" --scope telemetry:write,cluster:read >"$D/$n.token" ||
        fail "agent token for $n"
    fault=
    [ "$n" = sn00-t01 ] && fault="--fault hot-gpu=1"
    # shellcheck disable=SC2086
    "$BIN/sn-agent" --server "$SN_SERVER" --token "$D/$n.token" --node "$n" --backend sim \
        --cluster examples/std-unit-64.yaml --interval 0.2 --work-dir "$D/work-$n" \
        --unsafe-jobs-as-agent-user --cgroup-root none $fault 2>"$D/agent-$n.log" &
    PIDS="$PIDS $!"
done
"$SN" tenants create acme --prefix /data/acme >/dev/null || fail "tenant"

# ---- sn nodes: states from the GPUs ----------------------------------------
until_out "^sn00-t01-gpu1 +up +[0-9]+ +- +[0-9]+ +[0-9]+ +[0-9]+" "$SN" gpus --node sn00-t01
# A powered-off server: every GPU failed one by one reads down, with the reason.
for g in 0 1 2 3 4 5 6 7; do
    "$SN" fail "sn00-t07-gpu$g" --reason "leak: rack r1 powered off" >/dev/null || fail "fail gpu$g"
done
check 0 "^sn00 +down +1 +8 +0 +8$" "$SN" nodes
check 0 "sn00-t07 +down +8 +0 +- 8 GPUs down: leak: rack r1 powered off$" "$SN" nodes --long
check 0 "sn00-t07 +down +8 +0 +- 8 GPUs down" "$SN" nodes --state down
check 0 "^8 GPUs down: leak: rack r1 powered off +admin:admin +20[0-9-]+T[0-9:]+Z +down +sn00-t07$" "$SN" nodes -R
# One health-cordoned GPU: its node is mixed and names the GPU.
"$SN" cordon sn00-t06-gpu3 --reason "health: xid 79" >/dev/null || fail "cordon gpu3"
check 0 "sn00-t06 +mixed +8 +0 +- gpu3 cordoned: health: xid 79$" "$SN" nodes --long
check 0 "^sn00 +mixed +1 +8 +0 +1$" "$SN" nodes
# A cordoned node: its reason, and its GPUs read cordoned through it.
"$SN" cordon sn00-t05 --reason "fan" >/dev/null || fail "cordon t05"
check 0 "^sn00 +cordoned +1 +8 +0 +8$" "$SN" nodes
check 0 "^sn00-t05-gpu0 +cordoned .* node cordoned: fan$" "$SN" gpus --node sn00-t05
check 0 '"derived_state": "down"' "$SN" nodes --state down -o json
check 0 '"down": 8' "$SN" nodes --state down -o json
check 2 "--state 'bogus': expected up, held, mixed, cordoned, draining, drained or down" "$SN" nodes --state bogus
check 2 "did you mean 'drained'" "$SN" nodes --state draned
# ---- sn gpus ---------------------------------------------------------------
check 0 "^GPU +STATE +HEALTH +JOB +TEMP +SMCLK +POWER REASON$" "$SN" gpus
check 0 "^sn00-t07-gpu5 +down .* leak: rack r1 powered off$" "$SN" gpus --state down
[ "$("$SN" gpus --state down | grep -c gpu)" = 8 ] || fail "sn gpus --state down: not 8 GPUs"
[ "$("$SN" gpus | grep -c gpu)" = 64 ] || fail "sn gpus: not 64 GPUs"
check 0 "^sn00-t06-gpu3 +cordoned" "$SN" gpus --node sn00-t06 --state cordoned
check 0 "ACTION +BY +SINCE +REASON +LAST FINDING$" "$SN" gpus --node sn00-t01 -o wide
check 0 '"clock_sm_mhz": [0-9.]+' "$SN" gpus --node sn00-t01 -o json
check 0 '"findings": ' "$SN" gpus --node sn00-t01 -o json
check 2 "--state 'broken': expected up, held, cordoned, draining, drained or down" "$SN" gpus --state broken
check 4 "--node 'sn99-t00': no such node" "$SN" gpus --node sn99-t00
"$SN" resume sn00-t05 >/dev/null && "$SN" resume sn00-t06-gpu3 >/dev/null || fail "resume"
# The hot GPU's temperature is above its peers'.
hot=$("$SN" gpus --node sn00-t01 | awk '$1 == "sn00-t01-gpu1" { print $5 }')
cool=$("$SN" gpus --node sn00-t01 | awk '$1 == "sn00-t01-gpu0" { print $5 }')
[ -n "$hot" ] && [ -n "$cool" ] && [ "$hot" -gt "$cool" ] || fail "hot GPU $hot C, peer $cool C"

# ---- arrays as one unit -----------------------------------------------------
# 56 GPUs are up (sn00-t07's are down): 3 tasks of 16 run, 7 wait, folded.
out=$("$SN" submit --tenant acme --name arr --gpus 16 --command "sleep 30" --array 0-9)
A=$(printf '%s\n' "$out" | sed -n '1s/^submitted job \([0-9]*\).*/\1/p')
[ -n "$A" ] || fail "array submit: $out"
until_out "^ *${A}_2 +acme +arr\[2\] +running" "$SN" jobs
check 0 "^ *${A}_\[3-9\] +acme +arr +pending +16 +- \(" "$SN" jobs
check 0 "^ *${A}_0 +acme +arr\[0\] +running +16 " "$SN" jobs
[ "$("$SN" jobs | grep -c "^ *${A}_")" = 4 ] || fail "sn jobs: not 3 running rows and 1 folded: $("$SN" jobs)"
check 0 "^ *${A}_9 +acme +arr\[9\] +pending" "$SN" jobs --expand
[ "$("$SN" jobs --expand | grep -c "^ *${A}_")" = 10 ] || fail "sn jobs --expand: not 10 rows"
check 0 "^id +$((A + 4))$" "$SN" job show "${A}_4"
check 0 "^name +arr\[4\]$" "$SN" job show "${A}_4"
check 4 "no task 42 in array $A" "$SN" job show "${A}_42"
check 2 "'abc': expected job ids" "$SN" job show abc
check 2 "'1-3': expected one job id" "$SN" job log 1-3
# A second array of the same name is another unit; its task 1 alone.
out=$("$SN" submit --tenant acme --name arr --gpus 1 --array 0-2)
B=$(printf '%s\n' "$out" | sed -n '1s/^submitted job \([0-9]*\).*/\1/p')
check 0 "^cancelled job $((B + 1)) \(${B}_1\)$" "$SN" cancel "${B}_1"
check 4 "no task 7 in array $B" "$SN" cancel "${B}_7"
# Cancelling the array's id cancels every task, running or pending.
check 0 "^cancelled job $((A + 9)) \(${A}_9\)$" "$SN" cancel "$A"
[ "$("$SN" jobs --all --state cancelled | grep -c "arr\[")" = 11 ] || fail "not 11 array tasks cancelled: $("$SN" jobs --all)"
check 0 "^ *${B}_0 +acme +arr\[0\] " "$SN" jobs
check 0 "array $B: 1 of its 3 tasks had already ended" "$SN" cancel "$B"
# Ranges and lists of ids.
for k in 1 2 3 4; do "$SN" submit --tenant acme --name r$k --gpus 1 >/dev/null; done
R=$("$SN" jobs -o json | sed -n 's/^ *"id": \([0-9]*\),*$/\1/p' | sort -n | tail -n 4 | head -n 1)
check 0 "cancelled job $((R + 1))" "$SN" cancel "$R-$((R + 1))"
check 0 "cancelled job $((R + 3))" "$SN" cancel "$((R + 2)),$((R + 3))"
check 1 "409 job $R is cancelled" "$SN" cancel "$R"
check 2 "'abc': expected job ids like 12, 320-329" "$SN" cancel abc
check 2 "'5-3': expected job ids" "$SN" cancel 5-3
check 2 "'1_': expected job ids" "$SN" cancel 1_

# ---- a tenant token reads the cluster, never another tenant's jobs ----------
"$SN" tenants create beta --prefix /data/beta >/dev/null || fail "tenant beta"
BJ=$("$SN" submit --tenant beta --name secret-beta --gpus 8 | sed 's/^submitted job \([0-9]*\).*/\1/')
until_out "^ *$BJ +beta +secret-beta +running" "$SN" jobs
TT=$("$SN" token create --tenant acme)
check 0 "^sn00 +down +1 +8 +0 +8$" env SN_TOKEN="$TT" "$SN" nodes
check 0 " \(other\) " env SN_TOKEN="$TT" "$SN" gpus
env SN_TOKEN="$TT" "$SN" gpus -o json | grep -q "\"job\": $BJ," && fail "a tenant token sees beta's job id"
env SN_TOKEN="$TT" "$SN" jobs --all | grep -q secret-beta && fail "a tenant token lists beta's job"
"$SN" cancel "$BJ" >/dev/null

# ---- local checks before any request ---------------------------------------
out=$("$SN" submit --tenant acme --model llama3-70 2>&1)
[ $? = 2 ] || fail "submit without gpus and a bad model: not exit 2: $out"
printf '%s\n' "$out" | grep -q "missing --gpus G" || fail "no missing --gpus in: $out"
printf '%s\n' "$out" | grep -q "'llama3-70': no such preset (did you mean 'llama3-70b'?)" ||
    fail "no preset hint in: $out"
check 2 "job file '$D/none.json': No such file or directory" "$SN" submit -f "$D/none.json"
check 2 "unknown command 'nods' \(did you mean 'nodes'\?\)" "$SN" nods
check 2 "unknown option '--stat' \(did you mean '--state'\?\)" "$SN" jobs --stat pending
check 2 "unknown command 'frobnicate'$" "$SN" frobnicate
# A default name: the command's program. A job on the agents' nodes runs
# for real; sn job show names its GPUs and, once ended, each rank's status.
out=$("$SN" submit --tenant acme --gpus 2 --command "echo hi-from-rank" -o json)
J=$(printf '%s' "$out" | sed -n 's/^ *"id": \([0-9]*\),*$/\1/p' | head -n 1)
printf '%s' "$out" | grep -q '"name": "echo"' || fail "default name is not 'echo': $out"
until_out "^state +completed$" "$SN" job show "$J"
check 0 "^placement +2 GPUs, ranks 0..1 on sn00-t0[01]-gpu[0-7],sn00-t0[01]-gpu[0-7]$" "$SN" job show "$J"
check 0 "^rank_exits +0:0,1:0 " "$SN" job show "$J"
"$SN" job show "$J" | grep -q "^ranks_exited" && fail "sn job show still prints ranks_exited"
check 0 "hi-from-rank" "$SN" job log "$J"
# --follow on a pending job says it waits (64 GPUs: sn00-t07 is down).
P=$("$SN" submit --tenant acme --name big --gpus 64 | sed 's/^submitted job \([0-9]*\).*/\1/')
BIG=$P
timeout 2 "$SN" job log "$P" --follow >"$D/follow.out" 2>&1
grep -q "job $P is pending (.*); waiting for it to start" "$D/follow.out" ||
    fail "sn job log --follow on a pending job: $(cat "$D/follow.out")"

# ---- hold, release, requeue, update, --start --------------------------------
# Against an snd without these routes (docs/api.md "Job control"), each says
# so and changes nothing (exit 4); with them, their effect is checked.
check 2 "'abc': expected job ids" "$SN" hold abc
check 2 "nothing to change" "$SN" update "$P"
check 2 "--gpus 'x': expected a positive integer" "$SN" update "$P" --gpus x
check 2 "unknown option '--reason'" "$SN" release "$P" --reason x
P=$("$SN" submit --tenant acme --name waits --gpus 64 | sed 's/^submitted job \([0-9]*\).*/\1/')
out=$("$SN" hold "$P" --reason "wait for data" 2>&1)
rc=$?
if printf '%s' "$out" | grep -q "no route"; then
    [ $rc = 4 ] || fail "sn hold without the route: exit $rc"
    printf '%s' "$out" | grep -q "this snd has no route POST /v1/jobs/{id}/hold (a newer snd" ||
        fail "sn hold without the route: $out"
    check 4 "no route POST /v1/jobs/\{id\}/release" "$SN" release "$P"
    check 4 "no route POST /v1/jobs/\{id\}/requeue" "$SN" requeue "$P"
    check 4 "no route POST /v1/jobs/\{id\}/update" "$SN" update "$P" --gpus 2
    check 4 "no route GET /v1/scheduler/starts" "$SN" jobs --start
    check 0 "^state +pending$" "$SN" job show "$P"
    check 0 "^gpus +64$" "$SN" job show "$P"
    echo "client_cluster: hold/release/requeue/update/--start: snd lacks the routes, gated"
else
    [ $rc = 0 ] || fail "sn hold: exit $rc: $out"
    printf '%s' "$out" | grep -q "^held job $P$" || fail "sn hold: $out"
    check 0 "^ *$P .*\(held\)$" "$SN" jobs
    check 0 "held by admin:admin: wait for data" "$SN" job show "$P"
    # update (POST /v1/jobs/{id}/update): the fields replaced, checked as
    # on submit, an event listing each change; a running job takes only
    # the time limit and the name. Held, the job stays pending meanwhile.
    out=$("$SN" update "$P" --gpus 8 --time-limit 1h 2>&1)
    [ $? = 0 ] || fail "sn update: exit not 0: $out"
    printf '%s' "$out" | grep -q "^updated job $P: pending, 8 GPUs$" || fail "sn update: $out"
    check 0 "^time_limit_s +3600$" "$SN" job show "$P"
    check 0 "^gpus +8$" "$SN" job show "$P"
    check 0 "updated +updated by admin:admin: gpus 64 -> 8, time_limit_s - -> 3600" \
        "$SN" job show "$P"
    check 1 "422 .*no priority class 'nope'" "$SN" update "$P" --class nope
    check 1 "422 .*65 GPUs asked, the pool has 64" "$SN" update "$P" --gpus 65
    check 4 "404 .*no job '999999'" "$SN" update 999999 --name x
    # Audited like cancel: the accepted update and the refused one.
    check 0 " 200 .*POST /v1/jobs/$P/update" "$SN" audit --route "POST /v1/jobs/$P/update"
    check 0 " 422 .*POST /v1/jobs/$P/update" "$SN" audit --route "POST /v1/jobs/$P/update"
    check 0 "^released job $P$" "$SN" release "$P"
    check 1 "409 job $P is (pending|running) and not held" "$SN" release "$P"
    # --start: served, or gated by the client until snd has the route.
    out=$("$SN" jobs --start 2>&1)
    if printf '%s' "$out" | grep -q "no route"; then
        check 4 "no route GET /v1/scheduler/starts" "$SN" jobs --start
    else
        check 0 "JOBID +TENANT +NAME +STATE +GPUS +START_TIME +KIND +BASIS" "$SN" jobs --start
    fi
    until_out "^ *$P .* running " "$SN" jobs
    check 1 "409 job $P is running; only time_limit_s and name can change" \
        "$SN" update "$P" --gpus 4
    check 0 "^updated job $P: running, 8 GPUs$" "$SN" update "$P" --name renamed --time-limit 2h
    check 0 "^name +renamed$" "$SN" job show "$P"
    check 0 "^time_limit_s +7200$" "$SN" job show "$P"
    check 0 "^requeued job $P$" "$SN" requeue "$P" --reason "move it"
    check 0 "^requeues +1$" "$SN" job show "$P"
    check 0 "requeued +requeued by admin:admin: move it" "$SN" job show "$P"
fi
"$SN" cancel "$P" >/dev/null

# ---- sn jobs --start: the backfill reservation's expected start ----------
# big (64 GPUs, 8 of them down) can never start: no reservation, N/A, the
# projection says why. Once it is cancelled, hold (48 GPUs, limit 1h) runs
# and waits (24) is the head, reserved at hold's time limit; after (24,
# limit 10min) is projected in queue order: it waits for waits, whose end
# is unknown (no limit).
out=$("$SN" jobs --start 2>&1)
if printf '%s' "$out" | grep -q "no route"; then
    check 4 "no route GET /v1/scheduler/starts" "$SN" jobs --start
else
    check 0 "^ *$BIG +acme +big +pending +64 +N/A +unknown +does not fit the GPUs up now, even once every running job ends$" \
        "$SN" jobs --start
    "$SN" cancel "$BIG" >/dev/null
    X=$("$SN" submit --tenant acme --name hold --gpus 48 --time-limit 1h --command "sleep 300" |
        sed 's/^submitted job \([0-9]*\).*/\1/')
    until_out "^ *$X .* running " "$SN" jobs
    Y=$("$SN" submit --tenant acme --name waits --gpus 24 | sed 's/^submitted job \([0-9]*\).*/\1/')
    until_out "^ *$Y .*[(]reservation|no-supernode-fits|priority[)]" "$SN" jobs
    xs=$("$SN" job show "$X" -o json | sed -n 's/^ *"start_time_s": \([0-9]*\),*$/\1/p')
    want=$(date -u -d "@$((xs + 3600))" +%Y-%m-%dT%H:%M:%SZ)
    until_out "^ *$Y +acme +waits +pending +24 +$want +reservation +after job $X ends \(time limit $want\)$" \
        "$SN" jobs --start
    out=$("$SN" jobs --start -o json)
    printf '%s' "$out" | grep -q "\"expected_start_s\": $((xs + 3600))" ||
        fail "sn jobs --start -o json: no expected_start_s $((xs + 3600)): $out"
    # The projection: after (24) fits the 56 GPUs up once hold ends, next
    # to waits' 24, so it starts then too, in queue order.
    Z=$("$SN" submit --tenant acme --name after --gpus 24 --time-limit 10min |
        sed 's/^submitted job \([0-9]*\).*/\1/')
    until_out "^ *$Z .*[(](reservation|no-supernode-fits|priority)[)]" "$SN" jobs
    until_out "^ *$Z +acme +after +pending +24 +$want +projection +after job $X ends \(time limit $want\), in queue order$" \
        "$SN" jobs --start
    "$SN" cancel "$X" "$Y" "$Z" >/dev/null
fi

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "client_cluster: all checks passed"
