"""``/proc/thread-self/io`` and ``/proc/self/io``: bytes read and written by every measure, and the syscall
counts of the ``"proc"`` source (``syscr``/``syscw``) when the kernel's counters are not available.

Each file is opened once (the thread's own; the process's, shared, for ``children=True``) and re-read with
``pread`` at offset 0, where the kernel regenerates it: one syscall per reading, written in the ledger.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os

from .ledger import OPENAT, ledger, tls


class IoFile:
    """A /proc io file kept open and re-read with pread (seq files regenerate at offset 0)."""

    __slots__ = ("fd",)

    def __init__(self, path: str) -> None:
        ledger()[OPENAT] += 1
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> tuple[int, int, int, int, int]:
        """(rchar, wchar, syscr, syscw, bytes this read itself returned)."""
        data = os.pread(self.fd, 512, 0)
        v = data.split()
        # rchar: N / wchar: N / syscr: N / syscw: N / read_bytes ... in this fixed order
        return int(v[1]), int(v[3]), int(v[5]), int(v[7]), len(data)

    def __del__(self, _close=os.close) -> None:  # (bound early: at interpreter exit ``os`` may be gone)
        try:
            _close(self.fd)
        except OSError:
            pass


proc_self_io: IoFile | None = None  # the process's, for children=True (the thread's own is ``tls.io``)


def io(children: bool) -> IoFile | None:
    """The io file a measure reads: the process's (children included) or the thread's; None if unreadable."""
    global proc_self_io
    try:
        if children:
            if proc_self_io is None:
                proc_self_io = IoFile("/proc/self/io")
            return proc_self_io
        f = getattr(tls, "io", None)
        if f is None:
            f = tls.io = IoFile("/proc/thread-self/io")
        return f
    except OSError:
        return None


def forget_after_fork() -> None:
    """The process's io file is the parent's: a forked child opens its own."""
    global proc_self_io
    proc_self_io = None
