#!/bin/sh
# The checked-in cmd/snd/dashboard_assets.c matches cmd/snd/dashboard/:
# regenerates it into a temporary file and compares.
set -eu
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sh scripts/gen-dashboard.sh "$tmp"
if ! cmp -s "$tmp" cmd/snd/dashboard_assets.c; then
    echo "dashboard_assets: cmd/snd/dashboard_assets.c is stale; run scripts/gen-dashboard.sh" >&2
    exit 1
fi
echo "dashboard_assets: up to date"
