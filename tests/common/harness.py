"""Helpers shared by the Python end-to-end tests (dashboards e2e, the Alertmanager
example check, the fleet simulation, the footprint test): ports, HTTP, waiting with a
deadline, and the probes a daemon runs."""
import re
import signal
import socket
import subprocess
import time
import urllib.request


class Failure(Exception):
    """A check failed: the message says what was expected and what was seen."""


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode("utf-8")


def wait_for(what, check, deadline, interval=1.0):
    """check() until it returns something true, or Failure at `deadline` (time.monotonic())."""
    last = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(interval)
    raise Failure(f"timed out waiting for {what}" + (f" (last error: {last})" if last else ""))


def stop_process(child, timeout=15):
    """SIGTERM, then SIGKILL if `child` (a subprocess.Popen) has not exited within `timeout` seconds."""
    if child.poll() is not None:
        return
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def enabled_probes(exposition):
    """The probes a daemon schedules, read from its /metrics text: the framework declares
    hostperf_probe_interval_seconds{probe} for every enabled probe from start-up, so that
    tests take the probe set from the daemon (the registered probe folders) instead of
    naming it."""
    return sorted(set(re.findall(r'^hostperf_probe_interval_seconds\{probe="([^"]+)"\} ', exposition, re.M)))
