#!/usr/bin/env python3
"""The shipped Alertmanager example (dashboards/alertmanager/hostperf-alertmanager.yml)
in a real Alertmanager: alerts posted to its API are inhibited as docs/runbooks.md
says (promtool cannot test inhibition).

  - HostperfExporterDown{host=x} suppresses x's other alerts (its observers'
    HostperfNetHostUnreachable, its stale probes), not the same host name in
    another cluster;
  - HostperfNetHostDegraded{host=y} suppresses the link alerts into y, not the
    link alerts into a healthy host;
  - HostperfDiskSlowerThanFleet suppresses HostperfDiskSlowerThanBaseline of the
    same host, directory and test;
  - HostperfNetRackPairDegraded{rack=r1, peer_rack=r2} suppresses the link
    alerts into rack r1 observed from rack r2, not a link from another rack
    (r3) into r1, nor the same pair in another cluster;
  - grouping by (alertname, cluster): two hosts of one cluster with the same
    alert are one group (one notification), another cluster is another.

Usage: check_alertmanager_example.py --work DIR [--alertmanager BIN]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "common"))
from harness import free_port  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "dashboards" / "alertmanager" / "hostperf-alertmanager.yml"

# (labels, expected state)
ALERTS = [
    ({"alertname": "HostperfExporterDown", "severity": "critical", "cluster": "c1", "host": "x",
      "instance": "x:9580", "job": "hostperf"}, "active"),
    ({"alertname": "HostperfNetHostUnreachable", "severity": "warning", "cluster": "c1", "host": "x"}, "suppressed"),
    ({"alertname": "HostperfProbeStale", "severity": "warning", "cluster": "c1", "host": "x", "probe": "disk",
      "instance": "x:9580", "job": "hostperf"}, "suppressed"),
    ({"alertname": "HostperfNetHostUnreachable", "severity": "warning", "cluster": "c2", "host": "x"}, "active"),
    ({"alertname": "HostperfNetHostDegraded", "severity": "warning", "signal": "rtt", "cluster": "c1", "host": "y"},
     "active"),
    ({"alertname": "HostperfNetLinkDegraded", "severity": "info", "signal": "rtt", "cluster": "c1", "host": "y",
      "observer": "z", "instance": "z:9580", "peer": "y:14159", "job": "hostperf"}, "suppressed"),
    ({"alertname": "HostperfNetLinkDegraded", "severity": "info", "signal": "down", "cluster": "c1", "host": "w",
      "observer": "z", "instance": "z:9580", "peer": "w:14159", "job": "hostperf"}, "active"),
    ({"alertname": "HostperfDiskSlowerThanFleet", "severity": "warning", "cluster": "c1", "host": "d",
      "directory": "/data", "test": "Read", "role": "data"}, "active"),
    ({"alertname": "HostperfDiskSlowerThanBaseline", "severity": "warning", "cluster": "c1", "host": "d",
      "directory": "/data", "test": "Read", "role": "data"}, "suppressed"),
    ({"alertname": "HostperfDiskSlowerThanBaseline", "severity": "warning", "cluster": "c1", "host": "d",
      "directory": "/data", "test": "Write", "role": "data"}, "active"),
    ({"alertname": "HostperfNetRackPairDegraded", "severity": "warning", "cluster": "c1", "rack": "r1",
      "peer_rack": "r2"}, "active"),
    ({"alertname": "HostperfNetLinkDegraded", "severity": "info", "signal": "loss", "cluster": "c1", "host": "p",
      "rack": "r1", "observer": "q", "peer_rack": "r2", "instance": "q:9580", "peer": "p:14159", "job": "hostperf"},
     "suppressed"),
    ({"alertname": "HostperfNetLinkDegraded", "severity": "info", "signal": "loss", "cluster": "c1", "host": "p",
      "rack": "r1", "observer": "v", "peer_rack": "r3", "instance": "v:9580", "peer": "p:14159", "job": "hostperf"},
     "active"),
    ({"alertname": "HostperfNetLinkDegraded", "severity": "info", "signal": "loss", "cluster": "c2", "host": "p",
      "rack": "r1", "observer": "q", "peer_rack": "r2", "instance": "q:9580", "peer": "p:14159", "job": "hostperf"},
     "active"),
    ({"alertname": "HostperfNetHostDegraded", "severity": "warning", "signal": "rtt", "cluster": "c1", "host": "y2"},
     "active"),
]
# (alertname, cluster) -> number of alerts in that Alertmanager group (inhibited ones included)
GROUPS = {("HostperfNetHostDegraded", "c1"): 2, ("HostperfNetHostUnreachable", "c2"): 1,
          ("HostperfNetLinkDegraded", "c1"): 4}


def request(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.read().decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=pathlib.Path, required=True)
    parser.add_argument("--alertmanager", default=shutil.which("prometheus-alertmanager") or
                        shutil.which("alertmanager") or "/usr/bin/prometheus-alertmanager")
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(args.work / "alertmanager.log", "w")
    am = subprocess.Popen([args.alertmanager, f"--config.file={CONFIG}", f"--storage.path={args.work / 'data'}",
                           f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                          stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                request(base + "/-/ready")
                break
            except OSError:
                if am.poll() is not None or time.monotonic() > deadline:
                    print((args.work / "alertmanager.log").read_text(), file=sys.stderr)
                    print("FAIL: Alertmanager did not start with the example config", file=sys.stderr)
                    return 1
                time.sleep(0.3)
        request(base + "/api/v2/alerts", [{"labels": labels} for labels, _ in ALERTS])
        wrong = []
        while time.monotonic() < deadline:
            got = {tuple(sorted(a["labels"].items())): a["status"]["state"]
                   for a in json.loads(request(base + "/api/v2/alerts"))}
            wrong = [(labels, state, got.get(tuple(sorted(labels.items())))) for labels, state in ALERTS
                     if got.get(tuple(sorted(labels.items()))) != state]
            if not wrong:
                break
            time.sleep(0.5)
        for labels, want, have in wrong:
            print(f"FAIL: {labels['alertname']} {labels}: {have}, expected {want}", file=sys.stderr)
        if wrong:
            return 1
        groups = {}
        for g in json.loads(request(base + "/api/v2/alerts/groups")):
            key = (g["labels"].get("alertname"), g["labels"].get("cluster"))
            if key in groups:
                print(f"FAIL: two groups for {key}: grouping is not by (alertname, cluster)", file=sys.stderr)
                return 1
            groups[key] = len(g["alerts"])
        for key, count in GROUPS.items():
            if groups.get(key) != count:
                print(f"FAIL: group {key} holds {groups.get(key)} alerts, expected {count}", file=sys.stderr)
                return 1
        print(f"ok: {len(ALERTS)} alerts, inhibited as documented by {CONFIG.relative_to(ROOT)}")
        return 0
    finally:
        am.terminate()
        am.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
