#!/usr/bin/env python3
"""Broadcast fan-out across the nodes of a cluster.

usage: bench_broadcast_cluster.py HERALD NODES SUBSCRIBERS BROADCASTS   (run by scripts/bench-broadcast.sh --nodes)

Starts a private PostgreSQL server and NODES gateways on it (--durability normal), creates a
no-storage channel on the first, and connects SUBSCRIBERS/NODES devices to each node with one
`herald test-device --idle-devices` per node, every device subscribed to the channel. Then
scripts/lib/bench_broadcast.py sends the broadcasts to the first node and reads when the last device
of every node had each one: the first node sends to its own subscribers and every other node hears
of the message from PostgreSQL (NOTIFY herald_broadcast) and sends to its own.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from chaos_gateway import Gateway, PrivatePostgres, free_port, provision  # noqa: E402

TOPIC = "com.example.bench"


def main():
    herald, nodes, subscribers, broadcasts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    per = subscribers // nodes
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < per + 1024:
        raise SystemExit(f"each gateway needs {per + 1024} file descriptors; the limit is {hard}: use more nodes")
    work = tempfile.mkdtemp(prefix="herald-bench-broadcast-")
    taken = set()
    postgres = PrivatePostgres(work, free_port(taken))
    gateways, devices = [], []
    try:
        for i in range(nodes):
            ports = {n: free_port(taken) for n in ("tls", "dev", "admin", "link")}
            if i == 0:
                ports["channels-dev"] = free_port(taken)
            g = Gateway(herald, os.path.join(work, f"node{i}"), ports, postgres.url)
            g.start()
            gateways.append(g)
        first = gateways[0]
        jwt = provision(herald, first, work, "BENCHTEAM1", "BENCHKEY01", TOPIC)
        answer = subprocess.run(
            ["curl", "-sf", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null",
             f"http://127.0.0.1:{first.ports['channels-dev']}/1/apps/{TOPIC}/channels",
             "-H", f"authorization: bearer {jwt}", "-d", '{"message-storage-policy":0,"push-type":"LiveActivity"}'],
            check=True, capture_output=True, text=True).stdout
        channel = next(line.split(":", 1)[1].strip() for line in answer.splitlines()
                       if line.lower().startswith("apns-channel-id:"))
        for g in gateways:
            while not any(app.get("bundleID") == TOPIC for app in g.admin_call("GET", "/apps") or []):
                time.sleep(0.1)
        started = time.time()
        outputs = []
        for i, g in enumerate(gateways):
            out = os.path.join(work, f"sub{i}.out")
            outputs.append(out)
            devices.append(subprocess.Popen(
                [herald, "test-device", "--gateway", f"ws://127.0.0.1:{g.ports['link']}/device/v1",
                 "--identity", os.path.join(work, f"sub{i}.json"), "--topic", TOPIC, "--channel", channel,
                 "--idle-devices", str(per), "--quiet", "--json"],
                stdout=open(out, "w"), stderr=subprocess.STDOUT))
        tokens = []
        for out, process in zip(outputs, devices):
            while True:
                lines = [json.loads(line) for line in open(out) if line.startswith("{")]
                ready = [line for line in lines if line.get("event") == "ready"]
                if ready:
                    tokens.append(ready[0]["tokens"][TOPIC])
                    break
                if process.poll() is not None:
                    raise SystemExit(open(out).read())
                time.sleep(0.5)
        print(f"{nodes} nodes on PostgreSQL; {nodes * (per + 1)} devices subscribed in {time.time() - started:.1f} s")
        payload = os.path.join(work, "payload.json")
        with open(payload, "w") as f:
            f.write('{"aps":{"alert":"reference"}}')
        dev = f"http://127.0.0.1:{first.ports['dev']}"
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "bench_broadcast.py"), dev, jwt,
                        channel, broadcasts, tokens[0], payload, *outputs], check=True)
    finally:
        for process in devices:
            process.terminate()
            process.wait()
        for g in gateways:
            g.stop()
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
