#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a person's terminal would, and prints all it wrote there.

    pty_run.py COMMAND [ARGUMENT …]

Standard output and standard error both go to the terminal (so a program that draws progress when
stderr is a terminal draws it); everything is copied to this script's standard output as written,
carriage returns and escape sequences included. Exits with the command's status.
"""
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
written = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:  # the terminal closed: the command ended
        break
    if not data:
        break
    written += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(written)
sys.exit(os.waitstatus_to_exitcode(status))
