#!/usr/bin/env python3
"""Holds a listening socket across a server's restarts, as systemd does with a socket unit.

usage: socket_holder.py HOST:PORT NAME [HOST:PORT NAME...] -- COMMAND [ARGUMENT...]

Binds each HOST:PORT (PORT 0: a free one), listens, and prints `listening HOST:PORT` for each, with
the port bound, in order. Then it reads commands on its standard input, one per line:

  start   runs COMMAND with the sockets as descriptors 3 and up, and LISTEN_PID (the command's own
          process id), LISTEN_FDS (their number) and LISTEN_FDNAMES (their NAMEs, separated by
          colons) in its environment (systemd's protocol); prints `started PID`. The command's
          output goes to this script's output.
  wait    waits for the command to end; prints `exited STATUS` (a signal: its negative number).

At the end of its input it kills a command still running and exits. The sockets stay open the
whole time, so that connections made while no command runs wait in their queues.
"""
import fcntl
import os
import socket
import subprocess
import sys


def main():
    if "--" not in sys.argv or sys.argv.index("--") < 3 or sys.argv.index("--") % 2 == 0:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    pairs, command = sys.argv[1:split], sys.argv[split + 1:]
    if not command:
        sys.exit(__doc__)
    listeners, names = [], []
    for address, name in zip(pairs[0::2], pairs[1::2]):
        host, port = address.rsplit(":", 1)
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, int(port)))
        listener.listen(4096)
        print(f"listening {host}:{listener.getsockname()[1]}", flush=True)
        listeners.append(listener)
        names.append(name)
    count = len(listeners)

    def hand_over():
        # In the child, before exec: the sockets at descriptors 3 and up (moved out of the way first,
        # so that placing one cannot close another), and the variables naming this process.
        high = [fcntl.fcntl(listener.fileno(), fcntl.F_DUPFD, 100) for listener in listeners]
        for index, descriptor in enumerate(high):
            os.dup2(descriptor, 3 + index)
        os.environ.update({"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": str(count),
                           "LISTEN_FDNAMES": ":".join(names)})

    child = None
    for line in sys.stdin:
        match line.strip():
            case "start":
                # pass_fds keeps descriptors 3 and up open (and inheritable) in the child after hand_over.
                child = subprocess.Popen(command, preexec_fn=hand_over, pass_fds=tuple(range(3, 3 + count)))
                print(f"started {child.pid}", flush=True)
            case "wait":
                print(f"exited {child.wait() if child else 'none'}", flush=True)
            case other:
                print(f"unknown command {other!r}", flush=True)
    if child and child.poll() is None:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
