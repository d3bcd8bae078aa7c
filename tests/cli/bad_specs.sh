#!/bin/sh
# Every malformed spec in tests/specs/bad/ makes each `sn design`
# subcommand exit 2 with one message that names the file, line and column
# the spec's first line expects ("# expect: LINE:COL: TEXT").
set -u
sn=$1
pass=0 fail=0
for spec in tests/specs/bad/*.yaml; do
    expect=$(head -1 "$spec" | sed -n 's/^# expect: //p')
    where=${expect%%: *}
    text=${expect#*: }
    for sub in check bom "export --format cables"; do
        # shellcheck disable=SC2086
        out=$("$sn" design $sub "$spec" 2>&1 >/dev/null)
        status=$?
        case "$out" in
        "sn: $spec:$where: "*"$text"*) ok=1 ;;
        *) ok=0 ;;
        esac
        if [ "$status" = 2 ] && [ "$ok" = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]; then
            pass=$((pass + 1))
        else
            echo "FAIL design $sub $spec: exit $status, want 2 and 'sn: $spec:$where: ...$text...'"
            printf '%s\n' "$out" | head -3
            fail=$((fail + 1))
        fi
    done
done
echo "bad specs: $pass passed, $fail failed"
[ "$fail" = 0 ]
