#!/usr/bin/env python3
"""Watches a Prometheus evaluating the hostperf rules and reports their cost.

  measure.py --prom URL --pid PID --hosts N [--warmup S] [--measure S]
             [--max-ratio R] [--report FILE]

Called by bench/rules/run.sh once its Prometheus scrapes the synthetic fleet.
1. Waits until every one of the N targets of job "hostperf" is up.
2. Waits --warmup seconds from then (samples accumulate; progress every 30 s).
3. For --measure seconds polls Prometheus's own /metrics and /api/v1/rules
   every 5 s and keeps each evaluation once (keyed by its timestamp): per
   group prometheus_rule_group_last_duration_seconds, its interval, missed
   iterations; per rule its evaluationTime.
4. Prints per group: interval, evaluations seen, median and max evaluation
   time, median / interval; the slowest rules; Prometheus's RSS, head series
   and CPU; then reloads Prometheus without rules (--config-norules) and
   measures its CPU for --baseline seconds: the difference is the rules' CPU;
   then evaluates each rule's expression through the query API at the end of
   the measurement, one at a time (--repeat rounds): its CPU less the
   scraping rate, summed per group, is the group's CPU per evaluation.
   Exit status 1 when a group's CPU per evaluation (--judge wall: its median
   evaluation time, or a missed iteration) is not under --max-ratio of its
   interval. Stdlib only.
"""
import argparse
import json
import os
import re
import signal
import statistics
import sys
import time
import urllib.parse
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def get(url, timeout=20):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def query(prom, expr):
    body = json.loads(get(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), 60))
    return body["data"]["result"]


def scalar(prom, expr, default=0.0):
    try:
        r = query(prom, expr)
        return float(r[0]["value"][1]) if r else default
    except Exception:  # a busy Prometheus times out now and then: progress only
        return float("nan")


def own_metrics(prom):
    out = {}
    for line in get(f"{prom}/metrics").splitlines():
        if not line.startswith("prometheus_rule_group_") and not line.startswith("prometheus_tsdb_head_series"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), {})[labels.get("rule_group", "")] = float(m.group(3))
    return out


def rss_bytes(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def short(group):
    """'/tmp/.../hostperf-alerts.yml;hostperf-net' -> 'alerts: hostperf-net'."""
    path, _, name = group.partition(";")
    kind = os.path.basename(path).replace("hostperf-", "").replace(".yml", "")
    return f"{kind}: {name}"


def log(t0, msg):
    print(f"[{time.time() - t0:6.0f} s] {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prom", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--warmup", type=float, default=300)
    ap.add_argument("--measure", type=float, default=180)
    ap.add_argument("--max-ratio", type=float, default=0.10)
    ap.add_argument("--judge", choices=("cpu", "wall"), default="cpu",
                    help="cpu: a group's CPU per evaluation against its interval (robust on a busy machine); "
                         "wall: its median wall-clock evaluation time and no missed iteration")
    ap.add_argument("--report")
    ap.add_argument("--config", help="Prometheus's --config.file: replaced by --config-norules for the baseline")
    ap.add_argument("--config-norules")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the per-group CPU measurement (0: none)")
    ap.add_argument("--baseline", type=float, default=120,
                    help="seconds of CPU measured without rules after the measurement (0: none)")
    a = ap.parse_args()
    t0 = time.time()

    # 1. Every target up.
    deadline = time.time() + 300
    while True:
        up = scalar(a.prom, 'count(up{job="hostperf"} == 1)')
        if up == a.hosts:
            break
        if time.time() > deadline:
            print(f"only {up} of {a.hosts} targets up after 300 s", file=sys.stderr)
            return 2
        log(t0, f"waiting for targets: {up:.0f}/{a.hosts} up")
        time.sleep(10)
    log(t0, f"all {a.hosts} targets up; {a.warmup:.0f} s of samples before measuring")

    # 2. Warm-up: samples accumulate, the windows fill.
    t_up = time.time()
    while time.time() - t_up < a.warmup:
        time.sleep(min(30, a.warmup - (time.time() - t_up)))
        m = own_metrics(a.prom)
        last = m.get("prometheus_rule_group_last_duration_seconds", {})
        worst = max(last.items(), key=lambda kv: kv[1], default=("", 0))
        log(t0, f"warm-up {time.time() - t_up:4.0f}/{a.warmup:.0f} s: head series "
                f"{m.get('prometheus_tsdb_head_series', {}).get('', 0):,.0f}, RSS {rss_bytes(a.pid) / 2**20:,.0f} MiB, "
                f"slowest group last {worst[1] * 1000:.0f} ms ({short(worst[0])})")

    # 3. Measure.
    evals = {}      # group -> {timestamp: duration}
    rule_evals = {}  # (group, rule) -> {timestamp: duration}
    cpu0, t_meas = cpu_seconds(a.pid), time.time()
    m0 = own_metrics(a.prom)
    rss = []
    next_log = time.time() + 30
    while time.time() - t_meas < a.measure:
        m = own_metrics(a.prom)
        for g, ts in m.get("prometheus_rule_group_last_evaluation_timestamp_seconds", {}).items():
            d = m.get("prometheus_rule_group_last_duration_seconds", {}).get(g)
            if d is not None and ts > 0:
                evals.setdefault(g, {})[ts] = d
        try:
            for grp in json.loads(get(f"{a.prom}/api/v1/rules"))["data"]["groups"]:
                gkey = f"{grp['file']};{grp['name']}"
                for rule in grp["rules"]:
                    rule_evals.setdefault((gkey, rule["name"], rule.get("type", "")), {})[rule["lastEvaluation"]] = \
                        rule["evaluationTime"]
        except Exception:
            pass
        rss.append(rss_bytes(a.pid))
        if time.time() >= next_log:
            n = min((len(v) for v in evals.values()), default=0)
            log(t0, f"measuring {time.time() - t_meas:4.0f}/{a.measure:.0f} s: at least {n} evaluations per group kept")
            next_log += 30
        time.sleep(5)
    cpu = (cpu_seconds(a.pid) - cpu0) / (time.time() - t_meas)
    m1 = own_metrics(a.prom)
    series = m1.get("prometheus_tsdb_head_series", {}).get("", 0)
    recorded = scalar(a.prom, 'count({__name__=~".+:.+"})')
    alerts = scalar(a.prom, 'count(ALERTS{alertstate="firing"}) or vector(0)')
    load = os.getloadavg()

    # The rules' inputs and outputs as they stood at the end of the measurement:
    # the per-group CPU below evaluates every rule at this time.
    t_eval = time.time() - 20
    rule_exprs = []
    try:
        for grp in json.loads(get(f"{a.prom}/api/v1/rules"))["data"]["groups"]:
            gkey = f"{grp['file']};{grp['name']}"
            rule_exprs.extend((gkey, r["name"], r["query"]) for r in grp["rules"])
    except Exception as e:
        print(f"could not read the rules: {e}", file=sys.stderr)

    # 4. Baseline: the same Prometheus without rules (reloaded with no rule_files), so
    # that the rules' own CPU shows as the difference. Wall-clock evaluation times
    # stretch when the machine is busy; CPU seconds much less.
    base_cpu = None
    if a.baseline > 0 and a.config and a.config_norules:
        with open(a.config_norules, encoding="utf-8") as f:
            text_norules = f.read()
        with open(a.config, "w", encoding="utf-8") as f:
            f.write(text_norules)
        os.kill(a.pid, signal.SIGHUP)
        deadline = time.time() + 60
        while json.loads(get(f"{a.prom}/api/v1/rules"))["data"]["groups"]:
            if time.time() > deadline:
                print("rules still loaded 60 s after the reload", file=sys.stderr)
                return 2
            time.sleep(2)
        log(t0, f"rules unloaded; {a.baseline:.0f} s of Prometheus CPU without them (scraping only)")
        time.sleep(15)
        c0, tb = cpu_seconds(a.pid), time.time()
        time.sleep(a.baseline)
        base_cpu = (cpu_seconds(a.pid) - c0) / (time.time() - tb)

    # 5. CPU per group: each rule's expression evaluated once through the query API
    # at t_eval (inside count(), so that encoding the result as JSON is not counted;
    # storing a rule's output is not either), one at a time, the process's CPU during the query less the
    # background (scraping) rate over its wall time; median of --repeat rounds.
    # This is what an evaluation of the group costs on one core, however busy
    # the machine is (the wall-clock figures above include the waits for a CPU).
    group_cpu, rule_cpu = {}, {}
    if base_cpu is not None and rule_exprs and a.repeat > 0:
        log(t0, f"CPU per group: {len(rule_exprs)} rules evaluated at the end of the measurement, {a.repeat} rounds")
        rounds = []
        for _ in range(a.repeat):
            per = {}
            for k, (gkey, _, expr) in enumerate(rule_exprs):
                c0, w0 = cpu_seconds(a.pid), time.time()
                try:
                    get(f"{a.prom}/api/v1/query?" + urllib.parse.urlencode({"query": f"count(({expr}))", "time": f"{t_eval:.3f}"}), 600)
                except Exception as e:
                    print(f"query failed: {e}", file=sys.stderr)
                per[k] = max(0.0, cpu_seconds(a.pid) - c0 - base_cpu * (time.time() - w0))
            rounds.append(per)
        rule_cpu = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        for k, c in rule_cpu.items():
            group_cpu[rule_exprs[k][0]] = group_cpu.get(rule_exprs[k][0], 0.0) + c

    # 6. Report.
    interval = m1.get("prometheus_rule_group_interval_seconds", {})
    missed1 = m1.get("prometheus_rule_group_iterations_missed_total", {})
    missed0 = m0.get("prometheus_rule_group_iterations_missed_total", {})
    lines = [f"N = {a.hosts} hosts: {a.warmup / 60:.0f} min of samples before measuring, "
             f"{a.measure:.0f} s measured",
             f"{'group':44} {'interval':>8} {'evals':>5} {'median':>9} {'max':>9} {'median/interval':>15} "
             f"{'CPU':>8} {'CPU/interval':>12}  verdict"]
    failed = False
    for g in sorted(evals):
        d = sorted(evals[g].values())
        iv = interval.get(g, float("nan"))
        med, mx = statistics.median(d), max(d)
        missed = missed1.get(g, 0) - missed0.get(g, 0)
        gc = group_cpu.get(g)
        if a.judge == "cpu" and gc is not None:
            ok = gc < a.max_ratio * iv
        else:
            ok = med < a.max_ratio * iv and missed == 0
        failed |= not ok
        verdict = "ok" if ok else ("MISSED %d" % missed if missed and a.judge != "cpu" else "SLOW")
        cpu_cols = f"{gc * 1000:6.0f}ms {100 * gc / iv:11.2f}%" if gc is not None else f"{'-':>8} {'-':>12}"
        lines.append(f"{short(g):44} {iv:7.0f}s {len(d):5d} {med * 1000:7.1f}ms {mx * 1000:7.1f}ms "
                     f"{100 * med / iv:14.2f}% {cpu_cols}  {verdict}")
    total_med = sum(statistics.median(sorted(v.values())) for v in evals.values())
    lines.append(f"{'all groups (sum of medians)':44} {'':8} {'':5} {total_med * 1000:7.1f}ms")
    slow = sorted(((statistics.median(v.values()), k) for k, v in rule_evals.items() if v), reverse=True)[:8]
    lines.append("slowest rules (median wall-clock evaluation time):")
    for med, (g, name, kind) in slow:
        lines.append(f"  {med * 1000:7.1f}ms  {kind:9} {name}  [{short(g)}]")
    if rule_cpu:
        lines.append("most CPU per evaluation (rules):")
        for k in sorted(rule_cpu, key=rule_cpu.get, reverse=True)[:8]:
            g, name, _ = rule_exprs[k]
            lines.append(f"  {rule_cpu[k] * 1000:7.0f}ms  {name}  [{short(g)}]")
    lines.append(f"Prometheus: RSS {statistics.median(rss) / 2**20:,.0f} MiB (max {max(rss) / 2**20:,.0f}), "
                 f"head series {series:,.0f} (rule outputs {recorded:,.0f}), "
                 f"CPU {100 * cpu:.0f} % of a core while measuring; firing alerts {alerts:.0f}; "
                 f"load average {load[0]:.1f} (2-core machine shared with other work)")
    if base_cpu is not None:
        rules_cpu = cpu - base_cpu
        lines.append(f"CPU without rules (scraping and storing only) {100 * base_cpu:.0f} % of a core: the rules cost about "
                     f"{100 * rules_cpu:.0f} % of a core, {rules_cpu * 15:.1f} CPU-seconds per 15 s evaluation round "
                     f"(the sum of the groups' wall-clock times above is larger when Prometheus waits for a CPU)")
    if group_cpu:
        lines.append(f"{'all groups: CPU per round (sum)':44} {'':8} {'':5} {'':9} {'':9} {'':15} "
                     f"{sum(group_cpu.values()) * 1000:6.0f}ms")
    what = ("every group's CPU per evaluation" if a.judge == "cpu" and group_cpu
            else "every group's median evaluation time (and no missed iteration)")
    lines.append(f"check: {what} under {100 * a.max_ratio:.0f} % of its interval: {'FAILED' if failed else 'passed'}")
    text = "\n".join(lines) + "\n"
    print(text, end="", flush=True)
    if a.report:
        with open(a.report, "w", encoding="utf-8") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
