#!/usr/bin/env python3
"""Generates the fleet-scale promtool tests of the shipped rules.

  fleet-<N>_test.yml for N = 8, 32, 100, 300 hosts: each host watched by
  K = 8 observers (min(K, N-1)) chosen by rendezvous hashing, as the net probe
  does; one cluster label, one job. Faults, all persisting for 2 hours:
    - one exporter killed at 10m: HostperfExporterDown for it only. Its
      observers also see it unreachable; HostperfNetHostUnreachable stays
      silent for a host whose own exporter is down (the rule itself, not only
      Alertmanager's inhibition);
    - one host whose responder is down: HostperfNetHostUnreachable for it, no
      link alerts;
    - one link down seen by one observer only: HostperfNetLinkDegraded naming
      both ends, no host alert;
    - one host at 1.5 ms median RTT from all its observers (and to its own
      peers): HostperfNetHostDegraded, asserted at 30m, 1h, 90m and 2h
      (no flapping);
    - every other host healthy: nothing.
  fleet-disk_test.yml: the gpcheckperf field case (2 clusters in one job, 3
  hosts each, one host at 365 against 620 MB/s: HostperfDiskSlowerThanFleet for
  that host only) and a mixed-storage fleet (an SSD "state" and an array "data"
  directory on each of 3 hosts: nothing fires).

Input series are kept minimal (3 RTT buckets, no clock offsets) so that the
300-host file stays fast. Expected annotations are expanded from the alert
rules' own templates ({{ $labels.x }} and {{ $value }} only).

Every host is a scrape target of job="hostperf" (the mixin's exporterSelector)
and is named in the peers_file as it is scraped, so that every link target
resolves through hostperf:host_identity.

The files are generated at test time (ctest dashboards_rules_fleet*) into the
build tree; their rule_files point back at dashboards/rules/ (a path relative
to the output directory).

Usage: gen_fleet_rule_tests.py [--out DIR]   (default: the current directory)
"""
import argparse
import hashlib
import os
import pathlib
import sys

import yaml

from alert_templates import alert_templates, expand

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / "dashboards" / "rules"
SIZES = (8, 32, 100, 300)
K = 8
JOB = "hostperf"
CLUSTER = "fleet1"
# Samples every 2 minutes for 2 hours (a scrape interval; rates and windows
# hold 3 or more samples under both inclusive and left-open range semantics).
INTERVAL = "2m"
MINUTES = 60           # samples, not minutes: 2 hours at 2m
DEATH = 5              # the exporter is killed after the 5th sample (10 minutes)
# promtool's engine refuses a query that loads more than 10000 samples: the
# RTT quantiles load 3 buckets x 3 samples per link, so at most ~1000 links
# per test group. Large fleets are split into test groups by target host,
# each with every link into its targets (a host-level result depends only on
# its own observers' links) and with all the faulty hosts' links (so link
# alerts see whether their observer is impaired). Scheduled TCP bursts
# (last_over_time over 1h: 31 samples a link) are given for the faulty
# hosts' links only.
TARGETS_PER_GROUP = 100
EVAL_TIMES = ("30m", "1h", "90m", "2h")
NET_ALERTS = ("HostperfExporterDown", "HostperfNetHostUnreachable", "HostperfNetHostDegraded",
              "HostperfNetHostThroughputLow", "HostperfNetLinkDegraded", "HostperfNetClockSkew")
DISK_ALERTS = ("HostperfDiskSlowerThanFleet", "HostperfDiskSlowerThanBaseline")
CAP = 33554432
# Rules are evaluated every 5 minutes over the 1-minute samples (a real
# Prometheus evaluates more often; the `for:` state machine is the same).
EVALUATION_INTERVAL = "5m"          # the default burst cap, 32 MiB/s


def host(i):
    return f"h{i:03d}"


def observers_of(target, n):
    """Rendezvous hashing: the K hosts with the highest hash of (observer, target)."""
    others = [o for o in range(n) if o != target]
    ranked = sorted(others, key=lambda o: hashlib.sha256(f"{host(o)}/{host(target)}".encode()).hexdigest())
    return ranked[:min(K, n - 1)]


def series(name, labels, values):
    text = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def ramp(step, minutes, stale_after=None):
    """A counter rising by step each sample (or constant when step is 0), stale from sample stale_after on."""
    if stale_after is not None:
        return (f"0+{step}x{stale_after - 1}" if step else f"0x{stale_after - 1}") + " stale"
    return f"0+{step}x{minutes}" if step else f"0x{minutes}"


def gauge(value, minutes, stale_after=None):
    if stale_after is not None:
        return f"{value}x{stale_after - 1} stale"
    return f"{value}x{minutes}"


def fleet_tests(n, templates):
    """The test groups of one fleet: every faulty host's links in each, the healthy targets in slices."""
    dead, down, slow = 1, 2, 3
    # The link fault: a target none of the faults touch, seen by one of its observers that is healthy too.
    target = next(t for t in range(4, n) if t not in (dead, down, slow))
    observer = next(o for o in observers_of(target, n) if o not in (dead, down, slow))
    faulty = [dead, down, slow, target]
    healthy = [t for t in range(n) if t not in faulty]
    slices = [healthy[i:i + TARGETS_PER_GROUP] for i in range(0, len(healthy), TARGETS_PER_GROUP)]
    return [fleet_test(n, templates, faulty + part, (dead, down, slow, target, observer),
                       f"{i + 1}/{len(slices)}") for i, part in enumerate(slices)]


def fleet_test(n, templates, targets, faults, part):
    dead, down, slow, target, observer = faults
    inputs = []
    # Per-host series for the targets and their observers only.
    hosts = sorted(set(targets) | {o for t in targets for o in observers_of(t, n)})
    for i in hosts:
        lab = {"instance": f"{host(i)}:9105", "job": JOB, CLUSTER_LABEL: CLUSTER}
        stale = DEATH if i == dead else None
        inputs.append(series("up", lab, f"1x{DEATH - 1} 0x{MINUTES - DEATH + 1}" if i == dead else gauge(1, MINUTES)))
        if i in targets:
            inputs.append(series("hostperf_build_info", dict(lab, fingerprint="f1"), gauge(1, MINUTES, stale)))
        inputs.append(series("hostperf_net_throughput_rate_limit_bytes_per_second", lab, gauge(CAP, MINUTES, stale)))
    for t in targets:
        for o in observers_of(t, n):
            lab = {"instance": f"{host(o)}:9105", "job": JOB, CLUSTER_LABEL: CLUSTER, "peer": f"{host(t)}:14159"}
            stale = DEATH if o == dead else None
            if t == dead:      # answers until its process is killed
                up = f"1x{DEATH - 1} 0x{MINUTES - DEATH + 1}"
                lost = f"0x{DEATH - 1} 10+10x{MINUTES - DEATH}"
                fast = f"0+10x{DEATH - 1} {10 * DEATH - 10}x{MINUTES - DEATH + 1}"
                rtt_le_1ms = rtt_le_2ms = fast
            elif t == down or (t == target and o == observer):
                up, lost = gauge(0, MINUTES, stale), ramp(10, MINUTES, stale)
                rtt_le_1ms = rtt_le_2ms = ramp(0, MINUTES, stale)
            else:
                up, lost = gauge(1, MINUTES, stale), ramp(0, MINUTES, stale)
                rtt_le_2ms = ramp(10, MINUTES, stale)
                rtt_le_1ms = ramp(0 if slow in (t, o) else 10, MINUTES, stale)
            inputs.append(series("hostperf_net_peer_up", lab, up))
            inputs.append(series("hostperf_net_packets_sent_total", lab, ramp(10, MINUTES, stale)))
            inputs.append(series("hostperf_net_packets_lost_total", lab, lost))
            inputs.append(series("hostperf_net_rtt_seconds_bucket", dict(lab, le="0.001"), rtt_le_1ms))
            inputs.append(series("hostperf_net_rtt_seconds_bucket", dict(lab, le="0.002"), rtt_le_2ms))
            inputs.append(series("hostperf_net_rtt_seconds_bucket", dict(lab, le="+Inf"), rtt_le_2ms))
            if t in (dead, down, slow, target):
                inputs.append(series("hostperf_net_tcp_throughput_bytes_per_second", lab, gauge(CAP, MINUTES, stale)))

    def expected(name, labels, value, signal=None):
        notes = templates[(name, signal)]
        full = dict(labels, alertname=name)
        return {"exp_labels": labels,
                "exp_annotations": {k: expand(v, full, value) for k, v in notes.items()}}

    def host_alert(name, i, value, severity="warning", signal=None):
        labels = {"severity": severity, CLUSTER_LABEL: CLUSTER, "host": host(i)}
        if signal:
            labels["signal"] = signal
        return expected(name, labels, value, signal)

    # The dead host's own views of its peers go with it.
    observers_seeing = {i: len([o for o in observers_of(i, n) if o != dead]) for i in (dead, down, slow)}
    firing = {
        "HostperfExporterDown": [expected("HostperfExporterDown", {
            "severity": "critical", "instance": f"{host(dead)}:9105", "job": JOB, CLUSTER_LABEL: CLUSTER,
            "host": host(dead)}, 0)],
        # The dead host is unreachable too, but its own exporter is down: that explains it.
        "HostperfNetHostUnreachable": [host_alert("HostperfNetHostUnreachable", down, observers_seeing[down])],
        "HostperfNetHostDegraded": [host_alert("HostperfNetHostDegraded", slow, observers_seeing[slow], signal="rtt")],
        "HostperfNetLinkDegraded": [expected("HostperfNetLinkDegraded", {
            "severity": "info", "signal": "down", "instance": f"{host(observer)}:9105", "job": JOB,
            CLUSTER_LABEL: CLUSTER, "peer": f"{host(target)}:14159", "host": host(target),
            "observer": host(observer)}, 1, "down")],
    }
    checks = []
    for when in EVAL_TIMES:
        for name in NET_ALERTS:
            checks.append({"eval_time": when, "alertname": name, "exp_alerts": firing.get(name, [])})
    story = (f"{n} hosts, K={min(K, n - 1)} observers each, part {part} (the faulty hosts and "
             f"{len(targets) - 4} healthy targets with all their links): {host(dead)} exporter killed at {2 * DEATH}m, "
             f"{host(down)} responder down, {host(slow)} at 1.5 ms RTT, link {host(observer)} -> {host(target)} down")
    return {"name": story, "interval": INTERVAL, "input_series": inputs, "alert_rule_test": checks}


def disk_tests(templates):
    def host_series(instance, cluster, directory, role, value, tests=("Write", "Read")):
        lab = {"instance": f"{instance}:9105", "job": JOB, CLUSTER_LABEL: cluster}
        out = [series("hostperf_disk_directory_info", dict(lab, directory=directory, role=role), gauge(1, MINUTES))]
        for test in tests:
            out.append(series("hostperf_disk_throughput_bytes_per_second", dict(lab, directory=directory, test=test),
                              gauge(value, MINUTES)))
        return out

    field = []
    for cluster, slow in (("a", None), ("b", "b3")):
        for i in (1, 2, 3):
            name = f"{cluster}{i}"
            field += host_series(name, cluster, "/data", "data", "365e6" if name == slow else "620e6")
    slow_alerts = []
    for test in ("Write", "Read"):
        labels = {"severity": "warning", "instance": "b3:9105", "job": JOB, CLUSTER_LABEL: "b", "host": "b3",
                  "directory": "/data", "role": "data", "test": test}
        full = dict(labels, alertname="HostperfDiskSlowerThanFleet")
        notes = templates[("HostperfDiskSlowerThanFleet", None)]
        slow_alerts.append({"exp_labels": labels, "exp_annotations": {
            k: expand(v.replace("{{ $value | humanizePercentage }}", "58.87%"), full, 0) for k, v in notes.items()}})
    mixed = []
    for i in (1, 2, 3):
        mixed += host_series(f"m{i}", "m", "/var/lib/hostperf/disk", "state", "2000e6")
        mixed += host_series(f"m{i}", "m", "/data", "data", "400e6")

    def checks(firing):
        out = []
        for when in ("30m",) + EVAL_TIMES[2:]:
            for name in DISK_ALERTS:
                out.append({"eval_time": when, "alertname": name,
                            "exp_alerts": firing if name == "HostperfDiskSlowerThanFleet" and when != "30m" else []})
        return out

    return [
        {"name": "gpcheckperf field case: 2 clusters in one job, b3 at 365 against 620 MB/s -> b3 only",
         "interval": INTERVAL, "input_series": field, "alert_rule_test": checks(slow_alerts)},
        {"name": "mixed storage: an SSD state directory and an array data directory on each of 3 hosts -> nothing",
         "interval": INTERVAL, "input_series": mixed, "alert_rule_test": checks([])},
    ]


def dump(path, tests, comment):
    rules = os.path.relpath(RULES, path.parent.resolve())
    doc = {"rule_files": [f"{rules}/hostperf-recording.yml", f"{rules}/hostperf-alerts.yml"],
           "evaluation_interval": EVALUATION_INTERVAL, "tests": tests}
    text = (f"# Generated by tests/dashboards/gen_fleet_rule_tests.py: do not edit.\n# {comment}\n"
            + yaml.safe_dump(doc, sort_keys=False, width=1000))
    path.write_text(text, encoding="utf-8")


CLUSTER_LABEL = "cluster"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    templates = alert_templates()
    for n in SIZES:
        dump(args.out / f"fleet-{n}_test.yml", fleet_tests(n, templates),
             f"promtool test rules: the network and exporter alerts at {n} hosts.")
    dump(args.out / "fleet-disk_test.yml", disk_tests(templates),
         "promtool test rules: the fleet-relative disk alert by cluster and directory role.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
