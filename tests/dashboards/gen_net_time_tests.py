#!/usr/bin/env python3
"""Writes the promtool tests of the network and exporter alerts over time:

  net-time_test.yml (1m evaluations, input at the net
  probe's 30 s cadence): flapping at 8 s, 75 s, 4 min and 12 min periods (one
  HostperfNetHostUnreachable, held, resolved once; no loss alert), a clean
  recovery, exporter restarts and a reboot (nothing), a shaped NIC (throughput
  low only, no loss alert during or after it), a crash-looping exporter
  (one HostperfExporterDown, held), one identity per host (an
  FQDN target with a short peers_file name, killed: HostperfExporterDown only)
  and HostperfHostIdentityUnresolved, a rack pair (one alert, no host or link
  alerts);
  net-horizon_test.yml (10m samples and evaluations over
  8 days): HostperfExporterDown for the life of the fault.

Expected annotations are expanded from the generated alert rules' templates.
ctest writes them into the build tree at test time (dashboards_rules_net_generate)
and runs promtool on them; their rule_files point back at dashboards/rules/.

Usage: gen_net_time_tests.py [--out DIR]   (default: the current directory)
"""
import argparse
import hashlib
import os
import pathlib
import random
import sys

import yaml

from alert_templates import alert_templates, expand

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULES = ROOT / "dashboards" / "rules"


T = alert_templates()


def alert(name, labels, value, signal=None, extra=None):
    notes = T[(name, signal)]
    full = dict(labels, alertname=name)
    return {"exp_labels": labels, "exp_annotations": {k: expand(v, full, value, extra) for k, v in notes.items()}}


def compress(vals):
    """promtool expanding notation: runs with a constant step as a+bxn."""
    out = []
    i = 0
    while i < len(vals):
        if vals[i] is None:
            j = i
            while j + 1 < len(vals) and vals[j + 1] is None:
                j += 1
            out.append("_" if j == i else f"_x{j - i}")
            i = j + 1
            continue
        if i + 1 < len(vals) and vals[i + 1] is not None:
            step = vals[i + 1] - vals[i]
            j = i + 1
            while j + 1 < len(vals) and vals[j + 1] is not None and vals[j + 1] - vals[j] == step:
                j += 1
            n = j - i
            if n >= 2:
                if step == 0:
                    out.append(f"{vals[i]:g}x{n}")
                else:
                    out.append(f"{vals[i]:g}{'+' if step > 0 else '-'}{abs(step):g}x{n}")
                i = j + 1
                continue
        out.append(f"{vals[i]:g}")
        i += 1
    return " ".join(out)


def series(name, labels, vals):
    text = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{text}}}", "values": compress(vals)}


def counter(incs):
    out, c = [], 0
    for x in incs:
        if x is None:
            out.append(None)
            continue
        c += x
        out.append(c)
    return out


def minutes(m, interval_s):
    return int(m * 60 // interval_s)


# --------------------------------------------------------------------------
# Flapping: target t, observers o1..o3, all in cluster c1 rack r1.
CL = {"cluster": "c1", "rack": "r1"}
OBS = ("o1", "o2", "o3")
PINGS = 10  # per run


def host_series(hosts, samples, up=None, start=None):
    out = []
    for hname in hosts:
        lab = {"instance": f"{hname}:9105", "job": "hostperf", **CL}
        out.append(series("up", lab, (up or {}).get(hname, [1] * samples)))
        out.append(series("process_start_time_seconds", lab, (start or {}).get(hname, [0] * samples)))
    return out


def link_series(target, runs, obs=OBS, cl=CL, port=14159):
    """runs[o] = list of (peer_up, lost pings) per 30 s sample (None: no sample)."""
    out = []
    for o in obs:
        lab = {"instance": f"{o}:9105", "job": "hostperf", **cl, "peer": f"{target}:{port}"}
        r = runs[o]
        out.append(series("hostperf_net_peer_up", lab, [None if x is None else x[0] for x in r]))
        out.append(series("hostperf_net_packets_sent_total", lab, counter([None if x is None else PINGS for x in r])))
        out.append(series("hostperf_net_packets_lost_total", lab, counter([None if x is None else x[1] for x in r])))
    return out


START, STOP, END = 20, 80, 140  # minutes
SAMPLES = minutes(END, 30) + 1


def flapping(period_s, rnd=None):
    """Blocked half of each period from START to STOP; the probe runs every 30 s."""
    runs = {o: [] for o in OBS}
    for k in range(SAMPLES):
        t = k * 30
        for o in OBS:
            if START * 60 <= t < STOP * 60:
                if rnd is not None:      # 8 s flapping: each run catches both phases
                    up = rnd.choice((0, 1))
                    lost = rnd.choice((4, 5, 6)) if up else PINGS
                    runs[o].append((up, lost))
                    continue
                blocked = ((t - START * 60) % period_s) < period_s / 2
                runs[o].append((0, PINGS) if blocked else (1, 0))
            else:
                runs[o].append((1, 0))
    return runs


def unreachable_alert(value):
    return alert("HostperfNetHostUnreachable", {"severity": "warning", "cluster": "c1", "rack": "r1", "host": "t"}, value)


def flap_test(label, period_s, rnd=None):
    inputs = host_series(("t",) + OBS, SAMPLES) + link_series("t", flapping(period_s, rnd))
    firing = [unreachable_alert(3)]
    checks = []
    for when in (35, 50, 65, 80, 90):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostUnreachable", "exp_alerts": firing})
    for when in (15, 105, 120, 140):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostUnreachable", "exp_alerts": []})
    for when in (15, 35, 50, 65, 80, 90, 100, 110, 120, 140):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostDegraded", "exp_alerts": []})
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfExporterDown", "exp_alerts": []})
    return {"name": f"flapping at a {label} period from 20m to 80m, seen by 3 observers probing every 30 s: "
                    "one HostperfNetHostUnreachable, firing with the same labels from 35m to 90m, resolved by 105m; "
                    "no loss alert, before, during or after",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


def recovery_test():
    runs = {o: [(0, PINGS) if START * 60 <= k * 30 < STOP * 60 else (1, 0) for k in range(SAMPLES)] for o in OBS}
    inputs = host_series(("t",) + OBS, SAMPLES) + link_series("t", runs)
    checks = []
    for when in (30, 60, 80):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostUnreachable",
                       "exp_alerts": [unreachable_alert(3)]})
    for when in (95, 120):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostUnreachable", "exp_alerts": []})
    for when in (30, 81, 85, 88, 90, 95, 100, 110, 120, 140):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostDegraded", "exp_alerts": []})
    return {"name": "an outage of t from 20m to 80m (responder down, exporter up), then a clean recovery: "
                    "HostperfNetHostUnreachable during it (held 10m after), no loss alert after it",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


def restart_test():
    """t1: exporter restart at 30m (one failed scrape, one run with peer_up 0 from 2 of 3 observers, 3 pings lost);
    t2: restart with no failed scrape and 5 pings lost; t3: a 2-minute reboot."""
    hosts = ("t1", "t2", "t3") + OBS
    k30 = minutes(30, 30)
    up = {"t1": [0 if k == k30 else 1 for k in range(SAMPLES)],
          "t3": [0 if k30 <= k < k30 + 4 else 1 for k in range(SAMPLES)]}
    start = {h: [0 if k < k30 else 1800 + (120 if h == "t3" else 0) for k in range(SAMPLES)] for h in ("t1", "t2", "t3")}
    for h in ("t1", "t3"):
        start[h] = [None if up[h][k] == 0 else v for k, v in enumerate(start[h])]
    inputs = host_series(hosts, SAMPLES, up, start)
    runs1 = {o: [((0 if o != "o3" else 1), 3) if k == k30 else (1, 0) for k in range(SAMPLES)] for o in OBS}
    runs2 = {o: [(1, 5) if k == k30 else (1, 0) for k in range(SAMPLES)] for o in OBS}
    runs3 = {o: [(0, PINGS) if k30 <= k < k30 + 5 else (1, 0) for k in range(SAMPLES)] for o in OBS}
    inputs += link_series("t1", runs1) + link_series("t2", runs2) + link_series("t3", runs3)
    checks = []
    for when in (30, 31, 33, 35, 38, 40, 45, 50, 60):
        for name in ("HostperfNetHostUnreachable", "HostperfNetHostDegraded", "HostperfExporterDown",
                     "HostperfNetLinkDegraded"):
            checks.append({"eval_time": f"{when}m", "alertname": name, "exp_alerts": []})
    return {"name": "exporter restarts at 30m (t1: one failed scrape and one run with peer_up 0, t2: a few pings "
                    "lost only) and a 2-minute reboot (t3): nothing fires",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


CAP = 32 * 1048576  # every observer's burst cap (bytes/s)


def shaped_test():
    """s: its NIC shaped from 20m to 80m. Each observer bursts to it every 4th run (staggered: bursts rotate
    over the observed set); a shaped burst reaches a fifth of the cap and 4 of the run's 10 pings are dropped
    behind it (about 10 % loss per link over 10m); between bursts no loss."""
    shaped = lambda k: START * 60 <= k * 30 < STOP * 60  # noqa: E731
    inputs = host_series(("s",) + OBS, SAMPLES)
    runs = {}
    for i, o in enumerate(OBS):
        lab = {"instance": f"{o}:9105", "job": "hostperf", **CL}
        inputs.append(series("hostperf_net_throughput_rate_limit_bytes_per_second", lab, [CAP] * SAMPLES))
        burst, last = [], CAP
        for k in range(SAMPLES):
            if k % 4 == i:
                last = CAP // 5 if shaped(k) else CAP
            burst.append(last)
        inputs.append(series("hostperf_net_tcp_throughput_bytes_per_second", dict(lab, peer="s:14159"), burst))
        runs[o] = [(1, 4 if shaped(k) and k % 4 == i else 0) for k in range(SAMPLES)]
    inputs += link_series("s", runs)
    low = alert("HostperfNetHostThroughputLow", {"severity": "warning", "cluster": "c1", "rack": "r1", "host": "s"}, 3)
    checks = []
    for when in (55, 65, 79):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostThroughputLow", "exp_alerts": [low]})
    for when in (15, 45, 85, 100, 140):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostThroughputLow", "exp_alerts": []})
    for when in (15, 25, 35, 50, 65, 79, 81, 85, 88, 90, 92, 95, 100, 120):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostDegraded", "exp_alerts": []})
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetLinkDegraded", "exp_alerts": []})
    return {"name": "a shaped NIC on s from 20m to 80m (bursts at a fifth of their cap, pings dropped behind them): "
                    "HostperfNetHostThroughputLow only; no loss alert on the host or its links, during the fault or "
                    "after it while the loss window still holds the bursts' loss",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


def crash_loop_test():
    """c: its daemon crash-loops from 20m to 80m (every 4th scrape at 30 s fails); its observers' view is
    left out (the rules hold Unreachable back while the exporter was down within lossWindow)."""
    flapping = [0 if 40 <= k < 160 and k % 4 == 3 else 1 for k in range(SAMPLES)]
    inputs = host_series(("c",), SAMPLES, {"c": flapping})
    down = alert("HostperfExporterDown", {"severity": "critical", "instance": "c:9105", "job": "hostperf",
                                          "cluster": "c1", "rack": "r1", "host": "c"}, 0)
    checks = []
    for when in (15, 25, 30, 105, 120, 140):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfExporterDown", "exp_alerts": []})
    for when in (40, 50, 60, 70, 80, 90):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfExporterDown", "exp_alerts": [down]})
    return {"name": "a crash-looping exporter (a quarter of its scrapes fail, never 5 minutes in a row) from 20m to "
                    "80m: one HostperfExporterDown, firing with the same labels from 40m to 90m, resolved by 105m",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


def identity_test():
    """db1 scraped as db1.example.com:9105, named db1:14159 in the peers_file; killed 20m-60m."""
    samples = minutes(120, 30) + 1
    k20, k60 = minutes(20, 30), minutes(60, 30)
    dead = lambda k: k20 <= k < k60  # noqa: E731
    inputs = []
    lab = {"instance": "db1.example.com:9105", "job": "hostperf", **CL}
    inputs.append(series("up", lab, [0 if dead(k) else 1 for k in range(samples)]))
    inputs.append(series("process_start_time_seconds", lab,
                         [None if dead(k) else (0 if k < k60 else 3600) for k in range(samples)]))
    inputs.append(series("hostperf_net_self_info", dict(lab, peer="db1:14159"),
                         [None if dead(k) else 1 for k in range(samples)]))
    for o in OBS:
        olab = {"instance": f"{o}.example.com:9105", "job": "hostperf", **CL}
        inputs.append(series("up", olab, [1] * samples))
        inputs.append(series("hostperf_net_self_info", dict(olab, peer=f"{o}:14159"), [1] * samples))
    runs = {f"{o}.example.com": [(0, PINGS) if dead(k) else (1, 0) for k in range(samples)] for o in OBS}
    inputs += link_series("db1", runs, obs=tuple(f"{o}.example.com" for o in OBS))
    # cluster c2: two peers_file entries nobody is scraped as, and one that is (x1, by its canonical host).
    c2 = {"cluster": "c2"}
    inputs.append(series("up", {"instance": "x1:9105", "job": "hostperf", **c2}, [1] * samples))
    for peer in ("ghost-a", "ghost-b", "x1"):
        inputs.append(series("hostperf_net_peer_up", {"instance": "x1:9105", "job": "hostperf", **c2,
                                                        "peer": f"{peer}:14159"}, [1] * samples))
    down = alert("HostperfExporterDown", {"severity": "critical", "instance": "db1.example.com:9105", "job": "hostperf",
                                          "cluster": "c1", "rack": "r1", "host": "db1.example.com"}, 0)
    unresolved = alert("HostperfHostIdentityUnresolved", {"severity": "warning", "cluster": "c2"}, 2,
                       extra={'{{ range printf "hostperf:net_unresolved_name{cluster=\\"%s\\"}" $labels.cluster | query | sortByLabel "net_name" }}'
                              '{{ .Labels.net_name }} {{ end }}': "ghost-a ghost-b "})
    checks = []
    for when in (30, 45, 59):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfExporterDown", "exp_alerts": [down]})
    for when in (30, 45, 59, 61, 65, 70, 75, 90, 119):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostUnreachable", "exp_alerts": []})
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetHostDegraded", "exp_alerts": []})
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetLinkDegraded", "exp_alerts": []})
    for when in (61, 65, 90):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfExporterDown", "exp_alerts": []})
    for when in (30, 90):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfHostIdentityUnresolved", "exp_alerts": [unresolved]})
    return {"name": "one identity per host: db1 scraped as db1.example.com:9105 and named db1:14159 in the peers_file, "
                    "killed from 20m to 60m: HostperfExporterDown{host=db1.example.com} only, nothing after recovery; "
                    "cluster c2 with two peers_file names no target has: one HostperfHostIdentityUnresolved",
            "interval": "30s", "input_series": inputs, "alert_rule_test": checks}


def rack_test():
    racks = {"r1": ["a1", "a2", "a3", "a4", "a5"], "r2": ["b1", "b2", "b3", "b4", "b5"],
             "r3": ["c1", "c2", "c3", "c4", "c5"]}
    rack_of = {h: r for r, hs in racks.items() for h in hs}
    hosts = sorted(rack_of)
    samples = minutes(60, 60) + 1

    def observers_of(t):
        others = [o for o in hosts if o != t]
        return sorted(others, key=lambda o: hashlib.sha256(f"{o}/{t}".encode()).hexdigest())[:8]
    inputs = []
    for h in hosts:
        lab = {"instance": f"{h}:9105", "job": "hostperf", "cluster": "k", "rack": rack_of[h]}
        inputs.append(series("up", lab, [1] * samples))
    cross = {("r1", "r2"), ("r2", "r1")}
    for t in hosts:
        for o in observers_of(t):
            lab = {"instance": f"{o}:9105", "job": "hostperf", "cluster": "k", "rack": rack_of[o], "peer": f"{t}:14159"}
            lossy = (rack_of[o], rack_of[t]) in cross
            inputs.append(series("hostperf_net_peer_up", lab, [1] * samples))
            inputs.append(series("hostperf_net_packets_sent_total", lab, counter([20] * samples)))
            inputs.append(series("hostperf_net_packets_lost_total", lab, counter([1 if lossy else 0] * samples)))
    pairs = "r1 -> r2; r2 -> r1; "
    pair = alert("HostperfNetRackPairDegraded", {"severity": "warning", "cluster": "k", "rack": "r1", "peer_rack": "r2"},
                 1, extra={'{{ range printf "hostperf_rack_pair:net_degraded:bool{cluster=\\"%s\\"} == 1" $labels.cluster | query | sortByLabel "observer_rack" }}'
                           '{{ .Labels.observer_rack }} -> {{ .Labels.rack }}; {{ end }}': pairs})
    checks = []
    for when in (20, 40, 60):
        checks.append({"eval_time": f"{when}m", "alertname": "HostperfNetRackPairDegraded", "exp_alerts": [pair]})
        for name in ("HostperfNetHostDegraded", "HostperfNetHostUnreachable", "HostperfNetLinkDegraded"):
            checks.append({"eval_time": f"{when}m", "alertname": name, "exp_alerts": []})
    return {"name": "2 racks x 5 hosts with every link between them losing 5 % (K=8 observers by rendezvous "
                    "hashing), a third healthy rack: one HostperfNetRackPairDegraded naming the pair, no host or "
                    "link alert",
            "interval": "1m", "input_series": inputs, "alert_rule_test": checks}


def horizon_tests():
    """10-minute samples over 8 days."""
    samples = 8 * 24 * 6 + 1
    inputs = [
        series("up", {"instance": "dead:9105", "job": "hostperf", "cluster": "c1"},
               [1 if k < 6 else 0 for k in range(samples)]),
        series("hostperf_build_info", {"instance": "dead:9105", "job": "hostperf", "cluster": "c1", "fingerprint": "f1"},
               [1 if k < 6 else None for k in range(samples)]),
        series("up", {"instance": "never:9105", "job": "hostperf", "cluster": "c1"}, [0] * samples),
        series("up", {"instance": "fine:9105", "job": "hostperf", "cluster": "c1"}, [1] * samples),
        series("up", {"instance": "node:9100", "job": "node", "cluster": "c1"}, [0] * samples),
    ]

    def down(h):
        return alert("HostperfExporterDown", {"severity": "critical", "instance": f"{h}:9105", "job": "hostperf",
                                              "cluster": "c1", "host": h}, 0)
    checks = []
    checks.append({"eval_time": "50m", "alertname": "HostperfExporterDown", "exp_alerts": [down("never")]})
    for when in ("2h", "25h", "30h", "3d", "7d", "8d"):
        checks.append({"eval_time": when, "alertname": "HostperfExporterDown", "exp_alerts": [down("dead"), down("never")]})
    return [{"name": "HostperfExporterDown for the life of the fault: dead from 1h, never (only up == 0 samples) "
                     "from the start; still firing at 25h, 30h, 3d, 7d and 8d; the node job is not hostperf's",
             "interval": "10m", "input_series": inputs, "alert_rule_test": checks}]


def dump(path, tests, comment, interval):
    rules = os.path.relpath(RULES, path.parent.resolve())
    doc = {"rule_files": [f"{rules}/hostperf-recording.yml", f"{rules}/hostperf-alerts.yml"],
           "evaluation_interval": interval, "tests": tests}
    text = comment + yaml.safe_dump(doc, sort_keys=False, width=1000)
    path.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."),
                        help="directory for the two test files (default: the current directory)")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(8)
    tests = [flap_test("8 s (each 30 s run sees both phases: peer_up 0 or 1 at random per run, ~50 % loss)", 8, rnd),
             flap_test("75 s", 75), flap_test("4 min", 240), flap_test("12 min", 720),
             recovery_test(), restart_test(), shaped_test(), crash_loop_test(), identity_test(), rack_test()]
    dump(out / "net-time_test.yml", tests,
         "# Generated by tests/dashboards/gen_net_time_tests.py at test time; not checked in.\n"
         "# promtool test rules: the network and exporter alerts over time: flapping at 8 s, 75 s, 4 min\n"
         "# and 12 min periods, a recovery, exporter restarts, a reboot, a shaped NIC and a crash loop, one identity per host,\n"
         "# a rack pair. Input series at the probe's 30 s cadence; values in promtool's expanding notation.\n", "1m")
    dump(out / "net-horizon_test.yml", horizon_tests(),
         "# Generated by tests/dashboards/gen_net_time_tests.py at test time; not checked in.\n"
         "# promtool test rules: HostperfExporterDown over 8 days (10-minute samples and evaluations).\n", "10m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
