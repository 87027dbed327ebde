"""The shipped alert rules' annotations, expanded as Prometheus would for the
promtool tests that the generators (gen_fleet_rule_tests.py,
gen_net_time_tests.py) write: `{{ $labels.x }}`, `{{ $value }}` and
`{{ with $labels.x }}…{{ . }}…{{ end }}` only; anything else must be replaced
by the caller (`extra`) or the expansion fails loudly.
"""
import pathlib
import re

import yaml

RULES = pathlib.Path(__file__).resolve().parents[2] / "dashboards" / "rules"


def alert_templates(rules=RULES):
    """alertname (+ signal) -> annotations of the generated alert rules (the first rule of that name and
    signal: variants told apart by another label, such as compared_with, are not used here)."""
    out = {}
    for group in yaml.safe_load((rules / "hostperf-alerts.yml").read_text(encoding="utf-8"))["groups"]:
        for rule in group["rules"]:
            out.setdefault((rule["alert"], rule["labels"].get("signal")), rule["annotations"])
    return out


def expand(template, labels, value, extra=None):
    """`extra`: literal replacements made first (for template functions this expansion does not know)."""
    for literal, text in (extra or {}).items():
        template = template.replace(literal, text)

    def with_label(match):
        have = labels.get(match.group(1))
        return match.group(2).replace("{{ . }}", have) if have else ""
    template = re.sub(r"\{\{ with \$labels\.([a-z_]+) \}\}(.*?)\{\{ end \}\}", with_label, template)

    def one(match):
        ref = match.group(1)
        if ref == "$value":
            return f"{value:g}"
        return labels[ref[len("$labels."):]]
    out = re.sub(r"\{\{ (\$value|\$labels\.[a-z_]+) \}\}", one, template)
    if "{{" in out:
        raise ValueError(f"template needs more than labels and plain values: {template}")
    return out
