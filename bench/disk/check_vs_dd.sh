#!/usr/bin/env bash
# `hostperf check -r d` vs gpcheckperf's own method: per host, -S bytes in
# total over two directories, written by one dd per directory started at once
# (oflag=direct, bs = -B), then read back by one dd each at once
# (iflag=direct); the host's bandwidth is the total over the wall time from
# the first start to the last end. Prints the median of RUNS runs of each and
# ours/dd for write and read. Needs dd (coreutils) and python3.
#
#   bench/disk/check_vs_dd.sh [-b BUILD_DIR] [-d DIR -d DIR] [-s TOTAL_MB] [-k BLOCK_KB] [-r RUNS]
#
# Without -d: two directories under $TMPDIR (default /tmp). Give two mount
# points of different file systems to compare what gpcheckperf compares.
# Target: 0.95-1.05 for both.
set -euo pipefail

build=build/release
dirs=()
total_mb=512
block_kb=32
runs=3
while getopts "b:d:s:k:r:" opt; do
  case $opt in
    b) build=$OPTARG ;;
    d) dirs+=("$OPTARG") ;;
    s) total_mb=$OPTARG ;;
    k) block_kb=$OPTARG ;;
    r) runs=$OPTARG ;;
    *) sed -n 2,13p "$0" >&2; exit 2 ;;
  esac
done
hostperf=$build/exporter/hostperf
[[ -x $hostperf ]] || { echo "no $hostperf: build first (or -b BUILD_DIR)" >&2; exit 1; }
work=$(mktemp -d)
if [[ ${#dirs[@]} -eq 0 ]]; then
  dirs=("$work/vol1" "$work/vol2")
  mkdir -p "${dirs[@]}"
fi
[[ ${#dirs[@]} -eq 2 ]] || { echo "give two -d directories (or none)" >&2; exit 2; }
trap 'rm -rf "$work"; rm -f "${dirs[0]}"/bench-dd.dat "${dirs[1]}"/bench-dd.dat' EXIT
config=$work/bench.toml
printf '[probes.disk]\nreserve = "1mb"\n' >"$config"

python3 - "$hostperf" "$config" "$total_mb" "$block_kb" "$runs" "${dirs[@]}" <<'PY'
import json, statistics, subprocess, sys, time

hostperf, config, total_mb, block_kb, runs, *dirs = sys.argv[1:]
total = int(total_mb) << 20
block = int(block_kb) << 10
runs = int(runs)
count = total // block // len(dirs)  # dd's count per directory, as gpcheckperf's
mib = float(1 << 20)


def dd_pass(write):
    # One dd per directory, started at once; the wall time of the slowest.
    procs = []
    start = time.perf_counter()
    for d in dirs:
        f = f"{d}/bench-dd.dat"
        args = (["dd", "if=/dev/zero", f"of={f}", f"bs={block}", f"count={count}", "oflag=direct", "conv=fsync"]
                if write else ["dd", f"if={f}", "of=/dev/null", f"bs={block}", "iflag=direct"])
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"dd failed: {p.args}")
    return count * block * len(dirs) / (time.perf_counter() - start) / mib


def dd():
    subprocess.run(["sync"], check=True)
    w = dd_pass(True)
    r = dd_pass(False)
    for d in dirs:
        subprocess.run(["rm", "-f", f"{d}/bench-dd.dat"], check=True)
    return w, r


def ours():
    subprocess.run(["sync"], check=True)
    args = [hostperf, f"--config.file={config}", "check", "-r", "d", "-S", str(total), "-B", str(block), "--json"]
    for d in dirs:
        args += ["-d", d]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    disk = json.loads(out)["hosts"][0]["disk"]
    return tuple(disk[k]["bytes"] / disk[k]["seconds"] / mib for k in ("write", "read"))


results = {"dd": [], "hostperf": []}
for i in range(runs):
    # Alternate which goes first, so neither always meets a warm device.
    order = [("dd", dd), ("hostperf", ours)] if i % 2 == 0 else [("hostperf", ours), ("dd", dd)]
    for name, fn in order:
        results[name].append(fn())
    print(f"run {i + 1}/{runs}: dd write {results['dd'][-1][0]:.0f} read {results['dd'][-1][1]:.0f} MiB/s, "
          f"hostperf write {results['hostperf'][-1][0]:.0f} read {results['hostperf'][-1][1]:.0f} MiB/s",
          file=sys.stderr, flush=True)

print(f"{len(dirs)} directories, {total_mb} MiB in total, {block_kb} KiB blocks, direct I/O, median of {runs}")
print(f"{'pass':6} {'dd MiB/s':>10} {'hostperf MiB/s':>15} {'ratio':>6}")
for i, name in enumerate(("write", "read")):
    ref = statistics.median(r[i] for r in results["dd"])
    got = statistics.median(r[i] for r in results["hostperf"])
    print(f"{name:6} {ref:10.1f} {got:15.1f} {got / ref:6.2f}")
PY
