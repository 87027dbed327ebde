#!/usr/bin/env python3
"""Static checks of the Grafana dashboards, without a Grafana server.

  1. dashboards/grafana/*.json equal what the jsonnet source renders
     (dashboards/mixin/mixin.libsonnet's grafanaDashboards when the mixin is
     there, else dashboards/mixin/dashboards/dashboards.libsonnet), compared
     as JSON, and no other hostperf dashboard lies beside them;
  2. structure: unique stable uids, the datasource/cluster/job/instance
     variables, panels inside the grid without overlaps, every panel has a description, a unit and a Prometheus target
     on ${datasource}; every unit is a Grafana unit id (grafana_units.py);
     every alert has a severity, summary, templated description and a
     runbook_url pointing at its section, which exists in docs/runbooks.md
     (and vice versa);
  3. every PromQL expression (panels, variables, rules) parses: they are written
     into a temporary rules file as recording rules and `promtool check rules` runs;
     and `promtool test rules` checks what the fixed and fleet panels show on
     synthetic series (a stopped exporter stays listed as down, bursts against
     their cap, disk against the same-role fleet median with the fallback
     label, observers down per host, the RTT matrix and worst RTT per host);
  4. every dashboard type-checks as Grafana's `Dashboard` type: `npm ci` installs
     @grafana/schema and typescript (pinned in package-lock.json) into WORK_DIR
     and `tsc --noEmit` compiles a generated .ts file per dashboard that declares
     the JSON as an object literal of that type (excess properties are errors).

Usage: check_dashboards.py WORK_DIR [--promtool PATH] [--jsonnet PATH] [--skip-npm]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys

import yaml

import dashboard_lib as lib
import grafana_units

HERE = pathlib.Path(__file__).resolve().parent

# The schema's string enums (ThresholdsMode, MappingType, ...) as the strings
# that JSON holds: `${E}` is the union of an enum's values; everything else
# keeps its type, and object literals still get excess-property checks.
TS_PRELUDE = """import type { Dashboard } from '@grafana/schema';

type Json<T> = T extends string ? `${T}`
  : T extends ReadonlyArray<infer U> ? Array<Json<U>>
  : T extends object ? { [K in keyof T]: Json<T[K]> }
  : T;

"""


def fail(errors, message):
    errors.append(message)


def check_structure(errors):
    uids = {}
    for path, board in lib.dashboards():
        uid = board.get("uid", "")
        if not uid or len(uid) > 40 or uid in uids:
            fail(errors, f"{path.name}: missing, too long or duplicate uid {uid!r}")
        uids[uid] = path
        names = [v["name"] for v in board.get("templating", {}).get("list", [])]
        for required in ("datasource", "cluster", "job", "instance"):
            if required not in names:
                fail(errors, f"{path.name}: no `{required}` variable")
        ids = set()
        cells = {}
        for panel in board["panels"]:
            pos = panel.get("gridPos", {})
            if pos.get("x", 0) + pos.get("w", 0) > 24:
                fail(errors, f"{path.name}: panel {panel['title']!r} is wider than the 24-column grid")
            for x in range(pos.get("x", 0), pos.get("x", 0) + pos.get("w", 0)):
                for y in range(pos.get("y", 0), pos.get("y", 0) + pos.get("h", 0)):
                    if (x, y) in cells:
                        fail(errors, f"{path.name}: panels {cells[(x, y)]!r} and {panel['title']!r} overlap")
                    cells[(x, y)] = panel["title"]
            if panel["id"] in ids:
                fail(errors, f"{path.name}: duplicate panel id {panel['id']}")
            ids.add(panel["id"])
            if panel["type"] == "row":
                continue
            where = f"{path.name}: panel {panel['title']!r}"
            if not panel.get("description"):
                fail(errors, f"{where}: no description")
            if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit"):
                fail(errors, f"{where}: no unit")
            if panel.get("datasource", {}).get("uid") != "${datasource}" or not panel.get("targets"):
                fail(errors, f"{where}: not on the ${{datasource}} variable or no target")
            for t in panel.get("targets", []):
                if t.get("datasource", {}).get("uid") != "${datasource}":
                    fail(errors, f"{where}: target {t['refId']} not on ${{datasource}}")
                if "$job" not in t["expr"] and "ALERTS" not in t["expr"]:
                    fail(errors, f"{where}: target {t['refId']} ignores the job variable")


def check_generated(errors, jsonnet, work):
    """The checked-in JSON is what the jsonnet source renders (as JSON: formatting is the generator's)."""
    mixin = lib.ROOT / "dashboards" / "mixin"
    if (mixin / "mixin.libsonnet").exists():
        source = ["-e", "(import 'mixin.libsonnet').grafanaDashboards"]
    else:
        source = [str(mixin / "dashboards" / "dashboards.libsonnet")]
    out = work / "rendered-dashboards"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    result = subprocess.run([jsonnet, "-J", str(mixin), "-m", str(out)] + source, capture_output=True, text=True)
    if result.returncode != 0:
        fail(errors, f"jsonnet failed:\n{result.stderr}")
        return
    rendered = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*.json")}
    checked_in = {p.name: board for p, board in lib.dashboards()}
    for name in sorted(set(rendered) | set(checked_in)):
        if name not in checked_in:
            fail(errors, f"{name}: rendered by the jsonnet source but not checked in (regenerate dashboards/grafana)")
        elif name not in rendered:
            fail(errors, f"{name}: checked in but the jsonnet source does not render it")
        elif rendered[name] != checked_in[name]:
            fail(errors, f"{name}: differs from what the jsonnet source renders (regenerate dashboards/grafana)")
    print(f"ok: {len(rendered)} dashboards rendered from jsonnet")


def check_alert_annotations(errors):
    """Severity, summary, description and a runbook_url whose section exists, for every alert."""
    before = len(errors)
    runbooks = (lib.ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    sections = {line[3:].strip().lower() for line in runbooks.splitlines() if line.startswith("## ")}
    alerts = set()
    for rule in lib.rules():
        if "alert" not in rule:
            continue
        name = rule["alert"]
        alerts.add(name.lower())
        if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
            fail(errors, f"{name}: severity must be critical, warning or info")
        notes = rule.get("annotations", {})
        if not notes.get("summary") or "{{" not in notes.get("description", ""):
            fail(errors, f"{name}: needs a summary and a templated description")
        if not notes.get("runbook_url", "").endswith(f"#{name.lower()}"):
            fail(errors, f"{name}: runbook_url must point at the #{name.lower()} section of the runbooks")
        if name.lower() not in sections:
            fail(errors, f"{name}: no '## {name}' section in docs/runbooks.md")
    for section in sorted(sections - alerts):
        fail(errors, f"docs/runbooks.md: section {section!r} has no alert")
    if len(errors) == before:
        print(f"ok: {len(alerts)} alerts have severity, summary, description and a runbook section")


def check_promql(errors, promtool, work):
    rules = [{"record": f"dashboard:query_{i}", "expr": lib.expand(expr)}
             for i, (_, _, expr) in enumerate(lib.dashboard_queries())]
    path = work / "dashboard-queries.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": rules}]}), encoding="utf-8")
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        fail(errors, f"promtool check rules on the dashboard queries:\n{result.stdout}{result.stderr}")
    else:
        print(f"ok: {len(rules)} dashboard queries parse")


def panel_expr(uid, title, ref="A"):
    """A dashboard target's expression with the variables set to All."""
    for _, board in lib.dashboards():
        for panel in board["panels"]:
            if board["uid"] == uid and panel["title"] == title:
                return lib.expand(next(t["expr"] for t in panel["targets"] if t["refId"] == ref))
    raise KeyError(f"{uid}: no panel {title!r}")


MIB = 1048576


def semantics_tests():
    """promtool unit tests of what the fixed and fleet panels show, on synthetic series (1m steps)."""
    def series(name, labels, values):
        return {"series": name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}

    def sample(labels, value):
        return {"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}", "value": value}

    # Exporters up: every target of the exporterSelector (job="hostperf"), with no look-back that a long
    # outage outlasts. a (stopped after 3 minutes: hostperf_build_info goes stale, `up` reads 0) stays
    # listed as 0; b is up; f never served hostperf (a new host that failed to start) and is listed as 0;
    # n is another job's target (node_exporter) and is not listed.
    a, b, f = ({"instance": i, "job": "hostperf", "cluster": "c1"} for i in ("a:9580", "b:9580", "f:9580"))
    n = {"instance": "n:9100", "job": "node", "cluster": "c1"}
    exporters = {"interval": "1m", "input_series": [
        series("up", a, "1 1 1 0 0 0 0 0 0 0"), series("hostperf_build_info", a, "1 1 1 stale"),
        series("up", b, "1x10"), series("hostperf_build_info", b, "1x10"), series("up", f, "0x10"),
        series("up", n, "1x10")],
        "promql_expr_test": [{"expr": panel_expr("hostperf-overview", "Exporters up"), "eval_time": "8m",
                              "exp_samples": [sample({**a, "__name__": "up"}, 0), sample({**b, "__name__": "up"}, 1),
                                              sample({**f, "__name__": "up"}, 0)]}]}

    # Scheduled TCP bursts against their cap (32 MiB/s): a 16 MiB/s burst is half of it, whatever 100 MB/s says.
    cap = {"interval": "1m", "input_series": [
        series("hostperf_net_tcp_throughput_bytes_per_second", {**a, "peer": "b:9581"}, f"{16 * MIB}x5"),
        series("hostperf_net_tcp_throughput_bytes_per_second", {**a, "peer": "c:9581"}, f"{32 * MIB}x5"),
        series("hostperf_net_throughput_rate_limit_bytes_per_second", a, f"{32 * MIB}x5")],
        "promql_expr_test": [{"expr": panel_expr("hostperf-overview", "Lowest TCP burst vs its cap"),
                              "eval_time": "4m", "exp_samples": [sample({"instance": "a:9580"}, 0.5)]}]}

    # Disk vs the fleet median of the same role: in cluster c1, h3's /data array is slow (gpcheckperf: 365 vs
    # 620 MB/s) next to fast state SSDs (median of all six would be 810); c2 has no cluster label (its job is
    # the fleet) and is slow throughout, which is its own normal.
    disk_series, expected = [], []
    hosts = [("h1", "c1", "hostperf", 620), ("h2", "c1", "hostperf", 620), ("h3", "c1", "hostperf", 365),
             ("h4", None, "hostperf-c2", 365), ("h5", None, "hostperf-c2", 365)]
    for host, cluster, job, data_rate in hosts:
        target = {"instance": host + ":9580", "job": job, **({"cluster": cluster} if cluster else {})}
        dirs = [("/data", "data", data_rate)] + ([("/var/lib/hostperf", "state", 1000)] if cluster else [])
        for directory, role, rate in dirs:
            labels = {**target, "directory": directory}
            disk_series.append(series("hostperf_disk_directory_info", {**labels, "role": role}, "1x5"))
            disk_series.append(series("hostperf_disk_throughput_bytes_per_second", {**labels, "test": "Write"},
                                      f"{rate * MIB}x5"))
            expected.append(sample({**labels, "test": "Write", "role": role, "fleet": cluster or job},
                                   rate / 620 if (cluster and role == "data") else 1))
    disk = {"interval": "1m", "input_series": disk_series,
            "promql_expr_test": [{"expr": panel_expr("hostperf-fleet", "Disk: slowest vs fleet median of the same role"),
                                  "eval_time": "4m", "exp_samples": expected}]}

    # Observers: p1 is seen down by 2 of its 3 observers, p2 up by both of its own; the host column is the
    # peer without its port (a peer named without one is taken whole).
    obs = []
    for observer, peer, up in [("h1", "p1:9581", 0), ("h2", "p1:9581", 0), ("h3", "p1:9581", 1), ("h1", "p2", 1),
                               ("h2", "p2", 1)]:
        obs.append(series("hostperf_net_peer_up", {"instance": observer, "job": "hostperf", "peer": peer}, f"{up}x5"))
    title = "Observers down per host"
    p1, p2 = {"peer": "p1:9581", "host": "p1"}, {"peer": "p2", "host": "p2"}
    observers = {"interval": "1m", "input_series": obs, "promql_expr_test": [
        {"expr": panel_expr("hostperf-fleet", title, "A"), "eval_time": "4m",
         "exp_samples": [sample(p1, 2), sample(p2, 0)]},
        {"expr": panel_expr("hostperf-fleet", title, "B"), "eval_time": "4m",
         "exp_samples": [sample(p1, 3), sample(p2, 2)]},
        {"expr": panel_expr("hostperf-fleet", title, "C"), "eval_time": "4m",
         "exp_samples": [sample(p1, 2 / 3), sample(p2, 0)]}]}
    # RTT: every ping of h1 and h2 to p1 falls in (200 us, 1 ms], median 600 us (interpolated); h3's in
    # (0, 200 us], median 100 us. Matrix: rows and columns name hosts without ports; worst hosts: p1's
    # observers' median of medians.
    rtt = []
    for observer, per_bucket in [("h1", (0, 60, 60)), ("h2", (0, 60, 60)), ("h3", (60, 60, 60))]:
        for le, count in zip(("0.0002", "0.001", "+Inf"), per_bucket):
            rtt.append(series("hostperf_net_rtt_seconds_bucket",
                              {"instance": observer + ":9580", "job": "hostperf", "peer": "p1:9581", "le": le},
                              f"0+{count}x10"))
    slow = 0.0002 + (0.001 - 0.0002) * 0.5  # as Prometheus interpolates, to the last bit
    matrix = [sample({"instance": o + ":9580", "observer": o, "peer": "p1:9581", "host": "p1"}, v)
              for o, v in (("h1", slow), ("h2", slow), ("h3", 0.0002 * 0.5))]
    rtt_test = {"interval": "1m", "input_series": rtt, "promql_expr_test": [
        {"expr": panel_expr("hostperf-fleet", "RTT matrix (median over 5 minutes)"), "eval_time": "8m",
         "exp_samples": matrix},
        {"expr": panel_expr("hostperf-fleet", "Network: worst median RTT as seen by observers"), "eval_time": "8m",
         "exp_samples": [sample({"peer": "p1:9581", "host": "p1"}, slow)]}]}
    return {"rule_files": [], "evaluation_interval": "1m", "tests": [exporters, cap, disk, observers, rtt_test]}


def check_query_semantics(errors, promtool, work):
    path = work / "dashboard-semantics.test.yml"
    path.write_text(yaml.safe_dump(semantics_tests(), sort_keys=False), encoding="utf-8")
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        fail(errors, f"promtool test rules on the dashboard query semantics ({path}):\n{result.stdout}{result.stderr}")
    else:
        print("ok: exporters-up keeps down targets, bursts vs cap, disk vs same-role fleet median, observers down, "
              "RTT matrix and worst RTT")


def check_types(errors, work):
    npm_dir = work / "npm"
    npm_dir.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / name, npm_dir / name)
    install = subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
                             cwd=npm_dir, capture_output=True, text=True)
    if install.returncode != 0:
        fail(errors, f"npm ci failed (the npm registry must be reachable):\n{install.stdout}{install.stderr}")
        return
    sources = []
    for path, board in lib.dashboards():
        ts = npm_dir / (path.stem + ".ts")
        ts.write_text(TS_PRELUDE + f"// Generated from dashboards/grafana/{path.name} by check_dashboards.py.\n"
                      f"export const dashboard: Json<Dashboard> = {json.dumps(board, indent=2)};\n",
                      encoding="utf-8")
        sources.append(ts.name)
    tsconfig = {"compilerOptions": {"strict": True, "noEmit": True, "target": "ES2020", "module": "ES2020",
                                    "moduleResolution": "node", "skipLibCheck": True, "types": []},
                "files": sources}
    (npm_dir / "tsconfig.json").write_text(json.dumps(tsconfig, indent=2), encoding="utf-8")
    tsc = subprocess.run([str(npm_dir / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"], cwd=npm_dir,
                         capture_output=True, text=True)
    if tsc.returncode != 0:
        fail(errors, f"tsc: dashboards do not match @grafana/schema's Dashboard type:\n{tsc.stdout}{tsc.stderr}")
    else:
        print(f"ok: {len(sources)} dashboards type-check as @grafana/schema Dashboard")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work", type=pathlib.Path)
    parser.add_argument("--promtool", default=shutil.which("promtool") or "promtool")
    parser.add_argument("--jsonnet", default=shutil.which("jsonnet") or "jsonnet")
    parser.add_argument("--skip-npm", action="store_true", help="skip the TypeScript check (for quick local runs)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    errors = []
    check_generated(errors, args.jsonnet, args.work)
    check_structure(errors)
    unit_errors = grafana_units.self_test() + grafana_units.check(
        [(path.name, board) for path, board in lib.dashboards()])
    errors.extend(unit_errors)
    if not unit_errors:
        print("ok: every unit is a Grafana unit id")
    check_alert_annotations(errors)
    check_promql(errors, args.promtool, args.work)
    check_query_semantics(errors, args.promtool, args.work)
    if not args.skip_npm:
        check_types(errors, args.work)
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
