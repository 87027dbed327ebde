#!/usr/bin/env bash
# hostperf net against iperf3 and sockperf on loopback (never anything else).
#   bench/net/run.sh BUILD_DIR [RUNS] [SECONDS]
# TCP: same 128 KiB writes, SECONDS (default 10) each, unlimited rate.
# UDP: 200 and 500 MB/s (MiB/s, as vnetperf), 8 KiB datagrams, 4 MiB socket buffers both.
# RTT: p50 and p99 of UDP ping-pong against sockperf ping-pong --full-rtt at the same 500 pings/s, both pinned
# (client CPU 1, server CPU 0); plus p50 against back-to-back sockperf for information.
# Prints each ratio (ours / reference) as the median over RUNS (default 3).
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR [RUNS] [SECONDS]}
runs=${2:-3}
seconds=${3:-10}
for tool in iperf3 sockperf python3 taskset; do command -v $tool >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

port=24159; iperf_port=25201; sockperf_port=26301
(umask 077; head -c 32 /dev/urandom | base64 > "$work/secret")  # owner-only: the daemon refuses looser modes
cat > "$work/hostperf.toml" <<TOML
state_directory = "$work/state"
[probes.cpu]
enabled = false
[probes.memory]
enabled = false
[probes.disk]
enabled = false
[probes.net]
enabled = false
bind_address = "127.0.0.1"
ports = [$port]
secret_file = "$work/secret"
udp_datagram_size = 8192
rate_limit = 10000000
TOML
taskset -c 0 "$build/exporter/hostperf_exporter" --config.file="$work/hostperf.toml" --web.listen-address=127.0.0.1:0 2>"$work/exporter.log" &
pids+=($!)
taskset -c 0 iperf3 -s -p $iperf_port -1 >/dev/null 2>&1 & pids+=($!)
sleep 1

ours() { taskset -c 1 "$build/exporter/hostperf" --config.file="$work/hostperf.toml" net --hosts 127.0.0.1:$port --output-file "$work/r.json" "$@" >/dev/null; }
json() { python3 -c "import json,sys; d=json.load(open('$work/r.json')); print($1)"; }
iperf() {
  # iperf3 -s -1 serves one client; restart it for each run.
  taskset -c 0 iperf3 -s -p $iperf_port -1 >/dev/null 2>&1 & pids+=($!); sleep 0.3
  taskset -c 1 iperf3 -c 127.0.0.1 -p $iperf_port -J "$@" > "$work/i.json"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

tcp=(); udp200=(); udp500=(); loss200=(); loss500=(); p50=(); p99=(); hot50=()
for ((run = 0; run < runs; run++)); do
  ours --datarate 100000 --duration "$seconds" tcp-throughput
  a=$(json "d['tests']['tcp-throughput'][0]['mb_per_second_received']")
  iperf -l 128K -t "$seconds"
  b=$(python3 -c "import json; d=json.load(open('$work/i.json')); print(d['end']['sum_received']['bits_per_second']/8/1048576)")
  tcp+=("$(python3 -c "print($a/$b)")")
  for rate in 200 500; do
    ours --datarate $rate --duration "$seconds" udp-throughput
    # Pacing accuracy: the rate each sender achieved against the same target
    # rate; what was lost on the way is compared separately.
    a=$(json "d['tests']['udp-throughput'][0]['mb_per_second_sent']")
    al=$(json "d['tests']['udp-throughput'][0]['loss_ratio']*100")
    iperf -u -b $((rate * 1048576 * 8)) -l 8192 -w 4M -t "$seconds"
    b=$(python3 -c "import json; d=json.load(open('$work/i.json')); s=d['end'].get('sum_sent', d['end']['sum']); print(s['bytes']/s['seconds']/1048576)")
    bl=$(python3 -c "import json; d=json.load(open('$work/i.json')); print(d['end']['sum']['lost_percent'])")
    eval "udp$rate+=(\"$(python3 -c "print($a/$b)")\")"
    eval "loss$rate+=(\"$(python3 -c "print($al-$bl)")\")"
  done
  ours --duration 2 latency
  a50=$(json "d['tests']['latency'][0]['rtt_latency_us']")
  a99=$(json "d['tests']['latency'][0]['rtt_p99_us']")
  taskset -c 0 sockperf server -i 127.0.0.1 -p $sockperf_port >/dev/null 2>&1 & spid=$!; pids+=($spid); sleep 0.5
  # Same pacing as our full latency test (one ping every 2 ms, open loop): an
  # idle gap between pings costs both sides a wake-up, so a back-to-back
  # ping-pong would compare a hot loop with a paced probe.
  taskset -c 1 sockperf ping-pong -i 127.0.0.1 -p $sockperf_port --full-rtt -t 2 -m 80 --mps 500 > "$work/s.txt" 2>&1 || true
  b50=$(grep -oP 'percentile 50\.000 =\s*\K[0-9.]+' "$work/s.txt" | head -1)
  b99=$(grep -oP 'percentile 99\.000 =\s*\K[0-9.]+' "$work/s.txt" | head -1)
  p50+=("$(python3 -c "print($a50/$b50)")"); p99+=("$(python3 -c "print($a99/$b99)")")
  taskset -c 1 sockperf ping-pong -i 127.0.0.1 -p $sockperf_port --full-rtt -t 2 -m 80 > "$work/s.txt" 2>&1 || true
  kill $spid 2>/dev/null || true
  c50=$(grep -oP 'percentile 50\.000 =\s*\K[0-9.]+' "$work/s.txt" | head -1)
  hot50+=("$(python3 -c "print($a50/$c50)")")
done
echo "runs=$runs seconds=$seconds"
echo "tcp throughput ratio (hostperf/iperf3, target >= 0.95): $(median "${tcp[@]}")"
echo "udp 200 MB/s sent-rate ratio (target 0.98-1.02): $(median "${udp200[@]}"), loss difference (points, target |x| <= 0.5): $(median "${loss200[@]}")"
echo "udp 500 MB/s sent-rate ratio (target 0.98-1.02): $(median "${udp500[@]}"), loss difference (points, target |x| <= 0.5): $(median "${loss500[@]}")"
echo "rtt p50 ratio (hostperf/sockperf --full-rtt --mps 500, same pacing, target 0.8-1.3): $(median "${p50[@]}")"
echo "rtt p99 ratio (same pacing): $(median "${p99[@]}")"
echo "rtt p50 ratio against back-to-back sockperf (information: the cost of pacing): $(median "${hot50[@]}")"
