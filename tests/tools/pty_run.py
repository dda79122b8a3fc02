#!/usr/bin/env python3
"""Runs a command at a pseudo-terminal and types into it, as a person would.

Usage: pty_run.py STEPS_JSON -- COMMAND [ARGS...]
STEPS_JSON is a list of [wait_for, send]: wait until the screen shows `wait_for`, then type
`send` (use "\\u0003" for Ctrl-C). Prints everything the command printed, then a last line
`exit: N` (N is -SIGNAL if a signal ended it). Gives up after 20 seconds per step.
"""

import json
import os
import pty
import select
import sys
import time


def main():
    steps = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    seen = b""

    def read_some(timeout):
        nonlocal seen
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return False
        if not chunk:
            return False
        seen += chunk
        return True

    for wait_for, send in steps:
        deadline = time.time() + 20
        while wait_for.encode() not in seen and time.time() < deadline:
            if not read_some(0.1):
                break
        if wait_for.encode() not in seen:
            sys.stdout.write(seen.decode(errors="replace"))
            print(f"\nexit: timeout waiting for {wait_for!r}")
            os.kill(pid, 9)
            return 1
        time.sleep(0.2)
        os.write(fd, send.encode())
    # Read until the command closes the terminal (it exited), then collect its status.
    deadline = time.time() + 20
    while time.time() < deadline and read_some(0.1):
        pass
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    sys.stdout.write(seen.decode(errors="replace"))
    print(f"\nexit: {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
