#!/bin/sh
# Fails when a checked-in file generated from the mixin differs from what the
# sources generate now. (The fleet tests of gen_fleet_rule_tests.py are not
# checked in: ctest generates them at test time.)
# Usage: check_mixin_generated.sh mixin WORKDIR
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
what=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
status=0
compare() {  # generated checked-in
  if ! diff -u "$2" "$1" > "$work/diff.txt"; then
    echo "FAIL: $2 is not what the sources generate; run the generator and commit:" >&2
    head -40 "$work/diff.txt" >&2
    status=1
  fi
}
case $what in
  mixin)
    "$root/dashboards/mixin/generate.sh" "$work"
    compare "$work/rules/hostperf-recording.yml" "$root/dashboards/rules/hostperf-recording.yml"
    compare "$work/rules/hostperf-alerts.yml" "$root/dashboards/rules/hostperf-alerts.yml"
    compare "$work/alertmanager/hostperf-alertmanager.yml" "$root/dashboards/alertmanager/hostperf-alertmanager.yml"
    if [ -d "$work/grafana" ]; then
      for f in "$work"/grafana/*.json; do
        compare "$f" "$root/dashboards/grafana/$(basename "$f")"
      done
    fi
    hint="dashboards/mixin/generate.sh"
    ;;
  *)
    echo "usage: $0 mixin WORKDIR" >&2
    exit 2
    ;;
esac
[ $status -eq 0 ] && echo "ok: the checked-in files are what $hint generates"
exit $status
