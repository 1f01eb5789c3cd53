#!/usr/bin/env python3
"""The one-node reconnect storm of this tree against the same storm of an earlier commit, in one run.

usage: bench_reconnect_against.py REF_TREE REF_HERALD HERALD N ROUNDS
       (run by scripts/bench-reconnect-against.sh)

Runs ROUNDS rounds; in each, REF_TREE's own scripts/bench-reconnect.sh N with REF_HERALD (the
earlier commit's storm, as that commit measured it), then this tree's with HERALD. The two alternate
so that both see the same hour of the machine, whose speed drifts by a third within an hour here.
Each storm is one gateway on SQLite, N idle devices and four that register an app, the gateway
stopped with SIGTERM and started again on the same state (what is measured: scripts/lib/
bench_reconnect.py, of each tree). From each it reads the "CPU meanwhile" line: the gateway's CPU
per device from its readiness until every device is back, and the test devices' over the same time.

It prints each round, each round's ratios (this tree's CPU per device over the earlier commit's)
and their range. Item 4 of issue 35 asks for a fifth (0.20) or less on both sides.
"""
import os
import re
import subprocess
import sys

# Both the old line ("CPU meanwhile: gateway 5.6 s (314 us per device), the test devices 11.6 s (643 us
# per device)") and the new one ("gateways 1.8 s (98 us per device), ...") name the gateway first.
CPU = re.compile(r"CPU meanwhile: gateways? [0-9.]+ s \((\d+) us per device\), "
                 r"the test devices [0-9.]+ s \((\d+) us per device\)")
BACK = re.compile(r"all (\d+) devices back ([0-9.]+) s")


def storm(tree, herald, n):
    """One storm of `tree`'s script with `herald`: (seconds back, gateway us, devices us)."""
    run = subprocess.run(["bash", "scripts/bench-reconnect.sh", str(n)], cwd=tree,
                         env=dict(os.environ, HERALD=herald), capture_output=True, text=True)
    output = run.stdout + run.stderr
    cpu = CPU.findall(output)
    back = BACK.findall(output)
    if run.returncode != 0 or not cpu or not back:
        sys.exit(f"bench-reconnect-against: the storm of {tree} failed (exit {run.returncode}):\n{output[-3000:]}")
    # The last storm the script ran: with tickets, when it runs more than one.
    return float(back[-1][1]), int(cpu[-1][0]), int(cpu[-1][1])


def main():
    ref_tree, ref_herald, herald, n, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    gateway, devices = [], []
    for r in range(1, rounds + 1):
        old = storm(ref_tree, ref_herald, n)
        new = storm(here, herald, n)
        print(f"round {r} reference: back {old[0]:.2f} s; CPU per device: gateway {old[1]} us, test devices {old[2]} us",
              flush=True)
        print(f"round {r} this tree: back {new[0]:.2f} s; CPU per device: gateway {new[1]} us, test devices {new[2]} us",
              flush=True)
        gateway.append(new[1] / old[1])
        devices.append(new[2] / old[2])
        print(f"round {r} ratio: gateway {gateway[-1]:.2f}, test devices {devices[-1]:.2f}", flush=True)
    print(f"bench-reconnect-against: CPU per reconnection, this tree over the reference, {rounds} round(s): "
          f"gateway {min(gateway):.2f}-{max(gateway):.2f}, test devices {min(devices):.2f}-{max(devices):.2f} "
          f"(a fifth is 0.20)")


if __name__ == "__main__":
    main()
