#!/usr/bin/env bash
# The net probe's cost against the configured fleet size (loopback only).
#   bench/net/fleet_scale.sh BUILD_DIR [SIZES...]     (default sizes: 10 100 1000)
# Ten responder daemons (127.0.0.2-11, 100 ports each); the fleet is SIZE
# peers "127.0.0.A:PORT" (all answering), listed in one prober daemon that
# runs the net probe every 2 s. Per size: peers known and probed, series and
# bytes per /metrics scrape (the whole exposition, and the per-peer part), and
# the prober's CPU per net cycle. With stable observers all of it should be
# flat in the fleet size.
# Environment: SECONDS_PER_SIZE (30); KEEP_METRICS=FILE keeps the last scrape.
# Measured on the shared 2-core build machine (defaults: observers 8,
# interval 2 s here, 250 ms bursts), SECONDS_PER_SIZE=30:
#   peers  probed series  per_peer bytes/scrape gzip_bytes   cycles     cpu_ms/cycle
#   10     10     414     310      34349        4764         20         39.5
#   100    6      290     186      25714        4019         20         47.0
#   1000   9      383     279      32218        4677         21         45.7
# Series follow the probed set (31 per answering peer with bursts), not the fleet.
set -euo pipefail
build=${1:?usage: fleet_scale.sh BUILD_DIR [SIZES...]}
shift
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(10 100 1000)
seconds=${SECONDS_PER_SIZE:-30}
exporter="$build/exporter/hostperf_exporter"
[ -x "$exporter" ] || { echo "no $exporter" >&2; exit 1; }
for tool in python3 curl; do command -v $tool >/dev/null || { echo "missing $tool" >&2; exit 1; }; done

work=$(mktemp -d /var/tmp/hostperf-fleet.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
[ -n "${KEEP_METRICS:-}" ] && trap 'cp "$work/metrics" "$KEEP_METRICS" 2>/dev/null; cp "$work"/responder0/log "$KEEP_METRICS.responder" 2>/dev/null; cleanup' EXIT

# shellcheck source=bench/daemon.sh
source "$(dirname "$0")/../daemon.sh"

cpu_seconds() { python3 -c "
import os; f=open('/proc/$1/stat').read().rsplit(')',1)[1].split()
print((int(f[11])+int(f[12]))/os.sysconf('SC_CLK_TCK'))"; }
metric_sum() { curl -s "http://127.0.0.1:$1/metrics" | python3 -c "
import sys; print(sum(float(l.rsplit(' ',1)[1]) for l in sys.stdin if l.startswith('$2')))"; }
others='[probes.cpu]
enabled = false
[probes.memory]
enabled = false
[probes.disk]
enabled = false'

(umask 077; head -c 32 /dev/urandom | base64 > "$work/secret")  # owner-only: the daemon refuses looser modes
# Ten responder daemons, each bound to its own loopback address (a wildcard
# bind would answer from 127.0.0.1, not from the address asked) and serving
# 100 ports: up to 1000 distinct, answering peers.
base=31000
ports=""
for ((p = 0; p < 100; p++)); do ports+="${ports:+, }$((base + p))"; done
responders=()
for ((r = 0; r < 10; r++)); do
  start_daemon "responder$r" "$others
[probes.net]
enabled = false
bind_address = \"127.0.0.$((r + 2))\"
ports = [$ports]
secret_file = \"$work/secret\"
rate_limit = 1000000"
  responders+=("$daemon_pid")
done

printf '%-6s %-6s %-7s %-8s %-12s %-12s %-10s %s\n' peers probed series per_peer bytes/scrape gzip_bytes cycles cpu_ms/cycle
for size in "${sizes[@]}"; do
  list=""
  for ((i = 0; i < size; i++)); do
    list+="${list:+, }\"127.0.0.$((i % 10 + 2)):$((base + i / 10))\""
  done
  start_daemon "prober$size" "[scheduler]
first_run_splay = \"1s\"
$others
[probes.net]
interval = \"2s\"
timeout = \"2s\"
packet_interval = \"5ms\"
reply_timeout = \"200ms\"
bind_address = \"127.0.0.1\"
ports = [$((base + 500))]
secret_file = \"$work/secret\"
peers = [$list]"
  sleep 4
  start_cpu=$(cpu_seconds "$daemon_pid")
  start_runs=$(metric_sum "$daemon_port" 'hostperf_probe_runs_total{probe="net"}')
  sleep "$seconds"
  cpu=$(python3 -c "print($(cpu_seconds "$daemon_pid") - $start_cpu)")
  cycles=$(python3 -c "print(int($(metric_sum "$daemon_port" 'hostperf_probe_runs_total{probe="net"}') - $start_runs))")
  curl -s "http://127.0.0.1:$daemon_port/metrics" > "$work/metrics"
  series=$(grep -vc '^#' "$work/metrics")
  per_peer=$(grep -c 'peer="' "$work/metrics" || true)
  bytes=$(wc -c < "$work/metrics")
  gz=$(curl -s -H 'Accept-Encoding: gzip' "http://127.0.0.1:$daemon_port/metrics" | wc -c)
  probed=$(metric_sum "$daemon_port" 'hostperf_net_peers{set="probed"}')
  printf '%-6s %-6s %-7s %-8s %-12s %-12s %-10s %s\n' "$size" "${probed%.*}" "$series" "$per_peer" "$bytes" "$gz" \
    "$cycles" "$(python3 -c "print(round($cpu / max($cycles, 1) * 1000, 1))")"
  kill "$daemon_pid" 2>/dev/null || true
  wait "$daemon_pid" 2>/dev/null || true
done
total=0
for p in "${responders[@]}"; do total=$(python3 -c "print($total + $(cpu_seconds "$p"))"); done
echo "(responders' CPU over all sizes: $total s)"
