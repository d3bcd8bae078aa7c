#!/bin/sh
# docs/api.md lists every route snd serves, and nothing else: compares the
# "| METHOD | `path` |" rows of its tables with `snd --routes` (the table the
# daemon dispatches from; the snd binary sits next to sn in the build
# directory). Paths are compared with every {..} segment as {} and the query
# dropped. Also checks that no method and path repeat in the table (snd
# itself refuses to start then, with exit status 3).
set -u
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-routes-XXXXXX")
trap 'rm -rf "$D"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$SND" --routes >"$D/table" 2>"$D/err"
rc=$?
[ "$rc" = 0 ] || fail "snd --routes: exit $rc: $(cat "$D/err")"
[ -s "$D/table" ] || fail "snd --routes printed nothing"
sort "$D/table" >"$D/table.sorted"
dups=$(uniq -d "$D/table.sorted")
[ -z "$dups" ] || fail "repeated in the route table: $dups"

sed -n 's/^| \(GET\|POST\|PUT\|DELETE\|PATCH\) | `\([^`]*\)` |.*/\1 \2/p' docs/api.md |
    sed 's/?.*//; s/{[^}]*}/{}/g' | sort -u >"$D/doc"
sort -u "$D/table" >"$D/table.set"
missing=$(comm -23 "$D/table.set" "$D/doc")
extra=$(comm -13 "$D/table.set" "$D/doc")
[ -z "$missing" ] || fail "routes not in docs/api.md: $missing"
[ -z "$extra" ] || fail "docs/api.md lists routes snd does not serve: $extra"
n=$(wc -l <"$D/table.set")
[ "$n" -ge 30 ] || fail "only $n routes in the table"

[ "$fails" = 0 ] || exit 1
echo "ok: $n routes, docs/api.md agrees, none repeated"
