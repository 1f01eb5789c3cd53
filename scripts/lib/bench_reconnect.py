#!/usr/bin/env python3
"""A reconnect storm: N devices on the link, every gateway restarted, and the time until all are back.

usage: bench_reconnect.py HERALD N [--nodes K] [--processes P] [--kill] [--reference] [--hold-sockets [S]]
       (run by scripts/bench-reconnect.sh)

Starts K gateways (one: its own SQLite state; more: a private PostgreSQL server they share, as a
cluster, each listening on a loopback address of its own, 127.0.0.2 and up) and P `herald
test-device --reconnect` processes per gateway, each holding its share of the N idle devices plus one
device that registers an app. Each process connects its idle devices from 16 loopback addresses of its
own (--idle-source 127.N.P.1-16), so that no one source and destination pair holds more than a
thousand or so connections: the kernel looks for a free source port per pair, and with 18,000
connections from one address to one gateway that search was most of a device's reconnection. Once
all are online (the gateways' herald_devices_online), every gateway is stopped (SIGTERM: every device
gets a close frame; --kill: SIGKILL, the sockets simply die) and all are started again at once on
the same state and ports (with --hold-sockets, the script holds each gateway's device link socket
and hands it to every start, as a systemd socket unit does: docs/listeners.md; a device that
reconnects while its gateway is down then waits in the socket's queue instead of being refused;
with --hold-sockets S, S sockets per gateway on the same address and port with SO_REUSEPORT, each
queueing up to 4,096 connections, `somaxconn` here).
As soon as they are ready, one push goes to each registered device through
the first gateway; most are still reconnecting, so their push is stored. It measures:

  back:       seconds from the last gateway being ready to every device online again
  delivered:  seconds from the same moment to every one of those pushes received by its device
  peak:       the fastest rate at which devices came back, over one interval between two samples of
              the nodes' online counts (all asked at once, then 100 ms of sleep; an interval lasts
              longer while the nodes are busy)
  CPU:        of the gateways, the test devices and PostgreSQL meanwhile, per device (each gateway's
              from its own readiness, the others' from the first gateway's: a node ready before the
              rest serves its held devices at once); and of the
              gateways and the test devices while the gateways stopped (the devices retry meanwhile;
              a gateway's CPU is read until it exits, so the kernel's closing of its sockets at exit
              is not counted)

The devices resume with the ticket their last welcome gave (docs/device-link.md, "Resuming"). With
--reference the storm is run first with --link-ticket-hours 0 (every device signs, as before tickets
existed), then once with tickets given out but none held yet, unmeasured, then with tickets; it
prints the CPU per device of each measured storm and their ratio.

With BENCH_RECONNECT_PERF=PREFIX in the environment, `perf record -g` records the gateways (to
PREFIX.gateway) and the test devices (PREFIX.devices) during the storm with tickets; with
BENCH_RECONNECT_PERF_STOP=PREFIX, the gateways while they stop before it (PREFIX.stop).

The devices reconnect with the device daemon's backoff (0.5 s doubling to 30 s, each wait scaled by
a random 50-100%), so the gateways see the herd spread over their restart. Debian's python3 (and
PostgreSQL for more than one node) is enough.
"""
import concurrent.futures
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from chaos_gateway import Gateway, PrivatePostgres, free_port, provision  # noqa: E402

TOPIC = "com.example.storm"


def cpu_seconds(pid):
    """User and system CPU time a process has used, in seconds (0 once it is gone)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu():
    """CPU time of every PostgreSQL process on the machine, in seconds (the private server's)."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if open(f"/proc/{pid}/comm").read().strip() in ("postgres", "postmaster"):
                    total += cpu_seconds(pid)
            except OSError:
                pass
    return total


def metric(gateway, name, default=0):
    request = urllib.request.Request(gateway.admin + "/metrics", headers={"authorization": "Bearer " + gateway.token})
    with urllib.request.urlopen(request, timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    return default


# Every node is asked at once: asked one after the other, a sample of six busy nodes took as long as
# all six answers together, and the times measured from the samples came late by as much.
POLLER = concurrent.futures.ThreadPoolExecutor(max_workers=16)


def online(gateways):
    return sum(POLLER.map(lambda g: metric(g, "herald_devices_online"), gateways))


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


class Storm:
    def __init__(self, herald, n, nodes, processes, kill, hold):
        self.herald, self.n, self.nodes, self.processes, self.kill = herald, n, nodes, processes, kill
        self.hold = hold  # device link sockets held per gateway (0: each gateway binds its own)
        self.work = tempfile.mkdtemp(prefix="herald-storm-")
        self.postgres, self.gateways, self.watchers = None, [], []
        self.round = 0

    def start(self, tickets):
        taken = set()
        if self.nodes > 1:
            self.postgres = PrivatePostgres(self.work, free_port(taken))
        for i in range(self.nodes):
            ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
            # --drain-window 0: the devices with apps come back at once on a restart, as they did when
            # this storm was first measured (the idle ones do not read the gateway's goaway).
            extra = ["--link-ticket-hours", "168" if tickets else "0", "--drain-window", "0"]
            if self.nodes > 1:
                extra += ["--listen", f"127.0.0.{i + 2}"]
            sockets = []
            for _ in range(self.hold):
                # The device link's sockets, held here across restarts as systemd socket units hold them.
                link = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                link.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if self.hold > 1:
                    link.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                link.bind((f"127.0.0.{i + 2}" if self.nodes > 1 else "127.0.0.1", ports["link"]))
                link.listen(4096)
                sockets.append(("link", link))
            gateway = Gateway(self.herald, os.path.join(self.work, f"node{i}"), ports,
                              self.postgres.url if self.postgres else None, extra, sockets)
            gateway.start()
            self.gateways.append(gateway)
        first = self.gateways[0]
        self.jwt = provision(self.herald, first, self.work, "STORMTEAM1", "STORMKEY01", TOPIC)
        for g in self.gateways[1:]:
            while not any(app.get("bundleID") == TOPIC for app in g.admin_call("GET", "/apps") or []):
                time.sleep(0.1)
        connect_started = time.time()
        per_node = self.n // self.nodes
        for node, g in enumerate(self.gateways):
            host = f"127.0.0.{node + 2}" if self.nodes > 1 else "127.0.0.1"
            link = f"ws://{host}:{g.ports['link']}/device/v1"
            count = per_node if node < self.nodes - 1 else self.n - per_node * (self.nodes - 1)
            per = count // self.processes
            for i in range(self.processes):
                idle = per if i < self.processes - 1 else count - per * (self.processes - 1)
                name = f"{node}-{i}"
                # Each process's devices connect from 16 loopback addresses of its own (127.N.P.1-16):
                # thousands of connections from one address to one gateway make the kernel's search
                # for a free source port the most of a reconnection's cost.
                sources = [a for k in range(1, 17) for a in ("--idle-source", f"127.{node + 1}.{i + 1}.{k}")]
                process = subprocess.Popen(
                    [self.herald, "test-device", "--gateway", link,
                     "--identity", os.path.join(self.work, f"device{name}.json"), "--device-id", f"storm-{name}",
                     "--topic", TOPIC, "--idle-devices", str(idle), "--reconnect", "--json"] + sources,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                watcher = Watcher(process)
                watcher.start()
                self.watchers.append(watcher)
        self.total = self.n + len(self.watchers)
        for watcher in self.watchers:
            if not watcher.ready.wait(1200):
                raise SystemExit("a test device did not get ready")
        while online(self.gateways) < self.total:
            time.sleep(0.5)
        where = f"{self.nodes} gateways on PostgreSQL" if self.nodes > 1 else "one gateway"
        print(f"bench-reconnect: {self.total} devices online ({self.n} idle + {len(self.watchers)} with an app) "
              f"on {where} in {time.time() - connect_started:.1f} s", flush=True)

    def restart(self, tickets):
        """Stops every gateway and starts them all again; returns what was measured."""
        self.round += 1
        for g in self.gateways:
            g.extra[1] = "168" if tickets else "0"
        old_pids = [g.process.pid for g in self.gateways]
        # The CPU the stop takes: a gateway's is read until it exits (its last reading is kept).
        stop_cpu = {pid: cpu_seconds(pid) for pid in old_pids}
        stop_cpu_before = sum(stop_cpu.values())
        stop_devices_cpu = sum(cpu_seconds(w.process.pid) for w in self.watchers)
        stop_profilers = []
        if os.environ.get("BENCH_RECONNECT_PERF_STOP") and tickets:
            # perf record of the gateways while they stop, to PREFIX.stop (ends when they exit).
            stop_profilers.append(subprocess.Popen(
                ["perf", "record", "-g", "-o", os.environ["BENCH_RECONNECT_PERF_STOP"] + ".stop",
                 "-p", ",".join(map(str, old_pids))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.5)
        stopping = time.time()
        for g in self.gateways:
            (g.process.send_signal(signal.SIGKILL if self.kill else signal.SIGTERM))
        while any(g.process.poll() is None for g in self.gateways):
            for pid in old_pids:
                stop_cpu[pid] = cpu_seconds(pid) or stop_cpu[pid]
            time.sleep(0.05)
        for g in self.gateways:
            g.process.wait()
        stopped = time.time()
        for profiler in stop_profilers:
            profiler.wait()
        stop_devices_cpu = sum(cpu_seconds(w.process.pid) for w in self.watchers) - stop_devices_cpu
        for g in self.gateways:
            g.launch()
        # Each gateway's readiness is waited for on its own thread, and its CPU counted from then: a
        # node ready before the others serves its held devices at once, and counting only from the
        # last node's readiness would leave that work out. The test devices' and PostgreSQL's CPU
        # are counted from the first node's readiness.
        readiness = {}
        first_lock = threading.Lock()
        early = {}

        def await_ready(g):
            g.wait_ready()
            readiness[g.process.pid] = (time.time(), cpu_seconds(g.process.pid))
            with first_lock:
                if not early:
                    early["devices"] = sum(cpu_seconds(w.process.pid) for w in self.watchers)
                    early["database"] = postgres_cpu() if self.postgres else 0.0

        with concurrent.futures.ThreadPoolExecutor(len(self.gateways)) as pool:
            list(pool.map(await_ready, self.gateways))
        ready = time.time()
        pids = [g.process.pid for g in self.gateways]
        profilers = []
        if os.environ.get("BENCH_RECONNECT_PERF") and tickets:
            # perf record of the gateways and of the test devices, to PREFIX.gateway and PREFIX.devices.
            prefix = os.environ["BENCH_RECONNECT_PERF"]
            for what, targets in (("gateway", pids), ("devices", [w.process.pid for w in self.watchers])):
                profilers.append(subprocess.Popen(
                    ["perf", "record", "-g", "-o", f"{prefix}.{what}", "-p", ",".join(map(str, targets))],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        gateway_cpu = sum(readiness[pid][1] for pid in pids)
        devices_cpu = early["devices"]
        database_cpu = early["database"]
        spread = ready - min(at for at, _ in readiness.values())
        # One push to each registered device, at once: mostly still reconnecting, so stored.
        sent = {}
        first = self.gateways[0]
        host = "127.0.0.1"
        for i, watcher in enumerate(self.watchers):
            apns_id = f"00000000-0000-4000-{8000 + self.round:04d}-{i:012d}"
            connection = http.client.HTTPConnection(host, first.ports["dev"], timeout=30)
            connection.request("POST", "/3/device/" + watcher.token, body=b'{"aps":{"alert":"storm"}}',
                               headers={"authorization": "bearer " + self.jwt, "apns-topic": TOPIC,
                                        "apns-id": apns_id})
            status = connection.getresponse().status
            connection.close()
            if status != 200:
                raise SystemExit(f"push {i} answered {status}")
            sent[apns_id] = watcher
        back_at, samples, last, levels, delivered_at = None, [], 0, {}, None
        sampled = ready
        deadline = ready + 600
        while time.time() < deadline and (back_at is None or delivered_at is None):
            count = online(self.gateways)
            now = time.time()
            samples.append((count - last) / max(now - sampled, 1e-3))
            sampled = now
            last = count
            for share in (0.5, 0.9, 0.99):
                if share not in levels and count >= share * self.total:
                    levels[share] = now
            if back_at is None and count >= self.total:
                back_at = now
            if delivered_at is None and all(apns_id in w.arrived for apns_id, w in sent.items()):
                delivered_at = max(w.arrived[apns_id] for apns_id, w in sent.items())
            time.sleep(0.1)
        for profiler in profilers:
            profiler.send_signal(signal.SIGINT)
            profiler.wait()
        result = {
            "spread": spread,
            "stopped": stopped - stopping, "stop_gateway_cpu": sum(stop_cpu.values()) - stop_cpu_before,
            "stop_devices_cpu": stop_devices_cpu, "ready": ready - stopped, "back": back_at and back_at - ready,
            "levels": {k: v - ready for k, v in levels.items()}, "peak": max(samples, default=0),
            "gateway_cpu": sum(cpu_seconds(pid) for pid in pids) - gateway_cpu,
            "devices_cpu": sum(cpu_seconds(w.process.pid) for w in self.watchers) - devices_cpu,
            "database_cpu": (postgres_cpu() - database_cpu) if self.postgres else 0.0,
            "delivered": delivered_at and delivered_at - ready, "sent": len(sent), "last": last,
            "tickets": sum(metric(g, 'herald_link_authentications_total{method="ticket"}') for g in self.gateways),
            "in_upgrade": sum(metric(g, 'herald_link_upgrade_resumptions_total') for g in self.gateways),
            "signatures": sum(metric(g, 'herald_link_authentications_total{method="signature"}')
                              for g in self.gateways),
        }
        return result

    def report(self, r, label):
        how = ("SIGKILL" if self.kill else "SIGTERM") + (
            f", {self.hold} device link socket(s) per gateway held" if self.hold else "")
        total = self.total
        print(f"bench-reconnect [{label}]: {len(self.gateways)} gateway(s) stopped ({how}) in {r['stopped']:.2f} s "
              f"and all ready again {r['ready']:.2f} s later" +
              (f" (the first {r['spread']:.2f} s before the last)" if len(self.gateways) > 1 else "") +
              f"; CPU while stopping: gateways {r['stop_gateway_cpu']:.2f} s, "
              f"the test devices {r['stop_devices_cpu']:.1f} s")
        if r["back"] is None:
            print(f"bench-reconnect [{label}]: NOT all back within 600 s: {r['last']} of {total}")
            return False
        lv = r["levels"]
        print(f"bench-reconnect [{label}]: all {total} devices back {r['back']:.2f} s after the gateways were ready "
              f"(half by {lv[0.5]:.2f} s, 90% by {lv[0.9]:.2f} s, 99% by {lv[0.99]:.2f} s; "
              f"peak {r['peak']:.0f} reconnections a second); {r['tickets']} came back with a ticket "
              f"({r['in_upgrade']} in the upgrade request), "
              f"{r['signatures']} signed")
        database = f", PostgreSQL {r['database_cpu']:.1f} s ({r['database_cpu'] / total * 1e6:.0f} us per device)" \
            if self.postgres else ""
        print(f"bench-reconnect [{label}]: CPU meanwhile: gateways {r['gateway_cpu']:.1f} s "
              f"({r['gateway_cpu'] / total * 1e6:.0f} us per device), the test devices {r['devices_cpu']:.1f} s "
              f"({r['devices_cpu'] / total * 1e6:.0f} us per device){database}, on {os.cpu_count()} cores")
        if r["delivered"] is None:
            print(f"bench-reconnect [{label}]: NOT every stored push delivered within 600 s")
            return False
        print(f"bench-reconnect [{label}]: the {r['sent']} pushes sent during the storm all delivered "
              f"{r['delivered']:.2f} s after the gateways were ready", flush=True)
        return True

    def stop(self):
        for watcher in self.watchers:
            watcher.process.send_signal(signal.SIGTERM)
        for watcher in self.watchers:
            watcher.process.wait()
        for g in self.gateways:
            if g.process and g.process.poll() is None:
                g.stop()
        if self.postgres:
            self.postgres.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    herald, n = sys.argv[1], int(sys.argv[2])
    nodes = int(sys.argv[sys.argv.index("--nodes") + 1]) if "--nodes" in sys.argv else 1
    default_processes = 4 if nodes == 1 else 2
    processes = int(sys.argv[sys.argv.index("--processes") + 1]) if "--processes" in sys.argv else default_processes
    kill, reference = "--kill" in sys.argv, "--reference" in sys.argv
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if n // nodes + processes + 1024 > hard:
        raise SystemExit(f"each gateway would hold {n // nodes + processes} links and this machine allows a process "
                         f"{hard} files: use more --nodes")
    if n // (nodes * processes) + 1024 > hard:
        raise SystemExit(f"each test device would hold {n // (nodes * processes)} links: use more --processes")
    hold = 0
    if "--hold-sockets" in sys.argv:
        after = sys.argv[sys.argv.index("--hold-sockets") + 1:]
        hold = int(after[0]) if after and after[0].isdigit() else 1
    storm = Storm(herald, n, nodes, processes, kill, hold)
    ok = True
    try:
        storm.start(tickets=not reference)
        if reference:
            signed = storm.restart(tickets=False)
            ok &= storm.report(signed, "signatures")
            # Tickets given out: every device signs once more and gets one. Not measured.
            storm.restart(tickets=True)
        resumed = storm.restart(tickets=True)
        ok &= storm.report(resumed, "tickets")
        if reference and ok:
            def per(r, key):
                return r[key] / storm.total * 1e6
            print(f"bench-reconnect: with tickets, CPU per device is {per(resumed, 'gateway_cpu') / per(signed, 'gateway_cpu'):.2f} "
                  f"of the signatures' on the gateways and {per(resumed, 'devices_cpu') / per(signed, 'devices_cpu'):.2f} "
                  f"on the test devices")
    finally:
        storm.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
