"""The packed-refs file as rows for the view: one row per record (ref line + its ``^peeled`` line).


The backend's ``PackedRefs`` decodes and validates the file; this model keeps where each record starts (an
``array('q')``: 8 bytes a record, 8 MB at 1M) so that row ``i`` is decoded only when it is on screen.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from refscope.backend.display import escape_name
from rich.text import Text

from .format import hexstr, name_text


def packed_path(snapshot: Any) -> str:
    return os.path.join(snapshot.commondir, "packed-refs")


def open_packed(path: str, hash_name: str | None = None) -> Any:
    from refscope.backend.formats.packed import PackedRefs

    return PackedRefs.open(path, hash_name)


class PackedIndex:
    """Start offsets of every record of one ``PackedRefs`` in FILE order, plus what indexing learned.

    A sorted file's row index is the backend's own ``starts()`` (one split and a running sum: ~0.3 s at 1M);
    a file without the ``sorted`` trait is walked record by record to keep file order and to find out whether
    it is in order anyway. Rows are decoded on demand with the backend's ``record_at`` (the app parses
    nothing). ``build`` runs in a worker thread.
    """

    def __init__(self, packed: Any, path: str) -> None:
        self.packed = packed
        self.path = path
        self.offsets: Any = array("q")
        self.count = 0
        self.done = False
        self.actually_sorted = True
        self.first_unsorted: int | None = None
        self.peeled_count = -1  # counted after the first rows are on screen (count_peeled)

    @property
    def header(self) -> bytes:
        end = self.packed.header_end
        return bytes(self.packed.buf[:end]).rstrip(b"\n") if end else b""

    @property
    def file_size(self) -> int:
        return self.packed.size

    def build(
        self, progress: Callable[[int], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> None:
        packed = self.packed
        if packed.sorted:
            self.offsets = packed.starts()
        else:
            offsets = array("q")
            prev = b""
            for n, rec in enumerate(packed.iter_records()):
                offsets.append(rec.offset)
                if n and rec.name <= prev and self.actually_sorted:
                    self.actually_sorted = False
                    self.first_unsorted = n
                prev = rec.name
                if cancelled is not None and n % 65536 == 0 and cancelled():
                    return
            self.offsets = offsets
        self.count = len(self.offsets)
        self.done = True
        if progress is not None:
            progress(self.count)

    def count_peeled(self) -> int:
        """``^`` lines in the file, counted in 4 MiB slices of the map (C-speed, bounded memory)."""
        packed = self.packed
        buf, pos, n = packed.buf, packed.header_end, 0
        while pos < packed.size:
            end = min(packed.size, pos + (1 << 22))
            n += buf[max(pos - 1, 0) : end].count(b"\n^")
            pos = end
        self.peeled_count = n
        return n

    def record(self, i: int) -> Any:
        """Row ``i`` (file order), decoded and checked by the backend."""
        return self.packed.record_at(self.offsets[i])

    def row_of(self, name: bytes) -> int | None:
        """The row of ``name``'s record, via the backend's ``locate`` (binary search) and our offsets
        (file-order offsets always increase, so a bisection finds the row)."""
        span = self.packed.locate(name)
        if span is None:
            return None
        row = bisect_left(self.offsets, span[0], 0, self.count)
        if row < self.count and self.offsets[row] == span[0]:
            return row
        return None

    def insertion_row(self, name: bytes) -> int:
        """Where ``name`` would be (for a ref that is not packed): the first record with a larger name."""
        off = self.packed.seek(name)
        return min(bisect_left(self.offsets, off, 0, self.count), max(0, self.count - 1))


class PreviewIndex:
    """The first screenful of records (from ``start``), shown while the row index is being built."""

    def __init__(self, packed: Any, start: int | None = None, limit: int = 200) -> None:
        self.packed = packed
        self.records = []
        for rec in packed.iter_records(start):
            self.records.append(rec)
            if len(self.records) >= limit:
                break
        self.count = len(self.records)

    def record(self, i: int) -> Any:
        return self.records[i]


class PackedSource:
    """Row source for RowsView: offset, length, oid, name, ^peeled; loose shadows marked."""

    def __init__(
        self,
        index: PackedIndex,
        count: int,
        shadowed: dict[bytes, str] | None = None,
        hexlen: int = 40,
    ) -> None:
        self.index = index
        self.count = count
        self.shadowed = shadowed or {}
        self.hexlen = hexlen
        self.width = 10 + 1 + 5 + 3 + hexlen + 2 + 60 + 2 + hexlen + 1
        self.header = Text(f"{'offset':>10} {'len':>5}   {'oid':<{hexlen}}  name    ^peeled", no_wrap=True)

    def __len__(self) -> int:
        return self.count

    def row_key(self, i: int) -> bytes:
        return self.index.record(i).name

    def search_key(self, i: int) -> bytes:
        """``/`` matches the record's name."""
        return self.index.record(i).name

    def row_text(self, i: int) -> Text:
        rec = self.index.record(i)
        t = Text(no_wrap=True)
        t.append(f"{rec.offset:>10} {rec.length:>5} ", style="dim")
        if rec.name in self.shadowed:
            t.append("L ", style="bold magenta")
        else:
            t.append("  ")
        t.append(hexstr(rec.oid), style="yellow")
        t.append("  ")
        t.append_text(name_text(rec.name, "strike" if rec.name in self.shadowed else ""))
        if rec.peeled is not None:
            t.append("  ^", style="dim")
            t.append(hexstr(rec.peeled), style="dim yellow")
        if rec.name in self.shadowed:
            t.append("  ← shadowed by loose ", style="magenta")
            t.append(self.shadowed[rec.name], style="magenta")
        return t


def shadowing(snapshot: Any, index: PackedIndex) -> dict[bytes, str]:
    """Packed records that a loose ref of the same name overrides: name -> what the loose file says
    (an abbreviated oid, ``→ target`` for a symref, ``broken``). git's overlay lets any loose entry, even a
    broken one, shadow the packed record."""
    out: dict[bytes, str] = {}
    locate = index.packed.locate
    if snapshot.format == "files":
        for name, lr in snapshot.loose.items():
            if locate(name) is None:
                continue
            kind = lr.kind
            value = lr.value or b""
            if kind == "oid":
                out[name] = hexstr(value, 12)
            elif kind == "symref":
                out[name] = "→ " + escape_name(value)
            else:
                out[name] = "broken"
        return out
    from refscope.backend.formats.loose import list_loose_files

    for name, _path, _st in list_loose_files(snapshot.gitdir, snapshot.commondir):  # the backend's walk
        if locate(name) is None:
            continue
        ref = snapshot.lookup(name)
        if ref is not None and getattr(ref.location, "kind", "") == "loose":
            out[name] = hexstr(ref.oid, 12) if ref.oid else "→ " + escape_name(ref.target or b"")
    return out


def packed_of(snapshot: Any) -> Any:
    """The snapshot's own PackedRefs (exactly what it read), else a fresh open of the file."""
    if snapshot.format == "files":
        return snapshot.packed
    return open_packed(packed_path(snapshot), snapshot.hash_name)
