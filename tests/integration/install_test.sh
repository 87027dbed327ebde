#!/usr/bin/env bash
# cmake --install places the binaries and the example config where operators
# expect them, and the installed binaries run.
set -euo pipefail
build_dir=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for f in bin/hostperf_exporter bin/hostperf; do
  [[ -x $prefix/$f ]] || { echo "missing $f"; exit 1; }
done
[[ -f $prefix/etc/hostperf/hostperf.toml ]] || { echo "missing etc/hostperf/hostperf.toml"; exit 1; }
"$prefix/bin/hostperf_exporter" --config.file="$prefix/etc/hostperf/hostperf.toml" --config.check
"$prefix/bin/hostperf" --version
# The config sets nothing (comments only); the annotated example, every key
# with its default, is in the docs, and checks as well.
if grep -qv '^\(#.*\)\?$' "$prefix/etc/hostperf/hostperf.toml"; then
  echo "etc/hostperf/hostperf.toml has active lines: $(grep -v '^\(#.*\)\?$' "$prefix/etc/hostperf/hostperf.toml")"
  exit 1
fi
"$prefix/bin/hostperf_exporter" --config.file="$prefix/share/doc/hostperf/examples/hostperf.toml" --config.check
for f in share/doc/hostperf/copyright share/doc/hostperf/changelog.gz share/doc/hostperf/changelog.Debian.gz \
  share/doc/hostperf/docs/runbooks.md share/doc/hostperf/docs/metrics.md; do
  [[ -f $prefix/$f ]] || { echo "missing $f"; exit 1; }
done
# Each probe's metrics page beside docs/, where docs/metrics.md's links find it.
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
for page in "$source_dir"/probes/*/metrics.md; do
  f=share/doc/hostperf/${page#"$source_dir"/}
  [[ -f $prefix/$f ]] || { echo "missing $f"; exit 1; }
done
# The installed CLI links neither the daemon's libsystemd nor libcrypt.
"$(dirname "$0")/../cli_libs_check.sh" "$prefix/bin/hostperf"
# The web config example, and the TLS shims for CivetWeb next to the binaries.
"$prefix/bin/hostperf_exporter" --web.config.file="$prefix/etc/hostperf/web-config.example.yml" --config.check
compgen -G "$prefix/lib*/hostperf/libhostperf-civetweb-ssl.so" >/dev/null || { echo "missing TLS shim"; exit 1; }
echo "install layout OK"
