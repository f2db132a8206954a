"""Running ``refscope`` with its stdout on a terminal (a pseudo-terminal), as a user at a shell would.

Text output escapes on a terminal and is git's raw bytes into a pipe, so tests of what a terminal receives
must give the command a real terminal. Output post-processing (LF -> CRLF) is turned off on the pty so the
bytes read are the bytes written; stderr stays a pipe (it is read separately). Every read loop is ``pump``:
select with a short timeout, read what is there, stop at a condition, end of file or a deadline.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path


def raw_pty() -> tuple[int, int]:
    """(master, slave) of a new pty whose output is not post-processed (LF stays LF)."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # oflag: no LF -> CRLF
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    return master, slave


def pump(
    fd: int,
    out: bytearray,
    deadline: float,
    until: Callable[[], bool] = lambda: False,
    exited: Callable[[], bool] = lambda: False,
) -> str:
    """Read what ``fd`` gives into ``out`` until ``until()`` ("until"), end of file or EIO ("eof": every
    writer closed the terminal), nothing to read once ``exited()`` ("exited"), or ``deadline`` on the
    monotonic clock ("timeout")."""
    while time.monotonic() < deadline:
        if until():
            return "until"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return "eof"
            if not chunk:
                return "eof"
            out += chunk
        elif exited():
            return "exited"
    return "timeout"


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
    master, slave = raw_pty()
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
    if pump(master, out, time.monotonic() + timeout, exited=lambda: proc.poll() is not None) == "timeout":
        proc.kill()
    err = b"" if stderr_tty else proc.stderr.read()
    rc = proc.wait(timeout=10)
    os.close(master)
    return rc, bytes(out), err


def type_in_pty(
    args: list[str], env: dict[str, str], keys: bytes, ready: bytes, size: tuple[int, int] = (100, 30)
) -> tuple[int, bytes]:
    """Run ``refscope ARGS`` on a pty of ``size`` (columns, lines) as its controlling terminal, wait until
    ``ready`` is on screen, type ``keys``, and collect everything until it exits: (exit status, screen)."""
    import fcntl
    import struct

    pid, fd = os.forkpty()
    if pid == 0:  # child
        os.execve(sys.executable, [sys.executable, "-m", "refscope.app", *args], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    seen = bytearray()
    deadline = time.monotonic() + 60
    if pump(fd, seen, deadline, until=lambda: ready in seen) == "until":
        time.sleep(0.3)
        os.write(fd, keys)
        pump(fd, seen, deadline)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), bytes(seen)
