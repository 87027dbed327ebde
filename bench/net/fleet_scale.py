#!/usr/bin/env python3
"""Series, bytes per scrape and CPU per net cycle of one daemon against the size of its fleet.

One daemon under test (the observer) gets a peers_file of N peers
(N = 10, 100, 1000 by default). Every peer is a distinct loopback address
(127.0.x.y: Linux routes all of 127/8 to lo) on the port of a second daemon's
responder, so each peer name is a separate member with its own series while
one responder answers them all. Only the net probe runs in the observer, every
--interval seconds. After a warm-up the script scrapes the observer's
/metrics (series, bytes, and the series carrying a `peer` label), and takes
CPU per net cycle as the rise of process_cpu_seconds_total over the rise of
hostperf_probe_runs_total{probe="net"} (scrapes included: one per cycle).
It prints one row per fleet size and the ratio to the smallest fleet: with a
stable observer set (K observers per host) every column stays flat.

Usage: bench/net/fleet_scale.py --exporter BIN [--sizes 10,100,1000] [--cycles 20] [--interval 1]
"""
import argparse
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def sample(text, name, labels=""):
    match = re.search(rf"^{name}(?:{{{labels}[^}}]*}})? ([0-9.e+-]+)$", text, re.M)
    return float(match.group(1)) if match else None


def config(state, secret, peers_file, port, interval, responder_only):
    probes = "\n".join(f"[probes.{p}]\nenabled = false\n" for p in ("cpu", "memory", "disk"))
    net = (f'[probes.net]\nports = [{port}]\nsecret_file = "{secret}"\nbind_address = "0.0.0.0"\n')
    if responder_only:
        net += 'interval = "1h"\n'
    else:
        net += (f'interval = "{interval}s"\ntimeout = "{interval}s"\npeers_file = "{peers_file}"\n'
                'throughput_duration = "0s"\n')
    return (f'state_directory = "{state}"\n[scheduler]\nfirst_run_splay = "1s"\njitter = 0\n'
            f'[budget]\ncpu_seconds_per_hour = 3600\n{probes}{net}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--cycles", type=int, default=20, help="net cycles measured per size")
    parser.add_argument("--interval", type=float, default=1.0, help="net probe interval, seconds")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = pathlib.Path(tempfile.mkdtemp(prefix="hostperf-fleet-scale-"))
    secret = work / "secret"
    secret.write_text("fleet-scale-benchmark-secret\n")
    responder_port = free_port()
    procs = []

    def start(name, text, port):
        (work / name).mkdir()
        path = work / name / "hostperf.toml"
        path.write_text(text)
        log = open(work / name / "log", "w")
        proc = subprocess.Popen([args.exporter, f"--config.file={path}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    rows = []
    try:
        start("responder", config(work / "responder", secret, "", responder_port, 1, True), free_port())
        for n in sizes:
            peers_file = work / f"peers-{n}.json"
            names = [f"127.{1 + i // 250}.0.{1 + i % 250}:{responder_port}" for i in range(n)]
            peers_file.write_text('[{"targets": [' + ",".join(f'"{p}"' for p in names) + "]}]\n")
            port = free_port()
            observer = start(f"observer-{n}", config(work / f"observer-{n}", secret, peers_file, free_port(),
                                                     args.interval, False), port)
            url = f"http://127.0.0.1:{port}/metrics"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    if (sample(get(url), "hostperf_probe_runs_total", 'probe="net"') or 0) >= 2:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            first = get(url)
            cpu0 = sample(first, "process_cpu_seconds_total")
            runs0 = sample(first, "hostperf_probe_runs_total", 'probe="net"')
            sizes_seen, series_seen, peer_series_seen = [], [], []
            print(f"fleet {n}: measuring {args.cycles} cycles", file=sys.stderr, flush=True)
            while True:
                time.sleep(args.interval)
                text = get(url)
                lines = [line for line in text.splitlines() if line and not line.startswith("#")]
                sizes_seen.append(len(text.encode()))
                series_seen.append(len(lines))
                peer_series_seen.append(sum(1 for line in lines if 'peer="' in line))
                runs = sample(text, "hostperf_probe_runs_total", 'probe="net"')
                if runs - runs0 >= args.cycles:
                    break
            cpu = sample(text, "process_cpu_seconds_total")
            probed = sample(text, "hostperf_net_peers", 'set="probed"')
            rows.append((n, probed, statistics.median(series_seen), statistics.median(peer_series_seen),
                         statistics.median(sizes_seen), (cpu - cpu0) / (runs - runs0) * 1e3))
            observer.terminate()
            observer.wait(timeout=15)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=15)
    base = rows[0]
    print(f"{'peers':>6} {'probed':>6} {'series':>7} {'peer series':>11} {'bytes/scrape':>12} "
          f"{'CPU ms/cycle':>12} | ratios to {base[0]} peers: series, bytes, CPU")
    for n, probed, series, peer_series, size, cpu in rows:
        print(f"{n:>6} {probed:>6.0f} {series:>7.0f} {peer_series:>11.0f} {size:>12.0f} {cpu:>12.2f} | "
              f"{series / base[2]:.2f} {size / base[4]:.2f} {cpu / base[5]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
