"""The meter's per-thread state: the active measure and the ledger of the meter's own syscalls.

Measures nest, and every figure leaves out the meter's own syscalls, including those of the measures nested
inside it. So each syscall the meter makes for its bookkeeping (reading counters, clocks and /proc, opening
things) is written down here as it is made, per thread; an enclosing measure takes the difference of the
ledger over its window out of its figures. What cannot be known in advance (reopening the inheriting counter
set inside a window) is counted exactly by the thread's own counters and kept in :func:`extra_calls`.
"""

from __future__ import annotations

import _thread

# The thread's state: ``active`` (the innermost measure), ``ledger``, ``extra``, ``own`` and ``kids`` (its
# counter sets, see perf), ``io`` (its /proc io file, see procio). Emptied in a forked child.
tls = _thread._local()

# Indices into the ledger: syscalls by name, then the bytes the meter's own reads returned (they show up in
# the thread's rchar).
PREAD, CLOCK, GETRUSAGE, READ, IOCTL, OPENAT, PERF_OPEN, BYTES = range(8)
LEDGER_NAMES = ("pread64", "clock_gettime", "getrusage", "read", "ioctl", "openat", "perf_event_open")


def ledger() -> list[int]:
    """This thread's ledger (indices above), created on first use."""
    led = getattr(tls, "ledger", None)
    if led is None:
        led = tls.ledger = [0] * 8
    return led


def extra_calls() -> list[tuple[str, int]]:
    """Bookkeeping syscalls counted exactly (by the own set) rather than known in advance: (name, count),
    with "" for the total. Emptied whenever no measure is active on the thread."""
    ex = getattr(tls, "extra", None)
    if ex is None:
        ex = tls.extra = []
    return ex


def forget_after_fork() -> None:
    """In a forked child only the forking thread is left, and what it held belongs to the parent."""
    vars(tls).clear()
