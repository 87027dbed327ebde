#!/usr/bin/env python3
"""Static checks of the Grafana dashboards, without a Grafana server.

  1. dashboards/grafana/*.json equal what the jsonnet source renders
     (dashboards/mixin/mixin.libsonnet's grafanaDashboards when the mixin is
     there, else dashboards/mixin/dashboards/dashboards.libsonnet), compared
     as JSON, and no other hostperf dashboard lies beside them;
  2. structure: unique stable uids, the datasource/cluster/job/instance
     variables, every panel has a description, a unit and a Prometheus target
     on ${datasource}; every unit is a Grafana unit id (grafana_units.py);
     every alert has a severity, summary, templated description and a
     runbook_url pointing at its section, which exists in docs/runbooks.md
     (and vice versa);
  3. every PromQL expression (panels, variables, rules) parses: they are written
     into a temporary rules file as recording rules and `promtool check rules` runs;
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
        for panel in board["panels"]:
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
    if not args.skip_npm:
        check_types(errors, args.work)
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
