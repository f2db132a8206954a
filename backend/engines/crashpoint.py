"""Crash points for the crash-consistency tests: make a native engine stop dead at its k-th step.

Every on-disk step of a commit (each lock, write, rename, unlink) calls ``step(label)`` just before it.
With no ``REFSCOPE_CRASH_*`` variable set, ``step`` is a function that does nothing (one call, no
lookups). The tests run the engine in a child process with:

- ``REFSCOPE_CRASH_AT=k``: SIGKILL ourselves at step k (1-based), i.e. before the k-th action happens;
- ``REFSCOPE_CRASH_TRACE=path``: append each step's label to ``path`` (to learn how many steps there are);
- ``REFSCOPE_CRASH_PAUSE=k``: SIGSTOP ourselves at step k (the parent inspects, then SIGCONTs).
"""

from __future__ import annotations

import os
import signal

_AT = int(os.environ.get("REFSCOPE_CRASH_AT") or 0)
_PAUSE = int(os.environ.get("REFSCOPE_CRASH_PAUSE") or 0)
_TRACE = os.environ.get("REFSCOPE_CRASH_TRACE") or ""
_count = 0


def _noop(label: str) -> None:
    return None


def _armed(label: str) -> None:
    global _count
    _count += 1
    if _TRACE:
        fd = os.open(_TRACE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        os.write(fd, f"{_count} {label}\n".encode())
        os.close(fd)
    if _count == _PAUSE:
        os.kill(os.getpid(), signal.SIGSTOP)
    if _count == _AT:
        os.kill(os.getpid(), signal.SIGKILL)


step = _armed if (_AT or _PAUSE or _TRACE) else _noop
