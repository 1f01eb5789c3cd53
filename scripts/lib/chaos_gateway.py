#!/usr/bin/env python3
"""The gateway under SIGKILL: does every 200 reach its device, or is it accounted for?

usage: chaos_gateway.py HERALD CYCLES [--seed N] [--nodes N] [--database postgres|URL]
       (run by scripts/chaos-gateway.sh)

Starts `herald gateway` on a state directory of its own and four `herald test-device --reconnect`
devices that register one app: devices 0 and 1 stay connected, device 2 is killed and started again
now and then (offline for a while), device 3 stays offline until the end. Four sender threads push
continuously over h2c, each on its own connection, to random devices, with apns-expiration an hour
ahead (kept while the device is offline) or 0 (one attempt). Meanwhile the gateway is killed with
SIGKILL at random moments, CYCLES times, and started again on the same state and ports. At the end
every device comes online, the script waits until the gateway's offline store is empty, and
accounts for every push answered 200:

  delivered   it reached its device (device logs; a copy seen twice counts once, as a duplicate)
  replaced    the store kept a newer push for the same device and app instead (offline depth 1)
  discarded   apns-expiration 0 and the device was not connected (APNs drops it and answers 200)
  LOST        none of these

It prints the counts and exits 1 if anything is LOST. Debian's python3-h2 is enough.

With --nodes N (and --database, which defaults to `postgres` then: a private PostgreSQL server
started with Debian's initdb and pg_ctl in the work directory, as the postgres account when run as
root), N gateways share one database. Each device is given every node's link address, its own
node first (device i on node i mod N), and moves to the next when its node goes; each sender
connection goes to a random node; each cycle kills a random node with SIGKILL and starts it
again. The accounting is the same, read from any node (the delivery log is shared).
"""
import fcntl
import glob
import json
import os
import random
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

TOPIC = "com.example.chaos"
TEAM = "CHAOSTEAM1"
KEY = "CHAOSKEY01"


def free_port(taken):
    """A free loopback port below the kernel's ephemeral range, so nothing else takes it while the gateway is down."""
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    while True:
        port = random.randint(10000, low - 1)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        taken.add(port)
        return port


class PrivatePostgres:
    """A PostgreSQL server of the script's own, in `directory`, on `port` (Debian's postgresql)."""

    def __init__(self, directory, port, settings=""):
        versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not versions:
            raise SystemExit("--database postgres needs Debian's postgresql package (initdb, pg_ctl)")
        self.bin, self.directory, self.port = os.path.dirname(versions[-1]), directory, port
        self.data = os.path.join(directory, "postgres")
        # As root, PostgreSQL runs as the postgres account, which must reach the directory.
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        os.makedirs(self.data, mode=0o700)
        if self.as_user:
            os.chmod(directory, 0o755)
            shutil.chown(self.data, "postgres", "postgres")
        self.run("initdb", "-D", self.data, "-U", "herald", "-A", "trust", "-E", "UTF8", "--no-instructions")
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.data, "server.log"), "-w", "-o",
                 f"-p {port} -c listen_addresses=127.0.0.1 -k {self.data} -c max_connections=300 {settings}", "start")
        self.run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "herald", "herald")
        self.url = f"postgres://herald@127.0.0.1:{port}/herald"

    def run(self, program, *arguments):
        subprocess.run(self.as_user + [os.path.join(self.bin, program), *arguments], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={"PATH": os.environ["PATH"], "LC_ALL": "C", "LANG": "C"})

    def sql(self, statement):
        """Runs SQL in the herald database with psql; returns its unaligned, tuples-only output."""
        return subprocess.run(
            [os.path.join(self.bin, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "herald", "-d", "herald",
             "-tAc", statement], check=True, capture_output=True, text=True,
            env={"PATH": os.environ["PATH"], "LC_ALL": "C", "LANG": "C"}).stdout.strip()

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")


class Gateway:
    def __init__(self, herald, state, ports, database=None, extra=(), sockets=None):
        """`ports` names tls, dev, admin and link; with "channels-dev" too, the channel management
        API listens (its TLS listener on a free port), else it does not. `extra`: more arguments
        for `herald gateway` (a list the caller may change between starts). `sockets`: listening
        sockets, as (listener name, socket) pairs ("link", …), handed to every start of the gateway
        as systemd's socket activation does (docs/listeners.md); they stay open here across
        restarts."""
        self.herald, self.state, self.ports, self.database = herald, state, ports, database
        self.extra = list(extra)
        self.sockets = list(sockets or [])
        self.process = None

    def hand_over(self):
        """In the child, before exec: the sockets at descriptors 3 and up, and the variables naming them."""
        # Out of the way first, so that placing one cannot close another that sits at 3 and up.
        high = [fcntl.fcntl(sock.fileno(), fcntl.F_DUPFD, 100) for _, sock in self.sockets]
        for index, descriptor in enumerate(high):
            os.dup2(descriptor, 3 + index)
        os.environ.update({"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": str(len(self.sockets)),
                           "LISTEN_FDNAMES": ":".join(name for name, _ in self.sockets)})

    def start(self):
        self.launch()
        self.wait_ready()

    def launch(self):
        """Starts the process; wait_ready() waits until it listens."""
        log = open(self.state + ".log", "a")
        self.process = subprocess.Popen(
            [self.herald, "gateway", "--state", self.state, "--port", str(self.ports["tls"]),
             "--dev-port", str(self.ports["dev"]), "--admin-port", str(self.ports["admin"]),
             "--link-port", str(self.ports["link"]), "--no-legacy", "--log-level", "warning"]
            + (["--channels-port", "0", "--channels-dev-port", str(self.ports["channels-dev"])]
               if "channels-dev" in self.ports else ["--no-channels"])
            + (["--database", self.database] if self.database else []) + self.extra,
            stdout=subprocess.PIPE, stderr=log, text=True,
            preexec_fn=self.hand_over if self.sockets else None,
            pass_fds=tuple(range(3, 3 + len(self.sockets))))

    def wait_ready(self):
        for line in self.process.stdout:
            if "herald gateway ready" in line:
                break
        else:
            raise SystemExit("the gateway did not start; see " + self.state + ".log")
        threading.Thread(target=lambda p=self.process: [None for _ in p.stdout], daemon=True).start()
        info = json.load(open(os.path.join(self.state, "gateway.json")))
        self.admin, self.token = info["adminURL"], info["adminToken"]

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait()

    def admin_call(self, method, path, body=None):
        request = urllib.request.Request(self.admin + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"authorization": "Bearer " + self.token,
                                                  "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=20) as answer:
                text = answer.read()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise


def provision(herald, gateway, work, team, key, topic):
    """Registers a team, a key (its .p8 in `work`) and an app with the gateway; returns a provider token."""
    p8 = os.path.join(work, "key.p8")
    subprocess.run([herald, "keys", "new", "--state", gateway.state, "--team", team, "--key-id", key, "--out", p8],
                   check=True, stdout=subprocess.DEVNULL)
    gateway.admin_call("POST", "/apps", {"bundleID": topic, "teamID": team})
    return subprocess.run([herald, "keys", "token", "--p8", p8, "--key-id", key, "--team", team],
                          check=True, capture_output=True, text=True).stdout.strip()


class Device:
    def __init__(self, herald, work, index, link_urls):
        self.herald, self.index, self.link_urls = herald, index, link_urls
        self.identity = os.path.join(work, f"device{index}.json")
        self.log = os.path.join(work, f"device{index}.log")
        self.process = None
        self.token = None

    def start(self):
        out = open(self.log, "a")
        self.process = subprocess.Popen(
            [self.herald, "test-device", *[a for url in self.link_urls for a in ("--gateway", url)],
             "--identity", self.identity,
             "--device-id", f"chaos-{self.index}", "--topic", TOPIC, "--json", "--reconnect"],
            stdout=out, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            for line in open(self.log):
                event = json.loads(line)
                if event.get("event") == "ready" and self.process.poll() is None:
                    self.token = event["tokens"][TOPIC]
            if self.token and self.ready_count() > self.readies_before:
                return
            time.sleep(0.05)
        raise SystemExit(f"device {self.index} did not connect")

    def ready_count(self):
        return sum(1 for line in open(self.log) if '"event":"ready"' in line)

    def launch(self):
        self.readies_before = self.ready_count() if os.path.exists(self.log) else 0
        self.start()

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait()

    def events(self):
        for line in open(self.log):
            yield json.loads(line)


class Sender(threading.Thread):
    """Pushes over one h2c connection at a time, one request at a time, recording each answer."""

    def __init__(self, ports, jwt, devices, results, stop, rng):
        super().__init__(daemon=True)
        self.ports, self.jwt, self.devices, self.results, self.stop, self.rng = ports, jwt, devices, results, stop, rng
        self.port = ports[0]

    def run(self):
        import h2.exceptions
        while not self.stop.is_set():
            try:
                self.connection()
            except (OSError, h2.exceptions.ProtocolError, ConnectionError):
                time.sleep(0.05)

    def connection(self):
        import h2.config
        import h2.connection
        import h2.events
        # Each connection to one of the nodes (the only one, without --nodes).
        self.port = self.rng.choice(self.ports)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        try:
            while not self.stop.is_set():
                device = self.rng.choice(self.devices)
                expiration = "0" if self.rng.random() < 0.3 else str(int(time.time()) + 3600)
                apns_id = str(uuid.uuid4())
                stream = conn.get_next_available_stream_id()
                conn.send_headers(stream, [
                    (":method", "POST"), (":scheme", "http"), (":authority", f"127.0.0.1:{self.port}"),
                    (":path", "/3/device/" + device.token), ("authorization", "bearer " + self.jwt),
                    ("apns-topic", TOPIC), ("apns-id", apns_id), ("apns-expiration", expiration)])
                conn.send_data(stream, b'{"aps":{"alert":"chaos"}}', end_stream=True)
                sock.sendall(conn.data_to_send())
                status = None
                done = False
                while not done:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionError("closed")
                    for event in conn.receive_data(data):
                        if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                            status = int(dict(event.headers)[b":status"])
                        elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                            done = True
                        elif isinstance(event, h2.events.ConnectionTerminated):
                            raise ConnectionError("GOAWAY")
                    pending = conn.data_to_send()
                    if pending:
                        sock.sendall(pending)
                self.results.append((apns_id, status, device.index, expiration))
        finally:
            sock.close()


def start_cluster(herald, work, nodes, database, extra=()):
    """Starts `nodes` gateways in `work` (the first in `gateway`, node k in `gateway-k`), on
    `database`: a private PostgreSQL server when it is "postgres", SQLite when None. Returns the
    private server (or None), the database URL and the gateways."""
    taken = set()
    postgres = None
    if database == "postgres":
        postgres = PrivatePostgres(work, free_port(taken))
        database = postgres.url
    gateways = []
    for node in range(nodes):
        ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
        state = os.path.join(work, "gateway" if node == 0 else f"gateway-{node + 1}")
        # One after the other: the first node's secrets become the cluster's.
        gateways.append(Gateway(herald, state, ports, database, extra))
        gateways[-1].start()
    return postgres, database, gateways


def main():
    herald, cycles = sys.argv[1], int(sys.argv[2])

    def option(name, default=None):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default

    seed = int(option("--seed", int(time.time())))
    nodes = int(option("--nodes", 1))
    database = option("--database", "postgres" if nodes > 1 else None)
    if nodes < 1:
        raise SystemExit("--nodes: 1 or more")
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="herald-chaos-")
    postgres, database, gateways = start_cluster(herald, work, nodes, database)
    gateway = gateways[0]
    jwt = provision(herald, gateway, work, TEAM, KEY, TOPIC)
    links = [f"ws://127.0.0.1:{g.ports['link']}/device/v1" for g in gateways]
    # Device i on node i mod N first, then the others in turn.
    devices = [Device(herald, work, i, links[i % nodes:] + links[:i % nodes]) for i in range(4)]
    for device in devices:
        device.launch()
    devices[3].stop()  # registered, then offline until the end

    results, stop = [], threading.Event()
    dev_ports = [g.ports["dev"] for g in gateways]
    senders = [Sender(dev_ports, jwt, devices, results, stop, random.Random(rng.random())) for _ in range(4)]
    for sender in senders:
        sender.start()
    started = time.time()
    for cycle in range(1, cycles + 1):
        time.sleep(rng.uniform(0.2, 1.5))
        victim = rng.choice(gateways)
        victim.kill()
        # Device 2 goes offline now and then, and comes back a cycle or two later.
        if cycle % 7 == 0:
            devices[2].kill()
        victim.start()
        if cycle % 7 == 2 and devices[2].process.poll() is not None:
            devices[2].launch()
        if cycle % 10 == 0:
            print(f"chaos-gateway: cycle {cycle}/{cycles}, {sum(1 for r in results if r[1] == 200)} answered 200",
                  flush=True)
    stop.set()
    for sender in senders:
        sender.join(timeout=30)

    # Everyone online; wait until the store has given everything away.
    for device in devices[2:]:
        if device.process is None or device.process.poll() is not None:
            device.launch()
    deadline = time.time() + 120
    while time.time() < deadline:
        stored = sum(len(gateway.admin_call("GET", f"/devices/chaos-{d.index}/stored") or []) for d in devices)
        if stored == 0:
            break
        time.sleep(0.2)
    time.sleep(1)  # acknowledgements in flight reach the store (the log is written behind them)
    for device in devices:
        device.stop()

    delivered, duplicates, wrong_device = {}, 0, 0
    for device in devices:
        for event in device.events():
            if event.get("event") == "push":
                delivered.setdefault(event["apnsID"], device.index)
            elif event.get("event") == "duplicate":
                duplicates += 1
    accepted = [r for r in results if r[1] == 200]
    counts = {"delivered": 0, "replaced": 0, "discarded": 0, "LOST": 0}
    lost = []
    for apns_id, _, index, expiration in accepted:
        if apns_id in delivered:
            counts["delivered"] += 1
            if delivered[apns_id] != index:
                wrong_device += 1
            continue
        log = gateway.admin_call("GET", "/deliveries/" + apns_id) or []
        kinds = [e["kind"] for e in log]
        if "replaced" in kinds:
            counts["replaced"] += 1
        elif expiration == "0" and "discarded" in kinds:
            counts["discarded"] += 1
        else:
            counts["LOST"] += 1
            lost.append((apns_id, index, expiration, kinds))
    for g in gateways:
        g.stop()
    if postgres:
        postgres.stop()
    where = f", {nodes} nodes on {database}" if nodes > 1 or database else ""
    print(f"chaos-gateway: seed {seed}, {cycles} cycles in {time.time() - started:.0f} s{where}")
    print(f"  200s: {len(accepted)}  (other answers: {sum(1 for r in results if r[1] not in (200, None))})")
    print(f"  delivered: {counts['delivered']}  replaced: {counts['replaced']}  "
          f"discarded (expiration 0, device offline): {counts['discarded']}")
    print(f"  duplicates (delivered again after a crash, dropped by the device): {duplicates}")
    print(f"  delivered to the wrong device: {wrong_device}")
    print(f"  LOST: {counts['LOST']}")
    for item in lost[:20]:
        print("    lost:", item)
    if counts["LOST"] == 0 and wrong_device == 0:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"  kept {work} for a look")
    return 1 if counts["LOST"] or wrong_device else 0


if __name__ == "__main__":
    sys.exit(main())
