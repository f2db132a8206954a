"""The measure itself: ``with measure(name) as m: ...`` and ``m.report``, and :func:`status`.

The counting window: the counters (perf) are enabled on entry and disabled on exit, with the clock and the
/proc io file (procio) read around them; what the meter itself did inside the window (the ledger) is taken
out of the figures. The source is chosen per measure: perf, else strace for children, else /proc.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os
import time
from _operator import sub as _sub
from itertools import compress as _compress

from . import keeper, perf, procio
from . import ledger as thread_state
from .ledger import (
    BYTES,
    CLOCK,
    GETRUSAGE,
    IOCTL,
    LEDGER_NAMES,
    PREAD,
    READ,
    extra_calls,
    ledger,
    tls,
)
from .perf import CPU, IOC_DISABLE, IOC_ENABLE
from .report import OpReport
from .strace import parse_strace_files, strace_path


def status(children: bool = False) -> tuple[str, str]:
    """(the source a measure on this thread would use now, why): for headers of bench tables and diagnostics."""
    forced = os.environ.get("REFSCOPE_METER") or ""
    ctr = None if forced in ("proc", "strace") else perf.counters(children)
    if ctr is not None:
        return "perf", perf.get_setup().reason
    why = f"forced by REFSCOPE_METER={forced}" if forced in ("proc", "strace") else perf.get_setup().reason
    if children and forced != "proc" and strace_path() is not None:
        return "strace", why
    return "proc", why


class measure:
    """``with measure(name[, children=True]) as m: ...`` then ``m.report`` (an OpReport).

    Nesting works: an inner measure on the same thread reads the already-running counters at its start and
    end (its own reads are subtracted from its figures; the outer figures include them).
    """

    __slots__ = (
        "name",
        "children",
        "report",
        "_forced",
        "_src",
        "_ctr",
        "_nested",
        "_base",
        "_io",
        "_io0",
        "_c0",
        "_ru0",
        "_t0",
        "straced",
        "_prev",
        "_led0",
        "_ex0",
    )

    def __init__(self, name: str, children: bool = False, source: str | None = None) -> None:
        self.name = name
        self.children = children
        self.report: OpReport | None = None
        self._forced = source

    def __enter__(self) -> measure:
        children = self.children
        if _resource is None:
            _first_use()
        forced = self._forced or _env_source()
        ctr = None if forced in ("proc", "strace") else perf.counters(children)
        if ctr is not None:
            self._src = "perf"
        elif children and forced != "proc" and strace_path() is not None:
            self._src = "strace"
        else:
            self._src = "proc"
        self._ctr = ctr
        # the strace output files of the children started inside (see strace.child_argv); None: not straced
        self.straced: list[str] | None = [] if self._src == "strace" else None
        self._prev = getattr(tls, "active", None)
        tls.active = self
        led = ledger()
        io = self._io = procio.io(children)
        if io is not None:
            self._io0 = io.read()
            led[PREAD] += 1
            led[BYTES] += self._io0[4]
        else:
            self._io0 = None
        if ctr is None or not ctr.cpu:  # CPU time from clocks (the counters' task-clock otherwise)
            if children:
                ru = _resource.getrusage(_resource.RUSAGE_CHILDREN)
                self._ru0 = ru.ru_utime + ru.ru_stime
                led[GETRUSAGE] += 1
            self._c0 = time.thread_time_ns()
            led[CLOCK] += 1
        if ctr is None:
            self._led0 = led.copy()
            self._ex0 = len(extra_calls())
            self._t0 = time.perf_counter_ns()
            return self
        if ctr.depth:
            self._nested = True
            self._base = ctr.read()
            led[READ] += ctr.nreads
            led[BYTES] += ctr.read_bytes
            ctr.depth += 1
            self._led0 = led.copy()
            self._ex0 = len(extra_calls())
            self._t0 = time.perf_counter_ns()
            return self
        self._nested = False
        self._base = ctr.last
        ctr.depth = 1
        ioctl = perf.setup.ioctl  # type: ignore[union-attr]
        led[IOCTL] += 1
        self._led0 = led.copy()
        self._ex0 = len(extra_calls())
        if perf.setup.clock_in_window:  # type: ignore[union-attr]
            # the clock is read inside the counting window (vDSO: no syscall), so the time reported is the
            # operation's and not the enabling's or disabling's
            ioctl(ctr.fds[0], IOC_ENABLE, 0)
            self._t0 = time.perf_counter_ns()
        else:
            self._t0 = time.perf_counter_ns()
            ioctl(ctr.fds[0], IOC_ENABLE, 0)
        return self

    def __exit__(self, *exc: object) -> None:
        ctr = self._ctr
        led = tls.ledger
        after = None
        extra: list[tuple[str, int]] = []
        if ctr is not None:
            if self._nested:
                after = ctr.read()
                t1 = time.perf_counter_ns()
                inner = list(map(_sub, led, self._led0))
                extra = tls.extra[self._ex0 :]
                led[READ] += ctr.nreads
                led[BYTES] += ctr.read_bytes
            else:
                if perf.setup.clock_in_window:  # type: ignore[union-attr]
                    t1 = time.perf_counter_ns()
                    perf.setup.ioctl(ctr.fds[0], IOC_DISABLE, 0)  # type: ignore[union-attr]
                else:
                    perf.setup.ioctl(ctr.fds[0], IOC_DISABLE, 0)  # type: ignore[union-attr]
                    t1 = time.perf_counter_ns()
                inner = list(map(_sub, led, self._led0))
                extra = tls.extra[self._ex0 :]
                led[IOCTL] += 1
            ctr.depth -= 1
        else:
            t1 = time.perf_counter_ns()
            inner = list(map(_sub, led, self._led0))
        cpu_ns = 0
        if ctr is None or not ctr.cpu:
            cpu_ns = time.thread_time_ns() - self._c0
            led[CLOCK] += 1
            if self.children:
                ru = _resource.getrusage(_resource.RUSAGE_CHILDREN)
                cpu_ns += round((ru.ru_utime + ru.ru_stime - self._ru0) * 1e9)
                led[GETRUSAGE] += 1
        if ctr is not None and not self._nested:
            after = ctr.read()
            ctr.last = after
            led[READ] += ctr.nreads
            led[BYTES] += ctr.read_bytes
        io1 = None
        if self._io is not None:
            io1 = self._io.read()
            led[PREAD] += 1
            led[BYTES] += io1[4]
        tls.active = self._prev
        if self._prev is None:
            tls.extra.clear()

        bytes_read = bytes_written = 0
        if io1 is not None and self._io0 is not None:
            r0, w0, sr0, sw0, n0 = self._io0
            # the first read of the io file counted its own bytes, and so did the counter reads in between
            # and everything nested measures read for their own bookkeeping
            bytes_read = io1[0] - r0 - n0 - inner[BYTES]
            if ctr is not None:
                bytes_read -= ctr.read_bytes * (2 if self._nested else 1)
            bytes_written = io1[1] - w0
        source = self._src
        if after is not None:
            by_name, total = _deltas(
                ctr, self._base, after, self._nested, inner, [] if ctr.inherit else extra
            )
            if ctr.cpu:
                cpu_ns = after[-1] - self._base[-1]
                by_name.pop(CPU, None)
        elif source == "strace" and self.straced:
            by_name = parse_strace_files(self.straced)
            total = by_name.pop("total", sum(by_name.values()))
        else:
            source = "proc"
            total = 0
            by_name = {}
            if io1 is not None and self._io0 is not None:
                # minus the read of the io file itself and the reads nested measures made for themselves
                reads = io1[2] - self._io0[2] - 1 - inner[PREAD] - inner[READ]
                writes = io1[3] - self._io0[3]
                total = reads + writes
                by_name = {k: v for k, v in (("reads", reads), ("writes", writes)) if v}
        self.report = OpReport(
            self.name,
            (t1 - self._t0) / 1e6,
            cpu_ns / 1e6,
            total,
            by_name,
            bytes_read,
            bytes_written,
            source,
            self.children,
        )


_resource = None
_environ_data = getattr(os.environ, "_data", None)


def _env_source() -> str:
    """REFSCOPE_METER, looked up on every measure (tests set it) but without os.environ's slow path."""
    if _environ_data is not None:
        v = _environ_data.get(b"REFSCOPE_METER")
        return v.decode() if v else ""
    return os.environ.get("REFSCOPE_METER") or ""


def _first_use() -> None:
    """Module loads that make syscalls (a shared object is opened and read) happen on the first measure of
    the process, which no other measure encloses, so no figure ever contains them."""
    global _resource
    import resource

    _resource = resource
    perf.get_setup()


def _deltas(
    ctr: perf.Counters, base: list[int], after: list[int], nested: bool, inner: list[int], extra: list
) -> tuple[dict[str, int], int]:
    """Counter differences, minus the meter's own syscalls that fell inside the window.

    Outermost: the DISABLE ioctl enters while counting (1 ``ioctl``). Nested: the counters are read at both
    ends; every fd read of the closing sequence but also the rest of the opening one lands inside, which adds
    up to exactly one ``read`` per fd for the total and for ``read`` (a group read is one fd). ``inner`` holds
    the bookkeeping syscalls of measures nested inside this one (ledger indices), also taken out, and
    ``extra`` those counted exactly as they happened (see ledger.extra_calls).
    """
    diffs = list(map(_sub, after, base))  # C-level loops only: this runs on every measure
    by_name = dict(zip(_compress(ctr.names, diffs), filter(None, diffs), strict=False))
    total = by_name.pop("", 0)
    by_name.pop(CPU, None)
    own_name, own = ("read", ctr.nreads) if nested else ("ioctl", 1)
    if extra or any(inner):
        own_calls = [(own_name, own)]
        own_calls += [(name, m) for name, m in zip(LEDGER_NAMES, inner, strict=False) if m]
        total -= sum([m for _, m in own_calls]) + sum([m for name, m in extra if not name])
        own_calls += [e for e in extra if e[0]]
    else:
        own_calls = ((own_name, own),)
        total -= own
    for name, m in own_calls:
        if name in by_name:
            left = by_name[name] - m
            if left > 0:
                by_name[name] = left
            else:
                del by_name[name]
    counted = sum(by_name.values())
    if total > counted:
        by_name["other"] = total - counted
    return by_name, total


def _after_fork_in_child() -> None:
    """Counters and /proc files belong to the parent's thread and process: forget them in a forked child."""
    keeper.forget_after_fork()
    thread_state.forget_after_fork()
    procio.forget_after_fork()
    perf.forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
