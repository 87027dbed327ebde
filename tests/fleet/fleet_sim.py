#!/usr/bin/env python3
"""Fleet simulation: many hostperf daemons as separate hosts, a real Prometheus
with the mixin's rules and a real Alertmanager with the shipped routing and
inhibition, five injected faults, and assertions through Alertmanager's API.

Each "host" is a network namespace with one veth on a shared bridge
(10.213.0.<i>/24), its own hostperf_exporter process (exporter on :9105,
peer responder on :14159), its own state directory, and a data directory on
its own loop-mounted ext4 file system (backed by a file on a tmpfs) whose
reads and writes are throttled by a cgroup v1 blkio rule, so every host's
disk is equally fast until a fault makes one slower. All daemons share one
peers_file (Prometheus file_sd JSON) and one secret. Prometheus (in the root
namespace, on the bridge) scrapes them every 2 s and evaluates the rules the
mixin generates with its time windows shortened (only the `_config` time
fields are overridden: see ACCELERATED); Alertmanager runs the shipped
dashboards/alertmanager/hostperf-alertmanager.yml with its receivers replaced
by a null receiver.

Timeline:
  1. healthy fleet: every daemon up, every probe succeeding, no alert active;
  2. five faults at once, each on its own host:
     - responder:  the peer responder's ports dropped by nftables (exporter still serves)
     - ratelimit:  tc tbf on both ends of the host's veth (a slow NIC)
     - disk:       the host's loop device throttled to 60 % of the others
                   (the gpcheckperf field case: 365 against 620 MB/s)
     - killed:     the exporter killed (SIGKILL)
     - removed:    the host removed from the peers_file (no reload)
  3. within a deadline exactly the expected alerts are active in Alertmanager,
     each naming its faulty host; nothing names a healthy host; the removed
     host's series disappear from every other host's /metrics within a few
     cycles; every host's exposition stays under the series bound;
  4. a stability period: the expected alerts stay active (no flapping) and
     nothing else fires.
On failure the timeline (faults, alerts seen firing and resolving, checks) is
printed, with the tail of the failing daemons' logs.

Needs root (namespaces, loop devices, cgroups, nftables, tc), prometheus,
prometheus-alertmanager, jsonnet, mkfs.ext4. Exit 0 pass, 1 fail, 77 skip
(not root or a system facility missing; says which).

Usage: fleet_sim.py --exporter BIN --source DIR --work DIR [--hosts N] [--keep]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "common"))
from harness import Failure, http_get, wait_for  # noqa: E402

PREFIX = "hps"                 # names of namespaces, links, cgroups
SUBNET = "10.213.0"
BRIDGE = f"{PREFIX}-br0"
BRIDGE_IP = f"{SUBNET}.254"
EXPORTER_PORT = 9105
RESPONDER_PORT = 14159
FLEET = "sim"                  # the cluster label every target carries
DISK_RATE = 24 * 1048576       # every host's disk: bytes/s read and write (low enough that the machine always sustains it)
SLOW_DISK_FACTOR = 0.6         # the faulty disk: 60 % of the others
NET_INTERVAL_S = 2
DISK_INTERVAL_S = 3
# Per-peer series of one observed peer (histogram buckets + sum + count, and
# the per-peer gauges and counters); the bound is this times the hard cap on
# peers per run plus the host's own series.
SERIES_BOUND = 2000

# The mixin's time fields, shortened so that a 6-minute run sees rules that
# normally look at minutes and hours. Nothing else of the mixin is changed.
ACCELERATED = {
    "rateWindow": "20s",       # RTT histograms per link (net runs every 2 s)
    "lossWindow": "40s",
    "burstWindow": "90s",      # bursts rotate over ~8 peers, TCP and UDP in turn
    "smoothWindow": "40s",     # disk bursts every 3 s: the median of about 13
    "baselineWindow": "1h",
    "latencyWindow": "1m",
    "errorWindow": "1m",
    "forExporterDown": "10s",
    "forShort": "10s",
    "forMedium": "20s",
    "forLong": "20s",
    "forVeryLong": "30s",
}
# Two thresholds the machine itself breaks: 30 daemons, Prometheus and
# Alertmanager on two shared cores wake a responder or finish a disk op late
# by milliseconds, so vnetperf's 1 ms RTT and the 1 ms latency floor would
# flag healthy simulated hosts. Raised above that noise so that only the
# injected faults count; every other threshold is the shipped one.
NOISE_FLOORS = {
    "rttMaxSeconds": 0.02,
    "diskLatencyFloorSeconds": 0.25,
}


class Skip(Exception):
    pass


class Timeline:
    def __init__(self):
        self.start = time.monotonic()
        self.events = []

    def log(self, text):
        line = f"[{time.monotonic() - self.start:7.1f}s] {text}"
        self.events.append(line)
        print(line, flush=True)

    def dump(self):
        print("\n===== simulation timeline =====", file=sys.stderr)
        for line in self.events:
            print(line, file=sys.stderr)


def run(argv, check=True, **kw):
    result = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def host_ip(i):
    return f"{SUBNET}.{i}"


def peer_name(i):
    return f"{host_ip(i)}:{RESPONDER_PORT}"


def instance(i):
    return f"{host_ip(i)}:{EXPORTER_PORT}"


class System:
    """The namespaces, links, loop devices, mounts and cgroups the simulation made, undone in reverse."""

    def __init__(self, work, timeline):
        self.work = work
        self.timeline = timeline
        self.undo = []

    def cleanup_leftovers(self):
        # An earlier run that was killed may have left its namespaces, links and mounts.
        for line in run(["ip", "netns", "list"], check=False).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(f"{PREFIX}-"):
                run(["ip", "netns", "pids", name], check=False)
                for pid in run(["ip", "netns", "pids", name], check=False).stdout.split():
                    run(["kill", "-9", pid], check=False)
                run(["ip", "netns", "del", name], check=False)
        run(["ip", "link", "del", BRIDGE], check=False)
        # Host ends of veth pairs whose namespace went first (a run interrupted
        # in set-up; the kernel also frees them asynchronously after `netns del`).
        for line in run(["ip", "-br", "link"], check=False).stdout.splitlines():
            name = line.split()[0].split("@")[0] if line.split() else ""
            if name.startswith(f"{PREFIX}-v"):
                run(["ip", "link", "del", name], check=False)
        # Its loop devices (detached as soon as unmounted), then its mounts, deepest first.
        for line in run(["losetup", "-nO", "NAME,BACK-FILE"], check=False).stdout.splitlines():
            fields = line.split(None, 1)
            if len(fields) == 2 and fields[1].startswith(str(self.work) + "/"):
                run(["losetup", "-d", fields[0]], check=False)
        mounts = [line.split()[1] for line in pathlib.Path("/proc/mounts").read_text().splitlines()]
        for mountpoint in sorted((m for m in mounts if m.startswith(str(self.work) + "/")), key=len, reverse=True):
            run(["umount", "-l", mountpoint], check=False)
        blkio = pathlib.Path("/sys/fs/cgroup/blkio")
        for group in blkio.glob(f"{PREFIX}-*"):
            try:
                group.rmdir()
            except OSError:
                pass

    def do(self, argv, undo=None):
        run(argv)
        if undo:
            self.undo.append(undo)

    def teardown(self):
        for argv in reversed(self.undo):
            run(argv, check=False)
        self.undo.clear()


def check_facilities():
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces, loop devices, cgroups, nftables, tc)")
    for tool in ("ip", "tc", "nft", "losetup", "mkfs.ext4", "mount", "jsonnet"):
        if shutil.which(tool) is None:
            raise Skip(f"{tool} not found")
    if not pathlib.Path("/sys/fs/cgroup/blkio").is_dir():
        raise Skip("no cgroup v1 blkio controller at /sys/fs/cgroup/blkio")


class Host:
    def __init__(self, index, work):
        self.index = index
        self.ns = f"{PREFIX}-{index}"
        self.veth = f"{PREFIX}-v{index}"
        self.dir = work / f"host{index}"
        self.data = self.dir / "data"
        self.state = self.dir / "state"
        self.cgroup = pathlib.Path("/sys/fs/cgroup/blkio") / f"{PREFIX}-{index}"
        self.loop = None
        self.device = None        # major:minor of the loop device
        self.process = None
        self.log = self.dir / "exporter.log"

    @property
    def ip(self):
        return host_ip(self.index)

    def set_disk_rate(self, rate):
        for kind in ("read", "write"):
            (self.cgroup / f"blkio.throttle.{kind}_bps_device").write_text(f"{self.device} {int(rate)}\n")

    def metrics(self):
        return http_get(f"http://{instance(self.index)}/metrics")


def exporter_config(host, secret, peers_file):
    return f"""# fleet_sim.py: host {host.index}. cpu and memory are off (2 cores run 30 daemons);
# net and disk run every few seconds; budgets raised for the accelerated intervals.
state_directory = "{host.state}"

[budget]
cpu_seconds_per_hour = 3600
disk_bytes_per_hour = "200gb"
net_bytes_per_hour = "200gb"

[scheduler]
first_run_splay = "2s"
jitter = 0.1

[probes.cpu]
enabled = false

[probes.memory]
enabled = false

[probes.disk]
interval = "{DISK_INTERVAL_S}s"
timeout = "{DISK_INTERVAL_S}s"
directories = ["{host.data}"]
bytes_per_run = "8mb"
reserve = "1mb"

[probes.net]
interval = "{NET_INTERVAL_S}s"
timeout = "{NET_INTERVAL_S}s"
secret_file = "{secret}"
peers_file = "{peers_file}"
packets_per_cycle = 10
packet_interval = "10ms"
reply_timeout = "300ms"
throughput_duration = "100ms"
throughput_rate = "16mb"
"""


class Simulation:
    def __init__(self, args, timeline):
        self.args = args
        self.timeline = timeline
        self.work = pathlib.Path(args.work).resolve()
        self.source = pathlib.Path(args.source).resolve()
        self.system = System(self.work, timeline)
        self.hosts = [Host(i, self.work) for i in range(1, args.hosts + 1)]
        self.children = []          # (name, Popen, log handle)
        self.prometheus = None
        self.suspects = set()  # hosts named by a stray alert (diagnosed in detail)
        self.alertmanager = None
        self.peers_file = self.work / "peers.json"
        # Faulty hosts, by fault (spread over the fleet).
        n = args.hosts
        self.faults = {"responder": 3, "ratelimit": n // 4 + 2, "disk": n // 2 + 1, "killed": 3 * n // 4,
                       "removed": n - 1}

    # --- set-up -------------------------------------------------------------

    def setup(self):
        self.system.cleanup_leftovers()
        if self.work.exists():
            shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.timeline.log(f"setting up {len(self.hosts)} hosts under {self.work}")
        # The bridge every host's veth joins; Prometheus reaches the hosts through it.
        self.system.do(["ip", "link", "add", BRIDGE, "type", "bridge"], ["ip", "link", "del", BRIDGE])
        self.system.do(["ip", "addr", "add", f"{BRIDGE_IP}/24", "dev", BRIDGE])
        self.system.do(["ip", "link", "set", BRIDGE, "up"])
        # Backing files of the loop devices on a tmpfs: 30 hosts writing at once must
        # not depend on the machine's own disk; the throttle makes the speed.
        backing = self.work / "tmpfs"
        backing.mkdir()
        image_mb = 40
        self.system.do(["mount", "-t", "tmpfs", "-o", f"size={image_mb * len(self.hosts) + 64}m", "tmpfs",
                        str(backing)], ["umount", "-l", str(backing)])
        for host in self.hosts:
            host.data.mkdir(parents=True)
            host.state.mkdir(parents=True)
            self.system.do(["ip", "netns", "add", host.ns], ["ip", "netns", "del", host.ns])
            self.system.do(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.ns])
            self.system.do(["ip", "link", "set", host.veth, "master", BRIDGE, "up"])
            self.system.do(["ip", "-n", host.ns, "addr", "add", f"{host.ip}/24", "dev", "eth0"])
            self.system.do(["ip", "-n", host.ns, "link", "set", "eth0", "up"])
            self.system.do(["ip", "-n", host.ns, "link", "set", "lo", "up"])
            image = backing / f"disk{host.index}.img"
            run(["truncate", "-s", f"{image_mb}M", str(image)])
            # Inode tables and journal zeroed now, not by ext4lazyinit in the
            # background of the first minutes (it would slow a host's first runs
            # and bend its baseline).
            run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(image)])
            host.loop = run(["losetup", "-f", "--show", str(image)]).stdout.strip()
            self.system.undo.append(["losetup", "-d", host.loop])
            self.system.do(["mount", host.loop, str(host.data)], ["umount", "-l", str(host.data)])
            host.device = run(["lsblk", "-dno", "MAJ:MIN", host.loop]).stdout.strip()
            host.cgroup.mkdir(exist_ok=True)
            self.system.undo.append(["rmdir", str(host.cgroup)])
            host.set_disk_rate(DISK_RATE)
        secret = self.work / "secret"
        secret.write_text("fleet-simulation-shared-secret\n")
        secret.chmod(0o600)
        self.write_peers([h.index for h in self.hosts])
        for host in self.hosts:
            (host.dir / "hostperf.toml").write_text(exporter_config(host, secret, self.peers_file))

    def write_peers(self, indices):
        # Written to a temporary file and renamed, as configuration management does.
        body = json.dumps([{"targets": [peer_name(i) for i in indices], "labels": {"cluster": FLEET}}], indent=1)
        tmp = self.peers_file.with_suffix(".tmp")
        tmp.write_text(body)
        tmp.rename(self.peers_file)

    def start(self, name, argv, log):
        handle = open(log, "w", encoding="utf-8")
        child = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        self.children.append((name, child, handle))
        return child

    def start_daemons(self):
        for host in self.hosts:
            # Into the host's blkio cgroup (so its disk throttle applies), then into its namespace.
            script = (f"echo $$ > {host.cgroup}/cgroup.procs && exec ip netns exec {host.ns} {self.args.exporter} "
                      f"--config.file={host.dir / 'hostperf.toml'} --web.listen-address={instance(host.index)}")
            host.process = self.start(f"host{host.index}", ["sh", "-c", script], host.log)
        self.timeline.log(f"started {len(self.hosts)} daemons")

    def generate_rules(self):
        rules_dir = self.work / "rules"
        rules_dir.mkdir()
        if self.args.rules:
            for path in pathlib.Path(self.args.rules).glob("*.yml"):
                shutil.copy(path, rules_dir / path.name)
            return rules_dir
        # Exactly what dashboards/mixin/generate.sh renders, with the time fields and
        # noise floors above passed as the mixin's `config` (README, "Using the mixin").
        mixin = self.source / "dashboards" / "mixin"
        overrides = json.dumps({**ACCELERATED, **NOISE_FLOORS})
        for what, out in (("recording", "hostperf-recording.yml"), ("alerts", "hostperf-alerts.yml")):
            text = run(["jsonnet", "-S", "-J", str(mixin), "--tla-str", f"what={what}", "--tla-code",
                        f"config={overrides}", str(mixin / "lib" / "render.jsonnet")]).stdout
            (rules_dir / out).write_text(text)
        run([shutil.which("promtool") or "promtool", "check", "rules", *map(str, sorted(rules_dir.glob("*.yml")))])
        return rules_dir

    def start_alertmanager(self):
        shipped = yaml.safe_load((self.source / "dashboards" / "alertmanager" / "hostperf-alertmanager.yml")
                                 .read_text(encoding="utf-8"))
        config = dict(shipped)
        # The shipped routing and inhibition; receivers replaced by a null one and
        # waits shortened (Alertmanager's API shows alerts whatever the route).
        route = dict(config.get("route", {}))

        def nullify(r):
            r = dict(r)
            r["receiver"] = "null"
            for key in ("group_wait", "group_interval"):
                r[key] = "1s"
            if "routes" in r:
                r["routes"] = [nullify(child) for child in r["routes"]]
            return r

        config["route"] = nullify(route)
        config["receivers"] = [{"name": "null"}]
        path = self.work / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        port = 19093
        binary = self.args.alertmanager
        self.start("alertmanager", [binary, f"--config.file={path}", f"--storage.path={self.work / 'am-data'}",
                                    f"--web.listen-address={BRIDGE_IP}:{port}", "--cluster.listen-address="],
                   self.work / "alertmanager.log")
        self.alertmanager = f"http://{BRIDGE_IP}:{port}"
        wait_for("alertmanager to be ready", lambda: http_get(self.alertmanager + "/-/ready") is not None,
                 time.monotonic() + 30, 0.5)

    def start_prometheus(self, rules_dir):
        port = 19090
        config = {
            "global": {"scrape_interval": "2s", "evaluation_interval": "2s", "scrape_timeout": "2s"},
            "rule_files": [str(rules_dir / "*.yml")],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [self.alertmanager.removeprefix(
                "http://")]}]}]},
            "scrape_configs": [{
                "job_name": "hostperf",
                "static_configs": [{"targets": [instance(h.index) for h in self.hosts], "labels": {"cluster": FLEET}}],
            }],
        }
        path = self.work / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        run([shutil.which("promtool") or "promtool", "check", "config", str(path)])
        self.start("prometheus", [self.args.prometheus, f"--config.file={path}",
                                  f"--storage.tsdb.path={self.work / 'prom-data'}",
                                  f"--web.listen-address={BRIDGE_IP}:{port}"], self.work / "prometheus.log")
        self.prometheus = f"http://{BRIDGE_IP}:{port}"
        wait_for("prometheus to be ready", lambda: http_get(self.prometheus + "/-/ready") is not None,
                 time.monotonic() + 30, 0.5)

    # --- queries ------------------------------------------------------------

    def query(self, expr):
        body = json.loads(http_get(self.prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        if body.get("status") != "success":
            raise ValueError(f"query failed: {body}")
        return body["data"]["result"]

    def query_range(self, expr, seconds, step):
        end = time.time()
        params = urllib.parse.urlencode({"query": expr, "start": end - seconds, "end": end, "step": step})
        body = json.loads(http_get(self.prometheus + "/api/v1/query_range?" + params))
        if body.get("status") != "success":
            raise ValueError(f"query failed: {body}")
        return body["data"]["result"]

    def active_alerts(self):
        """Alerts Alertmanager holds active (not inhibited, not silenced)."""
        params = urllib.parse.urlencode({"active": "true", "inhibited": "false", "silenced": "false"})
        return json.loads(http_get(f"{self.alertmanager}/api/v2/alerts?{params}"))

    # --- phases -------------------------------------------------------------

    def wait_healthy(self):
        n = len(self.hosts)
        wait_for(f"all {n} targets up", lambda: len(self.query('up{job="hostperf"} == 1')) == n,
                 time.monotonic() + 90)
        self.timeline.log("every target up")
        for probe in ("net", "disk"):
            wait_for(f"every host's {probe} probe to succeed",
                     lambda: len(self.query(f'hostperf_probe_success{{probe="{probe}"}} == 1')) == n,
                     time.monotonic() + 90)
            self.timeline.log(f"every host's {probe} probe succeeded")
        # Start-up transients (30 daemons starting at once on a small machine) must
        # clear; then, with the windowed rules fed, nothing may be active.
        wait_for("start-up alerts to clear", lambda: not self.active_alerts(), time.monotonic() + 60)
        self.timeline.log("no alert active")
        settle = 30
        self.timeline.log(f"healthy fleet: watching alerts for {settle}s")
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            active = self.active_alerts()
            if active:
                raise Failure("alerts active on a healthy fleet: " + "; ".join(describe(a) for a in active))
            time.sleep(2)
        self.timeline.log("healthy fleet: no alert active")

    def inject_faults(self):
        f = self.faults
        responder = self.hosts[f["responder"] - 1]
        ruleset = (f"table inet {PREFIX} {{\n  chain input {{\n    type filter hook input priority 0; policy accept;\n"
                   f"    udp dport {RESPONDER_PORT} drop\n    tcp dport {RESPONDER_PORT} drop\n  }}\n}}\n")
        run(["ip", "netns", "exec", responder.ns, "nft", "-f", "-"], input=ruleset)
        self.timeline.log(f"fault responder: host {responder.index} ({responder.ip}) drops port {RESPONDER_PORT}")

        slow = self.hosts[f["ratelimit"] - 1]
        # Both directions: egress of the host's end, and egress of the bridge's end (the host's ingress).
        tbf = ["tbf", "rate", "8mbit", "burst", "32kb", "latency", "20ms"]
        run(["ip", "netns", "exec", slow.ns, "tc", "qdisc", "add", "dev", "eth0", "root"] + tbf)
        run(["tc", "qdisc", "add", "dev", slow.veth, "root"] + tbf)
        self.timeline.log(f"fault ratelimit: host {slow.index} ({slow.ip}) shaped to 8 Mbit/s both ways")

        disk = self.hosts[f["disk"] - 1]
        disk.set_disk_rate(DISK_RATE * SLOW_DISK_FACTOR)
        self.timeline.log(f"fault disk: host {disk.index} ({disk.ip}) disk throttled to "
                          f"{SLOW_DISK_FACTOR:.0%} of the others")

        killed = self.hosts[f["killed"] - 1]
        # sh exec'd `ip netns exec`, which exec'd the exporter: the child is the exporter.
        killed.process.kill()
        killed.process.wait(timeout=10)
        self.timeline.log(f"fault killed: host {killed.index} ({killed.ip}) exporter killed")

        removed = f["removed"]
        self.write_peers([h.index for h in self.hosts if h.index != removed])
        self.removed_at = time.monotonic()
        self.timeline.log(f"fault removed: host {removed} ({host_ip(removed)}) removed from the peers_file")

    def expected(self):
        """(alertname, host) pairs that must fire, and those that may also fire (each naming a faulty host)."""
        f = self.faults
        ip = {k: host_ip(v) for k, v in f.items()}
        required = {
            ("HostperfNetHostUnreachable", ip["responder"]),
            ("HostperfNetHostThroughputLow", ip["ratelimit"]),
            ("HostperfDiskSlowerThanFleet", ip["disk"]),
            ("HostperfExporterDown", ip["killed"]),
        }
        allowed = {
            # A shaped NIC also queues pings behind bursts: its observers may see its RTT rise.
            ("HostperfNetHostDegraded", ip["ratelimit"]),
            # The slowed disk is also slower than its own recent baseline (the shipped
            # inhibition hides it behind the fleet alert once that fires).
            ("HostperfDiskSlowerThanBaseline", ip["disk"]),
            # A throttled device also queues each block: its op latency doubles.
            ("HostperfDiskLatencyRegression", ip["disk"]),
            # Before most of the shaped host's observers have burst to it, the first
            # one's view is a link alert naming it (inhibited once the host alert fires).
            ("HostperfNetLinkDegraded", ip["ratelimit"]),
        }
        return required, allowed

    def check_removed_series(self):
        removed = peer_name(self.faults["removed"])
        live = [h for h in self.hosts if h.index not in (self.faults["killed"], self.faults["removed"])]

        def gone():
            holders = [h.index for h in live if f'peer="{removed}"' in h.metrics()]
            return not holders

        # A cycle is NET_INTERVAL_S (plus jitter and the run itself); allow three.
        wait_for(f"{removed}'s series to leave every other host's /metrics", gone,
                 time.monotonic() + 3 * NET_INTERVAL_S + 4, 0.5)
        self.timeline.log(f"removed host's series gone from {len(live)} hosts' /metrics "
                          f"{time.monotonic() - self.removed_at:.1f}s after the peers_file changed")

    def check_series_bound(self):
        worst = (0, None)
        for host in self.hosts:
            if host.index == self.faults["killed"]:
                continue
            text = host.metrics()
            series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
            peers = {m.group(1) for m in re.finditer(r'peer="([^"]+)"', text)}
            if series > SERIES_BOUND:
                raise Failure(f"host {host.index} serves {series} series, above the bound {SERIES_BOUND}")
            if len(peers) > 3 * 8:
                raise Failure(f"host {host.index} has series for {len(peers)} peers (K=8 observers per host)")
            worst = max(worst, (series, host.index))
        self.timeline.log(f"series bound holds: at most {worst[0]} series per host (host {worst[1]}), "
                          f"bound {SERIES_BOUND}")

    def watch_alerts(self, wait_seconds, stable_seconds):
        required, allowed = self.expected()
        faulty = {host_ip(i) for i in self.faults.values()}
        fired_at = {}
        seen = set()
        deadline = time.monotonic() + wait_seconds
        stable_until = None
        while True:
            now = time.monotonic()
            current = set()
            for alert in self.active_alerts():
                key = (alert["labels"].get("alertname"), alert_host(alert))
                current.add(key)
                if key not in seen:
                    seen.add(key)
                    self.timeline.log(f"alert firing: {describe(alert)}")
                named = {alert_host(alert), host_of(alert["labels"].get("observer", ""))} - {""}
                if key not in required | allowed:
                    self.suspects.update(named)
                    if not named & faulty:
                        raise Failure(f"alert names only healthy hosts: {describe(alert)}")
                    raise Failure(f"unexpected alert: {describe(alert)}")
            for key in required & current:
                fired_at.setdefault(key, now)
            for key in seen - current:
                if key in fired_at and key in required:
                    raise Failure(f"alert resolved while its fault persists (flapping): {key}")
                seen.discard(key)
                self.timeline.log(f"alert resolved: {key}")
            if stable_until is None:
                if required <= set(fired_at):
                    stable_until = now + stable_seconds
                    self.timeline.log(f"every expected alert active; watching {stable_seconds}s for flapping "
                                      "and strays")
                elif now > deadline:
                    missing = sorted(required - set(fired_at))
                    raise Failure(f"expected alerts not active after {wait_seconds}s: {missing}")
            elif now > stable_until:
                return
            time.sleep(2)

    def diagnose(self):
        """Prometheus' view of the rules, for the timeline of a failed run."""
        if self.prometheus is None:
            return
        try:
            # What a host named by a stray alert measured, every 5 s of the run,
            # with the recorded ratios the disk alerts compare (CI can only be
            # diagnosed from this output).
            for host in sorted(self.suspects):
                for expr in (f'hostperf_disk_throughput_bytes_per_second{{instance="{host}:{EXPORTER_PORT}"}}',
                             f'hostperf:disk_throughput_bytes_per_second:baseline_ratio{{host="{host}"}}',
                             f'hostperf:disk_throughput_bytes_per_second:fleet_ratio{{host="{host}"}}',
                             f'hostperf_probe_duration_seconds{{instance="{host}:{EXPORTER_PORT}"}}'):
                    for series in self.query_range(expr, 300, 5):
                        labels = {k: v for k, v in series["metric"].items() if k in ("test", "probe", "__name__")}
                        values = " ".join(f"{float(v):.3g}" for _, v in series["values"])
                        self.timeline.log(f"history {expr.split('{')[0]} {labels}: {values}")
            for expr in ('ALERTS{alertstate="firing"}', 'ALERTS{alertstate="pending"}'):
                for sample in self.query(expr):
                    self.timeline.log(f"prometheus {expr}: {sample['metric']}")
            for expr in ("hostperf_probe_success == 0", "up == 0"):
                for sample in self.query(expr):
                    self.timeline.log(f"prometheus {expr}: {sample['metric']}")
        except Exception as e:  # noqa: BLE001 - diagnostics must not hide the failure
            self.timeline.log(f"(prometheus not queryable: {e})")

    def stop(self):
        for name, child, handle in reversed(self.children):
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for name, child, handle in reversed(self.children):
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            handle.close()
        # The daemons' exit status: a crash on SIGTERM is a failure too.
        crashed = [name for name, child, _ in self.children
                   if name.startswith("host") and child.returncode not in (0, -9)
                   and name != f"host{self.faults['killed']}"]
        self.children.clear()
        return crashed


def host_of(address):
    """The host part of "host:port" (IPv6 in brackets kept whole)."""
    if not address:
        return ""
    match = re.fullmatch(r"\[?([^\]]+?)\]?:\d+", address)
    return match.group(1) if match else address


def alert_host(alert):
    labels = alert["labels"]
    return labels.get("host") or host_of(labels.get("instance", "")) or host_of(labels.get("peer", ""))


def describe(alert):
    labels = alert["labels"]
    keep = {k: v for k, v in sorted(labels.items()) if k in ("alertname", "host", "observer", "instance", "peer",
                                                              "severity", "test", "signal", "directory")}
    return ", ".join(f"{k}={v}" for k, v in keep.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exporter", required=True, help="hostperf_exporter binary")
    parser.add_argument("--source", required=True, help="source tree (dashboards/mixin, dashboards/alertmanager)")
    parser.add_argument("--work", required=True, help="scratch directory (emptied)")
    parser.add_argument("--hosts", type=int, default=30, help="hosts to simulate (default 30, at least 12)")
    parser.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    parser.add_argument("--alertmanager",
                        default=shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
                        or "prometheus-alertmanager")
    parser.add_argument("--rules", help="use these rule files instead of generating them from the mixin (debugging)")
    parser.add_argument("--keep", action="store_true", help="leave everything running after the checks (debug)")
    args = parser.parse_args()
    if args.hosts < 12 or args.hosts > 250:
        parser.error("--hosts: between 12 and 250")

    timeline = Timeline()
    try:
        check_facilities()
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    sim = Simulation(args, timeline)
    failed = False
    try:
        sim.setup()
        rules_dir = sim.generate_rules()
        sim.start_daemons()
        sim.start_alertmanager()
        sim.start_prometheus(rules_dir)
        sim.wait_healthy()
        sim.inject_faults()
        sim.check_removed_series()
        sim.watch_alerts(wait_seconds=150, stable_seconds=40)
        sim.check_series_bound()
        timeline.log("PASS")
        if args.keep:
            timeline.log(f"--keep: prometheus {sim.prometheus}, alertmanager {sim.alertmanager}; Ctrl-C to stop")
            while True:
                time.sleep(3600)
    except (Failure, OSError, subprocess.SubprocessError) as e:
        failed = True
        timeline.log(f"FAIL: {e}")
        sim.diagnose()
    except KeyboardInterrupt:
        failed = True
    finally:
        crashed = sim.stop()
        if crashed:
            failed = True
            timeline.log(f"FAIL: daemons exited abnormally: {crashed}")
        sim.system.teardown()
        if failed:
            timeline.dump()
            for host in sim.hosts:
                if host.log.exists() and (host.index in sim.faults.values() or host.ip in sim.suspects):
                    tail = host.log.read_text(errors="replace").splitlines()[-8:]
                    print(f"--- host{host.index} log tail ---\n" + "\n".join(tail), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
