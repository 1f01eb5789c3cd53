#!/usr/bin/env python3
"""Holds a listening socket across a server's restarts, as systemd does with a socket unit.

usage: socket_holder.py HOST:PORT NAME -- COMMAND [ARGUMENT...]

Binds HOST:PORT (PORT 0: a free one), listens, and prints `listening HOST:PORT` with the port bound.
Then it reads commands on its standard input, one per line:

  start   runs COMMAND with the socket as descriptor 3 and LISTEN_PID (the command's own process
          id), LISTEN_FDS=1 and LISTEN_FDNAMES=NAME in its environment (systemd's protocol); prints
          `started PID`. The command's output goes to this script's output.
  wait    waits for the command to end; prints `exited STATUS` (a signal: its negative number).

At the end of its input it kills a command still running and exits. The socket stays open the
whole time, so that connections made while no command runs wait in its queue.
"""
import os
import socket
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    name, command = sys.argv[2], sys.argv[4:]
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(4096)
    print(f"listening {host}:{listener.getsockname()[1]}", flush=True)
    descriptor = listener.fileno()

    def hand_over():
        # In the child, before exec: the socket at descriptor 3 and the variables naming this process.
        os.dup2(descriptor, 3)
        os.environ.update({"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "1", "LISTEN_FDNAMES": name})

    child = None
    for line in sys.stdin:
        match line.strip():
            case "start":
                # pass_fds keeps descriptor 3 open (and inheritable) in the child after hand_over.
                child = subprocess.Popen(command, preexec_fn=hand_over, pass_fds=(3,))
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
