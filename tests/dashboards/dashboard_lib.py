"""Shared helpers of the dashboard and rule checks: PromQL extraction and metric-name scanning."""
import json
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRAFANA_DIR = ROOT / "dashboards" / "grafana"
RULES_DIR = ROOT / "dashboards" / "rules"

# Grafana variables and the values a query is checked and run with.
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "30s",
    "$__range": "1h",
    "$cluster": ".*",
    "$job": ".+",
    "$instance": ".+",
}

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan", "atan2", "start", "end"}


def dashboards():
    """(path, parsed JSON) of every dashboard."""
    return [(path, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(GRAFANA_DIR.glob("*.json"))]


def dashboard_queries():
    """(dashboard uid, panel title, raw expression) of every panel target and query variable."""
    out = []
    for _, board in dashboards():
        for variable in board.get("templating", {}).get("list", []):
            if variable.get("type") == "query":
                query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
                match = re.fullmatch(r"label_values\((.*),\s*\w+\)", query)
                out.append((board["uid"], "variable " + variable["name"], match.group(1) if match else query))
        for panel in board["panels"]:
            for t in panel.get("targets", []):
                out.append((board["uid"], panel["title"], t["expr"]))
    return out


def expand(expr):
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def rules():
    """Every rule (dict) of the rule files."""
    out = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            out.extend(group["rules"])
    return out


def recorded_names():
    return {rule["record"] for rule in rules() if "record" in rule}


def metric_names(expr):
    """Metric names an expression selects (a PromQL scanner good enough for our own expressions)."""
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)       # string literals
    names = set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{", text))   # name{...}
    text = re.sub(r"\{[^}]*\}", " ", text)                  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)                 # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    for match in re.finditer(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(\s*\()?", text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def exposition_families(text):
    """Metric family name -> type from a /metrics exposition."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            families[name] = kind.strip()
    return families


def resolve(name, families):
    """The exposition family that serves a series name (histogram suffixes map to their family)."""
    if name in families:
        return name
    for suffix in ("_bucket", "_count", "_sum"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and families.get(base) in ("histogram", "summary"):
            return base
    return None
