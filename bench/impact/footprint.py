#!/usr/bin/env python3
"""Where a running process's resident memory is: /proc/PID/smaps_rollup, each
mapping of /proc/PID/smaps put in one kind, and glibc's own view of its malloc
arenas (malloc_stats(), called through gdb when gdb is installed).

Kinds: the binary, each shared library, the main arena ([heap]), the other
malloc arenas (anonymous heaps at a 64 MiB boundary), each thread's stack
(found from the stack pointer in /proc/PID/task/TID/syscall, grouped by the
thread's name), the main stack, and other anonymous mappings (large
allocations that malloc maps on their own, libraries' own buffers).

  footprint.py PID [--malloc-stats LOG] [--json]

--malloc-stats LOG: the file that the process's stderr goes to; gdb makes the
process call malloc_stats() (it stops the process for ~0.2 s) and the arenas'
figures are read back from LOG's new lines.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

ARENA_ALIGN = 64 << 20  # glibc's HEAP_MAX_SIZE on 64-bit: non-main arenas are heaps aligned to it


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 2 and fields[0].endswith(":") and fields[1].isdigit():
                out[fields[0][:-1]] = int(fields[1])
    return out


def mappings(pid):
    """[(start, end, perms, path, {field: kib})] from smaps."""
    result = []
    with open(f"/proc/{pid}/smaps") as f:
        current = None
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", fields[0]):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                current = (start, end, fields[1], fields[5] if len(fields) > 5 else "", {})
                result.append(current)
            elif current is not None and len(fields) >= 2 and fields[0].endswith(":") and fields[1].isdigit():
                current[4][fields[0][:-1]] = int(fields[1])
    return result


def thread_stacks(pid):
    """{stack mapping start: thread name} from each blocked thread's stack pointer."""
    stacks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                fields = f.read().split()
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if len(fields) < 9:  # "running": no stack pointer to read
            continue
        stacks[int(fields[7], 16)] = re.sub(r"[-_ ]?\d+$", "", name) or name
    return stacks


def classify(pid):
    exe = os.path.realpath(f"/proc/{pid}/exe")
    sps = thread_stacks(pid)
    kinds = collections.Counter()
    counts = collections.Counter()
    for start, end, perms, path, fields in mappings(pid):
        rss = fields.get("Rss", 0)
        if path == exe:
            kind = "binary"
        elif path.startswith("/"):
            kind = "library " + os.path.basename(path).split(".so")[0]
        elif path == "[heap]":
            kind = "malloc: main arena ([heap])"
        elif path == "[stack]":
            kind = "stack: main thread"
        elif path:
            kind = "kernel " + path
        else:
            names = [name for sp, name in sps.items() if start <= sp < end]
            if names:
                kind = "stack: " + names[0]
            elif start % ARENA_ALIGN == 0 and perms.startswith("rw"):
                kind = "malloc: other arenas"
            else:
                kind = "anonymous: other"
        kinds[kind] += rss
        if rss or not kind.startswith("anonymous"):
            counts[kind] += 1 if perms.startswith("r") or rss else 0
    return kinds, counts


def malloc_stats(pid, log):
    """Per-arena (system bytes, in-use bytes) as glibc's malloc_stats() prints them to stderr."""
    if not shutil.which("gdb") or not log:
        return None
    before = os.path.getsize(log)
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "call (void)malloc_stats()"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False)
    time.sleep(0.2)
    with open(log) as f:
        f.seek(before)
        text = f.read()
    arenas = [(int(s), int(u)) for s, u in re.findall(r"system bytes\s+=\s+(\d+)\nin use bytes\s+=\s+(\d+)", text)]
    # The last pair is the total; the ones before it are the arenas.
    return arenas[:-1] if len(arenas) > 1 else None


def threads(pid):
    names = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names[re.sub(r"[-_ ]?\d+$", "", f.read().strip())] += 1
        except OSError:
            pass
    return names


def report(pid, log=None):
    r = rollup(pid)
    kinds, counts = classify(pid)
    arenas = malloc_stats(pid, log)
    return {"rollup_kib": r, "kinds_kib": dict(kinds), "mappings": dict(counts), "threads": dict(threads(pid)),
            "arenas": arenas}


def print_report(data, out=sys.stdout):
    r = data["rollup_kib"]
    mib = lambda kib: f"{kib / 1024:.2f} MiB"
    print(f"  Rss {mib(r.get('Rss', 0))} (file {mib(r.get('Rss', 0) - r.get('Anonymous', 0))}, "
          f"anonymous {mib(r.get('Anonymous', 0))}), Pss {mib(r.get('Pss', 0))}, Private_Dirty "
          f"{mib(r.get('Private_Dirty', 0))}", file=out)
    print("  threads: " + ", ".join(f"{n} {name}" for name, n in sorted(data["threads"].items(), key=lambda kv: -kv[1])),
          file=out)
    kinds = sorted(data["kinds_kib"].items(), key=lambda kv: -kv[1])
    libraries = sum(v for k, v in kinds if k.startswith("library "))
    print(f"  shared libraries together: {mib(libraries)}", file=out)
    for kind, kib in kinds:
        if kib < 64:
            continue
        n = data["mappings"].get(kind, 0)
        print(f"    {kind:45s} {kib:8d} KiB" + (f"  ({n} mappings, {kib / n:.1f} KiB each)" if
                                                   kind.startswith("stack:") and n > 1 else ""), file=out)
    if data["arenas"]:
        for i, (system, in_use) in enumerate(data["arenas"]):
            print(f"  malloc arena {i}: {system / 1024:.0f} KiB from the system, {in_use / 1024:.0f} KiB in use",
                  file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pid", type=int)
    parser.add_argument("--malloc-stats", metavar="LOG", help="the process's stderr file; calls malloc_stats() via gdb")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    data = report(args.pid, args.malloc_stats)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        print()
    else:
        print_report(data)


if __name__ == "__main__":
    main()
