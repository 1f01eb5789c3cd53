#!/usr/bin/env python3
"""A reconnect storm: N devices on the link, the gateway restarted, and the time until all are back.

usage: bench_reconnect.py HERALD N [--processes P] [--kill]   (run by scripts/bench-reconnect.sh)

Starts a gateway (cleartext loopback link, fixed ports) and P `herald test-device --reconnect`
processes, each holding N/P idle devices plus one device that registers an app. Once all N + P are
online (the gateway's herald_devices_online), the gateway is stopped (SIGTERM: every device gets a
close frame; --kill: SIGKILL, the sockets simply die) and started again on the same state and port.
As soon as it is up, one push goes to each registered device; most are still reconnecting, so their
push is stored. It measures:

  back:       seconds from the new gateway being ready to all N + P devices online again
  delivered:  seconds from the same moment to every one of the P pushes received by its device
  peak:       the most devices that came back within one 100 ms interval

The devices reconnect with the device daemon's backoff (0.5 s doubling to 30 s, each wait scaled by
a random 50-100%), so the gateway sees the herd spread over its restart. Debian's python3 is enough.
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from chaos_gateway import Gateway, free_port, provision  # noqa: E402

TOPIC = "com.example.storm"


def cpu_seconds(pid):
    """User and system CPU time a process has used, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def online(gateway):
    request = urllib.request.Request(gateway.admin + "/metrics", headers={"authorization": "Bearer " + gateway.token})
    with urllib.request.urlopen(request, timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("herald_devices_online "):
                return int(float(line.split()[1]))
    return 0


class Watcher(threading.Thread):
    """Follows a test-device's JSON output; notes when each apns-id arrives."""

    def __init__(self, process):
        super().__init__(daemon=True)
        self.process, self.ready, self.arrived, self.token = process, threading.Event(), {}, None

    def run(self):
        for line in self.process.stdout:
            event = json.loads(line)
            if event.get("event") == "ready":
                self.token = event["tokens"][TOPIC]
                self.ready.set()
            elif event.get("event") == "push":
                self.arrived.setdefault(event["apnsID"], time.time())


def main():
    herald, n = sys.argv[1], int(sys.argv[2])
    processes = int(sys.argv[sys.argv.index("--processes") + 1]) if "--processes" in sys.argv else 4
    kill = "--kill" in sys.argv
    work = tempfile.mkdtemp(prefix="herald-storm-")
    taken = set()
    ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
    gateway = Gateway(herald, os.path.join(work, "gateway"), ports)
    gateway.start()
    jwt = provision(herald, gateway, work, "STORMTEAM1", "STORMKEY01", TOPIC)
    link = f"ws://127.0.0.1:{ports['link']}/device/v1"
    per = n // processes
    watchers = []
    connect_started = time.time()
    for i in range(processes):
        idle = per if i < processes - 1 else n - per * (processes - 1)
        process = subprocess.Popen(
            [herald, "test-device", "--gateway", link, "--identity", os.path.join(work, f"device{i}.json"),
             "--device-id", f"storm-{i}", "--topic", TOPIC, "--idle-devices", str(idle), "--reconnect", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        watcher = Watcher(process)
        watcher.start()
        watchers.append(watcher)
    total = n + processes
    for watcher in watchers:
        if not watcher.ready.wait(600):
            raise SystemExit("a test device did not get ready")
    while online(gateway) < total:
        time.sleep(0.2)
    print(f"bench-reconnect: {total} devices online ({n} idle + {processes} with an app) "
          f"in {time.time() - connect_started:.1f} s", flush=True)

    # The restart.
    if kill:
        gateway.kill()
    else:
        gateway.stop()
    stopped = time.time()
    gateway.start()
    ready = time.time()
    profiler = None
    if os.environ.get("BENCH_RECONNECT_PERF"):
        profiler = subprocess.Popen(["perf", "record", "-g", "-o", os.environ["BENCH_RECONNECT_PERF"], "-p",
                                     str(gateway.process.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gateway_cpu = cpu_seconds(gateway.process.pid)
    devices_cpu = sum(cpu_seconds(w.process.pid) for w in watchers)
    # One push to each registered device, at once: mostly still reconnecting, so stored.
    sent = {}
    for i, watcher in enumerate(watchers):
        apns_id = f"00000000-0000-4000-8000-{i:012d}"
        connection = http.client.HTTPConnection("127.0.0.1", ports["dev"], timeout=30)
        connection.request("POST", "/3/device/" + watcher.token, body=b'{"aps":{"alert":"storm"}}',
                           headers={"authorization": "bearer " + jwt, "apns-topic": TOPIC, "apns-id": apns_id})
        status = connection.getresponse().status
        connection.close()
        if status != 200:
            raise SystemExit(f"push {i} answered {status}")
        sent[apns_id] = watcher
    back_at, samples, last, levels = None, [], 0, {}
    delivered_at = None
    deadline = ready + 300
    while time.time() < deadline and (back_at is None or delivered_at is None):
        count = online(gateway)
        now = time.time()
        samples.append((now, count - last))
        last = count
        for share in (0.5, 0.9, 0.99):
            if share not in levels and count >= share * total:
                levels[share] = now
        if back_at is None and count >= total:
            back_at = now
        if delivered_at is None and all(apns_id in w.arrived for apns_id, w in sent.items()):
            delivered_at = max(w.arrived[apns_id] for apns_id, w in sent.items())
        time.sleep(0.1)
    if profiler:
        profiler.send_signal(signal.SIGINT)
        profiler.wait()
    peak = max((d for _, d in samples), default=0)
    gateway_cpu = cpu_seconds(gateway.process.pid) - gateway_cpu
    devices_cpu = sum(cpu_seconds(w.process.pid) for w in watchers) - devices_cpu
    for watcher in watchers:
        watcher.process.send_signal(signal.SIGTERM)
    gateway.stop()
    how = "SIGKILL" if kill else "SIGTERM"
    print(f"bench-reconnect: gateway stopped ({how}) and started again in {ready - stopped:.2f} s")
    if back_at is None:
        print(f"bench-reconnect: NOT all back within 300 s: {last} of {total}")
        return 1
    print(f"bench-reconnect: all {total} devices back {back_at - ready:.2f} s after the new gateway was ready "
          f"(half by {levels[0.5] - ready:.2f} s, 90% by {levels[0.9] - ready:.2f} s, 99% by "
          f"{levels[0.99] - ready:.2f} s; peak {peak} reconnections in 100 ms)")
    print(f"bench-reconnect: CPU meanwhile: gateway {gateway_cpu:.1f} s ({gateway_cpu / total * 1e6:.0f} us per "
          f"device), the test devices {devices_cpu:.1f} s ({devices_cpu / total * 1e6:.0f} us per device), "
          f"on {os.cpu_count()} cores")
    if delivered_at is None:
        print("bench-reconnect: NOT every stored push delivered within 300 s")
        return 1
    print(f"bench-reconnect: the {len(sent)} pushes sent during the storm all delivered "
          f"{delivered_at - ready:.2f} s after the gateway was ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
