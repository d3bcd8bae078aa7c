#!/bin/sh
# Golden-output command-line tests.
#
#   run_cli.sh SN_BINARY SUITE.cases
#
# Each non-comment line of SUITE.cases is
#   NAME | EXIT | ARGS...
# and runs `sn ARGS...` from the repository root (ARGS are split by the
# shell, so quote as in a shell). The combined stdout and stderr must equal
# tests/cli/golden/SUITE/NAME.out and the exit status must equal EXIT.
# Regenerating goldens is an explicit step: SN_UPDATE_GOLDEN=1.
# A case whose ARGS name ../shared/traces (the full public traces, fetched
# by scripts/fetch-traces) is skipped, with the reason printed, when that
# directory is absent (a plain clone); the excerpts under tests/data/traces/
# keep the same readers tested there.
set -u
sn=$1
suite=$2
name=$(basename "$suite" .cases)
dir=$(dirname "$suite")/golden/$name
mkdir -p "$dir"
pass=0 fail=0 skip=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    case_name=$(printf '%s' "$line" | cut -d'|' -f1 | tr -d ' ')
    want_exit=$(printf '%s' "$line" | cut -d'|' -f2 | tr -d ' ')
    args=$(printf '%s' "$line" | cut -d'|' -f3-)
    case "$args" in *../shared/traces*)
        if [ ! -d ../shared/traces ]; then
            echo "skip $name/$case_name: skipped: ../shared/traces absent"
            skip=$((skip + 1))
            continue
        fi ;;
    esac
    eval "set -- $args"
    "$sn" "$@" >"$tmp" 2>&1
    got_exit=$?
    golden=$dir/$case_name.out
    if [ "${SN_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$tmp" "$golden"
    fi
    if [ "$got_exit" != "$want_exit" ]; then
        echo "FAIL $name/$case_name: exit $got_exit, want $want_exit"
        head -20 "$tmp"
        fail=$((fail + 1))
    elif [ ! -f "$golden" ]; then
        echo "FAIL $name/$case_name: no golden $golden (run with SN_UPDATE_GOLDEN=1)"
        fail=$((fail + 1))
    elif ! diff -u "$golden" "$tmp" >/dev/null; then
        echo "FAIL $name/$case_name: output differs from $golden"
        diff -u "$golden" "$tmp" | head -40
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
done <"$suite"
echo "cli $name: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
