"""Running ``refscope`` with its stdout on a terminal (a pseudo-terminal), as a user at a shell would.

Text output escapes on a terminal and is git's raw bytes into a pipe, so tests of what a terminal receives
must give the command a real terminal. Output post-processing (LF -> CRLF) is turned off on the pty so the
bytes read are the bytes written; stderr stays a pipe (it is read separately).
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path


def run_tty(
    *args: str,
    cwd: str | Path | None = None,
    env: dict | None = None,
    timeout: float = 60.0,
    stdin: bytes | None = None,
    stderr_tty: bool = False,
) -> tuple[int, bytes, bytes]:
    """(exit status, what reached the terminal, stderr) of ``python -m refscope.app ARGS`` with stdout (and,
    with ``stderr_tty``, stderr too) on a pty."""  # fmt: skip
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # oflag: no LF -> CRLF
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen(
        [sys.executable, "-m", "refscope.app", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=slave,
        stderr=slave if stderr_tty else subprocess.PIPE,
    )
    os.close(slave)
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    out = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    else:
        proc.kill()
    err = b"" if stderr_tty else proc.stderr.read()
    rc = proc.wait(timeout=10)
    os.close(master)
    return rc, bytes(out), err
