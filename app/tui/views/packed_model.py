"""The packed-refs file as rows for the view: one row per record (ref line + its ``^peeled`` line).

The backend's ``PackedRefs`` decodes and validates the file; this model only indexes where each record starts
(``iter_records`` once, in a worker, into an ``array('Q')`` of offsets: 8 bytes a record, 8 MB at 1M) so that row
``i`` can be rendered on demand from the mapped bytes without holding a million tuples.
"""

from __future__ import annotations

import mmap
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, NamedTuple

from rich.text import Text

from .fmt import hexstr, name_text


class PackedRecord(NamedTuple):
    offset: int
    length: int
    name: bytes
    oid: bytes
    peeled: bytes | None


def packed_path(snapshot: Any) -> str:
    return os.path.join(snapshot.commondir, "packed-refs")


def open_packed(path: str) -> Any:
    from refscope.backend.formats.packed import PackedRefs

    return PackedRefs.open(path)


class PackedIndex:
    """Offsets of every record of one ``PackedRefs`` (in file order) plus what indexing learned on the way.

    ``build`` is called from a worker thread; ``progress(n)`` lets the UI show the first rows while the rest
    is indexed. After ``build``, ``count`` is final and ``actually_sorted`` is whether names are strictly
    increasing (the ``sorted`` trait is a promise; this is the fact).
    """

    def __init__(self, packed: Any, path: str) -> None:
        self.packed = packed
        self.path = path
        self.offsets: array = array("Q")
        self.lengths: array = array("I")
        self.count = 0
        self.done = False
        self.actually_sorted = True
        self.first_unsorted: int | None = None
        self.peeled_count = 0
        self._buf: Any = None
        self._open_buffer()

    def _open_buffer(self) -> None:
        for attr in ("buf", "data", "mm", "_mm", "_buf", "_data", "map", "_map"):
            buf = getattr(self.packed, attr, None)
            if buf is not None and hasattr(buf, "__getitem__") and not callable(buf):
                self._buf = buf
                return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._buf = b""
            return
        try:
            st = os.fstat(fd)
            self._buf = mmap.mmap(fd, 0, prot=mmap.PROT_READ) if st.st_size else b""
        finally:
            os.close(fd)

    @property
    def header(self) -> bytes:
        end = getattr(self.packed, "header_end", 0) or 0
        return bytes(self._buf[:end]).rstrip(b"\n") if end else b""

    @property
    def file_size(self) -> int:
        st = getattr(self.packed, "stat", None)
        if st:
            return st[2] if isinstance(st, tuple) else st.st_size
        return len(self._buf)

    def build(
        self,
        progress: Callable[[int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        step: int = 65536,
    ) -> None:
        offsets, lengths = self.offsets, self.lengths
        prev = b""
        n = 0
        peeled = 0
        for rec in self.packed.iter_records():
            offset, length, name, _oid, pk = rec[0], rec[1], rec[2], rec[3], rec[4]
            offsets.append(offset)
            lengths.append(length)
            if pk is not None:
                peeled += 1
            if name <= prev and n and self.actually_sorted:
                self.actually_sorted = False
                self.first_unsorted = n
            prev = name
            n += 1
            if n % step == 0:
                self.count = n
                if progress is not None:
                    progress(n)
                if cancelled is not None and cancelled():
                    return
        self.count = n
        self.peeled_count = peeled
        self.done = True

    def record(self, i: int) -> PackedRecord:
        """Row ``i`` decoded from the mapped bytes (the backend validated them while indexing)."""
        off = self.offsets[i]
        length = self.lengths[i]
        raw = bytes(self._buf[off : off + length])
        nl = raw.find(b"\n")
        first = raw[:nl] if nl >= 0 else raw
        sp = first.find(b" ")
        oid, name = first[:sp], first[sp + 1 :]
        peeled = None
        if nl >= 0 and raw[nl + 1 : nl + 2] == b"^":
            peeled = raw[nl + 2 :].rstrip(b"\n")
        return PackedRecord(off, length, name, oid, peeled)

    def row_of(self, name: bytes) -> int | None:
        """The row of ``name``'s record, via the backend's ``locate`` (binary search) and our offsets."""
        span = self.packed.locate(name)
        if span is None:
            return None
        row = bisect_left(self.offsets, span[0], 0, self.count)
        if row < self.count and self.offsets[row] == span[0]:
            return row
        return None

    def insertion_row(self, name: bytes) -> int:
        """Where ``name`` would be (for a ref that is not packed): first record with a larger name."""
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.record(mid).name < name:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def names(self) -> set[tuple[bytes, bytes, bytes | None]]:
        """Every (name, oid, peeled) in the file: for diffing two versions (worker only)."""
        return {(r.name, r.oid, r.peeled) for r in (self.record(i) for i in range(self.count))}


class PackedSource:
    """Row source for RowsView: offset, length, oid, name, ^peeled; loose shadows marked."""

    def __init__(
        self,
        index: PackedIndex,
        count: int,
        shadowed: dict[bytes, bytes | None] | None = None,
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
        loose = self.shadowed.get(rec.name, b"")
        if rec.name in self.shadowed:
            t.append("  ← shadowed by loose ", style="magenta")
            t.append(hexstr(loose, 12) if loose else "symref", style="magenta")
        return t


def loose_names(commondir: str) -> list[bytes]:
    """Names of loose ref files under ``refs/`` (a directory listing only: reading them is the store's job)."""
    root = os.path.join(os.fsencode(commondir), b"refs")
    out: list[bytes] = []
    for dirpath, _dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, os.fsencode(commondir))
        for f in files:
            if f.endswith(b".lock"):
                continue
            out.append(os.path.join(rel, f).replace(os.sep.encode(), b"/"))
    out.sort()
    return out


def shadowing(snapshot: Any, index: PackedIndex) -> dict[bytes, bytes | None]:
    """Packed records that a loose ref of the same name overrides: name -> the loose value (oid or None)."""
    out: dict[bytes, bytes | None] = {}
    for name in loose_names(snapshot.commondir):
        if index.packed.locate(name) is None:
            continue
        ref = snapshot.lookup(name)
        if ref is not None and getattr(ref.location, "kind", "") == "loose":
            out[name] = ref.oid
    return out
