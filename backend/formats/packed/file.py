"""The ``packed-refs`` file, read as git's packed-backend.c reads it: memory-mapped, records found lazily.

Why this shape: a million refs make an ~80 MB file. Opening maps it and parses only the header line;
a lookup is a binary search over the mapped bytes that snaps to record starts (a record is a ref line
plus an optional ``^peeled`` line), exactly like git's ``find_reference_location``. Without the
``sorted`` trait git sorts the records in memory at open; so do we (an array of record starts in name
order, the file itself untouched so offsets stay file offsets).

Every reader check git makes raises ``CorruptStore(path, what, offset)``: a ``#`` first line must start
``# pack-refs with: ``; the last line must end in LF and the last record be long enough; a ref line is
an oid, one whitespace byte and a non-empty name without NUL; a ``^`` line is exactly ``^<oid>\\n`` and
follows a ref line. The record-level checks run when a record is decoded (git also checks lazily, as it
iterates); ``validate()`` runs them all.
"""

from __future__ import annotations

import os
from array import array
from collections import namedtuple
from collections.abc import Iterator

from ...display import escape_name
from ...errors import CorruptStore
from ...fileio import map_fd, open_regular, read_fd
from ...model import HASH_HEXSZ
from .check import LOWER_HEX, Checks
from .rowindex import COMPARE_CHUNK, RowIndex

HEADER_PREFIX = b"# pack-refs with: "
_SMALL = 32 * 1024  # git reads files up to this size instead of mapping them
_HEXDIGITS = b"0123456789abcdefABCDEF"


class PackedRecord(namedtuple("PackedRecord", "offset length name oid peeled")):
    """One record: byte offset and length (ref line plus its ``^`` line), name, oid, peeled oid or None."""

    __slots__ = ()


def _line_excerpt(buf, pos: int, end: int) -> str:
    """The start of the line at ``pos``, escaped, for an error message. Copies at most 80 bytes: a bad
    "line" may be the whole (mapped, possibly huge) file."""
    stop = min(end, pos + 80)
    eol = buf.find(b"\n", pos, stop)
    line = bytes(buf[pos : stop if eol < 0 else eol])
    text = escape_name(line[:75])  # the file's bytes may hold CR, ESC or C1 controls: never print them raw
    return text + ("..." if len(line) >= 80 else "")


class PackedRefs(RowIndex, Checks):
    """An immutable, mapped ``packed-refs``. ``buf`` is the mmap (or bytes for small/missing files)."""

    __slots__ = (
        "path",
        "stat",
        "buf",
        "size",
        "traits",
        "sorted",
        "peeled_trait",
        "header_end",
        "hexlen",
        "_starts",
        "_names",
        "_count",
        "_validated",
        "_rfd",
        "read_ns",
        "_hidden",
        "_scan_error",
        "_prev",
        "_span",
        "derived",
        "__weakref__",
    )

    def __init__(self, path: str, buf, st: os.stat_result | None, hexlen: int | None = None) -> None:
        self.path = path
        self.stat = st  # os.stat_result of the file read (None when missing)
        self.buf = buf
        self.size = len(buf)
        self.traits: tuple[bytes, ...] = ()
        self.sorted = False
        self.peeled_trait = "none"  # "none" | "tags" | "fully"
        self.header_end = 0
        self._starts: array | None = None  # record starts in name order (row index), lazily
        self._names: list[bytes] | None = None  # names in name order, unsorted files only
        self._count: int | None = None
        self._validated = False
        self._rfd: int | None = None
        self.read_ns = 0  # fs clock before the file was opened (see formats.loose.is_racy); 0: unknown
        self._hidden: list[int] | None = None  # rows (name order) whose names git hides, lazily
        self._scan_error: CorruptStore | None = None  # what the hidden-name scan hit (raised by hidden_rows)
        self._prev = None  # weakref to the version this file replaced (``follow``), until derived from
        self._span = None  # (weakref to an older version, changed_span against it)
        self.derived = False  # True when the row index was derived from the previous version's
        self._parse_header()
        self.hexlen = hexlen if hexlen else self._detect_hexlen()
        self._check_tail()
        if not self.sorted and self.header_end < self.size:
            self._sort_in_memory()

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str, hash_name: str | None = None) -> PackedRefs:
        """Map ``path``; a missing file is an empty store (as git treats it)."""
        from ..loose import fs_clock_ns

        hexlen = HASH_HEXSZ.get(hash_name or "")
        read_ns = fs_clock_ns()
        try:
            fd, st = open_regular(path)
        except (FileNotFoundError, NotADirectoryError):
            return cls(path, b"", None, hexlen)
        try:
            size = st.st_size
            if size == 0:
                buf = b""
            elif size <= _SMALL:
                buf = read_fd(fd, path, size, size)
                if len(buf) != size:
                    raise CorruptStore(path, "couldn't read: short read")
            else:
                buf = map_fd(fd, path, size)
        finally:
            os.close(fd)
        self = cls(path, buf, st, hexlen)
        self.read_ns = read_ns
        return self

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "packed-refs", hash_name: str | None = None) -> PackedRefs:
        """Parse bytes that are not a file (tests, property checks)."""
        return cls(path, bytes(data), None, HASH_HEXSZ.get(hash_name or ""))

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file. For a mapped file, ``pread`` on a descriptor of the SAME file
        (checked by identity) instead of touching the mapping: sequential scans (counting, the row index,
        ``refscope list``) then cost no page faults. Falls back to the mapping if the file was replaced."""
        buf = self.buf
        if isinstance(buf, bytes):
            return buf[start:end]
        fd = self._rfd
        if fd is None:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # never waits on a FIFO
            except OSError:
                fd = -1
            if fd >= 0:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != self.identity():
                    os.close(fd)
                    fd = -1
            self._rfd = fd
        if fd < 0:
            return buf[start:end]
        data = os.pread(fd, end - start, start)
        if len(data) != end - start:
            return buf[start:end]
        return data

    def close(self) -> None:
        """Release the read descriptor (the mapping goes with the object)."""
        fd, self._rfd = self._rfd, -1
        if fd is not None and fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        fd = getattr(self, "_rfd", None)
        if fd is not None and fd >= 0:
            try:  # noqa: SIM105 (no contextlib import on the CLI path)
                os.close(fd)
            except OSError:
                pass

    def still_valid(self, st: os.stat_result | None) -> bool:
        """Does the file whose stat is now ``st`` (None: missing) surely hold what this object read?
        Same (dev, inode, size, mtime, ctime) and not racily clean (``formats.loose.is_racy``)."""
        mine = self.stat
        if st is None or mine is None:
            return st is None and mine is None
        if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) != (
            mine.st_dev,
            mine.st_ino,
            mine.st_size,
            mine.st_mtime_ns,
            mine.st_ctime_ns,
        ):
            return False
        from ..loose import is_racy

        return not is_racy(st, self.read_ns)

    def same_bytes(self, other: PackedRefs) -> bool:
        """Byte-identical content (compared 1 MiB at a time: a racy re-open of an unchanged file)."""
        if self.size != other.size:
            return False
        a, b = self.buf, other.buf
        step = COMPARE_CHUNK
        return all(a[i : i + step] == b[i : i + step] for i in range(0, self.size, step))

    def identity(self) -> tuple[int, int, int, int] | None:
        """(dev, inode, size, mtime_ns) of the file read; None when it was missing."""
        st = self.stat
        return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def corrupt(self, what: str, offset: int | None) -> CorruptStore:
        return CorruptStore(self.path, what, offset)

    def broken_name(self, name: bytes, offset: int | None) -> CorruptStore:
        """What a write meets at a name git hides from listings: verify reports it as an error, and a
        store that does not read cleanly is not rewritten (git copies such a record through)."""
        from ...refname import check_refname

        return self.corrupt(
            f"ref name '{escape_name(name)}' {check_refname(name)}: git ignores this ref; "
            "refusing to rewrite the file that holds it",
            offset,
        )

    def _parse_header(self) -> None:
        buf = self.buf
        if not self.size or buf[:1] != b"#":
            return
        eol = buf.find(b"\n")
        if eol < 0:
            raise self.corrupt(f"unterminated line in {self.path}: {_line_excerpt(buf, 0, self.size)}", 0)
        line = bytes(buf[:eol])
        if not line.startswith(HEADER_PREFIX):
            raise self.corrupt(f"unexpected line in {self.path}: {_line_excerpt(buf, 0, self.size)}", 0)
        traits = tuple(line[len(HEADER_PREFIX) :].split(b" "))
        self.traits = tuple(t for t in traits if t)
        if b"fully-peeled" in traits:
            self.peeled_trait = "fully"
        elif b"peeled" in traits:
            self.peeled_trait = "tags"
        self.sorted = b"sorted" in traits
        self.header_end = eol + 1

    def _detect_hexlen(self) -> int:
        """40 or 64 from the first record (callers that know the repository pass it instead)."""
        buf, he = self.buf, self.header_end
        for n in HASH_HEXSZ.values():
            if buf[he + n : he + n + 1] in (b" ", b"\t"):
                return n
        return 40

    def _check_tail(self) -> None:
        """git's verify_buffer_safe: last byte LF, last record at least oid + sep + one byte long."""
        he, size, buf = self.header_end, self.size, self.buf
        if he >= size:
            return
        last = self.record_start(size - 1)
        if buf[size - 1 : size] != b"\n" or size - last < self.hexlen + 2:
            eol = buf.find(b"\n", last)
            if eol < 0:
                raise self.corrupt(
                    f"unterminated line in {self.path}: {_line_excerpt(buf, last, size)}", last
                )
            raise self.corrupt(f"unexpected line in {self.path}: {_line_excerpt(buf, last, size)}", last)

    def _sort_in_memory(self) -> None:
        """No ``sorted`` trait: decode every record (as git's sort_snapshot) and order them by name.
        A file that turns out to be in order already is then searched in place like a sorted one."""
        recs = [(r.name, r.offset) for r in self.iter_records()]
        if all(recs[i][0] < recs[i + 1][0] for i in range(len(recs) - 1)):
            self._starts = array("q", [o for _, o in recs])
            self._count = len(recs)
            return
        recs.sort(key=lambda t: t[0])
        self._names = [n for n, _ in recs]
        self._starts = array("q", [o for _, o in recs])
        self._count = len(recs)

    @property
    def in_name_order(self) -> bool:
        """Is the file's record order the name order (so byte ranges are name ranges)?"""
        return self._names is None

    # -- record primitives ---------------------------------------------------------------------------
    def record_start(self, pos: int) -> int:
        """Start of the record holding byte ``pos`` (git's find_start_of_record)."""
        buf, he = self.buf, self.header_end
        s = buf.rfind(b"\n", he, pos) + 1
        if s <= he:
            return he
        while buf[s : s + 1] == b"^" and s > he:
            s = buf.rfind(b"\n", he, s - 1) + 1
            if s <= he:
                return he
        return s

    def record_end(self, start: int) -> int:
        """Offset just past the record starting at ``start`` (its ``^`` line included)."""
        buf = self.buf
        e = buf.find(b"\n", start) + 1
        if e == 0:
            return self.size
        if buf[e : e + 1] == b"^":
            e2 = buf.find(b"\n", e) + 1
            return self.size if e2 == 0 else e2
        return e

    def name_at(self, start: int) -> bytes:
        """The name of the record starting at ``start`` (checks the ref line's shape)."""
        buf = self.buf
        p = start + self.hexlen
        eol = buf.find(b"\n", p)
        if eol < 0 or eol - start < self.hexlen + 2 or buf[p : p + 1] not in (b" ", b"\t"):
            raise self.corrupt(
                f"unexpected line in {self.path}: {_line_excerpt(buf, start, self.size)}", start
            )
        return buf[p + 1 : eol]

    def record_at(self, start: int) -> PackedRecord:
        """Decode and check the record at ``start`` (an offset returned by locate/seek/the row index)."""
        buf, hexlen, size = self.buf, self.hexlen, self.size
        eol = buf.find(b"\n", start)
        if eol < 0:
            raise self.corrupt(f"unterminated line in {self.path}: {_line_excerpt(buf, start, size)}", start)
        line = buf[start:eol]
        if buf[start : start + 1] == b"^":
            raise self.corrupt(f"unexpected line in {self.path}: {_line_excerpt(buf, start, size)}", start)
        oid = line[:hexlen]
        if (
            len(line) < hexlen + 2
            or line[hexlen : hexlen + 1] not in (b" ", b"\t")
            or oid.translate(None, _HEXDIGITS)
        ):
            raise self.corrupt(f"unexpected line in {self.path}: {_line_excerpt(buf, start, size)}", start)
        name = line[hexlen + 1 :]
        if b"\0" in name:
            shown = name.split(b"\0", 1)[0].decode("utf-8", "replace")
            raise self.corrupt(f"packed refname contains embedded NULL: {shown}", start)
        if oid.translate(None, LOWER_HEX):
            oid = oid.lower()
        end = eol + 1
        peeled = None
        if buf[end : end + 1] == b"^":
            pe = end + 1 + hexlen
            peeled = buf[end + 1 : pe]
            if buf[pe : pe + 1] != b"\n" or len(peeled) != hexlen or peeled.translate(None, _HEXDIGITS):
                raise self.corrupt(f"unexpected line in {self.path}: {_line_excerpt(buf, end, size)}", end)
            if peeled.translate(None, LOWER_HEX):
                peeled = peeled.lower()
            end = pe + 1
        return PackedRecord(start, end - start, name, oid, peeled)

    # -- iteration -----------------------------------------------------------------------------------
    def iter_records(self, start: int | None = None) -> Iterator[PackedRecord]:
        """Every record in FILE order from byte ``start`` (default: just after the header). In a file
        searched in place (``sorted`` trait, or found in order) each name must be greater than the one
        before: see ``unsorted_error``."""
        pos = self.header_end if start is None else start
        size = self.size
        record_at = self.record_at
        check = self._names is None and (self.sorted or self._starts is not None)
        prev = None
        while pos < size:
            rec = record_at(pos)
            if check:
                if prev is not None and rec.name <= prev.name:
                    raise self.unsorted_error(prev.offset, rec.offset)
                prev = rec
            yield rec
            pos += rec.length

    def unsorted_error(self, prev_off: int, off: int) -> CorruptStore:
        """A file that says ``sorted`` but is not. git's readers do not check (a binary search then
        misses records that iteration lists, ``for-each-ref <prefix>`` stops early, loose refs fail to
        shadow): its answers disagree with each other, so refscope refuses the file, in the words of
        ``git refs verify`` (packedRefUnsorted), at the record that breaks the order."""
        line = self.read(0, off).count(b"\n") + 1
        prev = escape_name(bytes(self.name_at(prev_off)))
        cur = escape_name(bytes(self.name_at(off)))
        return self.corrupt(
            f"packed-refs line {line}: packedRefUnsorted: refname '{cur}' is less than previous refname "
            f"'{prev}'",
            off,
        )

    def iter_from(self, start: bytes = b"") -> Iterator[PackedRecord]:
        """Records in NAME order from the first name >= ``start`` (streams; no row index for sorted files)."""
        if self._names is None:
            yield from self.iter_records(self.seek(start))
            return
        import bisect

        i = bisect.bisect_left(self._names, start)
        starts = self._starts
        for j in range(i, len(starts)):
            yield self.record_at(starts[j])

    def __iter__(self) -> Iterator[PackedRecord]:
        return self.iter_from(b"")

    # -- search --------------------------------------------------------------------------------------
    def seek(self, name: bytes) -> int:
        """Byte offset of the first record whose name is >= ``name`` (size when none): binary search over
        the mapped bytes (sorted files) snapping to record starts, as git does."""
        if self._names is not None:
            import bisect

            i = bisect.bisect_left(self._names, name)
            return self._starts[i] if i < len(self._starts) else self.size
        lo, hi = self.header_end, self.size
        record_start, name_at, record_end = self.record_start, self.name_at, self.record_end
        while lo < hi:
            mid = lo + (hi - lo) // 2
            rec = record_start(mid)
            if rec < lo:  # mid fell inside the record before lo's; the record at lo is the candidate
                rec = lo
            if name_at(rec) < name:
                lo = record_end(rec)
            else:
                hi = rec
        return lo

    def locate(self, name: bytes) -> tuple[int, int] | None:
        """Byte range [start, end) of ``name``'s record including its ``^`` line, or None.

        In a file searched in place this is git's find_reference_location with ``mustexist``: the
        binary search stops at the first probe naming ``name``. On a well-sorted file that is the same
        as a lower-bound search; on a file that only claims ``sorted`` it finds exactly the records
        ``git show-ref --verify`` finds (the sequence operations refuse such a file).
        """
        if self._names is not None:
            import bisect

            i = bisect.bisect_left(self._names, name)
            if i >= len(self._names) or self._names[i] != name:
                return None
            start = self._starts[i]
            return start, self.record_end(start)
        lo, hi = self.header_end, self.size
        record_start, name_at, record_end = self.record_start, self.name_at, self.record_end
        while lo < hi:
            mid = lo + (hi - lo) // 2
            rec = record_start(mid)
            if rec < lo:
                rec = lo
            here = name_at(rec)
            if here < name:
                lo = record_end(rec)
            elif here > name:
                hi = rec
            else:
                return rec, record_end(rec)
        return None

    def lookup(self, name: bytes) -> PackedRecord | None:
        span = self.locate(name)
        return None if span is None else self.record_at(span[0])

    def _find_disorder(self, start: int) -> None:
        """Raise unsorted_error at the first out-of-order record from ``start`` (a fast check saw one)."""
        for _rec in self.iter_records(start):
            pass
        raise self.corrupt(f"records out of name order after offset {start}", start)

    def chunk_end(self, pos: int, chunk_size: int) -> int:
        """End of a chunk of whole records starting at ``pos`` (about ``chunk_size`` bytes)."""
        size, buf = self.size, self.buf
        end = min(size, pos + chunk_size)
        if end < size:
            end = buf.rfind(b"\n", pos, end) + 1
            while end > pos and buf[end : end + 1] == b"^":
                end = buf.rfind(b"\n", pos, end - 1) + 1
            if end <= pos:
                end = self.record_end(pos)
        return end
