#!/usr/bin/env bash
# Throughput among all hosts at once: `hostperf net` coordinating N
# daemons against iperf3 in the same topology, on loopback (never anything else).
#   bench/net/mesh.sh BUILD_DIR [RUNS] [SECONDS] [RATE]
# N = 2, 3, 4 hosts, each a hostperf_exporter responder on its own loopback port;
# every host sends to all the others at once at RATE MB/s in total (MiB/s, as
# vnetperf; default 0: unlimited), TCP, SECONDS (default 5) each.
# iperf3 (Debian 12: 3.12) serves one test per server at a time, so the same
# topology is one iperf3 server per ordered pair of hosts, and every host's
# N-1 clients started at once, each at RATE / (N-1) (-b 0 when unlimited).
# Prints, per N, the median over RUNS (default 3) of the per-host received
# MB/s of each side and their ratio (ours / iperf3).
set -euo pipefail
build=${1:?usage: mesh.sh BUILD_DIR [RUNS] [SECONDS] [RATE]}
runs=${2:-3}
seconds=${3:-5}
rate=${4:-0}
for tool in iperf3 python3; do command -v $tool >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
(umask 077; head -c 32 /dev/urandom | base64 > "$work/secret")

base=24200
hosts=4
exporter=$build/exporter/hostperf_exporter
# shellcheck source=bench/daemon.sh
source "$(dirname "$0")/../daemon.sh"
for ((h = 0; h < hosts; h++)); do start_daemon "h$h" "$(responder_only $((base + h)))"; done
median() { python3 -c "import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 3))" "$@"; }
ours_rate=$([[ $rate == 0 ]] && echo 100000 || echo "$rate")

for n in 2 3 4; do
  list=$(python3 -c "print(','.join('127.0.0.1:%d' % ($base + h) for h in range($n)))")
  ours=(); theirs=(); ratios=()
  for ((run = 1; run <= runs; run++)); do
    echo "N=$n run $run/$runs: hostperf net ..." >&2
    "$build/exporter/hostperf" --config.file="$work/h0/hostperf.toml" net --hosts "$list" --datarate "$ours_rate" \
      --duration "$seconds" --output-file "$work/r.json" tcp-throughput >/dev/null
    a=$(python3 -c "
import json, statistics
rows = [r for r in json.load(open('$work/r.json'))['tests']['tcp-throughput'] if r['node'] != 'average']
assert all(r['outcome'] == 'ok' for r in rows), rows
print(statistics.mean(r['mb_per_second_received'] for r in rows))")
    echo "N=$n run $run/$runs: iperf3 ($((n * (n - 1))) pairs) ..." >&2
    # One server per ordered pair (receiver r, sender s) on port 25300 + 10 r + s.
    spids=()
    for ((r = 0; r < n; r++)); do for ((s = 0; s < n; s++)); do
      [[ $r == "$s" ]] && continue
      iperf3 -s -1 -p $((25300 + 10 * r + s)) -B 127.0.0.1 >/dev/null 2>&1 & spids+=($!); pids+=($!)
    done; done
    sleep 0.5
    per=$([[ $rate == 0 ]] && echo 0 || python3 -c "print(int($rate * 1048576 * 8 / ($n - 1)))")
    cpids=()
    for ((r = 0; r < n; r++)); do for ((s = 0; s < n; s++)); do
      [[ $r == "$s" ]] && continue
      iperf3 -c 127.0.0.1 -p $((25300 + 10 * r + s)) -l 128K -b "$per" -t "$seconds" -J > "$work/i$r$s.json" 2>/dev/null &
      cpids+=($!)
    done; done
    for p in "${cpids[@]}"; do wait "$p" || true; done
    for p in "${spids[@]}"; do wait "$p" 2>/dev/null || true; done
    b=$(python3 -c "
import json, statistics
received = {r: 0.0 for r in range($n)}
for r in range($n):
    for s in range($n):
        if r != s:
            d = json.load(open('$work/i%d%d.json' % (r, s)))['end']['sum_received']
            received[r] += d['bytes'] / d['seconds'] / 1048576
print(statistics.mean(received.values()))")
    ours+=("$a"); theirs+=("$b"); ratios+=("$(python3 -c "print($a / $b)")")
  done
  echo "N=$n per-host received MB/s: hostperf $(median "${ours[@]}"), iperf3 $(median "${theirs[@]}"), ratio $(median "${ratios[@]}") (rate ${rate:-0} MB/s per host, 0: unlimited; ${seconds} s; median of $runs)"
done
