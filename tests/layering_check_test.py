#!/usr/bin/env python3
"""Feeds layering_check.py one violation of each layer rule in a scratch tree
and expects it to refuse each, naming the rule; a tree that follows the
layering (a probe including its own, the common and a private header beside
it, registry.cc including the generated module list, the daemon's main
including the daemon)
passes.

Usage: layering_check_test.py   (exit 0 pass, 1 fail; prints N passed, N failed)
"""
import pathlib
import subprocess
import sys
import tempfile

CHECK = pathlib.Path(__file__).resolve().with_name("layering_check.py")

# A minimal tree that follows the layering.
CLEAN = {
    "config/base/src/files.cc": ['hostperf/base/files.h'],
    "config/src/config.cc": ['hostperf/config/config.h', 'hostperf/base/result.h'],
    "probes/common/src/probe.cc": ['hostperf/probes/probe.h', 'hostperf/config/config.h'],
    "probes/net/src/net_probe.cc": ['hostperf/probes/net/net_probe.h', 'hostperf/probes/probe.h'],
    "probes/disk/src/disk_probe.cc": ['hostperf/probes/disk/disk_probe.h', 'hostperf/probes/figures.h'],
    "probes/registry.cc": ['hostperf/probes/probe.h', 'hostperf/probes/registered_modules.h'],
    "exporter/cmd/src/main_exporter.cc": ['hostperf/daemon/daemon.h'],
    "exporter/cmd/src/main_cli.cc": ['hostperf/runs/full_run.h', 'hostperf/probes/probe.h'],
    "exporter/cmd/src/logging.cc": ['hostperf/cmd/logging.h'],
    "probes/net/src/client.cc": ['hostperf/probes/net/client.h', 'control.h'],
}

# (what, file, include, words of the rule the check must print)
VIOLATIONS = [
    ("probe -> probe", "probes/net/src/net_probe.cc", "hostperf/probes/disk/disk_probe.h",
     "must not include another probe's headers"),
    ("common -> probe", "probes/common/src/probe.cc", "hostperf/probes/net/peers.h",
     "probes/common/ must not include a probe's headers"),
    ("base -> config", "config/base/src/files.cc", "hostperf/config/config.h",
     "config/base/ (the bottom layer) may include only hostperf/base/"),
    ("CLI main -> daemon", "exporter/cmd/src/main_cli.cc", "hostperf/daemon/daemon.h",
     "the one-shot CLI (main_cli.cc and the cmd library it links) must not include daemon/"),
    ("probe -> exporter", "probes/disk/src/disk_probe.cc", "hostperf/runs/full_run.h",
     "probes/ must not include exporter headers"),
    ("registry -> probe", "probes/registry.cc", "hostperf/probes/net/module.h",
     "probes/registry.cc names no probe"),
    # The same four reached another way: through the library the CLI links,
    # or by a relative path into another folder.
    ("CLI's cmd library -> daemon", "exporter/cmd/src/logging.cc", "hostperf/daemon/scheduler.h",
     "the one-shot CLI (main_cli.cc and the cmd library it links) must not include daemon/"),
    ("probe -> probe by a relative path", "probes/net/src/client.cc", "../../disk/src/tagged.h",
     "a local include names a header beside the source"),
    ("common -> probe by a relative path", "probes/common/src/probe.cc", "../../net/include/hostperf/probes/net/peers.h",
     "a local include names a header beside the source"),
    ("base -> config by a relative path", "config/base/src/files.cc", "../../include/hostperf/config/config.h",
     "a local include names a header beside the source"),
]

# (what, file, a namespace line, words the check must print): a library's
# code in another library's namespace.
NAMESPACE_VIOLATIONS = [
    ("cmd code in the old shared namespace", "exporter/cmd/src/logging.cc", "namespace hostperf::exporter {",
     "namespace hostperf::exporter: each exporter library declares its code in its own namespace"),
    ("cmd code in the daemon's namespace", "exporter/cmd/src/logging.cc", "namespace hostperf::daemon {",
     "(hostperf::cmd)"),
]


def write_tree(root, extra=None, raw=False):
    for path, includes in CLEAN.items():
        lines = ['#include "%s"' % inc for inc in includes]
        if extra and extra[0] == path:
            lines.append(extra[1] if raw else '#include "%s"' % extra[1])
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def check(root):
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)


def expect_refused(scratch, name, what, path, extra, line, words, raw=False):
    """Writes the clean tree plus `extra` into scratch/name; True when the
    check refuses it, printing `line` and the rule's `words`."""
    root = pathlib.Path(scratch) / name
    write_tree(root, (path, extra), raw=raw)
    result = check(root)
    if result.returncode == 1 and line in result.stdout and words in result.stdout:
        print("ok   %s refused: %s" % (what, line))
        return True
    print("FAIL %s not refused as expected (exit %d):\n%s%s" % (what, result.returncode, result.stdout, result.stderr))
    return False


def main():
    outcomes = []
    with tempfile.TemporaryDirectory() as scratch:
        clean = pathlib.Path(scratch) / "clean"
        write_tree(clean)
        result = check(clean)
        outcomes.append(result.returncode == 0)
        if result.returncode != 0:
            print("FAIL clean tree refused:\n" + result.stdout + result.stderr)
        for index, (what, path, include, words) in enumerate(VIOLATIONS):
            line = '%s:%d: includes "%s"' % (path, len(CLEAN[path]) + 1, include)
            outcomes.append(expect_refused(scratch, "case%d" % index, what, path, include, line, words))
        for index, (what, path, text, words) in enumerate(NAMESPACE_VIOLATIONS):
            line = "%s:%d: namespace" % (path, len(CLEAN[path]) + 1)
            outcomes.append(expect_refused(scratch, "namespace%d" % index, what, path, text, line, words, raw=True))
    passed = outcomes.count(True)
    failed = outcomes.count(False)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
