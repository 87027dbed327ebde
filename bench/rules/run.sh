#!/usr/bin/env bash
# Prometheus-side cost of the shipped rules: evaluation time of
# every group of dashboards/rules/hostperf-{recording,alerts}.yml in a real
# Prometheus scraping a synthetic fleet of N hosts.
#   bench/rules/run.sh [N...]          (default: 300 1000)
# Per N: bench/rules/synth_exporter.py serves each host's /metrics from one
# port (?target=<address>); Prometheus (loopback only, storage in a temp dir,
# scrape interval 15 s) relabels every target to instance 10.1.<i/256>.<i%256>:9105
# of job "hostperf" with its file_sd labels cluster=c<i/100>, rack=r<i/10>,
# and evaluates a copy of the rule files taken when this script starts.
# bench/rules/measure.py then waits for every target, lets WARMUP seconds of
# samples accumulate, and for MEASURE seconds keeps each evaluation's duration
# per group and per rule (median and max per group against its interval).
# Then Prometheus is reloaded without the rules for BASELINE seconds (its CPU
# with rules minus without is the rules' CPU), and every rule's expression is
# evaluated through the query API at the end of the measurement, one at a
# time, REPEAT rounds: the process's CPU per query less the scraping rate is
# each group's CPU per evaluation. On a busy machine the wall-clock times
# include the waits for a CPU (14 groups evaluate concurrently); the CPU
# figures do not. Exit status 1 if a group's CPU per evaluation is not under
# MAX_RATIO of its interval (JUDGE=wall: its median wall-clock time, or it
# missed an iteration).
# Environment: WARMUP (300), MEASURE (180), BASELINE (120), REPEAT (3),
# JUDGE (cpu), EVAL_INTERVAL (15s: the rule
# groups set no interval of their own), MAX_RATIO (0.10), PROMETHEUS
# (prometheus), RULES ("dashboards/rules/hostperf-recording.yml
# dashboards/rules/hostperf-alerts.yml"), KEEP=DIR keeps the reports there.
# Windows: a run holds WARMUP + MEASURE seconds of samples, so rules over
# [5m] and [10m] see full windows, those over [15m], [30m], [1h] and [7d]
# partial ones. Evaluation cost grows with the samples in the window (the
# range functions walk them), so those rules cost more on a Prometheus that
# has run for an hour (1h windows: 240 samples a series) or a week (the [7d]
# rules read their own 15 s outputs: up to 40320 samples a series).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(300 1000)
warmup=${WARMUP:-300}
measure=${MEASURE:-180}
baseline=${BASELINE:-120}
repeat=${REPEAT:-3}
judge=${JUDGE:-cpu}
eval_interval=${EVAL_INTERVAL:-15s}
max_ratio=${MAX_RATIO:-0.10}
prometheus=${PROMETHEUS:-prometheus}
read -r -a rules <<< "${RULES:-dashboards/rules/hostperf-recording.yml dashboards/rules/hostperf-alerts.yml}"
for tool in "$prometheus" promtool python3 curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

work=$(mktemp -d /var/tmp/hostperf-rules.XXXXXX)
pids=()
# Stops what this script started, by pid: TERM, then KILL after 60 s (a
# Prometheus stopping its rule evaluations on a busy machine can take a while).
stop_all() {
  local p i
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for i in $(seq 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  stop_all
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/report-* "$KEEP"/ 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The rules as they are now: other edits during the run do not change it.
mkdir -p "$work/rules"
for f in "${rules[@]}"; do cp "$root/$f" "$work/rules/"; done
echo "== rules: $(cd "$root" && sha256sum "${rules[@]}" | awk '{printf "%s %s  ", substr($1, 1, 12), $2}')"
echo "   $(cat "$work"/rules/*.yml | grep -c -- '- record:') recording and $(cat "$work"/rules/*.yml | grep -c -- '- alert:') alerting rules in $(cat "$work"/rules/*.yml | grep -c -- '- name:') groups"
promtool check rules "$work"/rules/*.yml >/dev/null
echo "== $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $("$prometheus" --version 2>&1 | head -1)"

status=0
for n in "${sizes[@]}"; do
  dir="$work/n$n"
  mkdir -p "$dir/data"
  sport=$(free_port)
  echo "== N=$n: synthetic exporter on 127.0.0.1:$sport"
  python3 "$root/bench/rules/synth_exporter.py" --hosts "$n" --port "$sport" --sd-file "$dir/targets.json" \
    >"$dir/synth.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 360); do  # building 1000 hosts takes a while on a busy machine
    curl -sf "http://127.0.0.1:$sport/healthz" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$sport/healthz" >/dev/null || { echo "synthetic exporter did not start:" >&2; cat "$dir/synth.log" >&2; exit 1; }
  sed -n 2p "$dir/synth.log"

  pport=$(free_port)
  cat > "$dir/prometheus.yml" <<EOF
global:
  scrape_interval: 15s
  scrape_timeout: 10s
  evaluation_interval: $eval_interval
rule_files:
$(for f in "$work"/rules/*.yml; do echo "  - $f"; done)
scrape_configs:
  - job_name: hostperf
    file_sd_configs:
      - files: ["$dir/targets.json"]
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__address__]
        target_label: instance
      - target_label: __address__
        replacement: "127.0.0.1:$sport"
EOF
  # The same without rule files: measure.py reloads it at the end for a CPU baseline.
  sed '/^rule_files:/,/^scrape_configs:/{/^scrape_configs:/!d}' "$dir/prometheus.yml" > "$dir/prometheus-norules.yml"
  promtool check config "$dir/prometheus.yml" >/dev/null
  promtool check config "$dir/prometheus-norules.yml" >/dev/null
  "$prometheus" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$dir/prometheus.log" 2>&1 &
  ppid=$!
  pids+=("$ppid")
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null || { echo "prometheus did not start:" >&2; cat "$dir/prometheus.log" >&2; exit 1; }
  echo "== N=$n: prometheus (pid $ppid) on 127.0.0.1:$pport, evaluation interval $eval_interval"
  # In the background and waited for, so that INT/TERM interrupt the wait and the
  # trap stops everything at once.
  python3 "$root/bench/rules/measure.py" --prom "http://127.0.0.1:$pport" --pid "$ppid" --hosts "$n" \
    --warmup "$warmup" --measure "$measure" --max-ratio "$max_ratio" --report "$work/report-$n.txt" \
    --config "$dir/prometheus.yml" --config-norules "$dir/prometheus-norules.yml" --baseline "$baseline" \
    --repeat "$repeat" --judge "$judge" &
  pids+=($!)
  rc=0
  wait $! || rc=$?
  [ "$rc" -ne 0 ] && status=1
  if grep -q 'level=error' "$dir/prometheus.log"; then
    echo "prometheus logged errors:"; grep 'level=error' "$dir/prometheus.log" | tail -5
  fi
  stop_all
done

echo
echo "== summary ($(date -u '+%F %H:%M UTC'))"
cat "$work"/report-*.txt 2>/dev/null || true
echo "Windows: each run held $(( (warmup + measure) / 60 )) min of samples: rules over [5m] and [10m] saw full"
echo "windows; [15m], [30m], [1h] and [7d] windows were only partly filled (their cost grows with the samples"
echo "in the window, so a long-running Prometheus pays more for them than measured here)."
exit $status
