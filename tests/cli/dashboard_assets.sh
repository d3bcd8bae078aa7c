#!/bin/sh
# The dashboard's embedded files are generated at build time
# (scripts/gen-dashboard.sh, run by CMake): the generator is deterministic,
# names every file of cmd/snd/dashboard/ with its size, and the file the
# build compiled into snd is what it writes now (not stale).
set -eu
tmp=$(mktemp)
tmp2=$(mktemp)
trap 'rm -f "$tmp" "$tmp2"' EXIT
sh scripts/gen-dashboard.sh "$tmp"
sh scripts/gen-dashboard.sh "$tmp2"
cmp -s "$tmp" "$tmp2" || { echo "dashboard_assets: two runs differ" >&2; exit 1; }
for f in cmd/snd/dashboard/*; do
    name=$(basename "$f")
    size=$(wc -c <"$f" | tr -d ' ')
    grep -q "{\"$name\", \"[^\"]*\", asset_[0-9]*, $size}," "$tmp" ||
        { echo "dashboard_assets: $name ($size bytes) missing from the output" >&2; exit 1; }
done
built=${SN_BUILD_DIR:-build}/generated/dashboard_assets.c
if [ -f "$built" ] && ! cmp -s "$tmp" "$built"; then
    echo "dashboard_assets: $built is stale (the build did not rerun the generator)" >&2
    exit 1
fi
if git ls-files --error-unmatch cmd/snd/dashboard_assets.c >/dev/null 2>&1; then
    echo "dashboard_assets: cmd/snd/dashboard_assets.c is committed; it is generated" >&2
    exit 1
fi
echo "dashboard_assets: generated, deterministic, $(ls cmd/snd/dashboard | wc -l) files"
