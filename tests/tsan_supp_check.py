#!/usr/bin/env python3
"""Every suppression in tests/tsan.supp names a function that exists.

A suppression is matched against the demangled name, namespace included: one
left behind by a rename suppresses nothing, and the TSan stage fails on the
race it was written for. Each `race:a::b::Class::Method` must have a source
file under exporter/, probes/ or config/ that opens `namespace a::b` and
names `Class` and `Method(`.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
sources = [p for d in ("exporter", "probes", "config") for p in (root / d).rglob("*.cc")]
texts = {p: p.read_text(errors="replace") for p in sources}
stale = []
for line in (root / "tests" / "tsan.supp").read_text().splitlines():
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    kind, _, pattern = line.partition(":")
    parts = pattern.split("::")
    if len(parts) < 3 or "*" in pattern:
        stale.append(f"{line}: name the function as namespace::Class::Method")
        continue
    # The namespace is the longest prefix some file opens; in that file each
    # class named after it must appear, and the method as a call or definition.
    def defined(text, rest):
        *classes, method = rest
        return all(re.search(r"\b" + re.escape(c) + r"\b", text) for c in classes) and re.search(
            r"\b" + re.escape(method) + r"\s*\(", text)
    found = False
    for k in range(len(parts) - 1, 0, -1):
        opens = re.compile(r"namespace\s+" + re.escape("::".join(parts[:k])) + r"\s*\{")
        if any(opens.search(t) and defined(t, parts[k:]) for t in texts.values()):
            found = True
            break
    if not found:
        stale.append(f"{line}: no source file opens its namespace and defines {'::'.join(parts[-2:])}")
if stale:
    print("tests/tsan.supp has suppressions that match nothing:", *stale, sep="\n  ")
    sys.exit(1)
print("tsan.supp: every suppression names an existing function")
