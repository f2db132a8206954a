"""A deterministic meter for snapshot tests and screenshots: fixed timings and syscall counts.

The app's meter interface (``.meter.Meter``): ``measure(name, children=False)`` is a context manager yielding
an object whose ``.report`` (an OpReport) is set on exit; ``adopt(report)`` maps a report made elsewhere (a
commit's, measured by the real meter inside the transaction) to a fixed one, so SVGs do not change run to run.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager

from refscope.backend.meter import OpReport

# name -> (wall_ms, cpu_ms, {syscall: count}); anything else gets the "other" row
_TABLE = {
    "open": (4.25, 3.5, {"openat": 4, "fstat": 4, "mmap": 2, "read": 3, "close": 4}),
    "refresh": (0.75, 0.5, {"newfstatat": 6, "openat": 1, "read": 1, "close": 1}),
    "filter": (12.5, 12.0, {}),
    "lookup": (0.05, 0.05, {}),
    "commit": (1.5, 0.75, {"openat": 3, "writev": 1, "rename": 1, "unlink": 2, "close": 3}),
    "compaction": (3.0, 2.0, {"openat": 4, "write": 2, "rename": 1, "unlink": 3, "close": 4}),
    "other": (1.0, 1.0, {"read": 1}),
}


class _Measure:
    __slots__ = ("report",)

    def __init__(self) -> None:
        self.report = None


class FakeMeter:
    """Reports from a fixed table; the n-th report of a kind adds n/4 ms so sparklines have a shape."""

    source = "fake"

    def __init__(self) -> None:
        self._count = itertools.count()

    def report(self, name: str, children: bool = False) -> OpReport:
        wall, cpu, calls = _TABLE.get(name, _TABLE["other"])
        bump = (next(self._count) % 5) * 0.25
        return OpReport(
            name=name,
            wall_ms=wall + bump,
            cpu_ms=cpu,
            syscalls_total=sum(calls.values()),
            syscalls_by_name=dict(calls),
            bytes_read=4096 if calls.get("read") else 0,
            bytes_written=512 if calls.get("writev") or calls.get("write") else 0,
            source="fake",
            children=children,
        )

    @contextmanager
    def measure(self, name: str, children: bool = False):
        m = _Measure()
        try:
            yield m
        finally:
            m.report = self.report(name, children)

    def adopt(self, report: OpReport | None) -> OpReport | None:
        if report is None:
            return None
        return self.report(report.name, report.children)
