#!/usr/bin/env python3
"""What a push costs on PostgreSQL, and what crossing between nodes costs.

usage: bench_cluster.py HERALD [--pushes N]   (run by scripts/bench-cluster.sh)

Starts a private PostgreSQL server (Debian's initdb and pg_ctl, with pg_stat_statements loaded) and
two gateways on it, A and B, and one gateway on SQLite for reference. Each run sends N pushes with
h2load (4 connections, 16 streams each) to gateway A's development listener and reports the
provider's pushes answered per second; on PostgreSQL also the statements the database ran and the
WAL bytes it wrote per push (pg_stat_statements and pg_current_wal_lsn, every statement of the
herald database counted: the nodes' followers, heartbeats and claims included).

  offline   1,000 devices that are not connected, pushes spread over them (each stored; APNs'
            one-per-app-per-device policy replaces the one before)
  online    one `herald test-device` linked to A: each 200 waits for the device's acknowledgement
  crossing  the same device linked to B, pushes sent to A: A forwards each push to B over HTTP/2
            (docs/cluster.md), B's 200 waits for the device's acknowledgement and A relays it; the
            ratio to `online` (same run, same machine) is the cost of forwarding. Also how many went
            through the store instead (forwarding failed) or were replaced there.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from chaos_gateway import Gateway, PrivatePostgres, free_port, provision  # noqa: E402

TOPIC = "com.example.bench"
TEAM = "BENCHTEAM1"
KEY = "BENCHKEY01"


def h2load(port, uris, pushes, jwt, work):
    uri_file = os.path.join(work, "uris.txt")
    with open(uri_file, "w") as f:
        f.write("\n".join(f"http://127.0.0.1:{port}/3/device/{token}" for token in uris) + "\n")
    payload = os.path.join(work, "payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"alert":"bench"}}')
    out = subprocess.run(
        ["h2load", "-n", str(pushes), "-c", "4", "-m", "16", "-i", uri_file, "-d", payload,
         "-H", "authorization: bearer " + jwt, "-H", "apns-topic: " + TOPIC],
        capture_output=True, text=True).stdout
    ok = int(re.search(r"status codes: (\d+) 2xx", out).group(1))
    seconds = float(re.search(r"finished in ([\d.]+)(m?s)", out).group(1))
    if re.search(r"finished in [\d.]+ms", out):
        seconds /= 1000
    return ok, seconds


def devices(gateway, count, prefix):
    tokens = []
    for i in range(count):
        gateway.admin_call("POST", "/devices", {"id": f"{prefix}-{i}"})
        tokens.append(gateway.admin_call("POST", f"/devices/{prefix}-{i}/apps", {"bundleID": TOPIC})["token"])
    return tokens


class Counter:
    """The statements and WAL bytes of the herald database between two readings."""

    def __init__(self, postgres):
        self.postgres = postgres

    def start(self):
        self.postgres.sql("SELECT pg_stat_statements_reset()")
        self.lsn = self.postgres.sql("SELECT pg_current_wal_lsn()")

    def replaced(self):
        """Pushes the offline policy replaced so far (the delivery log's `replaced` steps)."""
        return int(self.postgres.sql(
            # A delivered push's record is binary (its first byte 1) and never a replacement.
            "SELECT count(DISTINCT apns_id) FROM event WHERE CASE WHEN get_byte(record, 0) = 1 THEN false "
            "ELSE convert_from(record, 'UTF8') LIKE '%\"replaced\"%' END"))

    def read(self):
        calls = int(self.postgres.sql(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = 'herald' AND s.query NOT LIKE '%pg_stat_statements%'"))
        wal = int(float(self.postgres.sql(f"SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{self.lsn}')")))
        return calls, wal


def forwarded(gateway):
    """Gateway's herald_pushes_forwarded_total by result."""
    request = urllib.request.Request(gateway.admin + "/metrics", headers={"authorization": "Bearer " + gateway.token})
    with urllib.request.urlopen(request, timeout=20) as answer:
        text = answer.read().decode()
    return {m.group(1): int(float(m.group(2)))
            for m in re.finditer(r'herald_pushes_forwarded_total\{result="(\w+)"\} ([\d.e+]+)', text)}


def device(herald, gateway, work, name):
    """A test-device linked to `gateway`, registered for TOPIC; returns (process, token, log path)."""
    log = os.path.join(work, name + ".log")
    process = subprocess.Popen(
        [herald, "test-device", "--gateway", f"ws://127.0.0.1:{gateway.ports['link']}/device/v1",
         "--identity", os.path.join(work, name + ".json"), "--topic", TOPIC, "--json", "--quiet"],
        stdout=open(log, "w"), stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        for line in open(log):
            event = json.loads(line)
            if event.get("event") == "ready":
                return process, event["tokens"][TOPIC], event["device"]
        time.sleep(0.05)
    raise SystemExit(f"{name} did not connect")


def main():
    herald = sys.argv[1]
    pushes = int(sys.argv[sys.argv.index("--pushes") + 1]) if "--pushes" in sys.argv else 20000
    work = tempfile.mkdtemp(prefix="herald-bench-cluster-")
    taken = set()
    postgres = PrivatePostgres(work, free_port(taken), "-c shared_preload_libraries=pg_stat_statements")
    postgres.sql("CREATE EXTENSION pg_stat_statements")

    def gateway(name, database):
        g = Gateway(herald, os.path.join(work, name),
                    {n: free_port(taken) for n in ("tls", "dev", "admin", "link")}, database)
        g.start()
        return g

    rows = []
    replaced = {}
    sqlite = gateway("sqlite", None)
    a = gateway("a", postgres.url)
    b = gateway("b", postgres.url)
    jwt_sqlite = provision(herald, sqlite, work + "/", TEAM, KEY, TOPIC)
    os.rename(os.path.join(work, "key.p8"), os.path.join(work, "sqlite-key.p8"))
    jwt = provision(herald, a, work, TEAM, KEY, TOPIC)
    counter = Counter(postgres)

    # Offline: 1,000 devices, not connected.
    offline_sqlite = devices(sqlite, 1000, "off")
    offline = devices(a, 1000, "off")
    time.sleep(1)  # the other node reads the new devices back (herald_directory)
    ok, seconds = h2load(sqlite.ports["dev"], offline_sqlite, pushes, jwt_sqlite, work)
    rows.append(("offline, SQLite (one node)", ok, seconds, None, None, None))
    counter.start()
    ok, seconds = h2load(a.ports["dev"], offline, pushes, jwt, work)
    rows.append(("offline, PostgreSQL", ok, seconds, *counter.read(), None))

    # Online: one device on A, then on B (pushes still sent to A).
    for name, holder in (("online, PostgreSQL, device on the same node", a),
                         ("crossing: sent to A, device on B", b)):
        process, token, device_id = device(herald, holder, work, "dev-" + name.split(",")[0].split(":")[0])
        time.sleep(1)  # A reads the registration back
        replaced_before = counter.replaced()
        counter.start()
        started = time.time()
        ok, seconds = h2load(a.ports["dev"], [token], pushes, jwt, work)
        # Until the device has them all: the store is empty for it.
        while a.admin_call("GET", f"/devices/{device_id}/stored"):
            time.sleep(0.05)
        drained = time.time() - started
        rows.append((name, ok, seconds, *counter.read(), drained))
        replaced[name] = counter.replaced() - replaced_before
        if holder is b:
            crossing = forwarded(a)
        process.terminate()
        process.wait()

    for g in (sqlite, a, b):
        g.stop()
    postgres.stop()
    print(f"bench-cluster: {pushes} pushes per run, h2load -c 4 -m 16, to gateway A's development listener")
    print(f"{'run':48} {'200s':>6} {'pushes/s':>9} {'stmts/push':>10} {'WAL B/push':>10} {'all delivered':>14}")
    for name, ok, seconds, calls, wal, drained in rows:
        print(f"{name:48} {ok:>6} {ok / seconds:>9.0f} "
              f"{'' if calls is None else f'{calls / ok:.1f}':>10} {'' if wal is None else f'{wal / ok:.0f}':>10} "
              f"{'' if drained is None else f'{drained:.1f} s':>14}")
    for name, count in replaced.items():
        print(f"{name}: {count} of the pushes answered 200 were replaced in the store before the device had them")
    print(f"crossing: forwarded to B and answered by it: {crossing.get('answered', 0)}, "
          f"forwarding failed (stored by A instead): {crossing.get('failed', 0)}")
    rate = {name: ok / seconds for name, ok, seconds, *_ in rows}
    same = rate["online, PostgreSQL, device on the same node"]
    cross = rate["crossing: sent to A, device on B"]
    print(f"forwarding: crossing / same node = {cross / same:.2f} ({cross:.0f} vs {same:.0f} pushes/s)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
