#!/usr/bin/env bash
# Disk probe vs fio: Write, Read and SkipRead on the same directory, same block
# size, file size and thread count, direct I/O, back to back; prints the
# median of RUNS runs of each and ours/fio. Needs fio and python3.
# Our probe CRC-checks every block it reads; plain fio checks nothing. A
# second reference, fio with --verify=crc32c (checksum written with each
# block, checked on read), is the like-for-like figure for Write and Read.
#
#   bench/disk/run.sh [-b BUILD_DIR] [-d DIR] [-s SIZE_MB] [-t THREADS] [-k BLOCK_KB] [-r RUNS]
#
# Target: 0.9-1.1 for Write and Read; Read far above 1.3 means direct I/O is
# not in effect.
set -euo pipefail

build=build/release
dir=${TMPDIR:-/tmp}/hostperf-bench-disk
size_mb=256
threads=1
block_kb=1024
runs=3
while getopts "b:d:s:t:k:r:" opt; do
  case $opt in
    b) build=$OPTARG ;;
    d) dir=$OPTARG ;;
    s) size_mb=$OPTARG ;;
    t) threads=$OPTARG ;;
    k) block_kb=$OPTARG ;;
    r) runs=$OPTARG ;;
    *) sed -n 2,10p "$0" >&2; exit 2 ;;
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
per_thread_mb=$((size_mb / threads))

# ours: one pass of each test (the duration is too short for a second).
ours() {
  "$hostperf" --config.file="$config" io --duration=1s --log-interval=1h --thread-count="$threads" \
    --max-buffer-size="${block_kb}kb" --data-size="${size_mb}mb" --log-file="$work/ours.json" "$dir" >/dev/null
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
for ((i = 0; i < runs; i++)); do
  if ((i % 2 == 0)); then
    ours >>"$work/ours.txt"
    fio_run >>"$work/fio.txt"
  else
    fio_run >>"$work/fio.txt"
    ours >>"$work/ours.txt"
  fi
done

python3 - "$work" "$size_mb" "$threads" "$block_kb" "$runs" <<'PY'
import statistics, sys
d, size, threads, block, runs = sys.argv[1:]
load = lambda f: [list(map(float, l.split())) for l in open(f"{d}/{f}") if l.strip()]
ours, fio = load("ours.txt"), load("fio.txt")
print(f"size {size} MiB, {threads} thread(s), block {block} KiB, direct I/O, median of {runs}")
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
