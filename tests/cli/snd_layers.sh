#!/bin/sh
# cmd/snd has no circle of files (issue 23): for every pair of its object
# files, "a b" when a calls or reads a symbol b defines; tsort(1) refuses the
# graph when it has a loop, and this test fails with the edges of the loop.
# Layers, bottom up: clock.c, refusals.c, outbox.c, reply.c (answers and
# commits), agents.c, health.c, the routes' files, routes.c (the table),
# http.c (the server), main.c.
#   sh tests/cli/snd_layers.sh path/to/sn   (its build directory holds snd's objects)
set -u
objs=$(dirname "$1")/CMakeFiles/snd.dir/cmd/snd
if ! ls "$objs"/*.o >/dev/null 2>&1; then
    echo "snd_layers: SKIP: no object files of snd under $objs (another CMake generator?)"
    exit 77
fi
command -v nm >/dev/null || { echo "snd_layers: SKIP: nm not installed"; exit 77; }
tmp=${TMPDIR:-/tmp}/snd_layers.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
for o in "$objs"/*.o; do
    f=$(basename "$o" .c.o)
    nm "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ { print $3, f }' >>"$tmp/defs"
    nm "$o" | awk -v f="$f" '$1 == "U" { print $2, f }' >>"$tmp/uses"
done
# "user definer symbol" for every symbol defined in another snd file.
awk 'NR == FNR { def[$1] = $2; next } ($1 in def) && def[$1] != $2 { print $2, def[$1], $1 }' \
    "$tmp/defs" "$tmp/uses" | sort -u >"$tmp/edges"
n=$(ls "$objs"/*.o | wc -l)
if ! cut -d' ' -f1,2 "$tmp/edges" | tsort >"$tmp/order" 2>"$tmp/loop"; then
    echo "snd_layers: FAIL: cmd/snd's files call each other in a circle:" >&2
    cat "$tmp/loop" >&2
    # The edges among the files tsort named in the loop.
    grep -o 'tsort: [a-z_]*' "$tmp/loop" | sed 's/tsort: //' | sort -u >"$tmp/in"
    awk 'NR == FNR { in_loop[$1] = 1; next } ($1 in in_loop) && ($2 in in_loop)' \
        "$tmp/in" "$tmp/edges" >&2
    exit 1
fi
echo "snd_layers: $n files of cmd/snd, $(cut -d' ' -f1,2 "$tmp/edges" | sort -u | wc -l) file-to-file uses, no circle"
