#!/bin/sh
# Every SVG the CLI writes reads like a chart: sn sim --svg-dir (utilisation,
# JCT CDF, occupancy) and sn health analyze --svg each have a title, tick
# labels, axis titles with units and a legend. Checked in plain text (and
# as well-formed XML with xmllint when present), then rendered in headless
# Chromium by tests/cli/svg_charts.js, which checks that the tick labels and
# legends are laid out inside the picture (skipped without Chromium).
set -eu
sn=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "svg_charts: $*" >&2; exit 1; }

"$sn" sim --cluster shape:4x8x8 --trace synth:200 --compare --svg-dir "$out" >/dev/null ||
    fail "sn sim --svg-dir failed"
"$sn" health analyze --cluster examples/good-64.yaml --svg "$out/health.svg" \
    tests/data/health/kern.log tests/data/health/healthy.csv >/dev/null || [ $? = 1 ] ||
    fail "sn health analyze --svg failed"

for f in utilisation jct-cdf occupancy health; do
    svg="$out/$f.svg"
    [ -s "$svg" ] || fail "$f.svg not written"
    if command -v xmllint >/dev/null 2>&1; then
        xmllint --noout "$svg" || fail "$f.svg is not well-formed XML"
    fi
    ticks=$(grep -o 'class="tick-label"' "$svg" | wc -l)
    [ "$ticks" -ge 3 ] || fail "$f.svg has $ticks tick labels, want at least 3"
    grep -q 'class="legend"' "$svg" || fail "$f.svg has no legend"
    grep -q 'class="axis-title"' "$svg" || fail "$f.svg has no axis title"
    echo "ok - $f.svg: $ticks tick labels, a legend and axis titles"
done
# Line charts name every policy in the legend and carry units on both axes.
for f in utilisation jct-cdf; do
    for p in supernode-first first-fit tree-best-fit; do
        grep -q ">$p</text>" "$out/$f.svg" || fail "$f.svg legend lacks '$p'"
    done
done
grep -q '(h)</text>' "$out/utilisation.svg" || fail "utilisation.svg x axis has no unit"
grep -q '(%)</text>' "$out/utilisation.svg" || fail "utilisation.svg y axis has no unit"
grep -q 'log scale' "$out/jct-cdf.svg" || fail "jct-cdf.svg does not say its axis is logarithmic"

if [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null 2>&1 ||
    [ ! -d node_modules/playwright-core ]; then
    echo "svg_charts: rendering skipped (no Chromium, node or node_modules/playwright-core)"
    exit 0
fi
node tests/cli/svg_charts.js "$out"/utilisation.svg "$out"/jct-cdf.svg "$out"/occupancy.svg \
    "$out"/health.svg
