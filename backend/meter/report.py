"""The record a measure leaves behind: :class:`OpReport`, and the sources its syscall counts can come from."""

from __future__ import annotations

from collections import namedtuple

SOURCES = ("perf", "strace", "proc")


class OpReport(
    namedtuple(
        "OpReport",
        "name wall_ms cpu_ms syscalls_total syscalls_by_name bytes_read bytes_written source children",
    )
):
    """The cost of one operation (see the package docstring for what each source counts):
    ``syscalls_by_name`` is a dict name -> count; times in ms; ``children``: whether child processes count."""

    __slots__ = ()

    def syscalls_json(self) -> dict:
        """The DESIGN.md shape of the syscall figures: ``{"total", "by_name", "source"}``."""
        return {"total": self.syscalls_total, "by_name": dict(self.syscalls_by_name), "source": self.source}

    def to_json(self) -> dict:
        """A JSON-ready dict: ``{"name", "wall_ms", "cpu_ms", "syscalls": {...}, "bytes_read", ...}``."""
        return {
            "name": self.name,
            "wall_ms": round(self.wall_ms, 3),
            "cpu_ms": round(self.cpu_ms, 3),
            "syscalls": self.syscalls_json(),
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "children": self.children,
        }
