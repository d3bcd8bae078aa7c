#!/bin/sh
# contrib/prometheus and contrib/grafana stay valid and in step with snd:
# - promtool check rules / check config, and promtool test rules (each alert
#   fires on a series that should raise it and stays quiet otherwise);
# - every PromQL expression of the Grafana dashboard parses (promtool checks
#   them as recording rules);
# - every sn_/snd_ metric the rules and the dashboard use is exported by a
#   real snd: the test starts one and scrapes /metrics.
# Skips (exit 0) without promtool (Debian's prometheus package).
set -eu
SN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SND=$(dirname "$SN")/snd
if ! command -v promtool >/dev/null 2>&1; then
    echo "prometheus_rules: skipped (no promtool; scripts/deps.sh installs prometheus)"
    exit 0
fi
D=$(mktemp -d "${TMPDIR:-/tmp}/sn-prom-XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "prometheus_rules: $*" >&2; exit 1; }

promtool check rules contrib/prometheus/supernode-rules.yml || fail "check rules"
(cd contrib/prometheus && promtool test rules supernode-rules.test.yml) || fail "test rules"
promtool check config contrib/prometheus/prometheus.yml || fail "check config"

# The dashboard's expressions as recording rules, so promtool parses each.
node -e '
const d = JSON.parse(require("fs").readFileSync("contrib/grafana/supernode-overview.json", "utf8"));
const exprs = [];
for (const p of d.panels) for (const t of p.targets || []) exprs.push(t.expr);
if (exprs.length < 10) { console.error("only " + exprs.length + " expressions"); process.exit(1); }
let y = "groups:\n  - name: grafana\n    rules:\n";
exprs.forEach((e, i) => {
  e = e.replace(/\$snd|\$host/g, ".*");
  y += "      - record: grafana:panel" + i + "\n        expr: " + JSON.stringify(e) + "\n";
});
require("fs").writeFileSync(process.argv[1], y);
' "$D/grafana-rules.yml" || fail "cannot read the Grafana dashboard"
promtool check rules "$D/grafana-rules.yml" >/dev/null || fail "a Grafana expression does not parse"
echo "ok - every Grafana expression parses"

# Every sn_/snd_ metric used is one a real snd exports.
"$SND" --cluster examples/std-unit-64.yaml --state "$D/state" --listen 127.0.0.1:0 \
    --ready-fd 3 3>"$D/port" 2>"$D/snd.log" &
PID=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$D/port")
[ -n "$PORT" ] || { cat "$D/snd.log"; fail "snd did not start"; }
curl -sf "http://127.0.0.1:$PORT/metrics" >"$D/metrics" || fail "cannot scrape /metrics"
sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$D/metrics" | sort -u >"$D/exported"
grep -oh '\bsnd\?_[a-z_]*' contrib/prometheus/supernode-rules.yml contrib/grafana/supernode-overview.json |
    sed 's/_\(bucket\|sum\|count\)$//' | sort -u >"$D/used"
missing=$(comm -23 "$D/used" "$D/exported")
[ -z "$missing" ] || fail "metrics used but not exported by snd: $missing"
echo "ok - $(wc -l <"$D/used") snd metrics used, all exported"
