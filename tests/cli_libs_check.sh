#!/usr/bin/env bash
# The one-shot CLI links neither the daemon's libsystemd (sd_notify) nor the
# web security's libcrypt (bcrypt): fails naming each such library that ldd
# lists for the binary. Usage: cli_libs_check.sh PATH/TO/hostperf
set -euo pipefail
binary=$1
libs=$(ldd "$binary")
found=$(grep -oE '\blib(systemd|crypt)\.so[.0-9]*' <<<"$libs" | sort -u || true)
if [[ -n $found ]]; then
  echo "cli_libs_check: $binary links $(tr '\n' ' ' <<<"$found")(only hostperf_exporter may: link the CLI" \
    "against hostperf::cluster, hostperf::runs and hostperf::cmd, not hostperf::daemon or hostperf::http_security)"
  exit 1
fi
echo "cli_libs_check: $binary links neither libsystemd nor libcrypt"
