#!/usr/bin/env python3
"""The daemon's resident memory after a fixed scrape load stays under a generous bound.

Starts hostperf_exporter on its embedded defaults (its own state directory, a
free port for the net responder, first runs within a second instead of the
30 s splay), waits until every probe has run once, then scrapes /metrics
SCRAPES times from CLIENTS keep-alive clients at once and reads VmRSS: the
median of 2 s of samples (a probe run in that window, the net probe's every
30 s, shows as a spike). Fails above --limit-mib (24 MiB; the daemon needs
about 16 MiB, 17 to 19 before it trimmed when idle: docs/benchmarks.md). Not a
timing test: only the memory is judged.

Skipped (exit 77) in the sanitizer builds, whose allocators and shadow memory
make the resident set meaningless.

Usage: footprint_test.py --exporter BIN --work DIR [--sanitized] [--scrapes N] [--clients N] [--limit-mib N]
"""
import argparse
import http.client
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "common"))
from harness import Failure, enabled_probes, free_port, http_get, stop_process, wait_for  # noqa: E402

SKIP = 77
DEADLINE_SECONDS = 240


def rss_kib(pid):
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def scrape(port, total, clients):
    errors = []

    def client(n):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for _ in range(n):
                conn.request("GET", "/metrics")
                response = conn.getresponse()
                body = response.read()
                if response.status != 200 or b"hostperf_probe_runs_total" not in body:
                    raise Failure(f"scrape answered {response.status}, {len(body)} bytes")
            conn.close()
        except (OSError, http.client.HTTPException, Failure) as e:
            errors.append(e)

    threads = [threading.Thread(target=client, args=(total // clients,)) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise Failure(f"{len(errors)} of {clients} clients failed, first: {errors[0]!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--work", required=True, type=pathlib.Path)
    parser.add_argument("--sanitized", action="store_true", help="a sanitizer build: skip")
    parser.add_argument("--scrapes", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--limit-mib", type=float, default=24)
    args = parser.parse_args()
    if args.sanitized:
        print("footprint_test: skipped: a sanitizer build's resident memory says nothing of the release's")
        return SKIP

    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "state").mkdir(parents=True)
    config = args.work / "hostperf.toml"
    config.write_text(f"""state_directory = "{args.work / 'state'}"
[scheduler]
first_run_splay = "1s"
[probes.net]
ports = [{free_port()}]
""", encoding="utf-8")
    log = args.work / "exporter.log"
    with open(log, "w", encoding="utf-8") as handle:
        child = subprocess.Popen([args.exporter, f"--config.file={config}", "--web.listen-address=127.0.0.1:0"],
                                 stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS

        def port():
            if child.poll() is not None:
                raise Failure(f"hostperf_exporter exited with {child.returncode}:\n{log.read_text()}")
            match = re.search(r"listening on \S+ \(port (\d+)\)", log.read_text())
            return match and int(match.group(1))

        http_port = wait_for("hostperf_exporter to listen", port, deadline, 0.2)
        with open(f"/proc/{child.pid}/maps", encoding="utf-8") as f:
            if re.search(r"/lib(asan|tsan|lsan)\.so", f.read()):  # built with -fsanitize by other means
                print("footprint_test: skipped: the exporter runs a sanitizer's runtime")
                return SKIP

        # Every probe the daemon runs (at its defaults: every registered one).
        probes = enabled_probes(http_get(f"http://127.0.0.1:{http_port}/metrics"))
        if not probes:
            raise Failure("the daemon declares no enabled probe on /metrics")

        def all_ran():
            text = http_get(f"http://127.0.0.1:{http_port}/metrics")
            ran = {m.group(1) for m in re.finditer(r'^hostperf_probe_runs_total\{probe="(\w+)"\} ([1-9]\S*)$',
                                                   text, re.M)}
            return all(p in ran for p in probes)

        # Every probe once: their libraries and per-run state are part of the steady footprint.
        wait_for(f"every probe's first run ({', '.join(probes)})", all_ran, deadline, 0.5)
        before = rss_kib(child.pid)
        scrape(http_port, args.scrapes, args.clients)
        samples = []
        for _ in range(10):
            samples.append(rss_kib(child.pid))
            time.sleep(0.2)
        rss = statistics.median(samples)
        print(f"footprint_test: VmRSS {before / 1024:.1f} MiB after every probe's first run, "
              f"{rss / 1024:.1f} MiB after {args.scrapes} scrapes from {args.clients} clients at once "
              f"(median of {len(samples)} samples, max {max(samples) / 1024:.1f}); bound {args.limit_mib:g} MiB")
        if rss > args.limit_mib * 1024:
            raise Failure(f"resident memory {rss / 1024:.1f} MiB exceeds {args.limit_mib:g} MiB "
                          "(bench/impact/run.sh footprint shows where it goes)")
        return 0
    except Failure as e:
        print(f"footprint_test: FAILED: {e}\n--- exporter log (tail) ---\n{log.read_text()[-4000:]}")
        return 1
    finally:
        stop_process(child, timeout=20)


if __name__ == "__main__":
    sys.exit(main())
