#!/usr/bin/env python3
"""End to end: the real daemon, a real Prometheus with the rules and a real Alertmanager, on loopback.

  1. starts hostperf_exporter on 127.0.0.1:0 with an accelerated config (every
     probe runs every few seconds; net probes the daemon's own responder) and a
     fault: probes.cpu.baselines sets this binary's baseline (fingerprint from
     `hostperf_exporter --version`) to 1 us, so every run is "slower than baseline";
  2. waits until every probe has succeeded, starts a short full run of cpu, disk
     and net through the run API (the hostperf_full_run_* families the
     dashboards judge), scrapes /metrics and checks that every metric name the
     dashboards and rules use is served (recording-rule outputs, ALERTS and up
     excepted; a full-run calendar a week ahead makes the next-run gauge
     served), that every family is documented (docs/metrics.md, probes/<name>/metrics.md);
  3. starts Alertmanager and Prometheus (2 s scrape and evaluation) with the rules
     from dashboards/rules, `for:` durations cut to 2 s and group intervals
     removed by this script (the only changes: see shorten_for);
  4. every dashboard query returns data through Prometheus' HTTP API;
  5. HostperfCpuSlowerThanBaseline fires and reaches Alertmanager (/api/v2/alerts)
     with its severity, summary, description and runbook_url;
  6. the exporter is stopped: the overview's "Exporters up" query still lists it,
     with value 0 (a down target must show as down, not vanish).

Usage: e2e_test.py --exporter BIN --work DIR [--prometheus BIN] [--alertmanager BIN]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import yaml

import dashboard_lib as lib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "common"))
from harness import Failure, free_port, http_get, stop_process, wait_for  # noqa: E402

DEADLINE_SECONDS = 240
FAULT_ALERT = "HostperfCpuSlowerThanBaseline"
PROBES = ("cpu", "memory", "disk", "net")
API_TOKEN = "e2e-token-0123456789abcdef"
# Metrics the dashboards use that other branches add to the daemon
# (stable observers, directory roles, the full-run calendar). Until the daemon
# serves one, its name is reported and the queries using it are not run; once
# served, they are checked like every other.
class Processes:
    def __init__(self):
        self.children = []

    def start(self, name, argv, log):
        handle = open(log, "w", encoding="utf-8")
        child = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        self.children.append((name, child, handle))
        return child

    def stop(self):
        for name, child, handle in reversed(self.children):
            stop_process(child)
            handle.close()


def fingerprint(exporter):
    out = subprocess.run([exporter, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"fingerprint:\s*(\S+)", out)
    if not match:
        raise Failure(f"no fingerprint in `hostperf_exporter --version`: {out!r}")
    return match.group(1)


def exporter_config(work, fp):
    state = work / "state"
    (state / "disk").mkdir(parents=True, exist_ok=True)
    return f"""# e2e_test.py: every probe every few seconds; the CPU baseline of this binary set to 1 us (the fault).
state_directory = "{state}"

[api]
token_file = "{work / 'api-token'}"

[budget]
cpu_seconds_per_hour = 3600
disk_bytes_per_hour = "4gb"
net_bytes_per_hour = "4gb"

[scheduler]
first_run_splay = "1s"
jitter = 0

# A calendar whose slot lies a week ahead: hostperf_full_run_next_timestamp_seconds
# is served (the fleet dashboard shows it) without a calendar run in this test.
[full_runs]
enabled = true
every = "168h"
window_start = "Sun 02:00"
window = "4h"
probes = ["cpu"]

[probes.cpu]
interval = "3s"
timeout = "3s"
throttle_samples = 10
core_min_samples = 1
baselines = {{ "{fp}" = "1us" }}

[probes.memory]
interval = "3s"
timeout = "3s"
memory_budget = "32mb"

[probes.disk]
interval = "3s"
timeout = "3s"
bytes_per_run = "4mb"
reserve = "1mb"

[probes.net]
interval = "2s"
timeout = "2s"
ports = [{free_port()}]
packets_per_cycle = 10
packet_interval = "1ms"
reply_timeout = "200ms"
throughput_duration = "100ms"
"""


def start_exporter(procs, exporter, work, fp, deadline):
    config = work / "hostperf.toml"
    config.write_text(exporter_config(work, fp), encoding="utf-8")
    (work / "api-token").write_text(API_TOKEN + "\n", encoding="utf-8")
    (work / "api-token").chmod(0o600)  # the daemon refuses a token others can read
    log = work / "exporter.log"
    child = procs.start("hostperf_exporter", [exporter, f"--config.file={config}",
                                              "--web.listen-address=127.0.0.1:0"], log)

    def port():
        if child.poll() is not None:
            raise Failure(f"hostperf_exporter exited with {child.returncode}:\n{log.read_text()}")
        match = re.search(r"listening on \S+ \(port (\d+)\)", log.read_text())
        return match and int(match.group(1))

    return wait_for("hostperf_exporter to listen", port, deadline, 0.2), child


def full_run(base, work, deadline):
    """A short full run of cpu, disk and net (the daemon's own responder) through the run API."""
    data = work / "full-run-data"
    data.mkdir(exist_ok=True)
    body = {"probes": ["cpu", "disk", "net"], "duration": "1s",
            "options": {"disk": {"directories": [str(data)], "data_size": "2mb", "thread_count": 1,
                                 "max_buffer_size": "64kb", "disable_direct_io": True},
                        "net": {"tests": ["latency", "tcp-throughput"], "datarate": 64, "duration": 0.3}}}
    request = urllib.request.Request(base + "/api/v1/runs", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {API_TOKEN}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        run_id = json.loads(response.read())["id"]

    def finished():
        run = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/v1/runs/{run_id}", headers={"Authorization": f"Bearer {API_TOKEN}"}), timeout=5).read())
        if run.get("state") in ("failed", "cancelled"):
            raise Failure(f"full run {run_id} ended {run['state']}: {json.dumps(run)[:2000]}")
        return run.get("state") == "succeeded"

    wait_for(f"full run {run_id} to succeed", finished, deadline)
    print(f"ok: full run {run_id} (cpu, disk, net) succeeded")


def sample_value(text, name, labels):
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def wait_for_probes(url, deadline):
    def ready():
        text = http_get(url)
        ok = all(sample_value(text, "hostperf_probe_success", {"probe": p}) == 1 for p in PROBES)
        # both scheduled throughput bursts (they alternate TCP and UDP) and a baseline ratio
        ok = ok and "hostperf_net_udp_throughput_bytes_per_second{" in text
        ok = ok and "hostperf_net_tcp_throughput_bytes_per_second{" in text
        ok = ok and "\nhostperf_cpu_baseline_ratio " in text
        # a named-or-not core for every rotated CPU (core_min_samples = 1 below: one rotation)
        if len(os.sched_getaffinity(0)) >= 2:
            ok = ok and "hostperf_cpu_core_outlier{" in text
        return text if ok else None

    return wait_for("every probe to succeed (cpu, memory, disk, net incl. TCP and UDP bursts)", ready, deadline)


# Families the dashboards use that this test's host cannot serve, and why:
# they are still checked against the metric docs.
ABSENT_HERE = {
    "hostperf_disk_member_service_ratio": "arrays of two or more devices only; the test's directory is on one disk",
    "hostperf_disk_member_seconds_per_op": "needs 8 device operations in a run; the test's runs write 4 MB",
    "hostperf_net_interface_speed_bytes_per_second": "the only peer is over loopback, which has no link speed",
    "hostperf_net_peers_file_valid": "served only with a peers_file; the test's net probe has none",
    "hostperf_net_self_info": "served when the host finds itself in a peer list; the test's net probe has none",
}

# Families the kernel may not back (VMs): absent, never 0, where the daemon
# serves hostperf_cpu_sysfs_available{fact} 0 for their fact.
KERNEL_FACTS = {
    "hostperf_cpu_core_frequency_hertz": "cpufreq",
    "hostperf_cpu_power_info": "cpufreq",
    "hostperf_cpu_power_differing_cores": "cpufreq",
    "hostperf_cpu_core_throttle_events_total": "thermal_throttle",
    "hostperf_cpu_idle_state_enabled_cores": "cpuidle",
    "hostperf_cpu_idle_state_latency_seconds": "cpuidle",
}


def check_metric_names(exposition):
    families = lib.exposition_families(exposition)
    # docs/metrics.md and each probe's own page, probes/<name>/metrics.md.
    pages = [lib.ROOT / "docs" / "metrics.md", *sorted(lib.ROOT.glob("probes/*/metrics.md"))]
    documented = set(re.findall(r"`((?:hostperf|process)_[a-z0-9_]+)`",
                                "".join(page.read_text(encoding="utf-8") for page in pages)))
    allowed = lib.recorded_names() | {"ALERTS", "up"}
    errors = []
    used = {}
    for uid, title, expr in lib.dashboard_queries():
        for name in lib.metric_names(lib.expand(expr)):
            used.setdefault(name, f"dashboard {uid}, panel {title!r}")
    for rule in lib.rules():
        for name in lib.metric_names(rule["expr"]):
            used.setdefault(name, f"rule {rule.get('alert') or rule.get('record')}")
    for name, where in sorted(used.items()):
        if name in allowed:
            continue
        family = lib.resolve(name, families)
        if family is None and name in ABSENT_HERE:
            family = name
        fact = KERNEL_FACTS.get(name)
        if family is None and fact and f'hostperf_cpu_sysfs_available{{fact="{fact}"}} 0' in exposition:
            if name not in documented:
                errors.append(f"{name} ({where}) is not documented in docs/metrics.md or a probe's page")
            print(f"ok: {name} absent: this kernel does not expose {fact}")
            continue
        if family is None:
            errors.append(f"{name} ({where}) is not served by the daemon")
        elif family and family not in documented:
            errors.append(f"{family} ({where}) is not documented in docs/metrics.md or a probe's page")
    if errors:
        raise Failure("metric names:\n  " + "\n  ".join(errors))
    print(f"ok: {len(used)} metric names used by dashboards and rules; the daemon serves every one")


def shorten_for(rule_text):
    """The rules with every `for:` cut to 2s and every group on the global 2 s evaluation (the shipped
    groups carry `interval: 1m`, the baselines' samples 15m, which a run of minutes would not reach):
    the only differences from the shipped files."""
    data = yaml.safe_load(rule_text)
    for group in data["groups"]:
        group.pop("interval", None)
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "2s"
    return yaml.safe_dump(data, sort_keys=False)


def start_alertmanager(procs, binary, work, deadline):
    port = free_port()
    config = work / "alertmanager.yml"
    config.write_text(yaml.safe_dump({
        "route": {"receiver": "null", "group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h"},
        "receivers": [{"name": "null"}]}), encoding="utf-8")
    procs.start("alertmanager", [binary, f"--config.file={config}", f"--storage.path={work / 'am-data'}",
                                 f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                work / "alertmanager.log")
    base = f"http://127.0.0.1:{port}"
    wait_for("alertmanager to be ready", lambda: http_get(base + "/-/ready") is not None, deadline, 0.5)
    return base


def start_prometheus(procs, binary, work, exporter_port, am_base, deadline):
    rules_dir = work / "rules"
    rules_dir.mkdir(exist_ok=True)
    for path in sorted(lib.RULES_DIR.glob("*.yml")):
        (rules_dir / path.name).write_text(shorten_for(path.read_text(encoding="utf-8")), encoding="utf-8")
    port = free_port()
    config = work / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "rule_files": [str(rules_dir / "*.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [am_base.removeprefix("http://")]}]}]},
        "scrape_configs": [{"job_name": "hostperf", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
    }), encoding="utf-8")
    procs.start("prometheus", [binary, f"--config.file={config}", f"--storage.tsdb.path={work / 'prom-data'}",
                               f"--web.listen-address=127.0.0.1:{port}"], work / "prometheus.log")
    base = f"http://127.0.0.1:{port}"
    wait_for("prometheus to be ready", lambda: http_get(base + "/-/ready") is not None, deadline, 0.5)
    return base


def query(base, expr):
    body = json.loads(http_get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if body.get("status") != "success":
        raise ValueError(f"query failed: {body}")
    return body["data"]["result"]


def check_dashboard_queries(base, deadline):
    queries = lib.dashboard_queries()
    # Panels of families this host cannot serve (ABSENT_HERE) are left out.
    pending = {item for item in queries
               if not any(name in ABSENT_HERE for name in lib.metric_names(lib.expand(item[2])))}
    pending_at_start = set(pending)

    def kernel_lacks(expr):
        facts = {KERNEL_FACTS[name] for name in lib.metric_names(expr) if name in KERNEL_FACTS}
        return facts and all(query(base, f'hostperf_cpu_sysfs_available{{fact="{fact}"}} == 0') for fact in facts)

    def all_have_data():
        for item in sorted(pending):
            expr = lib.expand(item[2])
            if query(base, expr):
                pending.discard(item)
            elif kernel_lacks(expr):
                print(f"ok: {item[0]} / {item[1]}: no data, this kernel does not expose it")
                pending.discard(item)
        return not pending

    try:
        wait_for("every dashboard query to return data", all_have_data, deadline, 2)
    except Failure as e:
        raise Failure(str(e) + ":\n  " + "\n  ".join(f"{u} / {t}: {x}" for u, t, x in sorted(pending)))
    print(f"ok: all {len(queries)} dashboard queries return data, but for {len(queries) - len(pending_at_start)} "
          f"of families this host cannot serve ({', '.join(sorted(ABSENT_HERE))})")


def exporters_up_query():
    for _, board in lib.dashboards():
        for panel in board["panels"]:
            if board["uid"] == "hostperf-overview" and panel["title"] == "Exporters up":
                return panel["targets"][0]["expr"]
    raise Failure("no 'Exporters up' panel in the overview")


def check_exporter_down(exporter, base, port, deadline):
    """A stopped exporter stays on "Exporters up", as down (0), instead of vanishing."""
    exporter.send_signal(signal.SIGTERM)
    exporter.wait(timeout=15)
    expr = lib.expand(exporters_up_query())
    instance = f"127.0.0.1:{port}"

    def shown_down():
        values = {r["metric"].get("instance"): r["value"][1] for r in query(base, expr)}
        return values.get(instance) == "0"

    wait_for(f"'Exporters up' to show {instance} as 0 after the exporter stopped", shown_down, deadline)
    print(f"ok: 'Exporters up' shows the stopped exporter {instance} as down")


def check_alert(am_base, deadline):
    def delivered():
        alerts = json.loads(http_get(am_base + "/api/v2/alerts"))
        return [a for a in alerts if a["labels"].get("alertname") == FAULT_ALERT and a["status"]["state"] == "active"]

    alerts = wait_for(f"{FAULT_ALERT} to reach Alertmanager", delivered, deadline, 1)
    alert = alerts[0]
    expected = {"severity": "warning", "job": "hostperf"}
    if any(alert["labels"].get(k) != v for k, v in expected.items()) or "fingerprint" not in alert["labels"]:
        raise Failure(f"unexpected labels: {alert['labels']}")
    notes = alert["annotations"]
    if not notes.get("runbook_url", "").endswith(f"#{FAULT_ALERT.lower()}") or "times the CPU time" not in \
            notes.get("description", "") or not notes.get("summary"):
        raise Failure(f"unexpected annotations: {notes}")
    print(f"ok: {FAULT_ALERT} reached Alertmanager: {alert['labels']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exporter", required=True)
    parser.add_argument("--work", type=pathlib.Path, required=True)
    parser.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    parser.add_argument("--alertmanager", default=shutil.which("prometheus-alertmanager") or
                        shutil.which("alertmanager") or "/usr/bin/prometheus-alertmanager")
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    deadline = time.monotonic() + DEADLINE_SECONDS
    procs = Processes()
    try:
        fp = fingerprint(args.exporter)
        port, exporter = start_exporter(procs, args.exporter, args.work, fp, deadline)
        wait_for_probes(f"http://127.0.0.1:{port}/metrics", deadline)
        full_run(f"http://127.0.0.1:{port}", args.work, deadline)
        exposition = wait_for_probes(f"http://127.0.0.1:{port}/metrics", deadline)
        check_metric_names(exposition)
        am = start_alertmanager(procs, args.alertmanager, args.work, deadline)
        prom = start_prometheus(procs, args.prometheus, args.work, port, am, deadline)
        check_dashboard_queries(prom, deadline)
        check_alert(am, deadline)
        check_exporter_down(exporter, prom, port, deadline)
    except (Failure, subprocess.CalledProcessError, OSError) as e:
        print(f"FAIL: {e}\n(logs in {args.work})", file=sys.stderr)
        return 1
    finally:
        procs.stop()
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
