#!/usr/bin/env python3
"""The device daemon under SIGKILL: does every added notification fire once, and every push land?

usage: chaos_device.py HERALD CYCLES [--seed N]   (run by scripts/chaos-device.sh)

Starts a `herald gateway` (left alone) and a `herald device` with one app installed and registered.
While an app adds local notifications (`herald app … add --in 1..4`, over the app link) and a sender
pushes alerts to the app's token, the daemon is killed with SIGKILL at random moments, CYCLES times,
and started again on the same state (sometimes after a short while down). At the end, once every
notification is due and the gateway's store is empty, it accounts for:

  every successful add   fired exactly once: in the app's delivered list, and presented at most
                         once (late if it fell due while the daemon was down); a kill between
                         saving a fired notification and printing its banner loses the banner only
  every push answered 200  in the delivered list, or replaced in the gateway's store by a newer push
                         while the device was down (APNs keeps one per app); presented once

An add whose command failed (the daemon died under it) may fire once or not at all, never twice.
It prints the counts and exits 1 if anything was missed or presented twice.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

import h2.config
import h2.connection
import h2.events

sys.path.insert(0, os.path.dirname(__file__))
from chaos_gateway import Gateway, free_port, provision  # noqa: E402

APP = "com.example.chaosdevice"
TEAM = "CHAOSTEAM2"
KEY = "CHAOSKEY02"


class Daemon:
    def __init__(self, herald, work, link, api_port):
        self.herald, self.link, self.api_port = herald, link, api_port
        self.state = os.path.join(work, "device")
        self.log = os.path.join(work, "device.out")
        self.process = None

    def start(self):
        out = open(self.log, "a")
        self.process = subprocess.Popen(
            [self.herald, "device", "--state", self.state, "--gateway", self.link, "--api-port", str(self.api_port),
             "--time-zone", "UTC", "--log-level", "error"],
            stdout=out, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self.get("/status") is not None:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if self.process.poll() is not None:
                raise SystemExit("the device daemon exited; see " + self.log)
            time.sleep(0.05)
        raise SystemExit("the device daemon did not start")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait()

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}{path}", timeout=10) as answer:
            return json.loads(answer.read())

    def cli(self, *arguments):
        return subprocess.run([self.herald, *arguments, "--device-state", self.state],
                              capture_output=True, text=True, timeout=60)


def push_loop(port, jwt, token, results, stop, rng):
    """Alert pushes on one h2c connection (the gateway stays up), one at a time, a few per second."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    n = 0
    while not stop.is_set():
        n += 1
        apns_id = str(uuid.uuid4())
        body = f"p{n}"
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [
            (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"),
            (":path", "/3/device/" + token), ("authorization", "bearer " + jwt), ("apns-topic", APP),
            ("apns-id", apns_id), ("apns-expiration", str(int(time.time()) + 3600))])
        conn.send_data(stream, json.dumps({"aps": {"alert": body}}).encode(), end_stream=True)
        sock.sendall(conn.data_to_send())
        status, done = None, False
        while not done:
            for event in conn.receive_data(sock.recv(65536)):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.StreamEnded):
                    done = True
            pending = conn.data_to_send()
            if pending:
                sock.sendall(pending)
        results.append((apns_id, body, status))
        time.sleep(rng.uniform(0.05, 0.25))
    sock.close()


def add_loop(daemon, adds, stop, rng):
    n = 0
    while not stop.is_set():
        n += 1
        ident = f"a{n}"
        delay = rng.randint(1, 4)
        started = time.time()
        r = daemon.cli("app", APP, "add", "--id", ident, "--title", ident, "--in", str(delay))
        adds.append((ident, r.returncode == 0, started + delay))


def main():
    herald, cycles = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else int(time.time())
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="herald-chaos-device-")
    taken = set()
    ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link", "api")}
    gateway = Gateway(herald, os.path.join(work, "gateway"), ports)
    gateway.start()
    jwt = provision(herald, gateway, work, TEAM, KEY, APP)
    daemon = Daemon(herald, work, f"ws://127.0.0.1:{ports['link']}/device/v1", ports["api"])
    daemon.start()
    for command in (["device", "install", APP, "--aps-environment", "development"],
                    ["app", APP, "authorize", "--options", "alert"]):
        r = daemon.cli(*command)
        if r.returncode != 0:
            raise SystemExit(f"{command}: {r.stderr}")
    token = None
    deadline = time.time() + 30
    while not token and time.time() < deadline:
        token = daemon.get(f"/apps/{APP}").get("token")
        time.sleep(0.05)
    if not token:
        raise SystemExit("the app got no token")

    adds, pushes, stop = [], [], threading.Event()
    threads = [threading.Thread(target=add_loop, args=(daemon, adds, stop, random.Random(rng.random())), daemon=True),
               threading.Thread(target=push_loop, args=(ports["dev"], jwt, token, pushes, stop,
                                                        random.Random(rng.random())), daemon=True)]
    for thread in threads:
        thread.start()
    started = time.time()
    for cycle in range(1, cycles + 1):
        time.sleep(rng.uniform(0.3, 1.5))
        daemon.kill()
        if rng.random() < 0.3:
            time.sleep(rng.uniform(0.5, 2.0))  # down for a while: notifications fall due meanwhile
        daemon.start()
        if cycle % 10 == 0:
            print(f"chaos-device: cycle {cycle}/{cycles}, {sum(1 for a in adds if a[1])} adds, "
                  f"{sum(1 for p in pushes if p[2] == 200)} pushes answered 200", flush=True)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)

    # Everything due has fired, and the gateway has nothing left for the device.
    last_due = max([a[2] for a in adds] + [time.time()])
    while time.time() < last_due + 2:
        time.sleep(0.2)
    deadline = time.time() + 60
    device_id = daemon.get("/status").get("deviceID")
    while time.time() < deadline:
        if not gateway.admin_call("GET", f"/devices/{device_id}/stored"):
            break
        time.sleep(0.2)
    time.sleep(1)
    delivered = {n["identifier"]: n for n in daemon.get(f"/apps/{APP}/delivered")}
    daemon.stop()

    # What the terminal showed, across every run of the daemon: "[app] title (sound none[, late])".
    shown, late = {}, set()
    pattern = re.compile(r"^\[" + re.escape(APP) + r"\] (\S+) \(([^)]*)\)")
    for line in open(daemon.log):
        m = pattern.match(line.strip())
        if m:
            shown[m.group(1)] = shown.get(m.group(1), 0) + 1
            if "late" in m.group(2):
                late.add(m.group(1))

    counts = {"adds": 0, "once": 0, "late": 0, "unshown": 0, "missed": 0, "twice": 0, "failed adds": 0,
              "failed twice": 0}
    problems = []
    for ident, ok, _ in adds:
        times = shown.get(ident, 0)
        if not ok:
            counts["failed adds"] += 1
            if times > 1:
                counts["failed twice"] += 1
                problems.append(("a failed add presented twice", ident, times))
            continue
        counts["adds"] += 1
        if ident not in delivered:
            counts["missed"] += 1
            problems.append(("never fired", ident, times))
        elif times > 1:
            counts["twice"] += 1
            problems.append(("presented more than once", ident, times))
        elif times == 1:
            counts["once"] += 1
            counts["late"] += ident in late
        else:
            # Fired and saved, and the daemon was killed before it printed the banner: the
            # notification is in the delivered list (Notification Center), its banner is lost.
            counts["unshown"] += 1

    p = {"200s": 0, "delivered": 0, "replaced": 0, "LOST": 0, "twice": 0}
    for apns_id, body, status in pushes:
        if status != 200:
            continue
        p["200s"] += 1
        if shown.get(body, 0) > 1:
            p["twice"] += 1
            problems.append(("push presented more than once", apns_id, body, shown[body]))
        if apns_id in delivered:
            p["delivered"] += 1
            continue
        kinds = [e["kind"] for e in gateway.admin_call("GET", "/deliveries/" + apns_id) or []]
        if "replaced" in kinds:
            p["replaced"] += 1
        else:
            p["LOST"] += 1
            problems.append(("push lost", apns_id, body, kinds))
    gateway.stop()
    print(f"chaos-device: seed {seed}, {cycles} cycles in {time.time() - started:.0f} s")
    print(f"  adds that succeeded: {counts['adds']}; fired (in the delivered list) and presented once: "
          f"{counts['once']} ({counts['late']} of them late); fired but the banner lost to a kill: "
          f"{counts['unshown']}; never fired: {counts['missed']}; presented twice: {counts['twice']}")
    print(f"  adds that failed (the daemon died under them): {counts['failed adds']}; "
          f"presented twice: {counts['failed twice']}")
    print(f"  pushes answered 200: {p['200s']}; in the delivered list: {p['delivered']}; "
          f"replaced while the device was down: {p['replaced']}; presented twice: {p['twice']}")
    lost = counts["missed"] + counts["twice"] + counts["failed twice"] + p["LOST"] + p["twice"]
    print(f"  LOST: {counts['missed'] + p['LOST']}  (duplicates presented: {counts['twice'] + counts['failed twice'] + p['twice']})")
    for problem in problems[:20]:
        print("    ", problem)
    if lost == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept {work} for a look")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
