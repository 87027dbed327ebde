#!/usr/bin/env bash
# Disk probe vs fio: Write, Read and SkipRead on the same directory, same block
# size, file size and thread count, direct I/O, back to back; prints the
# median of RUNS runs of each and ours/fio. Needs fio and python3.
# Our probe CRC-checks every block it reads; plain fio checks nothing. A
# second reference, fio with --verify=crc32c (checksum written with each
# block, checked on read), is the like-for-like figure for Write and Read.
#
#   bench/disk/run.sh [-b BUILD_DIR] [-d DIR] [-s SIZE_MB] [-t THREADS] [-k BLOCK_KB] [-r RUNS] [-n] [-S]
#
# -n: ours with --disable-crc. -S: sweep the benchmarked geometries (threads
# 1, 2 and all CPUs; blocks 4 KiB, 256 KiB, 1 MiB; CRC on and off), one line
# of ratios against plain fio per geometry, then the table.
# Targets: with CRC on, ours/fio >= 0.90; with --disable-crc, >= 0.95; Read
# far above 1.3 means direct I/O is not in effect. fio_spread: half the range
# of fio's own runs around their median (the widest of the three tests): a
# virtual disk's run-to-run spread, beside which a smaller gap means nothing.
set -euo pipefail

build=build/release
dir=${TMPDIR:-/tmp}/hostperf-bench-disk
size_mb=256
threads=1
block_kb=1024
runs=3
nocrc=0
sweep=0
while getopts "b:d:s:t:k:r:nS" opt; do
  case $opt in
    b) build=$OPTARG ;;
    d) dir=$OPTARG ;;
    s) size_mb=$OPTARG ;;
    t) threads=$OPTARG ;;
    k) block_kb=$OPTARG ;;
    r) runs=$OPTARG ;;
    n) nocrc=1 ;;
    S) sweep=1 ;;
    *) sed -n 2,15p "$0" >&2; exit 2 ;;
  esac
done
hostperf=$build/exporter/hostperf
[[ -x $hostperf ]] || { echo "no $hostperf: build first (or -b BUILD_DIR)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio not installed (apt-get install fio)" >&2; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work" "$dir"/bench.*' EXIT
config=$work/bench.toml
printf '[probes.disk]\nreserve = "1mb"\n' >"$config"

# ours: one pass of each test (the duration is too short for a second).
ours() {
  local crc_flag=()
  ((nocrc)) && crc_flag=(--disable-crc)
  "$hostperf" --config.file="$config" io --duration=1s --log-interval=1h --thread-count="$threads" \
    --max-buffer-size="${block_kb}kb" --data-size="${size_mb}mb" --log-file="$work/ours.json" "${crc_flag[@]}" \
    "$dir" >/dev/null
  python3 - "$work/ours.json" <<'PY'
import json, sys
tests = {t["test"]: t for t in json.load(open(sys.argv[1]))["directories"][0]["tests"]}
mib = 1024 * 1024
print(tests["Write"]["bytes_written"] / tests["Write"]["seconds"] / mib,
      tests["Read"]["bytes_read"] / tests["Read"]["seconds"] / mib,
      tests["SkipRead"]["seeks_per_second"])
PY
}

# fio: the same three with the same geometry; SkipRead = read one block, skip one.
fio_run() {
  local per_thread_mb=$((size_mb / threads))
  local common=(--directory="$dir" --filename_format='bench.$jobnum' --bs="${block_kb}k" --size="${per_thread_mb}m"
                --numjobs="$threads" --direct=1 --ioengine=psync --group_reporting --output-format=json)
  fio --name=write --rw=write --end_fsync=0 "${common[@]}" >"$work/w.json"
  fio --name=read --rw=read "${common[@]}" >"$work/r.json"
  fio --name=skip --rw=read:"${block_kb}k" "${common[@]}" >"$work/s.json"
  rm -f "$dir"/bench.*
  fio --name=vwrite --rw=write --verify=crc32c --do_verify=0 --verify_state_save=0 "${common[@]}" >"$work/vw.json"
  fio --name=vread --rw=read --verify=crc32c --do_verify=1 --verify_state_save=0 "${common[@]}" >"$work/vr.json"
  rm -f "$dir"/bench.*
  python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
job = lambda f: json.load(open(f"{d}/{f}"))["jobs"][0]
assert job("vr.json")["error"] == 0, "fio --verify found a bad block"
print(job("w.json")["write"]["bw_bytes"] / 1048576, job("r.json")["read"]["bw_bytes"] / 1048576,
      job("s.json")["read"]["iops"], job("vw.json")["write"]["bw_bytes"] / 1048576,
      job("vr.json")["read"]["bw_bytes"] / 1048576)
PY
}

# Alternate who goes first: on a virtualised disk the host's cache still holds
# (and flushes) the previous tool's writes, which slowed whoever came second.
measure() {
  : >"$work/ours.txt"; : >"$work/fio.txt"
  for ((i = 0; i < runs; i++)); do
    if ((i % 2 == 0)); then
      ours >>"$work/ours.txt"
      fio_run >>"$work/fio.txt"
    else
      fio_run >>"$work/fio.txt"
      ours >>"$work/ours.txt"
    fi
  done
}

# The table of one geometry; with a fourth argument, one summary line instead.
report() {
  python3 - "$work" "$size_mb" "$threads" "$block_kb" "$runs" "$nocrc" "${1:-}" <<'PY'
import statistics, sys
d, size, threads, block, runs, nocrc, brief = sys.argv[1:]
load = lambda f: [list(map(float, l.split())) for l in open(f"{d}/{f}") if l.strip()]
ours, fio = load("ours.txt"), load("fio.txt")
crc = "off (--disable-crc)" if nocrc == "1" else "on"
target = 0.95 if nocrc == "1" else 0.90
ratios = [statistics.median(r[i] for r in ours) / statistics.median(r[i] for r in fio) for i in range(3)]
# fio against itself: the widest of its runs' ranges around their median, over
# the three tests. A shortfall smaller than this is not separable from the
# disk's own spread at this number of runs.
spread = max((max(r[i] for r in fio) - min(r[i] for r in fio)) / 2 / statistics.median(r[i] for r in fio)
             for i in range(3))
if brief:
    verdict = "met" if min(ratios) >= target else "NOT met"
    print(f"{threads:>7} {block:>9} {('off' if nocrc == '1' else 'on'):>4} {ratios[0]:>7.2f} {ratios[1]:>7.2f} "
          f"{ratios[2]:>9.2f}  >= {target:.2f} {verdict:<8} {spread * 100:>9.0f} %", flush=True)
    sys.exit()
print(f"size {size} MiB, {threads} thread(s), block {block} KiB, direct I/O, CRC {crc}, median of {runs}; "
      f"fio's own runs spread +-{spread * 100:.0f} % around their median")
print(f"{'test':<9} {'hostperf':>15} {'fio':>15} {'ours/fio':>9} {'fio --verify':>15} {'ours/fio --verify':>18}")
for i, (name, unit) in enumerate([("Write", "MiB/s"), ("Read", "MiB/s"), ("SkipRead", "seeks/s")]):
    a = statistics.median(r[i] for r in ours)
    b = statistics.median(r[i] for r in fio)
    line = f"{name:<9} {a:>7.1f} {unit:<7} {b:>7.1f} {unit:<7} {a / b:>9.2f}"
    if i < 2:
        v = statistics.median(r[3 + i] for r in fio)
        line += f" {v:>7.1f} {unit:<7} {a / v:>18.2f}"
    print(line)
PY
}

if ((!sweep)); then
  measure
  report
  exit 0
fi

# The sweep: 4 KiB blocks move a quarter of the size (direct 4 KiB I/O is
# slow, and the figure settles well before).
cpus=$(nproc)
thread_counts=(1 2)
((cpus > 2)) && thread_counts+=("$cpus")
full_size=$size_mb
echo "sweep: ours/fio per geometry (median of $runs runs each; $full_size MiB, 4 KiB blocks $((full_size / 4)) MiB)"
printf '%7s %9s %4s %7s %7s %9s  %-17s %s\n' threads block_KiB crc Write Read SkipRead target fio_spread
for threads in "${thread_counts[@]}"; do
  for block_kb in 4 256 1024; do
    size_mb=$full_size
    ((block_kb == 4)) && size_mb=$((full_size / 4))
    for nocrc in 0 1; do
      measure
      report brief
    done
  done
done
