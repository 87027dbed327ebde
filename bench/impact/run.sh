#!/usr/bin/env bash
# The sidecar's cost to its host, measured side by side (loopback only).
#   bench/impact/run.sh BUILD_DIR [SECTION...]
# Sections (default: all):
#   interference  sysbench cpu and fio 4k random reads with the daemon stopped, on its defaults and
#                 on an aggressive schedule (every probe every 10 s): slowdown ratios, median of RUNS
#   cost          the daemon on its defaults for COST_MINUTES (default 30): CPU seconds, peak and final
#                 RSS, open fds, bytes written, bytes sent; CPU as a share of one core
#   scrape        /metrics latency p50/p99 under wrk (1 and 32 connections) and bytes per scrape,
#                 (wrk keeps its connections open: since keep-alive the daemon
#                 reuses them too, as node_exporter does; before, each request was a new connection),
#                 against prometheus-node-exporter on the same machine
#   peers         one daemon probing 200 peers (one responder serving 200 ports) with the default
#                 max_peers_per_cycle: CPU per cycle and per probed peer
#   attribution   the disk probe's CPU per run and Read MB/s with probes.disk.attribute_members on
#                 and off, alternating, on the same directory (ATTRIBUTION_DIR)
#   footprint     resident memory of the daemon (all probes on defaults) and of
#                 prometheus-node-exporter after SCRAPES scrapes (6000) from 16 concurrent keep-alive
#                 clients each, against the 16 MiB target and node_exporter; what ours is made of
#                 (bench/impact/footprint.py: smaps_rollup, each mapping's kind, thread stacks, malloc
#                 arenas through gdb when installed), then 200 idle connections (from 200 source
#                 addresses, then from one) and the slowest of 20 scrapes beside them
#   drift         (not in the default set) the daemon for DRIFT_MINUTES (60), scraped every
#                 DRIFT_SCRAPE_SECONDS (15) over a new connection as Prometheus does, its probes on
#                 their schedule (DRIFT_PROBE_INTERVAL, e.g. "2min": cpu, memory and disk every that
#                 long instead of 5min/15min, an accelerated schedule; net stays at 30s): resident
#                 memory every DRIFT_SAMPLE_SECONDS (60, the minimum over the last 10 s, so that a
#                 STREAM run's arrays are not taken for growth), the least-squares slope in KiB/hour
#                 after DRIFT_WARMUP_MINUTES (20: one new connection every 15 s reaches all 64 HTTP
#                 workers, each keeping ~13 KiB of stack once it served one, only after 16 min), and
#                 that slope over 24 h against the 1 MiB target. DRIFT_ACCELERATE=F runs a day's
#                 work in 24/F hours instead: every probe's default interval, the scrape interval
#                 and the warm-up divided by F (net at least 1s), the budgets multiplied by F
#                 (F=24, DRIFT_MINUTES=60: a day of runs and scrapes in an hour)
# Environment: RUNS (3), SECONDS_PER_RUN (20), COST_MINUTES (30), PEERS_SECONDS (60), SCRAPES (6000),
#              DRIFT_* (above).
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ] || [ $# -eq 0 ]; then
  sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  [ $# -eq 0 ] && exit 2 || exit 0
fi
build=$1
shift
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(interference cost scrape peers attribution footprint)
runs=${RUNS:-3}
seconds=${SECONDS_PER_RUN:-20}
cost_minutes=${COST_MINUTES:-30}
peers_seconds=${PEERS_SECONDS:-60}
exporter="$build/exporter/hostperf_exporter"
[ -x "$exporter" ] || { echo "no $exporter" >&2; exit 1; }
for tool in python3 curl; do command -v $tool >/dev/null || { echo "missing $tool" >&2; exit 1; }; done

work=$(mktemp -d /var/tmp/hostperf-impact.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

median() { python3 -c "import statistics,sys; print(f\"{statistics.median(float(x) for x in sys.argv[1:]):.6g}\")" "$@"; }
ratio() { python3 -c "import sys; print(round(float(sys.argv[1]) / float(sys.argv[2]), 4))" "$1" "$2"; }

# shellcheck source=bench/daemon.sh
source "$(dirname "$0")/../daemon.sh"

stop_daemon() { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
cpu_seconds() { python3 -c "
import os; f=open('/proc/$1/stat').read().rsplit(')',1)[1].split()
print((int(f[11])+int(f[12]))/os.sysconf('SC_CLK_TCK'))"; }
disk_bytes() { awk '/^(read|write)_bytes/ {sum += $2} END {print sum}' "/proc/$1/io"; }
metric_sum() { curl -s "http://127.0.0.1:$1/metrics" | python3 -c "
import sys; print(sum(float(l.rsplit(' ',1)[1]) for l in sys.stdin if l.startswith('$2')))"; }

aggressive='[probes.cpu]
interval = "10s"
[probes.memory]
interval = "10s"
[probes.disk]
interval = "10s"
[probes.net]
interval = "10s"'

interference() {
  command -v sysbench >/dev/null && command -v fio >/dev/null || { echo "interference: needs sysbench and fio" >&2; return 1; }
  fio_file="$work/fio.dat"
  bench_cpu() { sysbench cpu --threads="$(nproc)" --time="$seconds" run | awk '/events per second/ {print $4}'; }
  bench_io() {
    fio --name=randread --filename="$fio_file" --size=1g --rw=randread --bs=4k --direct=1 --ioengine=psync \
        --time_based --runtime="$seconds" --output-format=json 2>/dev/null |
      python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['read']['iops'])"
  }
  fio --name=prep --filename="$fio_file" --size=1g --rw=write --bs=1m --direct=1 >/dev/null 2>&1
  declare -A cpu io share io_share
  for condition in stopped defaults aggressive; do
    cpu[$condition]=""; io[$condition]=""; share[$condition]=""; io_share[$condition]=""
  done
  for ((run = 0; run < runs; run++)); do
    for condition in stopped defaults aggressive; do
      if [ "$condition" = defaults ]; then start_daemon "i$run$condition" ""; fi
      if [ "$condition" = aggressive ]; then start_daemon "i$run$condition" "$aggressive"; fi
      # Past the first-run splay (30 s at most), so that the probes are in their steady schedule.
      [ "$condition" != stopped ] && sleep 35
      # The daemon's own CPU time over both workloads, as a share of the
      # machine: the upper bound of its CPU interference, free of the
      # run-to-run noise of the workloads' rates.
      [ "$condition" != stopped ] && before=$(cpu_seconds "$daemon_pid")
      cpu[$condition]+=" $(bench_cpu)"
      # Likewise the bytes the daemon read and wrote on the disk during the
      # fio run, as a share of fio's own bytes.
      [ "$condition" != stopped ] && before_io=$(disk_bytes "$daemon_pid")
      iops=$(bench_io)
      io[$condition]+=" $iops"
      if [ "$condition" != stopped ]; then
        share[$condition]+=" $(python3 -c "print(($(cpu_seconds "$daemon_pid") - $before) / (2 * $seconds * $(nproc)))")"
        io_share[$condition]+=" $(python3 -c "print(($(disk_bytes "$daemon_pid") - $before_io) / ($iops * 4096 * $seconds))")"
        stop_daemon
      fi
    done
  done
  for condition in defaults aggressive; do
    c=$(ratio "$(median ${cpu[stopped]})" "$(median ${cpu[$condition]})")
    i=$(ratio "$(median ${io[stopped]})" "$(median ${io[$condition]})")
    echo "interference ($condition): sysbench cpu slowdown $c, fio randread slowdown $i (1.00 = none; goal at defaults <= 1.01); daemon CPU share of the machine during the workloads $(median ${share[$condition]}), daemon disk bytes during fio as a share of fio's $(median ${io_share[$condition]})"
  done
  echo "interference raw: sysbench events/s stopped=[${cpu[stopped]} ] defaults=[${cpu[defaults]} ] aggressive=[${cpu[aggressive]} ]; fio IOPS stopped=[${io[stopped]} ] defaults=[${io[defaults]} ] aggressive=[${io[aggressive]} ]"
}

cost() {
  start_daemon cost ""
  local pid=$daemon_pid start_cpu peak_fds=0 samples=$((cost_minutes * 6))
  start_cpu=$(cpu_seconds "$pid")
  for ((i = 0; i < samples; i++)); do
    sleep 10
    fds=$(ls /proc/$pid/fd | wc -l)
    [ "$fds" -gt "$peak_fds" ] && peak_fds=$fds
  done
  cpu=$(python3 -c "print(round($(cpu_seconds "$pid") - $start_cpu, 2))")
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status); hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
  written=$(awk '/^write_bytes/ {print $2}' /proc/$pid/io)
  sent=$(metric_sum "$daemon_port" hostperf_net_throughput_bytes_total)
  pings=$(metric_sum "$daemon_port" hostperf_net_packets_sent_total)
  echo "cost over $cost_minutes min on the defaults: cpu ${cpu} s ($(python3 -c "print(round($cpu / ($cost_minutes * 60) * 100, 3))") % of one core; $(python3 -c "print(round($cpu * 60 / $cost_minutes, 1))") s/hour against a budget of 36), rss final $((rss / 1024)) MiB peak $((hwm / 1024)) MiB, fds final $(ls /proc/$pid/fd | wc -l) peak $peak_fds, disk bytes written $written, throughput bytes sent $sent, pings sent $pings"
  stop_daemon
}

scrape() {
  command -v wrk >/dev/null && command -v prometheus-node-exporter >/dev/null || { echo "scrape: needs wrk and prometheus-node-exporter" >&2; return 1; }
  start_daemon scrape ""
  sleep 35  # every probe has run once: a full exposition
  local node_port=29100
  prometheus-node-exporter --web.listen-address=127.0.0.1:$node_port >/dev/null 2>&1 & pids+=($!)
  sleep 1
  ms() { python3 -c "
import re,sys
v,u=re.match(r'([0-9.]+)(us|ms|s)', sys.argv[1]).groups(); print(float(v)*{'us':1e-3,'ms':1,'s':1e3}[u])" "$1"; }
  latency() {  # port connections -> "p50 p99" in ms
    local out; out=$(wrk -t1 -c"$2" -d"$seconds"s --latency "http://127.0.0.1:$1/metrics")
    echo "$(ms "$(echo "$out" | awk '$1 == "50%" {print $2}')") $(ms "$(echo "$out" | awk '$1 == "99%" {print $2}')")"
  }
  for c in 1 32; do
    read -r o50 o99 <<<"$(latency "$daemon_port" $c)"
    read -r n50 n99 <<<"$(latency $node_port $c)"
    echo "scrape c=$c: hostperf p50 ${o50} ms p99 ${o99} ms; node_exporter p50 ${n50} ms p99 ${n99} ms; ratio p50 $(ratio "$o50" "$n50") p99 $(ratio "$o99" "$n99") (goal: p99 ratio < 1)"
  done
  ob=$(curl -s "http://127.0.0.1:$daemon_port/metrics" | wc -c); nb=$(curl -s "http://127.0.0.1:$node_port/metrics" | wc -c)
  ogz=$(curl -s -H 'Accept-Encoding: gzip' "http://127.0.0.1:$daemon_port/metrics" | wc -c)
  ngz=$(curl -s -H 'Accept-Encoding: gzip' "http://127.0.0.1:$node_port/metrics" | wc -c)
  echo "bytes per scrape: hostperf $ob (gzip $ogz), node_exporter $nb (gzip $ngz), ratio $(ratio "$ob" "$nb")"
  stop_daemon
}

peers() {
  (umask 077; head -c 32 /dev/urandom | base64 > "$work/secret")  # owner-only: the daemon refuses looser modes
  local base=31000 ports="" list=""
  for ((i = 0; i < 200; i++)); do
    ports+="${ports:+, }$((base + i))"; list+="${list:+, }\"127.0.0.1:$((base + i))\""
  done
  start_daemon responder "[probes.cpu]
enabled = false
[probes.memory]
enabled = false
[probes.disk]
enabled = false
[probes.net]
enabled = false
bind_address = \"127.0.0.1\"
ports = [$ports]
secret_file = \"$work/secret\"
rate_limit = 100000"
  local responder_pid=$daemon_pid
  start_daemon prober "[scheduler]
first_run_splay = \"1s\"
[probes.cpu]
enabled = false
[probes.memory]
enabled = false
[probes.disk]
enabled = false
[probes.net]
interval = \"5s\"
bind_address = \"127.0.0.1\"
ports = [$((base + 500))]
secret_file = \"$work/secret\"
peers = [$list]"
  sleep 3
  local start_cpu start_runs
  start_cpu=$(cpu_seconds "$daemon_pid"); start_runs=$(metric_sum "$daemon_port" 'hostperf_probe_runs_total{probe="net"}')
  sleep "$peers_seconds"
  cpu=$(python3 -c "print($(cpu_seconds "$daemon_pid") - $start_cpu)")
  cycles=$(python3 -c "print(int($(metric_sum "$daemon_port" 'hostperf_probe_runs_total{probe="net"}') - $start_runs))")
  probed=$(metric_sum "$daemon_port" 'hostperf_net_peers{set="probed"}')
  up=$(curl -s "http://127.0.0.1:$daemon_port/metrics" | grep -c '^hostperf_net_peer_up{.*} 1$' || true)
  echo "peers: 200 known, $probed probed per cycle, $up seen up so far; $cycles cycles in ${peers_seconds} s; cpu $(python3 -c "print(round($cpu / max($cycles, 1) * 1000, 1))") ms per cycle, $(python3 -c "print(round($cpu / max($cycles, 1) / max($probed, 1) * 1000, 2))") ms per probed peer (the responder's CPU: $(cpu_seconds "$responder_pid") s)"
  stop_daemon
  kill "$responder_pid" 2>/dev/null || true
}

# The disk probe's cost with attribution (each member's kernel counters read
# around the run) on and off: `hostperf io` runs alternating the two configs
# on the same directory (ATTRIBUTION_DIR, default: a directory under /var/tmp,
# on the host's disk). CPU seconds of the whole process (user + system) and
# Read MB/s per run; medians and on/off ratios.
attribution() {
  local dir=${ATTRIBUTION_DIR:-$work/attribution}
  mkdir -p "$dir"
  local cli="$build/exporter/hostperf"
  for mode in on off; do
    printf '[probes.disk]\nreserve = "1mb"\nattribute_members = %s\n' \
      "$([ $mode = on ] && echo true || echo false)" >"$work/attribution-$mode.toml"
  done
  python3 - "$cli" "$work" "$dir" "$runs" <<'PY'
import json, resource, statistics, subprocess, sys
cli, work, directory, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cpu = {"on": [], "off": []}
read = {"on": [], "off": []}
for i in range(runs):
    for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([cli, f"--config.file={work}/attribution-{mode}.toml", "io", "--duration=4s",
                              "--thread-count=1", "--data-size=256mb", "--json", directory],
                             check=True, capture_output=True, text=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[mode].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        result = json.loads(out)
        tests = {t["test"]: t for t in result["directories"][0]["tests"]}
        read[mode].append(tests["Read"]["throughput_bytes_per_second"] / 2**20)
        members = len(result["directories"][0].get("members", []))
        print(f"attribution: run {i + 1} {mode}: cpu {cpu[mode][-1]:.3f} s, Read {read[mode][-1]:.0f} MB/s"
              + (f", {members} member(s) attributed" if mode == "on" else ""), flush=True)
c_on, c_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
r_on, r_off = statistics.median(read["on"]), statistics.median(read["off"])
print(f"attribution: median cpu per run on {c_on:.3f} s, off {c_off:.3f} s, on/off {c_on / c_off:.3f}; "
      f"Read on {r_on:.0f} MB/s, off {r_off:.0f} MB/s, on/off {r_on / r_off:.3f} ({runs} runs each)")
PY
}

footprint() {
  command -v prometheus-node-exporter >/dev/null || { echo "footprint: needs prometheus-node-exporter" >&2; return 1; }
  # NET_PORT: the net responder's port instead of the default 14159 (another daemon on this host has it)
  start_daemon footprint "${NET_PORT:+[probes.net]
ports = [$NET_PORT]}"
  sleep 35  # every probe has run once
  local node_port=${NODE_PORT:-29101}
  prometheus-node-exporter --web.listen-address=127.0.0.1:$node_port >/dev/null 2>&1 & pids+=($!)
  local node_pid=$!
  sleep 1
  python3 - "$daemon_pid" "$daemon_port" "$node_pid" "$node_port" "${SCRAPES:-6000}" "$(dirname "$0")" \
    "$work/footprint/log" <<'PY'
import http.client, socket, statistics, sys, threading, time
ours_pid, ours_port, node_pid, node_port, scrapes = (int(a) for a in sys.argv[1:6])
sys.path.insert(0, sys.argv[6])
import footprint

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))

def hammer(port, total, clients=16):
    def client(n):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for _ in range(n):
            conn.request("GET", "/metrics")
            conn.getresponse().read()
        conn.close()
    threads = [threading.Thread(target=client, args=(total // clients,)) for _ in range(clients)]
    started = time.monotonic()
    for t in threads: t.start()
    for i, t in enumerate(threads): t.join()
    return time.monotonic() - started

def steady_rss(pid, samples=20):
    # The median of 10 s of samples: a scheduled STREAM run's arrays (freed
    # after it) show as a spike, not as the steady figure.
    values = []
    for _ in range(samples):
        values.append(rss_kib(pid)); time.sleep(0.5)
    return statistics.median(values), min(values), max(values)

# Each read right after its own scrapes: ours before the next probe run
# (the net probe's, every 30 s) could trim what the scrapes left.
steady = {}
for name, pid, port in (("hostperf", ours_pid, ours_port), ("node_exporter", node_pid, node_port)):
    took = hammer(port, scrapes)
    steady[name] = steady_rss(pid)
    if name == "hostperf":
        breakdown = footprint.report(ours_pid, sys.argv[7])
    print(f"footprint: {name}: {scrapes} scrapes from 16 keep-alive clients in {took:.1f} s", flush=True)
ours, node = steady["hostperf"], steady["node_exporter"]
print(f"footprint: resident memory after the scrapes: hostperf {ours[0] / 1024:.1f} MiB (min {ours[1] / 1024:.1f}, "
      f"max {ours[2] / 1024:.1f}), node_exporter {node[0] / 1024:.1f} MiB; hostperf / 16 MiB target "
      f"{ours[0] / 1024 / 16:.2f} ({'met' if ours[0] <= 16 * 1024 else 'NOT met'}), hostperf / node_exporter "
      f"{ours[0] / node[0]:.2f}", flush=True)
# What ours is made of: smaps by kind of mapping, thread stacks, malloc arenas.
print("footprint: hostperf's resident memory by kind (bench/impact/footprint.py):", flush=True)
footprint.print_report(breakdown)
sys.stdout.flush()

def scrape_ms(port):
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics"); conn.getresponse().read(); conn.close()
    return (time.monotonic() - started) * 1000

for label, sources in (("200 source addresses", [f"127.0.{1 + i // 250}.{2 + i % 250}" for i in range(200)]),
                       ("one source address", ["127.0.0.9"] * 200)):
    idle = []
    for source in sources:
        s = socket.socket(); s.bind((source, 0)); s.connect(("127.0.0.1", ours_port)); idle.append(s)
    time.sleep(0.5)
    times = [scrape_ms(ours_port) for _ in range(20)]
    print(f"footprint: 200 idle connections from {label}: 20 scrapes p50 {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms (target: max <= 100 ms); resident {rss_kib(ours_pid) / 1024:.1f} MiB", flush=True)
    for s in idle: s.close()
    time.sleep(1)
PY
  stop_daemon
}

# Resident memory over time on the daemon's schedule, scraped as Prometheus
# does; the slope is what a day would add.
drift() {
  local interval=${DRIFT_PROBE_INTERVAL:-} body="" factor=${DRIFT_ACCELERATE:-}
  local scrape_every=${DRIFT_SCRAPE_SECONDS:-15} warmup=${DRIFT_WARMUP_MINUTES:-20} schedule
  if [ -n "$factor" ]; then
    # A day's work in 24/F hours: each default interval divided by F.
    body+=$(printf '[budget]\ncpu_seconds_per_hour = %d\ndisk_bytes_per_hour = "%dgb"\nnet_bytes_per_hour = "%dgb"\n' \
      $((36 * factor)) $((2 * factor)) $((2 * factor)))$'\n'
    for probe_default in cpu:300000 memory:900000 disk:900000 net:30000; do
      local probe=${probe_default%%:*} ms=$((${probe_default#*:} / factor))
      [ "$probe" = net ] && [ "$ms" -lt 1000 ] && ms=1000
      body+="[probes.$probe]"$'\n'"interval = \"${ms}ms\""$'\n'
      [ "$probe" = net ] && [ -n "${NET_PORT:-}" ] && body+="ports = [$NET_PORT]"$'\n'
    done
    scrape_every=$(python3 -c "print(${DRIFT_SCRAPE_SECONDS:-15} / $factor)")
    warmup=$(python3 -c "print(${DRIFT_WARMUP_MINUTES:-20} / $factor)")
    schedule="accelerated ${factor}x: cpu, memory, disk and net every 1/${factor} of their default interval (net at least 1s), budgets x${factor}"
  else
    if [ -n "$interval" ]; then
      for probe in cpu memory disk; do body+="[probes.$probe]"$'\n'"interval = \"$interval\""$'\n'; done
    fi
    [ -n "${NET_PORT:-}" ] && body+="[probes.net]"$'\n'"ports = [$NET_PORT]"$'\n'
    schedule=$([ -n "$interval" ] && echo "every $interval (accelerated; net every 30s)" || echo "on their defaults")
  fi
  start_daemon drift "$body"
  echo "drift: daemon pid $daemon_pid on port $daemon_port; ${DRIFT_MINUTES:-60} min, a scrape every" \
    "$scrape_every s, probes $schedule"
  python3 - "$daemon_pid" "$daemon_port" "${DRIFT_MINUTES:-60}" "$scrape_every" \
    "${DRIFT_SAMPLE_SECONDS:-60}" "$warmup" "${factor:-1}" <<'PY'
import re, sys, threading, time, urllib.request
pid, port = int(sys.argv[1]), int(sys.argv[2])
minutes, scrape_every, sample_every, warmup, factor = (float(a) for a in sys.argv[3:])

def status(field):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(field + ":"))

stop = threading.Event()
scrapes = {"ok": 0, "failed": 0, "body": ""}
def scraper():
    while not stop.wait(scrape_every):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                scrapes["body"] = r.read().decode()
            scrapes["ok"] += 1
        except OSError:
            scrapes["failed"] += 1
threading.Thread(target=scraper, daemon=True).start()

def runs():
    return {m.group(1): int(float(m.group(2))) for m in
            re.finditer(r'^hostperf_probe_runs_total\{probe="(\w+)"\} (\S+)$', scrapes["body"], re.M)}

started = time.monotonic()
samples = []
while time.monotonic() - started < minutes * 60:
    time.sleep(max(0.0, sample_every - 10))
    window = []
    for _ in range(10):
        window.append(status("VmRSS")); time.sleep(1)
    elapsed = time.monotonic() - started
    samples.append((elapsed, min(window)))
    print(f"drift: {elapsed / 60:6.1f} min  rss {min(window) / 1024:6.2f} MiB (window max {max(window) / 1024:6.1f})  "
          f"scrapes {scrapes['ok']} ({scrapes['failed']} failed)  runs {runs()}", flush=True)
stop.set()

def slope(points):  # least squares, KiB per hour
    n = len(points)
    if n < 2:
        return float("nan")
    mx = sum(t for t, _ in points) / n; my = sum(v for _, v in points) / n
    den = sum((t - mx) ** 2 for t, _ in points)
    return sum((t - mx) * (v - my) for t, v in points) / den * 3600 if den else float("nan")

steady = [(t, v) for t, v in samples if t >= warmup * 60] or samples
rate = slope(steady)
final = samples[-1][1]
print(f"drift: over {minutes:g} min ({len(steady)} samples after {warmup:g} min of warm-up): slope {rate:+.1f} KiB/hour "
      f"= {rate * 24 / 1024:+.2f} MiB per 24 h of wall time at this schedule"
      f"{'' if factor > 1 else f' (target: within 1 MiB per day, ratio {abs(rate) * 24 / 1024:.2f})'}; "
      f"rss first {steady[0][1] / 1024:.2f} MiB, final {final / 1024:.2f} MiB (target 16 MiB, ratio "
      f"{final / 1024 / 16:.2f}), min {min(v for _, v in samples) / 1024:.2f}, max {max(v for _, v in samples) / 1024:.2f}; "
      f"peak {status('VmHWM') / 1024:.1f} MiB (VmHWM: a STREAM run's arrays); {scrapes['ok']} scrapes "
      f"({scrapes['failed']} failed), runs {runs()}", flush=True)
day = rate * 24 / factor  # KiB over the run's equivalent of 24 h at the default schedule
print(f"drift: per day of work ({24 / factor:g} h here at {factor:g}x): {day / 1024:+.2f} MiB "
      f"(target: within 1 MiB, ratio {abs(day) / 1024:.2f})", flush=True)
if minutes * factor < 24 * 60:
    print(f"drift: not a 24 h figure: {minutes:g} min measured at {factor:g}x, the day's change is the slope extrapolated",
          flush=True)
PY
  stop_daemon
}

echo "# bench/impact on $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for section in "${sections[@]}"; do "$section"; done
