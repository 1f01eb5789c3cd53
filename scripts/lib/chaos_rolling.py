#!/usr/bin/env python3
"""A rolling restart of a cluster under load: what each restart costs providers and devices.

usage: chaos_rolling.py HERALD CYCLES [--nodes N] [--database postgres|URL] [--seed N] [--drain-window S]
       (run by scripts/chaos-gateway.sh --rolling CYCLES ...)

Starts N gateways (3 by default) on one PostgreSQL (a private server unless --database names one)
and six `herald test-device --reconnect` devices, two on each node, each given every node's link
address with its own first. Four sender threads push continuously over h2c, each connection to a
random node, to random devices (apns-expiration an hour ahead, so a push for a device that is moving
is stored, not dropped). Then, CYCLES times, one node after the other is stopped with SIGTERM
(drained: providers get GOAWAY and their streams in flight are answered; devices are told to come
back within --drain-window seconds, 2 by default here) and started again on the same state, and the
next restart waits until every device is connected again. During each restart `herald push
--tokens-file` (HeraldProvider, with its retries) sends 200 pushes to the node being restarted.

A sender's request that gets no answer is retried with the same apns-id on another connection when
the failure says it was not processed (the connection refused, or a GOAWAY whose last stream is
below it: RFC 9113 section 6.8) and counted as retriable; one whose connection closes while it is in
flight, with no GOAWAY covering it, is counted as closed (it may or may not have been processed; the
target is none). Per restart it prints the senders' 200s, retriable failures and closed ones, what
HeraldProvider's bulk send got, and how long the restarted node's devices were away; at the end
every 200 is accounted for as in scripts/chaos-gateway.sh (delivered, replaced, or LOST, which must
be 0). Debian's python3-h2 and postgresql are enough.
"""
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos_gateway import TEAM, KEY, TOPIC, Device, provision, start_cluster  # noqa: E402


class Sender(threading.Thread):
    """Pushes over h2c, one request at a time, each connection to a random node; records every
    outcome with its time, and retries what was not processed."""

    def __init__(self, ports, jwt, devices, results, stop, rng):
        super().__init__(daemon=True)
        self.ports, self.jwt, self.devices, self.results, self.stop, self.rng = ports, jwt, devices, results, stop, rng
        self.retry = None  # (apns_id, device) to send again

    def run(self):
        import h2.exceptions
        while not self.stop.is_set():
            try:
                self.connection()
            except ConnectionRefusedError:
                # Nothing was sent: the request (if any) goes again to another node.
                if self.retry:
                    self.results.append((time.time(), self.retry[0], "retriable", self.retry[1].index))
                time.sleep(0.02)
            except (OSError, h2.exceptions.ProtocolError, ConnectionError):
                time.sleep(0.02)

    def connection(self):
        import h2.config
        import h2.connection
        import h2.events
        port = self.rng.choice(self.ports)
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        try:
            while not self.stop.is_set():
                apns_id, device = self.retry or (str(uuid.uuid4()), self.rng.choice(self.devices))
                self.retry = (apns_id, device)
                stream = conn.get_next_available_stream_id()
                conn.send_headers(stream, [
                    (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{port}"),
                    (":path", "/3/device/" + device.token), ("authorization", "bearer " + self.jwt),
                    ("apns-topic", TOPIC), ("apns-id", apns_id),
                    ("apns-expiration", str(int(time.time()) + 3600))])
                conn.send_data(stream, b'{"aps":{"alert":"rolling"}}', end_stream=True)
                sock.sendall(conn.data_to_send())
                status, done, going_away = None, False, None
                while not done:
                    data = sock.recv(65536)
                    if not data:
                        if going_away is not None and stream > going_away:
                            self.results.append((time.time(), apns_id, "retriable", device.index))
                        else:
                            self.results.append((time.time(), apns_id, "closed", device.index))
                            self.retry = None
                        raise ConnectionError("closed")
                    for event in conn.receive_data(data):
                        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                            status = int(dict(event.headers)[b":status"])
                        elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                            done = True
                        elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                            # REFUSED_STREAM is "not processed"; any other reset is not known to be.
                            code = getattr(event.error_code, "value", event.error_code)
                            self.results.append(
                                (time.time(), apns_id, "retriable" if code == 7 else "closed", device.index))
                            if code != 7:
                                self.retry = None
                            raise ConnectionError("reset")
                        elif isinstance(event, h2.events.ConnectionTerminated):
                            going_away = event.last_stream_id
                            if stream > going_away:
                                self.results.append((time.time(), apns_id, "retriable", device.index))
                                raise ConnectionError("GOAWAY before the stream")
                    pending = conn.data_to_send()
                    if pending:
                        sock.sendall(pending)
                self.results.append((time.time(), apns_id, status, device.index))
                self.retry = None if status in (200, 400, 403, 410, 413) else self.retry
                if status == 503:
                    self.results[-1] = (time.time(), apns_id, "retriable", device.index)
                if going_away is not None:
                    raise ConnectionError("GOAWAY after the stream")
        finally:
            sock.close()


def bulk(herald, url, jwt_p8, tokens_file, out):
    """HeraldProvider's bulk send (herald push --tokens-file) to one node; returns its process."""
    return subprocess.Popen(
        [herald, "push", "--url", url, "--p8", jwt_p8, "--key-id", KEY, "--team", TEAM, "--topic", TOPIC,
         "--tokens-file", tokens_file, "--alert", "rolling bulk", "--concurrency", "20", "--json"],
        stdout=open(out, "w"), stderr=subprocess.STDOUT)


def main():
    herald, cycles = sys.argv[1], int(sys.argv[2])

    def option(name, default=None):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default

    seed = int(option("--seed", int(time.time())))
    nodes = int(option("--nodes", 3))
    database = option("--database", "postgres")
    window = option("--drain-window", "2")
    if nodes < 2:
        raise SystemExit("--nodes: a rolling restart needs 2 or more")
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="herald-rolling-")
    postgres, database, gateways = start_cluster(herald, work, nodes, database, ["--drain-window", window])
    jwt = provision(herald, gateways[0], work, TEAM, KEY, TOPIC)
    p8 = os.path.join(work, "key.p8")
    links = [f"ws://127.0.0.1:{g.ports['link']}/device/v1" for g in gateways]
    devices = [Device(herald, work, i, links[i % nodes:] + links[:i % nodes]) for i in range(2 * nodes)]
    for device in devices:
        device.launch()
    tokens = os.path.join(work, "tokens.txt")
    with open(tokens, "w") as f:
        for i in range(200):
            f.write(devices[i % len(devices)].token + "\n")

    def holders():
        """Each device's node, or None while it is away (asked of a node that is up)."""
        for g in gateways:
            if g.process.poll() is None:
                try:
                    listed = g.admin_call("GET", "/devices") or []
                    return {d["id"]: (d.get("node") if d.get("online") else None) for d in listed}
                except OSError:
                    continue
        return {}

    results, stop = [], threading.Event()
    senders = [Sender([g.ports["dev"] for g in gateways], jwt, devices, results, stop, random.Random(rng.random()))
               for _ in range(4)]
    for sender in senders:
        sender.start()
    started = time.time()
    rows = []
    for cycle in range(1, cycles + 1):
        node = (cycle - 1) % nodes
        victim = gateways[node]
        time.sleep(rng.uniform(0.3, 1.0))
        begin = time.time()
        out = os.path.join(work, f"bulk-{cycle}.json")
        pushing = bulk(herald, f"http://127.0.0.1:{victim.ports['dev']}", p8, tokens, out)
        time.sleep(0.05)
        victim.stop()
        stopped = time.time()
        victim.start()
        # Every device back (on any node) before the next restart; the time each was away.
        away, first_seen = {}, {}
        while time.time() - begin < 120:
            now, seen = time.time(), holders()
            for device in devices:
                state = seen.get(f"chaos-{device.index}")
                if state is None:
                    first_seen.setdefault(device.index, now)
                elif device.index in first_seen and device.index not in away:
                    away[device.index] = now - first_seen[device.index]
            if seen and all(seen.get(f"chaos-{d.index}") for d in devices) and time.time() - stopped > 0.2:
                break
            time.sleep(0.05)
        end = time.time()
        pushing.wait(timeout=120)
        try:
            import json
            summary = json.load(open(out))
        except ValueError:
            summary = {"results": {"unreadable": open(out).read()[-200:]}}
        window_results = [r for r in results if begin <= r[0] <= end]
        row = {
            "cycle": cycle, "node": node + 1, "seconds": end - begin,
            "200": sum(1 for r in window_results if r[2] == 200),
            "retriable": sum(1 for r in window_results if r[2] == "retriable"),
            "closed": sum(1 for r in window_results if r[2] == "closed"),
            "other": sum(1 for r in window_results if r[2] not in (200, "retriable", "closed")),
            "bulk": summary.get("results", {}),
            "away": sorted(away.values()),
        }
        rows.append(row)
        print(f"chaos-gateway --rolling: restart {cycle} (node {row['node']}): {row['200']} 200s, "
              f"{row['retriable']} retriable (retried), {row['closed']} closed, {row['other']} other; "
              f"herald push: {row['bulk']}; devices away: "
              + (", ".join(f"{a:.2f} s" for a in row["away"]) or "none"), flush=True)
    stop.set()
    for sender in senders:
        sender.join(timeout=30)

    # Everything given away, then every 200 accounted for.
    deadline = time.time() + 120
    while time.time() < deadline:
        stored = sum(len(gateways[0].admin_call("GET", f"/devices/chaos-{d.index}/stored") or []) for d in devices)
        if stored == 0:
            break
        time.sleep(0.2)
    time.sleep(1)
    for device in devices:
        device.stop()
    delivered = {}
    for device in devices:
        for event in device.events():
            if event.get("event") == "push":
                delivered.setdefault(event["apnsID"], device.index)
    accepted = {r[1]: r[3] for r in results if r[2] == 200}
    lost, replaced = [], 0
    for apns_id in accepted:
        if apns_id in delivered:
            continue
        kinds = [e["kind"] for e in gateways[0].admin_call("GET", "/deliveries/" + apns_id) or []]
        if "replaced" in kinds:
            replaced += 1
        else:
            lost.append((apns_id, kinds))
    for g in gateways:
        g.stop()
    if postgres:
        postgres.stop()
    closed = sum(r["closed"] for r in rows)
    away = [a for r in rows for a in r["away"]]
    print(f"chaos-gateway --rolling: seed {seed}, {cycles} restarts of {nodes} nodes on {database} in "
          f"{time.time() - started:.0f} s, drain window {window} s")
    print(f"  200s: {len(accepted)}  delivered: {len(accepted) - len(lost) - replaced}  replaced: {replaced}")
    print(f"  retriable failures (each retried): {sum(r['retriable'] for r in rows)}  closed in flight: {closed}")
    print(f"  herald push during restarts: {sum(sum(r['bulk'].get('200', 0) for r in rows) for _ in [0])} of "
          f"{200 * cycles} answered 200")
    if away:
        away.sort()
        print(f"  devices away per restart: median {away[len(away) // 2]:.2f} s, longest {away[-1]:.2f} s")
    print(f"  LOST: {len(lost)}")
    for item in lost[:20]:
        print("    lost:", item)
    if not lost and not closed:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept {work} for a look")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
