#!/usr/bin/env python3
"""The floor under a reconnection: server CPU per connection for accepting it, reading a device's
upgrade request and writing the `101` with a welcome-sized frame in one write, then holding it.

usage: bench_reconnect_floor.py FLOOR HERALD [N] [ROUNDS]   (run by scripts/bench-reconnect-floor)

FLOOR is Benchmarks' `reconnect-floor`, HERALD a release `herald`. Each round measures, one after the
other, with the same client (`reconnect-floor connect`: N connections, 256 in flight, from 16
loopback addresses of its own, each one's request sent and its whole answer read, then held):

  epoll      the kernel's floor: one thread, epoll, accept4, read, write; no framework
  nio        SwiftNIO: the gateway's socket options and its default number of device-link event loops
             (half the cores, at least one), one handler that answers
  nio-http   SwiftNIO's parts as the gateway's handshake uses them: NIO's HTTP/1.1 decoder reads
             the request, and at its end the answer is written and the decoder and the handler are
             replaced by NIO's WebSocket frame decoder and encoder and a handler that holds the link
  herald     `herald gateway` (SQLite state, cleartext loopback link): the same request without a
             `Herald-Resume`, answered with the `101` and the link's `challenge`; the device never
             authenticates, so this is the gateway's handshake without the ticket, the registration
             and the backlog read that a resumption adds
  resumed    `herald gateway` again, a fresh process on a state that holds N devices (made once,
             before the first round, by `reconnect-floor tickets`: each signed its `hello` and kept
             the ticket its `welcome` gave); every request carries that device's `Herald-Resume`,
             so each connection is a whole reconnection of the storm's (the ticket checked, the
             device attached, the `101` and its `welcome` in one write), with the same client as
             the rows above instead of the storm's sleeping devices and their spread
             (scripts/bench-reconnect.sh); every answer must be a `welcome`

Then, in the same round, the device side's layers, each the client of a fresh `herald gateway` on
the resumed row's state (the same N resumptions; the epoll client of the `resumed` row is their
floor):

  nio        NIO's ClientBootstrap with the device's socket options and one handler that writes the
             request and reads the whole answer
  nio-http   NIO's HTTP/1.1 encoder and decoder, the `101` checked and the swap to NIO's WebSocket
             frame handlers, as the device's handshake does without Herald's link handler
  herald     `GatewayLinkClient.connect` presenting each device's ticket: what `herald test-device`
             does for every device it holds, on NIO's loops as it runs them

CPU is the server's user and system time from just before the client starts to the moment it has
every answer (/proc/PID/stat), divided by N; memory is the growth of its resident memory
(VmRSS) over the same time, divided by N: what a fresh process faults in for each link it holds. A
client's CPU is its own (getrusage) over its whole run, divided by N.
Prints a line per server, client and round; the servers' ratios to the kernel's floor and to 60 us (a
fifth of the 0.3 ms per reconnection that issue 35 started from); and the clients' ratios to the
epoll client's and to 90 and 130 us (a fifth of the 0.45-0.65 ms of device CPU it started from).
With BENCH_RECONNECT_FLOOR_PERF=PREFIX in the environment, `perf record -g` records each device
layer's client (to PREFIX.nio, PREFIX.nio-http and PREFIX.herald) and the `resumed` row's gateway
(PREFIX.resumed); the last round's are kept.
Debian's python3 is enough.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_reconnect import cpu_seconds  # noqa: E402
from chaos_gateway import Gateway, free_port  # noqa: E402

TARGET_US = 60.0
SOURCES = [f"127.0.9.{i}" for i in range(1, 17)]
IN_FLIGHT = 256
MODES = ("epoll", "nio", "nio-http", "herald", "resumed")
# The device side's layers, each the client of a fresh `herald gateway` on the resumed row's state.
CLIENTS = ("nio", "nio-http", "herald")
# A fifth of the 0.45-0.65 ms of device CPU per reconnection that issue 35 started from: 90-130 us.
DEVICE_TARGET_US = (90.0, 130.0)


def start_floor(floor, mode, port):
    process = subprocess.Popen([floor, "serve", mode, str(port)], stdout=subprocess.PIPE, text=True)
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"bench-reconnect-floor: the {mode} server did not start")
    return process


def resident_kib(pid):
    """The resident memory of a process, in KiB (VmRSS)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(floor, pid, port, n, resume=None, layer=None, record=None):
    """Runs the client against `port` (with `resume`, the file of tickets its requests present; with
    `layer`, one of CLIENTS instead of the epoll client; with `record`, a file that `perf record -g`
    writes the server's samples to meanwhile); returns (server CPU, growth of the server's resident
    memory in KiB, client's report) for its n connections, all held."""
    recorder = None
    if record:
        recorder = subprocess.Popen(["perf", "record", "-g", "-q", "-p", str(pid), "-o", record],
                                    stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # perf attaches before the client starts; the server is idle meanwhile
    before, resident = cpu_seconds(pid), resident_kib(pid)
    presented = ["--resume", resume] if resume else []
    if layer:
        presented = ["--client", layer, *presented]
    command = [floor, "connect", str(port), str(n), str(IN_FLIGHT), *presented, *SOURCES]
    if layer and os.environ.get("BENCH_RECONNECT_FLOOR_PERF"):
        command = ["perf", "record", "-g", "-q", "-o", f"{os.environ['BENCH_RECONNECT_FLOOR_PERF']}.{layer}", "--",
                   *command]
    client = subprocess.Popen(command,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = client.stdout.readline()
    server = cpu_seconds(pid) - before
    grown = resident_kib(pid) - resident
    if recorder:
        recorder.send_signal(signal.SIGINT)
        recorder.wait()
    client.stdin.close()
    client.wait()
    if not line:
        raise SystemExit("bench-reconnect-floor: the client ended without answers")
    return server, grown, json.loads(line)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    floor, herald = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 18000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    work = tempfile.mkdtemp(prefix="herald-floor-")
    results, memory, clients = {}, {}, {}
    resumed_state, tickets = os.path.join(work, "resumed"), os.path.join(work, "tickets")
    try:
        # The resumed row's devices, once: each signs its hello, keeps its ticket, and goes offline.
        taken = set()
        ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
        gateway = Gateway(herald, resumed_state, ports)
        gateway.start()
        with open(tickets, "w") as out:
            made = subprocess.run([floor, "tickets", str(ports["link"]), str(n), *SOURCES], stdout=out)
        gateway.stop()
        if made.returncode != 0:
            raise SystemExit("bench-reconnect-floor: the resumed row's devices could not be made")
        for round_number in range(1, rounds + 1):
            for mode in MODES:
                taken = set()
                if mode in ("herald", "resumed"):
                    ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
                    state = resumed_state if mode == "resumed" else os.path.join(work, f"gateway{round_number}")
                    gateway = Gateway(herald, state, ports)
                    gateway.start()
                    pid, port, stop = gateway.process.pid, ports["link"], gateway.kill
                else:
                    port = free_port(taken)
                    process = start_floor(floor, mode, port)
                    pid = process.pid

                    def stop(process=process):
                        process.kill()
                        process.wait()
                try:
                    record = None
                    if mode == "resumed" and os.environ.get("BENCH_RECONNECT_FLOOR_PERF"):
                        record = os.environ["BENCH_RECONNECT_FLOOR_PERF"] + ".resumed"
                    server, grown, report = measure(floor, pid, port, n, tickets if mode == "resumed" else None,
                                                    record=record)
                finally:
                    stop()
                if mode == "resumed" and report["welcomed"] != n:
                    raise SystemExit(f"bench-reconnect-floor: {report['welcomed']} of {n} resumptions were welcomed")
                per = server / n * 1e6
                results.setdefault(mode, []).append(per)
                memory.setdefault(mode, []).append(grown / n)
                print(f"round {round_number} {mode:<8} {report['connections']} connections answered in "
                      f"{report['seconds']:.2f} s ({report['retried']} retried); server {per:6.1f} us per "
                      f"connection, client {report['cpu'] / n * 1e6:5.1f} us; server memory {grown / n:5.1f} KiB "
                      f"more per connection held", flush=True)
                if mode == "resumed":
                    clients.setdefault("epoll", []).append(report["cpu"] / n * 1e6)
            for layer in CLIENTS:
                taken = set()
                ports = {name: free_port(taken) for name in ("tls", "dev", "admin", "link")}
                gateway = Gateway(herald, resumed_state, ports)
                gateway.start()
                try:
                    server, _, report = measure(floor, gateway.process.pid, ports["link"], n, tickets, layer)
                finally:
                    gateway.kill()
                if report["welcomed"] != n:
                    raise SystemExit(f"bench-reconnect-floor: {report['welcomed']} of {n} resumptions by the "
                                     f"{layer} client were welcomed")
                per = report["cpu"] / n * 1e6
                clients.setdefault(layer, []).append(per)
                print(f"round {round_number} client {layer:<8} {report['connections']} resumptions answered in "
                      f"{report['seconds']:.2f} s ({report['retried']} retried); client {per:6.1f} us per "
                      f"connection, server {server / n * 1e6:5.1f} us", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kernel = min(results["epoll"])
    print(f"best of {rounds} round(s), server CPU per connection:")
    for mode, values in results.items():
        best = min(values)
        print(f"  {mode:<8} {best:6.1f} us: {best / kernel:4.2f} of the kernel's floor, "
              f"{best / TARGET_US:4.2f} of {TARGET_US:.0f} us; memory {min(memory[mode]):5.1f} KiB per connection")
    low, high = DEVICE_TARGET_US
    floor_client = min(clients["epoll"])
    print(f"best of {rounds} round(s), device CPU per connection, each a client of the resumed gateway:")
    for layer, values in clients.items():
        best = min(values)
        print(f"  {layer:<8} {best:6.1f} us: {best / floor_client:4.2f} of the epoll client's, "
              f"{best / low:4.2f} of {low:.0f} us, {best / high:4.2f} of {high:.0f} us")


if __name__ == "__main__":
    main()
