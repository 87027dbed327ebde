#!/usr/bin/env python3
"""Generates dashboards/grafana/*.json, the hostperf Grafana dashboards.

The JSON files are checked in (Grafana imports them as they are); this script
is their source. Edit it, run it, commit both:

    tests/dashboards/generate_dashboards.py            # rewrite the JSON files
    tests/dashboards/generate_dashboards.py --check    # exit 1 if they differ (ctest runs this)

Thresholds are docs/thresholds.md, the same as dashboards/rules/hostperf-alerts.yml.
"""
import argparse
import json
import pathlib
import sys

OUT = pathlib.Path(__file__).resolve().parents[2] / "dashboards" / "grafana"
MIB = 1048576
SEL = 'job=~"$job", instance=~"$instance"'
DS = {"type": "prometheus", "uid": "${datasource}"}
ALL = {"selected": True, "text": ["All"], "value": ["$__all"]}
GREEN, YELLOW, ORANGE, RED, BLUE = "green", "yellow", "orange", "red", "blue"


def steps(base, *pairs):
    """Threshold steps: base colour, then (value, colour) pairs."""
    return {"mode": "absolute", "steps": [{"color": base, "value": None}] + [{"color": c, "value": v} for v, c in pairs]}


def target(expr, legend="", ref="A", instant=False, fmt=None):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": not instant,
         "instant": instant}
    if fmt:
        t["format"] = fmt
    return t


class Board:
    def __init__(self, uid, title, description, tags):
        self.uid, self.title, self.description, self.tags = uid, title, description, tags
        self.panels, self.x, self.y, self.row_height = [], 0, 0, 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_height
            self.row_height = 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_height = max(self.row_height, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_height = 0, self.y + self.row_height, 0
        self.panels.append({"id": len(self.panels) + 1, "type": "row", "title": title, "collapsed": False,
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.y += 1

    def panel(self, kind, title, description, targets, unit, thresholds=None, w=12, h=8, options=None,
              custom=None, transformations=None, mappings=None, minimum=None, maximum=None):
        defaults = {"unit": unit}
        if thresholds:
            defaults["thresholds"] = thresholds
            defaults["color"] = {"mode": "thresholds"} if kind in ("stat", "bargauge", "table") else {
                "mode": "palette-classic"}
        if minimum is not None:
            defaults["min"] = minimum
        if maximum is not None:
            defaults["max"] = maximum
        if mappings:
            defaults["mappings"] = mappings
        if kind == "timeseries":
            defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0, "showPoints": "auto",
                                  "spanNulls": True,
                                  "thresholdsStyle": {"mode": "line+area" if thresholds else "off"}}
        if custom:
            defaults.setdefault("custom", {}).update(custom)
        p = {"id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
             "datasource": DS, "gridPos": self._place(w, h), "targets": targets,
             "fieldConfig": {"defaults": defaults, "overrides": []}, "options": options or {}}
        if transformations:
            p["transformations"] = transformations
        self.panels.append(p)

    def timeseries(self, title, description, targets, unit, thresholds=None, **kw):
        kw.setdefault("options", {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                                             "calcs": ["lastNotNull", "max"]},
                                  "tooltip": {"mode": "multi", "sort": "desc"}})
        self.panel("timeseries", title, description, targets, unit, thresholds, **kw)

    def bargauge(self, title, description, targets, unit, thresholds, **kw):
        kw.setdefault("options", {"orientation": "horizontal", "displayMode": "basic", "showUnfilled": True,
                                  "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}})
        self.panel("bargauge", title, description, targets, unit, thresholds, **kw)

    def stat(self, title, description, targets, unit, thresholds, **kw):
        kw.setdefault("options", {"colorMode": "background", "graphMode": "none", "textMode": "value_and_name",
                                  "justifyMode": "auto", "orientation": "auto",
                                  "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}})
        self.panel("stat", title, description, targets, unit, thresholds, **kw)

    def heatmap(self, title, description, expr, unit, **kw):
        options = {"calculate": False, "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
                   "yAxis": {"axisPlacement": "left", "unit": unit}, "rowsFrame": {"layout": "auto"},
                   "tooltip": {"show": True, "yHistogram": True}, "legend": {"show": True}}
        self.panel("heatmap", title, description, [target(expr, "{{le}}", fmt="heatmap")], unit, options=options,
                   **kw)

    def json(self):
        variables = [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {"selected": False, "text": "default", "value": "default"}, "hide": 0, "refresh": 1, "regex": "", "options": []},
            {"name": "job", "label": "Job", "type": "query", "datasource": DS,
             "query": {"query": "label_values(hostperf_build_info, job)", "refId": "job"},
             "refresh": 2, "multi": True,
             "includeAll": True, "allValue": ".+", "current": ALL, "hide": 0, "sort": 1, "regex": "", "options": []},
            {"name": "instance", "label": "Instance", "type": "query", "datasource": DS,
             "query": {"query": 'label_values(hostperf_build_info{job=~"$job"}, instance)', "refId": "instance"},
             "refresh": 2,
             "multi": True, "includeAll": True, "allValue": ".+", "current": ALL, "hide": 0, "sort": 1,
             "regex": "", "options": []},
        ]
        links = [{"title": "hostperf", "type": "dashboards", "tags": ["hostperf"], "asDropdown": True,
                  "includeVars": True, "keepTime": True, "targetBlank": False, "icon": "external link",
                  "tooltip": "", "url": ""}]
        return {"uid": self.uid, "title": self.title, "description": self.description, "tags": self.tags,
                "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1, "timezone": "",
                "refresh": "1m", "time": {"from": "now-24h", "to": "now"}, "fiscalYearStartMonth": 0,
                "liveNow": False, "weekStart": "", "links": links, "annotations": {"list": []},
                "templating": {"list": variables}, "panels": self.panels}


# --- thresholds (docs/thresholds.md) --------------------------------------------
LOW_LOAD = steps(GREEN, (100e-6, YELLOW), (200e-6, RED))
THROTTLE = steps(GREEN, (2, RED))
BASELINE = steps(GREEN, (1.2, RED))
DISK_PER_CORE = steps(RED, (20 * MIB, YELLOW), (40 * MIB, GREEN))
DISK_FLEET = steps(RED, (0.7, GREEN))
ERRORS = steps(GREEN, (1, RED))
RTT = steps(GREEN, (200e-6, YELLOW), (1e-3, RED))
SKEW = steps(GREEN, (1, RED))
TCP = steps(RED, (100 * MIB, YELLOW), (800 * MIB, GREEN))
LOSS = steps(GREEN, (0.01, RED))
UDP_LOSS = steps(GREEN, (0.05, YELLOW))
MEM_BASELINE = steps(RED, (0.8, GREEN))
STALE = steps(GREEN, (1.5, YELLOW), (3, RED))
UP = steps(RED, (1, GREEN))


def overview():
    b = Board("hostperf-overview", "hostperf / Overview",
              "Every host against every documented threshold (docs/thresholds.md): red breaks the minimum, "
              "yellow misses the recommendation.", ["hostperf"])
    b.row("Health")
    b.stat("Exporters up", "Scrape status of each hostperf_exporter (1 up, 0 down). Alert: HostperfExporterDown.",
           [target(f'up{{{SEL}}} and on(instance, job) hostperf_build_info', "{{instance}}", instant=True)],
           "none", UP, w=8, h=6,
           mappings=[{"type": "value", "options": {"0": {"text": "down"}, "1": {"text": "up"}}}])
    b.bargauge("Probe staleness (intervals since success)",
               "Seconds since each probe last succeeded, in probe intervals. 3 or more: HostperfProbeStale.",
               [target(f'hostperf:probe_seconds_since_success{{{SEL}}} / on(instance, job, probe) '
                       f'hostperf_probe_interval_seconds', "{{instance}} {{probe}}", instant=True)],
               "none", STALE, w=8, h=6, minimum=0)
    b.panel("table", "Firing hostperf alerts", "Alerts from hostperf-alerts.yml now pending or firing.",
            [target(f'ALERTS{{alertname=~"Hostperf.*", {SEL}}}', instant=True, fmt="table")], "none", w=8, h=6,
            options={"showHeader": True, "cellHeight": "sm"},
            transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True,
                                                                              "__name__": True}}}])
    b.timeseries("Probe run time", "Wall-clock time of each probe's last run (scheduled runs are short bursts; "
                 "a run past its timeout fails with reason timeout).",
                 [target(f'hostperf_probe_duration_seconds{{{SEL}}}', "{{instance}} {{probe}}")], "s", minimum=0)
    b.panel("state-timeline", "Probe success", "1: the probe's last run succeeded; 0: it failed (see "
            "hostperf_probe_failures_total for the reason).",
            [target(f'hostperf_probe_success{{{SEL}}}', "{{instance}} {{probe}}")], "none", UP, w=12,
            options={"showValue": "never", "mergeValues": True, "rowHeight": 0.9},
            mappings=[{"type": "value", "options": {"0": {"text": "failed", "color": RED},
                                                    "1": {"text": "ok", "color": GREEN}}}])
    b.row("CPU (vcpuperf)")
    b.bargauge("Low-load task median", "Median of the ~70 us task after an idle gap. Above 200 us: low-load "
               "throttling (vcpuperf).",
               [target(f'hostperf_cpu_task_median_seconds{{load="low", {SEL}}}', "{{instance}}", instant=True)],
               "s", LOW_LOAD, w=6, minimum=0)
    b.bargauge("Throttle ratio", "Low-load median / high-load median. Above 2: power-saving throttling.",
               [target(f'hostperf_cpu_throttle_ratio{{{SEL}}}', "{{instance}}", instant=True)], "none", THROTTLE,
               w=6, minimum=0)
    b.bargauge("CPU time vs own baseline", "Scheduled workload CPU time / this binary's baseline. Above 1.2: "
               "HostperfCpuSlowerThanBaseline.",
               [target(f'hostperf_cpu_baseline_ratio{{{SEL}}}', "{{instance}}", instant=True)], "none", BASELINE,
               w=6, minimum=0)
    b.bargauge("CPU time vs fleet", "Workload CPU time / median of the job's hosts with the same binary "
               "fingerprint and CPU model. Above 1.2: HostperfCpuSlowerThanFleet.",
               [target(f'hostperf:cpu_workload_cpu_seconds:fleet_ratio{{{SEL}}}', "{{instance}}", instant=True)],
               "none", BASELINE, w=6, minimum=0)
    b.row("Disk (vioperf)")
    b.bargauge("Write and Read per physical core", "Last scheduled run per directory, divided by physical cores. "
               "Minimum 20 MB/s per core (red below), recommended 40 (yellow below).",
               [target(f'hostperf:disk_throughput_per_core_bytes_per_second{{test=~"Write|Read", {SEL}}}',
                       "{{instance}} {{directory}} {{test}}", instant=True)], "bytes/sec", DISK_PER_CORE, w=8,
               minimum=0)
    b.bargauge("Disk vs fleet median", "Throughput / the job's median for the same test. Below 0.7: one array "
               "much slower than its peers (gpcheckperf: 365 vs 620 MB/s).",
               [target(f'hostperf:disk_throughput_bytes_per_second:fleet_ratio{{test=~"Write|Read", {SEL}}}',
                       "{{instance}} {{directory}} {{test}}", instant=True)], "percentunit", DISK_FLEET, w=8,
               minimum=0)
    b.bargauge("Verify errors (1h)", "Blocks read back with a wrong CRC32C in the last hour. Any: critical.",
               [target(f'increase(hostperf_disk_verify_errors_total{{{SEL}}}[1h])', "{{instance}} {{directory}}",
                       instant=True)], "none", ERRORS, w=8, minimum=0)
    b.row("Network (vnetperf)")
    b.bargauge("Worst peer RTT (median)", "Highest median RTT to any peer. Ideal 200 us or less (yellow above), "
               "maximum 1000 us (red above).",
               [target(f'max by (instance) (hostperf:net_rtt_seconds:p50_5m{{{SEL}}})', "{{instance}}",
                       instant=True)], "s", RTT, w=6, minimum=0)
    b.bargauge("Worst clock offset", "Largest absolute clock offset to any peer. Must stay under 1 s.",
               [target(f'max by (instance) (abs(hostperf_net_clock_offset_seconds{{{SEL}}}))', "{{instance}}",
                       instant=True)], "s", SKEW, w=6, minimum=0)
    b.bargauge("Lowest TCP throughput", "Lowest TCP burst throughput to any peer. Minimum 100 MB/s (red "
               "below), ideal 800 MB/s (yellow below). Capped by probes.net.throughput_rate.",
               [target(f'min by (instance) (hostperf_net_tcp_throughput_bytes_per_second{{{SEL}}})',
                       "{{instance}}", instant=True)], "bytes/sec", TCP, w=6, minimum=0)
    b.bargauge("Peers down", "Peers that did not answer the last pings.",
               [target(f'count by (instance) (hostperf_net_peer_up{{{SEL}}} == 0) or on(instance) '
                       f'(0 * group by (instance) (hostperf_net_peer_up{{{SEL}}}))', "{{instance}}", instant=True)],
               "none", ERRORS, w=6, minimum=0)
    b.row("Memory (STREAM)")
    b.bargauge("Bandwidth vs own baseline", "One-thread STREAM bandwidth / its median of the last week for this "
               "binary. Below 0.8: HostperfMemoryBandwidthBelowBaseline.",
               [target(f'hostperf:memory_bandwidth_bytes_per_second:baseline_ratio{{{SEL}}}',
                       "{{instance}} {{kernel}}", instant=True)], "percentunit", MEM_BASELINE, w=12, minimum=0)
    b.bargauge("Triad bandwidth (one thread)", "Best one-thread STREAM triad rate of the last run.",
               [target(f'hostperf_memory_bandwidth_bytes_per_second{{kernel="triad", threads="1", {SEL}}}',
                       "{{instance}}", instant=True)], "bytes/sec", steps(BLUE), w=12, minimum=0)
    return b


def cpu():
    b = Board("hostperf-cpu", "hostperf / CPU", "vcpuperf-style CPU checks: task timing under high and low load, "
              "throttling, the checksum-verified workload against its per-binary baseline and the fleet.",
              ["hostperf", "cpu"])
    b.row("Low-load throttling")
    b.timeseries("Task median by load", "Median time of the ~70 us task, after keeping the core busy (high) and "
                 "after an idle gap (low). vcpuperf: low-load times much above 100-200 us mean throttling.",
                 [target(f'hostperf_cpu_task_median_seconds{{{SEL}}}', "{{instance}} {{load}}")], "s", LOW_LOAD)
    b.timeseries("Throttle ratio", "Low-load median / high-load median. Alert above 2.",
                 [target(f'hostperf_cpu_throttle_ratio{{{SEL}}}', "{{instance}}")], "none", THROTTLE)
    b.heatmap("Low-load task time distribution", "Histogram of every low-load task timing.",
              f'sum by (le) (rate(hostperf_cpu_task_seconds_bucket{{load="low", {SEL}}}[$__rate_interval]))', "s")
    b.heatmap("High-load task time distribution", "Histogram of every high-load task timing.",
              f'sum by (le) (rate(hostperf_cpu_task_seconds_bucket{{load="high", {SEL}}}[$__rate_interval]))', "s")
    b.row("Workload and baselines")
    b.timeseries("Workload CPU time vs baseline", "CPU time of the checksum-verified scheduled workload and this "
                 "binary's baseline (from the config or calibrated on the first runs).",
                 [target(f'hostperf_cpu_workload_cpu_seconds{{mode="scheduled", {SEL}}}', "{{instance}} cpu time"),
                  target(f'hostperf_cpu_baseline_seconds{{{SEL}}}', "{{instance}} baseline {{fingerprint}}", "B")],
                 "s")
    b.timeseries("Ratio to own baseline", "Workload CPU time / baseline. Alert above 1.2 for 30 minutes.",
                 [target(f'hostperf:cpu_baseline_ratio:by_binary{{{SEL}}}', "{{instance}} {{fingerprint}}")],
                 "none", BASELINE)
    b.timeseries("Ratio to fleet median", "Workload CPU time / median of the job's hosts with the same binary "
                 "fingerprint and CPU model. Alert above 1.2 for 30 minutes (with 3 or more hosts).",
                 [target(f'hostperf:cpu_workload_cpu_seconds:fleet_ratio{{{SEL}}}',
                         "{{instance}} {{cpu_model}}")], "none", BASELINE)
    b.timeseries("Real time vs CPU time", "Wall-clock vs CPU time of the workload (scheduled and full). Real "
                 "time well above CPU time: the host is contended.",
                 [target(f'hostperf_cpu_workload_real_seconds{{{SEL}}}', "{{instance}} real {{mode}}"),
                  target(f'hostperf_cpu_workload_cpu_seconds{{{SEL}}}', "{{instance}} cpu {{mode}}", "B")], "s")
    b.timeseries("Checksum errors (1h)", "Workload runs with a wrong checksum in the last hour. Any is critical.",
                 [target(f'increase(hostperf_cpu_workload_errors_total{{{SEL}}}[1h])', "{{instance}}")], "none",
                 ERRORS, minimum=0)
    b.timeseries("Steal time", "CPU time stolen by the hypervisor, all CPUs.",
                 [target(f'rate(hostperf_host_cpu_steal_seconds_total{{{SEL}}}[$__rate_interval])',
                         "{{instance}}")], "percentunit", minimum=0)
    b.row("Host")
    b.panel("table", "Host facts", "CPU model, governor, cores and cache from sysfs and /proc; binary fingerprint.",
            [target(f'hostperf_host_info{{{SEL}}}', instant=True, fmt="table"),
             target(f'hostperf_host_physical_cores{{{SEL}}}', instant=True, fmt="table", ref="B"),
             target(f'hostperf_host_logical_cpus{{{SEL}}}', instant=True, fmt="table", ref="C"),
             target(f'hostperf_host_llc_bytes{{{SEL}}}', instant=True, fmt="table", ref="D"),
             target(f'hostperf_build_info{{{SEL}}}', instant=True, fmt="table", ref="E")], "none", w=24,
            options={"showHeader": True, "cellHeight": "sm"},
            transformations=[{"id": "merge", "options": {}},
                             {"id": "organize", "options": {"excludeByName": {"Time": True, "Value #A": True,
                                                                              "Value #E": True, "__name__": True},
                                                            "renameByName": {"Value #B": "physical cores",
                                                                             "Value #C": "logical CPUs",
                                                                             "Value #D": "LLC bytes"}}}])
    return b


def disk():
    b = Board("hostperf-disk", "hostperf / Disk", "vioperf-style disk checks per directory: throughput per "
              "physical core, fleet comparison, CRC verification and op latency.", ["hostperf", "disk"])
    b.row("Throughput")
    b.timeseries("Write and Read per physical core", "vioperf: at least 20 MB/s per physical core (red below), "
                 "40 recommended (yellow below). ReWrite and SkipRead do not count.",
                 [target(f'hostperf:disk_throughput_per_core_bytes_per_second{{test=~"Write|Read", {SEL}}}',
                         "{{instance}} {{directory}} {{test}}")], "bytes/sec", DISK_PER_CORE, minimum=0)
    b.timeseries("Throughput by test", "Bytes per second of the last run of each test (ReWrite: read plus "
                 "written).",
                 [target(f'hostperf_disk_throughput_bytes_per_second{{{SEL}}}',
                         "{{instance}} {{directory}} {{test}}")], "bytes/sec", minimum=0)
    b.timeseries("Ratio to fleet median", "Throughput / the job's median for the same test. Alert below 0.7 "
                 "for an hour (with 3 or more hosts).",
                 [target(f'hostperf:disk_throughput_bytes_per_second:fleet_ratio{{{SEL}}}',
                         "{{instance}} {{directory}} {{test}}")], "percentunit", DISK_FLEET, minimum=0)
    b.timeseries("Seeks per second (SkipRead)", "Non-contiguous block reads per second of the last SkipRead.",
                 [target(f'hostperf_disk_seeks_per_second{{{SEL}}}', "{{instance}} {{directory}}")], "none",
                 minimum=0)
    b.row("Latency and integrity")
    b.timeseries("Op latency p99 vs weekly baseline", "p99 over the last hour per operation, and its median of "
                 "the last week. Alert: p99 above twice the baseline and above 1 ms for an hour.",
                 [target(f'hostperf:disk_op_latency_seconds:p99_1h{{{SEL}}}', "{{instance}} {{directory}} {{op}}"),
                  target(f'hostperf:disk_op_latency_seconds:p99_1h_baseline_7d{{{SEL}}}',
                         "{{instance}} {{directory}} {{op}} baseline", "B")], "s")
    b.heatmap("Op latency distribution", "Histogram of every block read and write.",
              f'sum by (le) (rate(hostperf_disk_op_latency_seconds_bucket{{{SEL}}}[$__rate_interval]))', "s")
    b.timeseries("Verify errors (1h)", "Blocks read back with a wrong CRC32C, file, offset or generation. Any "
                 "is critical.",
                 [target(f'increase(hostperf_disk_verify_errors_total{{{SEL}}}[1h])',
                         "{{instance}} {{directory}}")], "none", ERRORS, minimum=0)
    b.timeseries("Probe I/O", "Bytes the probe writes and reads (counts against budget.disk_bytes_per_hour).",
                 [target(f'rate(hostperf_disk_written_bytes_total{{{SEL}}}[$__rate_interval])',
                         "{{instance}} {{directory}} written"),
                  target(f'rate(hostperf_disk_read_bytes_total{{{SEL}}}[$__rate_interval])',
                         "{{instance}} {{directory}} read", "B")], "Bps", minimum=0)
    return b


def memory():
    b = Board("hostperf-memory", "hostperf / Memory", "STREAM memory bandwidth: one-thread scheduled runs against "
              "their per-binary baseline, and full all-core runs.", ["hostperf", "memory"])
    b.row("Bandwidth")
    b.timeseries("One-thread bandwidth by kernel", "Best rate of the last scheduled run (one thread).",
                 [target(f'hostperf_memory_bandwidth_bytes_per_second{{threads="1", {SEL}}}',
                         "{{instance}} {{kernel}}")], "bytes/sec", minimum=0)
    b.timeseries("Ratio to own baseline", "One-thread bandwidth / its median of the last week for this binary. "
                 "Alert below 0.8 for an hour.",
                 [target(f'hostperf:memory_bandwidth_bytes_per_second:baseline_ratio{{{SEL}}}',
                         "{{instance}} {{kernel}}")], "percentunit", MEM_BASELINE, minimum=0)
    b.timeseries("Bandwidth by thread count", "Best rate of the last run by thread count: 1 for scheduled runs, "
                 "one per physical core for full runs (hostperf memory, the run API).",
                 [target(f'hostperf_memory_bandwidth_bytes_per_second{{{SEL}}}',
                         "{{instance}} {{kernel}} {{threads}} threads")], "bytes/sec", minimum=0)
    b.timeseries("Fleet median (one thread)", "Median one-thread bandwidth of the job's hosts per kernel and "
                 "binary.",
                 [target('job:hostperf_memory_bandwidth_bytes_per_second:median{job=~"$job"}',
                         "{{job}} {{kernel}} {{fingerprint}}")], "bytes/sec", minimum=0)
    b.row("Validity")
    b.stat("Cache resident", "1: the arrays were not proven larger than 4x the LLC; the bandwidth may be cache "
           "bandwidth.", [target(f'hostperf_memory_cache_resident{{{SEL}}}', "{{instance}} {{threads}} threads",
                                 instant=True)], "none", steps(GREEN, (1, YELLOW)), w=8,
           mappings=[{"type": "value", "options": {"0": {"text": "memory"}, "1": {"text": "cache?"}}}])
    b.timeseries("Array size", "Total size of the three STREAM arrays of the last run.",
                 [target(f'hostperf_memory_array_bytes{{{SEL}}}', "{{instance}} {{threads}} threads")], "bytes",
                 w=8)
    b.timeseries("Validation errors (1h)", "STREAM runs whose results failed validation. Any is critical.",
                 [target(f'increase(hostperf_memory_validation_errors_total{{{SEL}}}[1h])', "{{instance}}")],
                 "none", ERRORS, w=8, minimum=0)
    return b


def network():
    b = Board("hostperf-network", "hostperf / Network", "vnetperf-style checks to each peer: UDP ping RTT, "
              "loss, clock offset, and rate-capped TCP and UDP throughput bursts.", ["hostperf", "network"])
    b.row("Latency")
    b.heatmap("RTT heatmap", "Histogram of every UDP ping round trip (responder time removed).",
              f'sum by (le) (rate(hostperf_net_rtt_seconds_bucket{{{SEL}}}[$__rate_interval]))', "s")
    b.timeseries("Median RTT per peer", "vnetperf: at most 1000 us (red above), ideally 200 us or less (yellow "
                 "above).", [target(f'hostperf:net_rtt_seconds:p50_5m{{{SEL}}}', "{{instance}} → {{peer}}"),
                             ], "s", RTT, minimum=0)
    b.panel("table", "Peer-to-peer RTT matrix", "Median RTT over 5 minutes from each host (rows) to each peer "
            "(columns).",
            [target(f'hostperf:net_rtt_seconds:p50_5m{{{SEL}}}', instant=True, fmt="table")], "s", RTT, w=12,
            options={"showHeader": True, "cellHeight": "sm"},
            custom={"cellOptions": {"type": "color-background"}, "align": "auto"},
            transformations=[{"id": "groupingToMatrix", "options": {"columnField": "peer", "rowField": "instance",
                                                                    "valueField": "Value"}}])
    b.timeseries("p99 RTT per peer", "99th percentile of the ping round trips over 5 minutes.",
                 [target(f'hostperf:net_rtt_seconds:p99_5m{{{SEL}}}', "{{instance}} → {{peer}}")], "s", RTT,
                 minimum=0)
    b.timeseries("Clock offset", "Peer clock minus local clock (NTP formula, minimum-delay sample). vnetperf: "
                 "under 1 s.", [target(f'hostperf_net_clock_offset_seconds{{{SEL}}}', "{{instance}} → {{peer}}")],
                 "s", steps(RED, (-1, GREEN), (1, RED)))
    b.timeseries("Ping loss", "UDP pings without a reply over 10 minutes. Alert above 1 %.",
                 [target(f'hostperf:net_packet_loss_ratio:rate10m{{{SEL}}}', "{{instance}} → {{peer}}")],
                 "percentunit", LOSS, minimum=0)
    b.row("Throughput")
    b.timeseries("TCP throughput per peer", "Last rate-capped TCP burst (probes.net.throughput_rate). vnetperf: "
                 "at least 100 MB/s (red below), ideally 800 MB/s (yellow below).",
                 [target(f'hostperf_net_tcp_throughput_bytes_per_second{{{SEL}}}', "{{instance}} → {{peer}}"),
                  target(f'hostperf_net_throughput_rate_limit_bytes_per_second{{{SEL}}}', "{{instance}} burst cap")],
                 "bytes/sec", TCP, minimum=0)
    b.timeseries("UDP throughput per peer", "Last rate-capped UDP burst; UDP may be lower than TCP.",
                 [target(f'hostperf_net_udp_throughput_bytes_per_second{{{SEL}}}', "{{instance}} → {{peer}}")],
                 "bytes/sec", TCP, minimum=0)
    b.timeseries("UDP burst loss and jitter", "Datagrams lost in the last UDP burst (alert above 5 %) and its "
                 "RFC 3550 jitter.",
                 [target(f'hostperf_net_udp_loss_ratio{{{SEL}}}', "{{instance}} → {{peer}} loss")], "percentunit",
                 UDP_LOSS, minimum=0)
    b.timeseries("UDP jitter", "RFC 3550 interarrival jitter of the last UDP burst.",
                 [target(f'hostperf_net_udp_jitter_seconds{{{SEL}}}', "{{instance}} → {{peer}}")], "s", minimum=0)
    b.row("Peers and responder")
    b.panel("state-timeline", "Peer reachability", "1: the peer answered the last pings; 0: unreachable.",
            [target(f'hostperf_net_peer_up{{{SEL}}}', "{{instance}} → {{peer}}")], "none", UP, w=12,
            options={"showValue": "never", "mergeValues": True, "rowHeight": 0.9},
            mappings=[{"type": "value", "options": {"0": {"text": "down", "color": RED},
                                                    "1": {"text": "up", "color": GREEN}}}])
    b.timeseries("Responder requests and drops", "Requests the local peer responder answered, and what it "
                 "dropped (bad HMAC, rate limited, busy...).",
                 [target(f'sum by (instance, type) (rate(hostperf_net_responder_requests_total{{{SEL}}}'
                         f'[$__rate_interval]))', "{{instance}} {{type}}"),
                  target(f'sum by (instance, reason) (rate(hostperf_net_responder_dropped_total{{{SEL}}}'
                         f'[$__rate_interval]))', "{{instance}} dropped {{reason}}", "B")], "reqps", minimum=0)
    b.stat("Responder up", "1 while this host's peer responder serves (other hosts' pings and bursts need it).",
           [target(f'hostperf_net_responder_up{{{SEL}}}', "{{instance}}", instant=True)], "none", UP, w=12, h=6,
           mappings=[{"type": "value", "options": {"0": {"text": "down"}, "1": {"text": "up"}}}])
    b.timeseries("Known and probed peers", "Peers configured and sampled in the last run.",
                 [target(f'hostperf_net_peers{{{SEL}}}', "{{instance}} {{set}}")], "none", minimum=0)
    b.timeseries("Throughput bytes sent", "Bytes sent in scheduled throughput bursts (budget.net_bytes_per_hour).",
                 [target(f'sum by (instance) (rate(hostperf_net_throughput_bytes_total{{{SEL}}}[$__rate_interval]))',
                         "{{instance}}")], "Bps", minimum=0)
    return b


BOARDS = {"overview": overview, "cpu": cpu, "disk": disk, "memory": memory, "network": network}


def render(name):
    return json.dumps(BOARDS[name]().json(), indent=2, ensure_ascii=False) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    args = parser.parse_args()
    stale = []
    for name in BOARDS:
        path = args.out / f"hostperf-{name}.json"
        text = render(name)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date (run tests/dashboards/generate_dashboards.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
