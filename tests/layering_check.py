#!/usr/bin/env python3
"""Fails when a source file includes a header from a layer above its own.

Usage: layering_check.py SOURCE_DIR

The layers (docs/architecture.md), lowest first: config/base (hostperf/base/),
config/ (hostperf/config/), probes/ (hostperf/probes/), then the exporter's
libraries: http/ (hostperf/http/: the transport, and the web security beside
it), runs/, daemon/ and cluster/ (both above runs/), cmd/ (the entry points).
Each rule names the folder it applies to and the include paths it forbids
there; every violation is printed as file:line with the include and the rule.
"""
import os
import re
import sys

EXPORTER_LIBS = ("http", "daemon", "runs", "cluster", "cmd", "exporter")
# The web security half of exporter/http/ (hostperf::http_security): the
# transport (hostperf::http) and the CLI's libraries must not include it.
SECURITY_HEADERS = ("hostperf/http/web_config.h", "hostperf/http/web_security.h")
SECURITY_SOURCES = re.compile(r"(^|/)(web_config|web_security)\.(cc|h)$|(^|/)tls_shim/")


def under(*libs):
    return lambda include: any(include.startswith("hostperf/%s/" % lib) for lib in libs)


def security(include):
    return include in SECURITY_HEADERS


# (folder, applies to this file?, forbidden include?, rule text)
RULES = [
    ("config/", lambda path: True,
     lambda inc: not (inc.startswith("hostperf/config/") or inc.startswith("hostperf/base/")),
     "config/ may include only hostperf/config/ and hostperf/base/ headers"),
    ("probes/", lambda path: True, under(*EXPORTER_LIBS),
     "probes/ must not include exporter headers (hostperf/{%s}/)" % ",".join(EXPORTER_LIBS)),
    ("exporter/http/", lambda path: True, under("daemon", "runs", "cluster", "cmd"),
     "exporter/http/ must not include daemon/, runs/, cluster/ or cmd/ headers"),
    ("exporter/http/", lambda path: not SECURITY_SOURCES.search(path), security,
     "the HTTP transport (hostperf::http) must not include the web security (hostperf::http_security); "
     "the server takes a RequestGuard"),
    ("exporter/runs/", lambda path: True, lambda inc: under("daemon", "cluster", "cmd")(inc) or security(inc),
     "exporter/runs/ must not include daemon/, cluster/, cmd/ or web security headers"),
    ("exporter/daemon/", lambda path: True, under("cluster", "cmd"),
     "exporter/daemon/ must not include cluster/ or cmd/ headers"),
    ("exporter/cluster/", lambda path: True, lambda inc: under("daemon", "cmd")(inc) or security(inc),
     "exporter/cluster/ must not include daemon/, cmd/ or web security headers"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](hostperf/[^>"]+)[>"]')
SUFFIXES = (".cc", ".h", ".h.in")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = sys.argv[1]
    violations = []
    checked = 0
    for top in ("config", "probes", "exporter"):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                rules = [rule for rule in RULES if path.startswith(rule[0]) and rule[1](path)]
                checked += 1
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        for _, _, forbidden, text in rules:
                            if forbidden(match.group(1)):
                                violations.append('%s:%d: includes "%s": %s' % (path, number, match.group(1), text))
    for violation in violations:
        print("layering_check: " + violation)
    if violations:
        print("layering_check: %d violation(s) in %d files (the layers: docs/architecture.md)" % (len(violations), checked))
        return 1
    if checked == 0:
        print("layering_check: no sources under %s" % root)
        return 1
    print("layering_check: %d files follow the layering" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
