#!/bin/sh
# End-to-end test of the dashboard in headless Chromium (playwright-core):
# tests/cli/dashboard.js starts snd (from the directory of the sn binary,
# $1) on 127.0.0.1 at 128 and at 131,072 GPUs with a simulated agent, loads
# the page, checks the map, search, the GPU and job panels and their charts,
# and saves dashboard-*.png in the build directory (docs/dashboard.md).
# Skips (exit 0) when Chromium or node_modules/playwright-core is absent.
set -eu
bin=$(dirname "$1")
if [ ! -x /usr/bin/chromium ]; then
    echo "dashboard: skipped (no /usr/bin/chromium; scripts/deps.sh installs it)"
    exit 0
fi
if ! command -v node >/dev/null 2>&1 || [ ! -d node_modules/playwright-core ]; then
    echo "dashboard: skipped (no node or node_modules/playwright-core; run npm ci)"
    exit 0
fi
exec node tests/cli/dashboard.js "$bin"
