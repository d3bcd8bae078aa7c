#!/bin/sh
# Render time and peak memory of `sn design export --format dot` under
# Graphviz (docs/PERFORMANCE.md, "Design fidelity 3"): for each --detail
# level, the graph's lines and bytes, then `dot -Tsvg` wall, user and system
# time and peak RSS from /usr/bin/time -v. A render that runs past LIMIT
# seconds is killed and reported as such (the old full graph of a 100k-GPU
# spec does not finish in minutes). Graphviz is not a test dependency: the
# script skips with a message when `dot` (or GNU time) is absent.
#
# usage (from the repository root, after a build):
#   sh bench/dot_render.sh [BUILD_DIR (build)] [SPEC (examples/large-100k.yaml)]
#                          [LIMIT seconds (600)] [DETAIL ... (summary pod=0 all)]
set -u
BUILD=${1:-build} SPEC=${2:-examples/large-100k.yaml} LIMIT=${3:-600}
[ $# -gt 3 ] && shift 3 || set --
DETAILS=${*:-summary pod=0 all}
SN=$BUILD/sn
command -v dot >/dev/null 2>&1 || { echo "dot_render: skipped (graphviz 'dot' is not installed)"; exit 0; }
[ -x /usr/bin/time ] || { echo "dot_render: skipped (no /usr/bin/time for peak memory)"; exit 0; }
[ -x "$SN" ] || { echo "dot_render: no $SN: build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "dot_render: $SPEC, $(dot -V 2>&1), limit ${LIMIT} s"
printf '%-10s %8s %10s %10s %8s %8s %10s\n' detail lines bytes wall_s user_s sys_s peak_MB
for d in $DETAILS; do
    "$SN" design export "$SPEC" --format dot --detail "$d" -o "$tmp/g.dot" || exit 2
    lines=$(wc -l <"$tmp/g.dot") bytes=$(wc -c <"$tmp/g.dot")
    timeout "$LIMIT" /usr/bin/time -v dot -Tsvg "$tmp/g.dot" -o "$tmp/g.svg" 2>"$tmp/time"
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        printf '%-10s %8s %10s %10s\n' "$d" "$lines" "$bytes" ">${LIMIT} (killed)"
        continue
    fi
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    user=$(sed -n 's/.*User time (seconds): //p' "$tmp/time")
    sys=$(sed -n 's/.*System time (seconds): //p' "$tmp/time")
    kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
    printf '%-10s %8s %10s %10s %8s %8s %10.1f\n' "$d" "$lines" "$bytes" "$wall" "$user" "$sys" \
        "$(echo "$kb" | awk '{ print $1 / 1024 }')"
done
