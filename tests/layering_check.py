#!/usr/bin/env python3
"""Fails when a source file includes a header from a layer above its own.

Usage: layering_check.py SOURCE_DIR

The layers (docs/architecture.md), lowest first: config/base (hostperf/base/),
config/ (hostperf/config/), probes/common (hostperf/probes/*.h), each probe's
folder probes/<name>/ (hostperf/probes/<name>/; probes never include each
other, and no source names them all: probes/registry.cc includes the list
that probes/CMakeLists.txt generates from the folders), then the exporter's
libraries: http/ (hostperf/http/: the transport, and the web security beside
it), runs/, daemon/ and cluster/ (both above runs/), cmd/ (the entry points;
only the daemon's main includes the daemon: the one-shot CLI links the rest of
cmd/). A quoted include without a path names a private header beside the
source; one with a path ("../") is refused.
Each rule names the folder it applies to and the include paths it forbids
there; every violation is printed as file:line with the include and the rule.
tests/layering_check_test.py feeds it one violation of each rule.
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


PROBE_FOLDER = re.compile(r"^probes/([a-z0-9_]+)/")
PROBE_INCLUDE = re.compile(r"^hostperf/probes/([a-z0-9_]+)/")


def probe_of(path):
    """The probe folder a source lives in (None for probes/common and probes/registry.cc)."""
    match = PROBE_FOLDER.match(path)
    return match.group(1) if match and match.group(1) != "common" else None


def other_probe(path):
    """Forbids, in probe X's folder, any include of another probe's headers."""
    own = probe_of(path)
    return lambda inc: bool(PROBE_INCLUDE.match(inc)) and PROBE_INCLUDE.match(inc).group(1) != own


# (folder, applies to this file?, forbidden include?, rule text). `forbidden`
# is a predicate on the include or, for a rule that depends on the file,
# (PER_FILE, a function of the path that returns that predicate).
PER_FILE = "per file"
RULES = [
    ("config/base/", lambda path: True, lambda inc: not inc.startswith("hostperf/base/"),
     "config/base/ (the bottom layer) may include only hostperf/base/ headers"),
    ("config/", lambda path: True,
     lambda inc: not (inc.startswith("hostperf/config/") or inc.startswith("hostperf/base/")),
     "config/ may include only hostperf/config/ and hostperf/base/ headers"),
    ("probes/", lambda path: True, under(*EXPORTER_LIBS),
     "probes/ must not include exporter headers (hostperf/{%s}/)" % ",".join(EXPORTER_LIBS)),
    ("probes/common/", lambda path: True, lambda inc: bool(PROBE_INCLUDE.match(inc)),
     "probes/common/ must not include a probe's headers (hostperf/probes/<name>/): probes build on it"),
    ("probes/", lambda path: probe_of(path) is not None, (PER_FILE, other_probe),
     "a probe must not include another probe's headers"),
    ("probes/registry.cc", lambda path: True, lambda inc: bool(PROBE_INCLUDE.match(inc)),
     "probes/registry.cc names no probe: it includes hostperf/probes/registered_modules.h, generated from the "
     "probe folders"),
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
    # The CLI links hostperf::cmd too: only the daemon's main may include the daemon.
    ("exporter/cmd/", lambda path: not path.endswith("/main_exporter.cc"),
     lambda inc: under("daemon")(inc) or security(inc),
     "the one-shot CLI (main_cli.cc and the cmd library it links) must not include daemon/ or web security headers"),
]

# A quoted include that is not a hostperf/ header names a private header
# beside the source ("control.h"); a path ("../../net/src/control.h") would
# reach into another folder past every rule above.
LOCAL_PATH_TEXT = "a local include names a header beside the source, without a path (\"../\" would bypass the layers)"
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](hostperf/[^>"]+)[>"]')
SUFFIXES = (".cc", ".h", ".h.in")


NAMESPACE = re.compile(r"^\s*namespace\s+(hostperf(?:::\w+)*)\s*\{")
NAMESPACE_TEXT = "each exporter library declares its code in its own namespace (hostperf::<library>)"


def library_namespace(path):
    """The namespace a file under exporter/<library>/ must use, or None."""
    parts = path.split(os.sep)
    if len(parts) < 3 or parts[0] != "exporter" or parts[1] not in EXPORTER_LIBS:
        return None
    if SECURITY_SOURCES.search(path) or path.endswith(("web_config.h", "web_security.h")):
        return "hostperf::http_security"
    return "hostperf::" + parts[1]


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
                rules = [(folder, applies, forbidden[1](path) if isinstance(forbidden, tuple) and forbidden[0] == PER_FILE else forbidden, text)
                         for folder, applies, forbidden, text in RULES
                         if path.startswith(folder) and applies(path)]
                checked += 1
                expected_namespace = library_namespace(path)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
                    for number, line in enumerate(source, 1):
                        local = LOCAL_INCLUDE.match(line)
                        if local and not local.group(1).startswith("hostperf/") and "/" in local.group(1):
                            violations.append('%s:%d: includes "%s": %s' % (path, number, local.group(1), LOCAL_PATH_TEXT))
                            continue
                        opened = NAMESPACE.match(line)
                        if (opened and expected_namespace and opened.group(1) != expected_namespace and
                                not opened.group(1).startswith(expected_namespace + "::")):
                            violations.append("%s:%d: namespace %s: %s (%s)" %
                                              (path, number, opened.group(1), NAMESPACE_TEXT, expected_namespace))
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
