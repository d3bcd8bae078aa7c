#!/bin/sh
# docs/cmd-client.md's "A session, with real output" is real: this test
# runs each `$ ` command of that block against a fresh snd
# (examples/std-unit-64.yaml) and compares its output and exit status with
# the block, after masking what differs from run to run (times, tokens,
# token ids, Unix seconds, durations) and runs of spaces.
#   sh tests/cli/client_doc_session.sh path/to/sn           (compare)
#   sh tests/cli/client_doc_session.sh path/to/sn --regen   (print the block
#       as this build writes it, to paste into docs/cmd-client.md)
# A `$ cat FILE` line writes the block's next lines to FILE first (the job
# file the session submits).
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REGEN=${2:-}
DOC=$(pwd)/docs/cmd-client.md
SPEC=$(pwd)/examples/std-unit-64.yaml
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-docsession-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
"$(dirname "$SN")/snd" --cluster "$SPEC" --state "$D/state" --listen 127.0.0.1:0 \
    --set sched_event_delay_ms=0 --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
PID=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$D/port" ] || { echo "snd did not start"; cat "$D/snd.log"; exit 1; }
export SN_SERVER="http://127.0.0.1:$(cat "$D/port")" SN_TOKEN="$(cat "$D/state/admin.token")"
unset SN_CONFIG
export HOME="$D"
mkdir "$D/bin" "$D/work"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$SN" >"$D/bin/sn"
chmod +x "$D/bin/sn"
export PATH="$D/bin:$PATH"

# The block: from the line after the heading's first ``` to the next ```.
awk '/^## A session, with real output/ { s = 1 } s == 1 && /^```/ { s = 2; next }
     s == 2 && /^```/ { exit } s == 2 { print }' "$DOC" >"$D/want"
[ -s "$D/want" ] || { echo "FAIL: no session block in docs/cmd-client.md"; exit 1; }

# Run: each "$ CMD" line, its output and "[exit N]"; a cat writes its file.
cd "$D/work" || exit 1
: >"$D/got"
pending_cat=
while IFS= read -r line; do
    case $line in
    '$ cat '*)
        pending_cat=${line#\$ cat }
        : >"$pending_cat"
        printf '%s\n' "$line" >>"$D/got"
        ;;
    '$ '*)
        if [ -n "$pending_cat" ]; then
            cat "$pending_cat" >>"$D/got"
            printf '\n' >>"$D/got"
            pending_cat=
        fi
        printf '%s\n' "$line" >>"$D/got"
        sh -c "${line#\$ }" </dev/null >>"$D/got" 2>&1
        printf '[exit %d]\n\n' $? >>"$D/got"
        sleep 0.3 # a scheduling pass between commands, as in the session
        ;;
    *)
        [ -n "$pending_cat" ] && [ -n "$line" ] && printf '%s\n' "$line" >>"$pending_cat"
        ;;
    esac
done <"$D/want"
# The block ends without the last blank line.
sed -i '$ { /^$/d }' "$D/got"

if [ "$REGEN" = --regen ]; then
    cat "$D/got"
    exit 0
fi
mask() {
    sed -E 's/sn2\.[A-Za-z0-9_.-]+/TOKEN/g; s/"[0-9a-f]{32}"/"TOKENID"/g;
        s/20[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}Z?( UTC)?/TIME/g;
        s/\b1[0-9]{9}\b/EPOCH/g; s/(^| )[0-9]+(m[0-9]+)?s( |$)/\1DUR\3/g;
        s/[0-9]+s ago/AGO/g; s/after [0-9]+ ms/after N ms/g; s/ +/ /g' "$1"
}
mask "$D/want" >"$D/want.m"
mask "$D/got" >"$D/got.m"
if ! diff -u "$D/want.m" "$D/got.m" >"$D/diff"; then
    echo "FAIL: docs/cmd-client.md's session differs from this build's output (masked);"
    echo "regenerate: sh tests/cli/client_doc_session.sh build/sn --regen"
    cat "$D/diff"
    exit 1
fi
echo "client_doc_session: $(grep -c '^\$ ' "$D/want") commands match docs/cmd-client.md"
