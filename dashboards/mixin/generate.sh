#!/bin/sh
# Regenerates the checked-in outputs of the mixin with Debian's jsonnet:
#   dashboards/rules/hostperf-recording.yml, dashboards/rules/hostperf-alerts.yml
#   dashboards/alertmanager/hostperf-alertmanager.yml (example route and inhibition)
#   and dashboards/grafana/*.json (only when the mixin has dashboards).
# Usage: generate.sh [OUTDIR]   (default: the repository's dashboards/;
# the ctest mixin_generated_up_to_date writes into a temporary directory and diffs).
set -eu
mixin=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(dirname "$mixin")}
JSONNET=${JSONNET:-jsonnet}
mkdir -p "$out/rules"
"$JSONNET" -S -J "$mixin" --tla-str what=recording "$mixin/lib/render.jsonnet" > "$out/rules/hostperf-recording.yml"
"$JSONNET" -S -J "$mixin" --tla-str what=alerts "$mixin/lib/render.jsonnet" > "$out/rules/hostperf-alerts.yml"
mkdir -p "$out/alertmanager"
"$JSONNET" -S -J "$mixin" --tla-str what=alertmanager "$mixin/lib/render.jsonnet" > "$out/alertmanager/hostperf-alertmanager.yml"
if [ "$("$JSONNET" -J "$mixin" --tla-str what=dashboards -e 'function(what) std.length((import "lib/render.jsonnet")(what))' --tla-str what=dashboards)" != 0 ]; then
  mkdir -p "$out/grafana"
  "$JSONNET" -J "$mixin" --tla-str what=dashboards -m "$out/grafana" "$mixin/lib/render.jsonnet" > /dev/null
fi
