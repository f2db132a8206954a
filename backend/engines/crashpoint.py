"""Crash points for the crash-consistency tests: make a native engine stop dead at its k-th step.

Every on-disk step of a commit (each lock, write, fsync, rename, unlink) calls ``step(label)`` just before
it. Unarmed, ``step`` is one global test and a return. Arming, from the environment at import time or with
``arm()`` (tests fork a child and arm it there):

- ``REFSCOPE_CRASH_AT=k`` / ``arm(at=k)``: SIGKILL ourselves at step k (1-based), before its action happens;
- ``REFSCOPE_CRASH_PAUSE=k`` / ``arm(pause=k)``: SIGSTOP ourselves at step k (the parent inspects, SIGCONTs);
- ``REFSCOPE_CRASH_TRACE=path`` / ``arm(trace=list)``: record every step's label (to count the steps).
"""

from __future__ import annotations

import os

_armed = False
_at = 0
_pause = 0
_trace_path = ""
_trace_list: list[str] | None = None
_count = 0


def arm(at: int = 0, pause: int = 0, trace: list[str] | None = None, trace_path: str = "") -> None:
    """Arm (or, with no arguments, disarm) the crash points and restart the step count."""
    global _armed, _at, _pause, _trace_list, _trace_path, _count
    _at, _pause, _trace_list, _trace_path, _count = at, pause, trace, trace_path, 0
    _armed = bool(at or pause or trace is not None or trace_path)


def step(label: str, detail: bytes | str | None = None) -> None:
    """Called before every on-disk action (``detail``: the ref or path, formatted only when armed)."""
    if _armed:
        _hit(label if detail is None else f"{label} {os.fsdecode(detail)}")


def _hit(label: str) -> None:
    global _count
    _count += 1
    if _trace_list is not None:
        _trace_list.append(label)
    if _trace_path:
        fd = os.open(_trace_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        os.write(fd, f"{_count} {label}\n".encode())
        os.close(fd)
    if _count in (_pause, _at):
        import signal  # only when armed: the CLI's import budget has no room for it

        os.kill(os.getpid(), signal.SIGSTOP if _count == _pause else signal.SIGKILL)


arm(
    at=int(os.environ.get("REFSCOPE_CRASH_AT") or 0),
    pause=int(os.environ.get("REFSCOPE_CRASH_PAUSE") or 0),
    trace_path=os.environ.get("REFSCOPE_CRASH_TRACE") or "",
)
