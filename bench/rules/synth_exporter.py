#!/usr/bin/env python3
"""A synthetic fleet of hostperf exporters in one process, for rule benchmarks.

  synth_exporter.py --hosts N [--port P] [--sd-file FILE] [--cpus C] [--observers K]

Serves GET /metrics?target=<address> on 127.0.0.1:P: the /metrics of the
host whose scrape address is <address> (10.1.<i/256>.<i%256>:9105, i = 0..N-1).
--sd-file writes the Prometheus file_sd list of those addresses with the
labels cluster=c<i/100> and rack=r<i/10>; the scrape config sets
__param_target and instance from the address and sends the scrape to P
(bench/rules/run.sh does this). GET /healthz answers "ok" once the fleet is built.

What each host serves follows docs/metrics.md and a real daemon's /metrics
(the families, label names and values, the histogram bounds and the
framework's failure/skip reasons exposed at 0), on a realistic database host:
  - the four probes enabled at their default intervals (net 30 s, cpu 5 min,
    disk and memory 15 min): a probe's families change once per run, as the
    daemon's do (its counters step at each run), process_* and the host's
    steal and pressure at every scrape;
  - net: the K observed peers this host probes, chosen by rendezvous hashing
    as the daemon does (sha256 of "observer/target" over the peer names, as
    tests/dashboards/gen_fleet_rule_tests.py reproduces it; the K hosts with the
    highest score observe a target: K peers a host on average), each with the full RTT histogram
    (18 bounds and +Inf), packets sent and lost (growing; a loss now and
    then), peer_up, the clock offset, MTUs, the throughput gauges of bursts,
    the route's interface (a bond of two members) and its error counters;
    hostperf_net_self_info{peer} names the host's own peers_file entry;
  - disk: two directories, the daemon's state directory (role "state") and a
    database directory (role "data") on a 4-member array, each with its
    throughput per test, latency histogram per op, failure counters per
    reason, members, and hostperf_disk_directory_info{role, device_class}
    (SSD NVMe for most racks, an HDD array on every fourth rack);
  - cpu on C physical cores (default 16; 2C CPUs in the per-core rotation), memory (STREAM),
    the framework, build/host info, process_* and hostperf_budget_*.
Values are per host (a few percent apart) and wander a little from run to run.

Stdlib only. Prometheus adds `up` and the scrape's own series itself.
"""
import argparse
import hashlib
import http.server
import json
import math
import random
import socketserver
import sys
import threading
import time
import urllib.parse

RESPONDER_PORT = 14159
EXPORTER_PORT = 9105
RTT_BOUNDS = ("1e-05", "2.5e-05", "5e-05", "0.0001", "0.0002", "0.0003", "0.0005", "0.00075",
              "0.001", "0.002", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1")
DISK_BOUNDS = ("1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
               "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10")
CPU_BOUNDS = ("1e-05", "2e-05", "3e-05", "4e-05", "5e-05", "6e-05", "7e-05", "8e-05", "9e-05",
              "0.0001", "0.000125", "0.00015", "0.000175", "0.0002", "0.00025", "0.0003",
              "0.0004", "0.0005", "0.00075", "0.001", "0.0025", "0.005", "0.01")
INTERVALS = {"net": 30, "cpu": 300, "disk": 900, "memory": 900}
FAILURES = {
    "cpu": ("timeout", "internal_error", "checksum_mismatch"),
    "memory": ("timeout", "internal_error", "validation_failed", "out_of_memory",
               "thread_start_failed", "invalid_options"),
    "disk": ("timeout", "internal_error", "no_space", "io_error", "permission_denied",
             "direct_io_unsupported", "bad_directory", "verify_error", "bad_options",
             "out_of_memory", "hdfs_unreachable", "hdfs_standby", "hdfs_auth", "hdfs_error"),
    "net": ("timeout", "internal_error", "no_secret", "responder_down", "all_peers_down"),
}
SKIPS = {
    "cpu": ("full_run_active", "busy", "budget_exhausted", "host_busy"),
    "memory": ("full_run_active", "busy", "budget_exhausted", "host_busy"),
    "disk": ("full_run_active", "busy", "budget_exhausted", "host_busy", "no_space"),
    "net": ("full_run_active", "busy", "budget_exhausted", "host_busy", "no_peers"),
}
DISK_OPS = ("write", "rewrite_read", "rewrite_write", "read", "skip_read")
DISK_DIR_FAILURES = FAILURES["disk"][2:]
IF_COUNTERS = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors",
               "rx_fifo_errors", "tx_carrier_errors", "collisions")
RESPONDER_TYPES = ("hello", "ping", "session_start", "session_stop")
DROP_REASONS = ("bad_hmac", "bad_version", "malformed", "rate_limited", "source_blocked", "busy",
                "connection_limit")
BUILD_LABELS = ('build_flags="-O2 -g1 -DNDEBUG",compiler="GNU",compiler_version="12.2.0",'
                'fingerprint="4672e26403e9a6c7",revision="0db898ba8486",version="0.1.0"')


def address(i):
    return f"10.1.{i // 256}.{i % 256}"


def peer_name(i):
    return f"{address(i)}:{RESPONDER_PORT}"


def observed_sets(n, k):
    """For each host, the targets it observes: target t is observed by the k
    hosts o != t with the highest sha256("o/t") over the peer names."""
    names = [peer_name(i) for i in range(n)]
    out = [[] for _ in range(n)]
    for t in range(n):
        scored = sorted((hashlib.sha256(f"{names[o]}/{names[t]}".encode()).digest(), o)
                        for o in range(n) if o != t)
        for _, o in scored[-min(k, n - 1):]:
            out[o].append(t)
    return out


def fmt(v):
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def lognormal_cdf(x, median, sigma):
    if x <= 0:
        return 0.0
    return 0.5 * (1 + math.erf(math.log(x / median) / (sigma * math.sqrt(2))))


class Host:
    """One synthetic daemon. Families are rendered per probe run and cached."""

    def __init__(self, i, targets, cpus, t0):
        self.i = i
        self.rng = random.Random(i)
        self.targets = targets
        self.cpus = cpus
        # Started between 1 hour and 3 days before the exporter: counters are not at 0.
        self.start = t0 - self.rng.uniform(3600, 3 * 86400)
        self.phase = {p: self.rng.uniform(0, iv) for p, iv in INTERVALS.items()}
        self.hdd = (i // 10) % 4 == 3
        self.speed = self.rng.uniform(0.95, 1.05)
        self.cache = {}
        self.lock = threading.Lock()
        self.links = []
        for t in targets:
            r = random.Random(i * 100003 + t)
            median = r.uniform(1.2e-4, 2.5e-4)
            cdf = [lognormal_cdf(float(b), median, 0.35) for b in RTT_BOUNDS]
            self.links.append((peer_name(t), cdf, median * 1.05, r.uniform(-2e-4, 2e-4),
                               r.uniform(0.0, 4e-4)))

    # --- the probe run clock -------------------------------------------------
    def runs(self, probe, now):
        """Runs of the probe completed by now, and the time of the last one."""
        iv = INTERVALS[probe]
        n = int((now - self.start - self.phase[probe]) // iv)
        return n, self.start + self.phase[probe] + n * iv

    def jitter(self, key, epoch, spread=0.03):
        return 1 + random.Random(f"{self.i}/{key}/{epoch}").uniform(-spread, spread)

    # --- rendering -----------------------------------------------------------
    def render(self, now):
        parts = []
        with self.lock:
            for name, period, fn in FAMILIES:
                if period == "static":
                    epoch = 0
                elif period == "scrape":
                    epoch = None
                else:
                    epoch = self.runs(period, now)[0]
                if epoch is None:
                    parts.append(fn(self, now))
                    continue
                hit = self.cache.get(name)
                if hit is None or hit[0] != epoch:
                    hit = (epoch, fn(self, now))
                    self.cache[name] = hit
                parts.append(hit[1])
        return "".join(parts).encode()


def family(name, kind, help_text, samples):
    lines = [f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"]
    for suffix, labels, value in samples:
        lab = "{" + labels + "}" if labels else ""
        lines.append(f"{name}{suffix}{lab} {fmt(value)}\n")
    return "".join(lines)


def lbl(**kv):
    return ",".join(f'{k}="{v}"' for k, v in kv.items())


# --- families: (name, period, render(host, now)) ------------------------------
def f_framework(h, now):
    out = []
    rows = {}
    for p in INTERVALS:
        n, last = h.runs(p, now)
        rows[p] = (n, last)
    out.append(family("hostperf_probe_success", "gauge", "1 if the probe's last run succeeded.",
                      [("", lbl(probe=p), 1) for p in INTERVALS]))
    out.append(family("hostperf_probe_schedule_suspended", "gauge", "1 while scheduled runs are skipped.",
                      [("", lbl(probe=p), 0) for p in INTERVALS]))
    dur = {"net": 0.47, "cpu": 0.65, "disk": 2.4, "memory": 0.09}
    out.append(family("hostperf_probe_duration_seconds", "gauge", "Wall-clock time of the last run.",
                      [("", lbl(probe=p), dur[p] * h.jitter("dur" + p, rows[p][0], 0.2)) for p in INTERVALS]))
    out.append(family("hostperf_probe_last_run_timestamp_seconds", "gauge", "Unix time of the last run.",
                      [("", lbl(probe=p), round(rows[p][1], 3)) for p in INTERVALS]))
    out.append(family("hostperf_probe_last_success_timestamp_seconds", "gauge", "Unix time of the last success.",
                      [("", lbl(probe=p), round(rows[p][1], 3)) for p in INTERVALS]))
    out.append(family("hostperf_probe_interval_seconds", "gauge", "Configured interval.",
                      [("", lbl(probe=p), INTERVALS[p]) for p in INTERVALS]))
    out.append(family("hostperf_probe_runs_total", "counter", "Runs.",
                      [("", lbl(probe=p), rows[p][0]) for p in INTERVALS]))
    out.append(family("hostperf_probe_failures_total", "counter", "Failed runs.",
                      [("", lbl(probe=p, reason=r), 0) for p in INTERVALS for r in FAILURES[p]]))
    out.append(family("hostperf_probe_skipped_total", "counter", "Runs that did not happen.",
                      [("", lbl(probe=p, reason=r), 0) for p in INTERVALS for r in SKIPS[p]]))
    return "".join(out)


def f_static(h, now):
    out = [
        family("hostperf_build_info", "gauge", "Build facts.", [("", BUILD_LABELS, 1)]),
        family("hostperf_config_last_reload_successful", "gauge", "Last config load succeeded.", [("", "", 1)]),
        family("hostperf_config_last_reload_success_timestamp_seconds", "gauge", "Last good load.",
               [("", "", round(h.start, 3))]),
        family("hostperf_budget_cpu_limit_seconds", "gauge", "CPU budget per hour.", [("", "", 36)]),
        family("hostperf_budget_disk_limit_bytes", "gauge", "Disk budget per hour.", [("", "", 2147483648)]),
        family("hostperf_budget_net_limit_bytes", "gauge", "Net budget per hour.", [("", "", 2147483648)]),
        family("hostperf_http_connections_evicted_total", "counter", "Evicted connections.", [("", "", 0)]),
        family("process_max_fds", "gauge", "Soft limit on open files.", [("", "", 20000)]),
        family("process_start_time_seconds", "gauge", "Start time.", [("", "", round(h.start, 2))]),
        family("hostperf_host_info", "gauge", "Host facts.", [("", lbl(cpu_model="AMD EPYC 7543 32-Core Processor", governor="performance"), 1)]),
        family("hostperf_host_logical_cpus", "gauge", "Online logical CPUs.", [("", "", h.cpus * 2)]),
        family("hostperf_host_physical_cores", "gauge", "Physical cores.", [("", "", h.cpus)]),
        family("hostperf_host_cpu_packages", "gauge", "Packages.", [("", "", 1)]),
        family("hostperf_host_llc_bytes", "gauge", "LLC size.", [("", "", 268435456)]),
        family("hostperf_host_cpu_core_throttles_total", "counter", "Core throttles.", [("", "", 0)]),
        family("hostperf_host_cpu_package_throttles_total", "counter", "Package throttles.", [("", "", 0)]),
        family("hostperf_cpu_workload_errors_total", "counter", "Checksum errors.", [("", "", 0)]),
        family("hostperf_cpu_baseline_seconds", "gauge", "Baseline.", [("", lbl(fingerprint="4672e26403e9a6c7"), 0.0429)]),
        family("hostperf_cpu_baseline_calibration_samples", "gauge", "Calibration runs.", [("", "", 5)]),
        family("hostperf_cpu_power_info", "gauge", "cpufreq facts.",
               [("", lbl(driver="acpi-cpufreq", energy_performance_preference="", governor="performance", pstate_status=""), 1)]),
        family("hostperf_cpu_power_differing_cores", "gauge", "CPUs differing.",
               [("", lbl(setting=s), 0) for s in ("governor", "energy_performance_preference")]),
        family("hostperf_cpu_idle_state_enabled_cores", "gauge", "C-states enabled.",
               [("", lbl(state=s), h.cpus * 2) for s in ("POLL", "C1", "C2")]),
        family("hostperf_cpu_idle_state_latency_seconds", "gauge", "Exit latency.",
               [("", lbl(state=s), v) for s, v in (("POLL", 0), ("C1", 1e-06), ("C2", 0.0004))]),
        family("hostperf_cpu_sysfs_available", "gauge", "Kernel facts.",
               [("", lbl(fact=f), 1) for f in ("cpufreq", "thermal_throttle", "cpuidle", "pstate")]),
        family("hostperf_cpu_core_rotation_cpus", "gauge", "Rotation.",
               [("", lbl(set="rotated"), h.cpus * 2), ("", lbl(set="outside_affinity"), 0), ("", lbl(set="over_max_cores"), 0)]),
        family("hostperf_memory_validation_errors_total", "counter", "Validation errors.", [("", "", 0)]),
        family("hostperf_full_run_active", "gauge", "Full run queued or running.", [("", "", 0)]),
        family("hostperf_full_runs_total", "counter", "Full runs.", [("", lbl(state=s), 0) for s in ("succeeded", "failed", "cancelled")]),
        family("hostperf_full_run_calendar_skipped_total", "counter", "Calendar slots skipped.",
               [("", lbl(reason=r), 0) for r in ("full_run_active", "missed", "rejected")]),
        family("hostperf_net_throughput_rate_limit_bytes_per_second", "gauge", "Burst cap.", [("", "", 33554432)]),
        family("hostperf_net_peers_file_errors_total", "counter", "Bad peers_file versions.", [("", "", 0)]),
        family("hostperf_net_peers_file_valid", "gauge", "peers_file loaded.", [("", "", 1)]),
        family("hostperf_net_self_info", "gauge", "This host's peers_file entry.", [("", lbl(peer=peer_name(h.i)), 1)]),
        family("hostperf_net_responder_up", "gauge", "Responder serves.", [("", "", 1)]),
        family("hostperf_net_responder_dropped_total", "counter", "Dropped requests.", [("", lbl(reason=r), 0) for r in DROP_REASONS]),
        family("hostperf_net_throughput_skipped_total", "counter", "Bursts not run.",
               [("", lbl(reason=r), 0) for r in ("busy", "budget", "no_peer", "error")]),
        family("hostperf_net_peers", "gauge", "Peer sets.",
               [("", lbl(set="known"), N_HOSTS), ("", lbl(set="probed"), len(h.targets)),
                ("", lbl(set="observers"), min(K_OBSERVERS, N_HOSTS - 1)), ("", lbl(set="over_cap"), 0)]),
        family("hostperf_net_interface_info", "gauge", "Route interfaces.",
               [("", lbl(interface="bond0", duplex="full", operstate="up", lower=m), 1) for m in ("eth0", "eth1")]
               + [("", lbl(interface=m, duplex="full", operstate="up", lower=""), 1) for m in ("eth0", "eth1")]),
        family("hostperf_net_interface_speed_bytes_per_second", "gauge", "Link speed.",
               [("", lbl(interface="bond0"), 2500000000), ("", lbl(interface="eth0"), 1250000000), ("", lbl(interface="eth1"), 1250000000)]),
        family("hostperf_net_interface_mtu_bytes", "gauge", "MTU.", [("", lbl(interface=x), 9000) for x in ("bond0", "eth0", "eth1")]),
        family("hostperf_net_peer_interface_info", "gauge", "Route to the peer.",
               [("", lbl(peer=l[0], interface="bond0"), 1) for l in h.links]),
        family("hostperf_net_peer_mtu_bytes", "gauge", "MTU toward the peer.",
               [("", lbl(peer=l[0], side=s), 9000) for l in h.links for s in ("local", "remote")]),
        family("hostperf_net_peer_mtu_mismatch", "gauge", "MTU mismatch.", [("", lbl(peer=l[0]), 0) for l in h.links]),
    ]
    out.append(family("hostperf_disk_directory_info", "gauge", "Configured directories.",
                      [("", lbl(directory=d, role=role, device_class=dc), 1) for d, role, dc, _, _ in disk_dirs(h)]))
    out.append(family("hostperf_disk_members", "gauge", "Members.", [("", lbl(directory=d), len(m)) for d, _, _, m, _ in disk_dirs(h)]))
    out.append(family("hostperf_disk_member_info", "gauge", "Members.",
                      [("", lbl(directory=d, device=dev, leaves=dev, model="SAMSUNG MZQL23T8HCLS" if not hdd else "ST12000NM0008", serial=f"S{h.i:05d}{dev}"), 1)
                       for d, _, _, m, hdd in disk_dirs(h) for dev in m]))
    return "".join(out)


def disk_dirs(h):
    """(directory, role, device_class, members, hdd)."""
    data_class = "hdd_sas_xfs" if h.hdd else "ssd_nvme_xfs"
    data_members = ("sdb", "sdc", "sdd", "sde") if h.hdd else ("nvme1n1", "nvme2n1", "nvme3n1", "nvme4n1")
    return [("/var/lib/hostperf/disk", "state", "ssd_nvme_ext4", ("nvme0n1",), False),
            ("/srv/pgdata", "data", data_class, data_members, h.hdd)]


def f_process(h, now):
    up = now - h.start
    return "".join([
        family("process_cpu_seconds_total", "counter", "CPU time.", [("", "", round(up * 0.0032, 2))]),
        family("process_resident_memory_bytes", "gauge", "RSS.", [("", "", 16318464 + (int(now) % 7) * 4096)]),
        family("process_virtual_memory_bytes", "gauge", "VSZ.", [("", "", 154849280)]),
        family("process_open_fds", "gauge", "Open fds.", [("", "", 11 + int(now) % 3)]),
        family("hostperf_host_cpu_steal_seconds_total", "counter", "Steal.", [("", "", round(up * 0.001, 2))]),
        family("hostperf_host_pressure_ratio", "gauge", "PSI some avg10.",
               [("", lbl(resource="cpu"), round(0.02 * h.jitter("psi", int(now), 0.5), 4)),
                ("", lbl(resource="io"), round(0.004 * h.jitter("psio", int(now), 0.5), 4))]),
        family("hostperf_budget_cpu_used_seconds", "gauge", "CPU used in the last hour.",
               [("", "", round(11.5 * h.jitter("bcpu", int(now) // 30, 0.05), 3))]),
        family("hostperf_budget_disk_used_bytes", "gauge", "Disk bytes reserved in the last hour.", [("", "", 536870912)]),
        family("hostperf_budget_net_used_bytes", "gauge", "Net bytes sent in the last hour.", [("", "", 1006632960)]),
    ])


def f_cpu(h, now):
    n, _ = h.runs("cpu", now)
    j = h.jitter("cpu", n)
    out = [
        family("hostperf_cpu_workload_cpu_seconds", "gauge", "CPU time of the workload.",
               [("", lbl(mode="scheduled"), 0.0429 * h.speed * j)]),
        family("hostperf_cpu_workload_real_seconds", "gauge", "Wall time of the workload.",
               [("", lbl(mode="scheduled"), 0.0441 * h.speed * j)]),
        family("hostperf_cpu_task_median_seconds", "gauge", "Median task time.",
               [("", lbl(load="high"), 5.71e-05 * j), ("", lbl(load="low"), 5.79e-05 * j)]),
        family("hostperf_cpu_throttle_ratio", "gauge", "Low/high.", [("", "", 1.014 * h.jitter("thr", n, 0.01))]),
        family("hostperf_cpu_baseline_ratio", "gauge", "CPU time / baseline.", [("", "", h.speed * j)]),
    ]
    samples = []
    for load in ("high", "low"):
        total = 25 * n
        cdf = [lognormal_cdf(float(b), 5.8e-05, 0.1) for b in CPU_BOUNDS]
        for b, c in zip(CPU_BOUNDS, cdf):
            samples.append(("_bucket", lbl(load=load, le=b), int(total * c)))
        samples.append(("_bucket", lbl(load=load, le="+Inf"), total))
        samples.append(("_sum", lbl(load=load), total * 5.9e-05))
        samples.append(("_count", lbl(load=load), total))
    out.append(family("hostperf_cpu_task_seconds", "histogram", "Task timings.", samples))
    cpus = range(h.cpus * 2)
    out.append(family("hostperf_cpu_core_task_median_seconds", "gauge", "Per-CPU median.",
                      [("", lbl(cpu=str(c)), 5.8e-05 * h.jitter(f"c{c}", n, 0.02)) for c in cpus]))
    out.append(family("hostperf_cpu_core_task_ratio", "gauge", "Per-CPU ratio.",
                      [("", lbl(cpu=str(c)), h.jitter(f"c{c}", n, 0.02)) for c in cpus]))
    out.append(family("hostperf_cpu_core_outlier", "gauge", "Slow core.", [("", lbl(cpu=str(c)), 0) for c in cpus]))
    out.append(family("hostperf_cpu_core_frequency_hertz", "gauge", "cpufreq.",
                      [("", lbl(cpu=str(c)), int(2.8e9 * h.jitter(f"f{c}", n, 0.01))) for c in cpus]))
    out.append(family("hostperf_cpu_core_throttle_events_total", "counter", "Thermal throttling.",
                      [("", lbl(cpu=str(c), scope=s), 0) for c in cpus for s in ("core", "package")]))
    return "".join(out)


def f_memory(h, now):
    n, _ = h.runs("memory", now)
    j = h.jitter("mem", n, 0.02)
    base = {"copy": 12.1e9, "scale": 11.8e9, "add": 12.9e9, "triad": 12.8e9}
    return "".join([
        family("hostperf_memory_bandwidth_bytes_per_second", "gauge", "STREAM best rate.",
               [("", lbl(kernel=k, threads="1"), v * h.speed * j) for k, v in base.items()]),
        family("hostperf_memory_cache_resident", "gauge", "Arrays may be cache-resident.", [("", lbl(threads="1"), 0)]),
        family("hostperf_memory_array_bytes", "gauge", "Array size.", [("", lbl(threads="1"), 268435440)]),
    ])


def f_disk(h, now):
    n, _ = h.runs("disk", now)
    dirs = disk_dirs(h)
    thr, lat, rd, wr, ver, seeks, succ, fails, msec, mratio, mbytes = ([] for _ in range(11))
    for d, _, _, members, hdd in dirs:
        base = 150e6 if hdd else 620e6
        for test, f in (("Write", 1.0), ("ReWrite", 1.6), ("Read", 1.15), ("SkipRead", 0.5)):
            thr.append(("", lbl(directory=d, test=test), base * f * h.speed * h.jitter(d + test, n, 0.04)))
        seeks.append(("", lbl(directory=d), (180 if hdd else 9500) * h.jitter(d + "s", n, 0.04)))
        succ.append(("", lbl(directory=d), 1))
        rd.append(("", lbl(directory=d), 64 * 1048576 * n))
        wr.append(("", lbl(directory=d), 64 * 1048576 * n))
        ver.append(("", lbl(directory=d), 0))
        fails.extend(("", lbl(directory=d, reason=r), 0) for r in DISK_DIR_FAILURES)
        median = 4e-3 if hdd else 1.6e-3
        for op in DISK_OPS:
            total = 32 * n
            cdf = [lognormal_cdf(float(b), median, 0.5) for b in DISK_BOUNDS]
            for b, c in zip(DISK_BOUNDS, cdf):
                lat.append(("_bucket", lbl(directory=d, op=op, le=b), int(total * c)))
            lat.append(("_bucket", lbl(directory=d, op=op, le="+Inf"), total))
            lat.append(("_sum", lbl(directory=d, op=op), total * median * 1.1))
            lat.append(("_count", lbl(directory=d, op=op), total))
        for dev in members:
            for op in ("read", "write"):
                msec.append(("", lbl(directory=d, device=dev, op=op), median * h.jitter(dev + op, n, 0.1)))
                mbytes.append(("", lbl(directory=d, device=dev, op=op), 64 * 1048576 * n // len(members)))
                if len(members) > 1:
                    mratio.append(("", lbl(directory=d, device=dev, op=op), h.jitter(dev + op, n, 0.1)))
    return "".join([
        family("hostperf_disk_op_latency_seconds", "histogram", "Block latency.", lat),
        family("hostperf_disk_read_bytes_total", "counter", "Bytes read.", rd),
        family("hostperf_disk_written_bytes_total", "counter", "Bytes written.", wr),
        family("hostperf_disk_verify_errors_total", "counter", "Bad blocks.", ver),
        family("hostperf_disk_throughput_bytes_per_second", "gauge", "Throughput per test.", thr),
        family("hostperf_disk_seeks_per_second", "gauge", "SkipRead reads per second.", seeks),
        family("hostperf_disk_directory_success", "gauge", "Last run succeeded.", succ),
        family("hostperf_disk_directory_failures_total", "counter", "Failed runs by reason.", fails),
        family("hostperf_disk_member_seconds_per_op", "gauge", "Member time per op.", msec),
        family("hostperf_disk_member_service_ratio", "gauge", "Member vs siblings.", mratio),
        family("hostperf_disk_member_bytes_total", "counter", "Member bytes.", mbytes),
    ])


def f_net(h, now):
    n, last = h.runs("net", now)
    rtt, sent, lost, up, ts, off, tcp, udp, uloss, ujit, tbytes = ([] for _ in range(11))
    for k, (peer, cdf, mean, offset, loss) in enumerate(h.links):
        p = lbl(peer=peer)
        total = 20 * n
        # A lost ping now and then: a hash of (link, run) below the link's loss rate.
        lost_n = int(total * loss)
        got = total - lost_n
        for b, c in zip(RTT_BOUNDS, cdf):
            rtt.append(("_bucket", lbl(peer=peer, le=b), int(got * c)))
        rtt.append(("_bucket", lbl(peer=peer, le="+Inf"), got))
        rtt.append(("_sum", p, got * mean))
        rtt.append(("_count", p, got))
        sent.append(("", p, total))
        lost.append(("", p, lost_n))
        up.append(("", p, 1))
        ts.append(("", p, round(last, 3)))
        off.append(("", p, offset * h.jitter("off" + peer, n, 0.3)))
        # One burst per run, round robin over the peers, TCP and UDP alternating.
        bursts = (n - k + len(h.links) - 1) // len(h.links) if n >= k else 0
        tcp.append(("", p, 33.9e6 * h.jitter("tcp" + peer, bursts // 2, 0.01)))
        udp.append(("", p, 33.5e6 * h.jitter("udp" + peer, bursts // 2, 0.01)))
        uloss.append(("", p, 0))
        ujit.append(("", p, 7.5e-06 * h.jitter("jit" + peer, bursts // 2, 0.2)))
        tbytes.append(("", p, bursts * 8388608))
    req = [("", lbl(type="ping"), 20 * n * len(h.links)), ("", lbl(type="hello"), n // 20 * len(h.links)),
           ("", lbl(type="session_start"), n), ("", lbl(type="session_stop"), n)]
    errs = [("", lbl(interface=x, counter=c), (n // 200) if (c == "rx_dropped" and x != "bond0") else 0)
            for x in ("bond0", "eth0", "eth1") for c in IF_COUNTERS]
    return "".join([
        family("hostperf_net_rtt_seconds", "histogram", "UDP ping RTT.", rtt),
        family("hostperf_net_packets_sent_total", "counter", "Pings sent.", sent),
        family("hostperf_net_packets_lost_total", "counter", "Pings lost.", lost),
        family("hostperf_net_peer_up", "gauge", "Peer answered.", up),
        family("hostperf_net_peer_last_probe_timestamp_seconds", "gauge", "Last ping run.", ts),
        family("hostperf_net_clock_offset_seconds", "gauge", "Peer clock minus local.", off),
        family("hostperf_net_tcp_throughput_bytes_per_second", "gauge", "TCP burst rate.", tcp),
        family("hostperf_net_udp_throughput_bytes_per_second", "gauge", "UDP burst rate.", udp),
        family("hostperf_net_udp_loss_ratio", "gauge", "UDP burst loss.", uloss),
        family("hostperf_net_udp_jitter_seconds", "gauge", "UDP jitter.", ujit),
        family("hostperf_net_throughput_bytes_total", "counter", "Burst bytes.", tbytes),
        family("hostperf_net_responder_requests_total", "counter", "Requests answered.", req),
        family("hostperf_net_interface_errors_during_probe_total", "counter", "Interface errors during probes.", errs),
        family("hostperf_net_tcp_retransmits_during_probe_total", "counter", "TCP retransmits.", [("", "", n // 50)]),
    ])


FAMILIES = [
    ("static", "static", f_static),
    ("framework", "net", f_framework),  # the net probe runs most often: framework rows follow it
    ("process", "scrape", f_process),
    ("cpu", "cpu", f_cpu),
    ("memory", "memory", f_memory),
    ("disk", "disk", f_disk),
    ("net", "net", f_net),
]
N_HOSTS = 0
K_OBSERVERS = 8
HOSTS = {}
READY = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/healthz":
            body, code = (b"ok\n", 200) if READY.is_set() else (b"building\n", 503)
        elif url.path == "/metrics":
            target = urllib.parse.parse_qs(url.query).get("target", [""])[0]
            host = HOSTS.get(target)
            if host is None:
                body, code = b"unknown target\n", 404
            else:
                body, code = host.render(time.time()), 200
        else:
            body, code = b"not found\n", 404
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256


def main():
    global N_HOSTS, K_OBSERVERS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--sd-file")
    ap.add_argument("--cpus", type=int, default=16, help="physical cores per host (2 CPUs each in the rotation)")
    ap.add_argument("--observers", type=int, default=8)
    args = ap.parse_args()
    N_HOSTS, K_OBSERVERS = args.hosts, args.observers
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    t0 = time.time()
    sets = observed_sets(args.hosts, args.observers)
    for i in range(args.hosts):
        HOSTS[f"{address(i)}:{EXPORTER_PORT}"] = Host(i, sets[i], args.cpus, t0)
    if args.sd_file:
        groups = [{"targets": [f"{address(i)}:{EXPORTER_PORT}"],
                   "labels": {"cluster": f"c{i // 100}", "rack": f"r{i // 10}"}} for i in range(args.hosts)]
        with open(args.sd_file + ".tmp", "w", encoding="utf-8") as f:
            json.dump(groups, f)
        import os
        os.replace(args.sd_file + ".tmp", args.sd_file)
    # Render every host once so that the first scrapes do not all pay for it at once.
    for h in HOSTS.values():
        h.render(time.time())
    sample = HOSTS[f"{address(0)}:{EXPORTER_PORT}"].render(time.time()).decode()
    series = sum(1 for line in sample.splitlines() if line and not line.startswith("#"))
    print(f"fleet of {args.hosts} hosts built in {time.time() - t0:.1f} s; "
          f"host 0 serves {series} series ({len(sample)} bytes), observes {len(sets[0])} peers", flush=True)
    READY.set()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
