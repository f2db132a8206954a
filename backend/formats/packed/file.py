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
from _weakref import ref as _weakref  # (the weakref module costs ~1 ms of CLI start-up)
from array import array
from bisect import bisect_left, bisect_right
from collections import namedtuple
from collections.abc import Iterator
from itertools import accumulate, islice
from operator import itemgetter, lt

from ...display import escape_name
from ...errors import CorruptStore
from ...fileio import map_fd, open_regular, read_fd
from ...model import HASH_HEXSZ
from ...refpattern import prefix_successor

HEADER_PREFIX = b"# pack-refs with: "
_CHUNK = (
    1 << 16
)  # byte comparisons of two versions, a slice at a time (64 KiB: cache-sized copies, ~5x faster than 1 MiB)
DERIVE_MAX = 65536  # records in the changed middle above which a row index is built afresh
_FORK_MIN = 1 << 21  # validate checks a file from this size in two processes when it may
_CHECK_CHUNK = 1 << 19  # bytes validate checks at a time
MAX_PIECES = 64  # a spliced row index with more pieces is flattened into one array
_SMALL = 32 * 1024  # git reads files up to this size instead of mapping them
_HEXDIGITS = b"0123456789abcdefABCDEF"
LOWER_HEX = b"0123456789abcdef"  # the form oids are kept in


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


class PackedRefs:
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
        step = _CHUNK
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

    # -- row index (random access by row) ------------------------------------------------------------
    def starts(self) -> array:
        """Record start offsets in name order, built once (on first need) and cached.

        Built from one split of the records area into lines and a running sum of their lengths (the
        fastest way measured in pure Python: ~0.3 s for 1M refs), skipping ``^`` lines.
        """
        st = self._starts
        if st is None and self._prev is not None and self._derive():
            return self._starts
        if st is None:
            st = self._starts = self._build_starts()
            self._count = len(st)
        return st

    # -- following a rewrite: the row index derived from the previous version's ------------------------
    def follow(self, previous: PackedRefs) -> None:
        """This file replaced ``previous`` (a refresh after git rewrote packed-refs). When the row index,
        count or hidden rows are first needed and ``previous`` still has its own, they are derived from
        them: the two files are compared (memcmp speed), only the records between their common head and
        tail are parsed, and the row index is the old one's pieces around the new middle (``Offsets``),
        so deleting one of 1M refs costs the comparison plus one record. Held weakly: nothing is derived
        from a version nobody keeps."""
        if previous is not self and previous.hexlen == self.hexlen:
            self._prev = _weakref(previous)

    def span_from(self, previous: PackedRefs) -> tuple[int, int, int]:
        """``changed_span(previous.buf, self.buf)``, computed once (the watcher's diff and the derived row
        index both need it)."""
        got = self._span
        if got is not None and got[0]() is previous:
            return got[1]
        span = changed_span(previous.buf, self.buf)
        self._span = (_weakref(previous), span)
        return span

    def _derive(self) -> bool:
        """Derive ``_starts``/``_count`` (and ``_hidden`` when the previous version had them) from the
        previous version (see ``follow``). False, with nothing set, when it cannot be done exactly."""
        ref, self._prev = self._prev, None
        prev = ref() if ref is not None else None
        if prev is None or prev._starts is None or prev._names is not None or self._names is not None:
            return False
        if self._starts is not None or prev.sorted != self.sorted or prev.header_end != self.header_end:
            return False
        he = self.header_end
        if he and prev.buf[:he] != self.buf[:he]:
            return False
        from ...refname import is_safe_refname, is_valid_refname

        try:
            start, a_end, b_end = self.span_from(prev)
            if start < he:
                return False
            old = prev._starts
            n_old = len(old)
            ra0 = bisect_left(old, start)
            ra1 = bisect_left(old, a_end)
            if (ra0 < n_old and old[ra0] != start) or (ra1 < n_old and old[ra1] != a_end):
                return False  # not on record boundaries of the old file
            if (ra0 == n_old and start != prev.size) or (ra1 == n_old and a_end != prev.size):
                return False
            mid = array("q")
            names: list[bytes] = []
            p = start
            while p < b_end:
                rec = self.record_at(p)
                mid.append(p)
                names.append(rec.name)
                p += rec.length
                if len(mid) > DERIVE_MAX:
                    return False
            if p != b_end:
                return False
            if self.sorted:  # trusted order must stay name order around and inside the middle
                chain = names
                if ra0:
                    chain = [bytes(prev.name_at(old[ra0 - 1])), *chain]
                if ra1 < n_old:
                    chain = [*chain, bytes(prev.name_at(old[ra1]))]
                if not all(map(lt, chain, islice(chain, 1, None))):
                    return False
            hidden = None
            if prev._hidden is not None and prev._scan_error is None:
                hid_mid = []
                for k, name in enumerate(names):
                    if not is_valid_refname(name):
                        if not is_safe_refname(name):
                            hid_mid = None  # left to the scan, which records the error as git reports it
                            break
                        hid_mid.append(ra0 + k)
                if hid_mid is not None:
                    shift = len(mid) - (ra1 - ra0)
                    ph = prev._hidden
                    hidden = (
                        ph[: bisect_left(ph, ra0)] + hid_mid + [r + shift for r in ph[bisect_left(ph, ra1) :]]
                    )
        except CorruptStore:
            return False
        starts = Offsets.splice(old, ra0, ra1, mid, b_end - a_end)
        count = n_old - (ra1 - ra0) + len(mid)
        if hidden is not None:
            self._hidden = hidden
        self._count = count
        self._starts = starts
        self.derived = True
        return True

    def _build_starts(self) -> array:
        """Chunked (4 MiB at line boundaries, to bound memory): each chunk's ``\n^`` turned into ``\0^``
        (same length, so a record becomes one "line"), split on LF, line lengths summed. The order the
        ``sorted`` trait promises is checked on the way."""
        he, size, hexlen = self.header_end, self.size, self.hexlen
        out = array("q")
        pos = he
        chunk_size = 1 << 22
        check = self._names is None and self.sorted  # trusted order must be name order
        prev: bytes | None = None
        while pos < size:
            end = self.chunk_end(pos, chunk_size)
            data = self.read(pos, end)
            if b"^" in data:
                data = data.replace(b"\n^", b"\0^")  # same length; NUL sorts a name before its extensions
            lines = data.split(b"\n")
            lines.pop()
            acc = list(accumulate([len(x) + 1 for x in lines], initial=pos))
            acc.pop()
            out.extend(acc)
            if check:
                # names (a peeled record's with its NUL-led tail) must increase; C-speed slicing/compare
                names = list(map(itemgetter(slice(hexlen + 1, None)), lines))
                if prev is not None:
                    names.insert(0, prev)
                if not all(map(lt, names, islice(names, 1, None))):
                    self._find_disorder(he)
                prev = names[-1] if names else prev
            pos = end
        return out

    def _find_disorder(self, start: int) -> None:
        """Raise unsorted_error at the first out-of-order record from ``start`` (a fast check saw one)."""
        for _rec in self.iter_records(start):
            pass
        raise self.corrupt(f"records out of name order after offset {start}", start)

    def __len__(self) -> int:
        """Number of records (hidden ones included): counted with the hidden-name scan, no row index."""
        if self._count is None and not (
            self._prev is not None and self._derive() and self._count is not None
        ):
            self._scan()
        return self._count

    def hidden_rows(self) -> list[int]:
        """Rows (name order) of records git hides: names failing check_refname ("ignoring ref with
        broken name"). A dangerous name raises CorruptStore as git dies. Cached; usually empty."""
        if self._hidden is None and not (
            self._prev is not None and self._derive() and self._hidden is not None
        ):
            self._scan()
        if self._scan_error is not None:
            raise self._scan_error
        return self._hidden

    def _scan(self) -> None:
        """Count the records and find the hidden ones in one chunked pass. Each chunk (whole records)
        gets C-speed checks that no name in it can be invalid (``_maybe_hidden``); only a chunk that
        fails them is decoded record by record. A corrupt record found on the way is kept for
        ``hidden_rows`` to raise; the count stays the plain line count (``len`` never raised)."""
        from ...refname import is_safe_refname, is_valid_refname

        hidden: list[int] = []

        def judge(rec: PackedRecord, row: int) -> None:
            if not is_valid_refname(rec.name):
                if not is_safe_refname(rec.name):
                    raise self.corrupt(
                        f"packed refname is dangerous: {rec.name.decode('utf-8', 'replace')}", rec.offset
                    )
                hidden.append(row)

        if self._names is not None:  # sorted in memory: every record was decoded at open
            starts, record_at = self._starts, self.record_at
            try:
                for row, name in enumerate(self._names):
                    if not is_valid_refname(name):
                        judge(record_at(starts[row]), row)
            except CorruptStore as err:
                self._scan_error = err
            self._hidden = hidden
            return
        size = self.size
        row = 0
        pos = self.header_end
        while pos < size:
            end = self.chunk_end(pos, 1 << 22)
            data = self.read(pos, end)
            nl = data.count(b"\n")
            nc = data.count(b"^") if b"^" in data else 0
            if _maybe_hidden(data, nl, nc) and self._scan_error is None:
                row0, p = row, pos
                try:
                    while p < end:
                        rec = self.record_at(p)
                        judge(rec, row)
                        row += 1
                        p += rec.length
                except CorruptStore as err:
                    self._scan_error = err
                    row = row0 + nl - nc
            else:
                row += nl - nc
            pos = end
        self._count = row
        self._hidden = hidden

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

    def row_range(self, prefix: bytes) -> range:
        """Rows (name order) whose names start with ``prefix``."""
        starts = self.starts()
        if not prefix:
            return range(0, len(starts))
        lo = self.row_of_offset(self.seek(prefix))
        hi_name = prefix_successor(prefix)
        hi = len(starts) if hi_name is None else self.row_of_offset(self.seek(hi_name))
        return range(lo, hi)

    def row_of_offset(self, off: int) -> int:
        starts = self.starts()
        if self._names is not None:
            # unsorted file: offsets are not monotonic in name order; map through the names
            if off >= self.size:
                return len(starts)
            import bisect

            return bisect.bisect_left(self._names, self.name_at(off))
        import bisect

        return bisect.bisect_left(starts, off)

    # -- whole-file check ----------------------------------------------------------------------------
    def validate(self) -> None:
        """Everything git's reader would reject anywhere in the file, plus the order the ``sorted`` trait
        promises and the names git hides: raises the first CorruptStore found.

        A transaction that rewrites packed-refs must refuse a damaged file (the splice would otherwise copy
        the damage through). A file in name order is checked chunk by chunk (``_check_range``); a big one
        in two halves at once when this process may fork (``backend.parallel``): the second half in a child,
        whose verdict comes back as (what, offset). An unsorted file was decoded whole at open; only its
        dangerous names remain (``hidden_rows``). Cached: the file is immutable once mapped."""
        if self._validated:
            return
        if self._names is not None:
            hidden = self.hidden_rows()
            if hidden:
                rec = self.record_at(self._starts[hidden[0]])
                raise self.broken_name(rec.name, rec.offset)
            self._validated = True
            return
        he, size = self.header_end, self.size
        mid = size
        child = None
        if self.check_forks():
            from ...parallel import FAILED, Forked

            mid = self.middle_record()
            if he < mid:
                child = Forked(self._range_verdict, mid, size)
            else:
                mid = size
        try:
            last = self._check_range(he, mid)
        except BaseException:
            if child is not None:
                child.abandon()
            raise
        if child is not None:
            verdict = child.result()
            if verdict is FAILED:
                self._check_range(mid, size)  # the child could not tell: errors as in one process
            elif verdict is not None:
                raise self.corrupt(*verdict)
            if last is not None and not last[0] < self.name_at(mid):
                raise self.unsorted_error(last[1], mid)
        self._validated = True

    def middle_record(self) -> int:
        """Start of the record holding the file's middle byte: where a scan is split over two processes."""
        return self.record_start(self.header_end + (self.size - self.header_end) // 2)

    def check_forks(self) -> bool:
        """Will ``validate`` hand half of the file to a forked child (whose cost a measure then counts)?"""
        if self._validated or self._names is not None or self.size - self.header_end < _FORK_MIN:
            return False
        from ...parallel import may_fork

        return may_fork()

    def _range_verdict(self, start: int, end: int) -> tuple[str, int | None] | None:
        """``_check_range`` as a plain value for a forked child: None, or the error's (what, offset)."""
        try:
            self._check_range(start, end)
        except CorruptStore as err:
            return err.what, err.offset
        return None

    def _check_range(self, start: int, end: int) -> tuple[bytes, int] | None:
        """Check the records in [start, end) (record boundaries): structure, dangerous names, strictly
        increasing names. Returns the last record's (name, offset). Chunks of 512 KiB go through
        ``checked_names`` (a third faster than 4 MiB ones: its copies and splits stay in the CPU caches); a
        chunk it is unsure of is decoded record by record."""
        hexlen = self.hexlen
        prev: bytes | None = None
        prev_off = start
        pos = start
        while pos < end:
            cend = min(self.chunk_end(pos, _CHECK_CHUNK), end)
            names = checked_names(self.read(pos, cend), hexlen)  # in strict order when not None
            if names is None:
                names = self._decoded_names(pos, cend)
                if not all(map(lt, names, islice(names, 1, None))):
                    self._find_disorder(pos)
            if prev is not None and not prev < names[0]:
                self._find_disorder(prev_off)
            prev = names[-1]
            prev_off = self.record_start(cend - 1)
            pos = cend
        return None if prev is None else (prev, prev_off)

    def _decoded_names(self, start: int, end: int) -> list[bytes]:
        """The names in [start, end), each record decoded with every check. A dangerous name raises as
        git dies; so does a name git hides from every listing ("ignoring ref with broken name"), which
        verify reports as an error: a store that does not read cleanly is not rewritten (git would copy
        that record through its rewrite; refscope refuses instead, one rule for every write)."""
        from ...refname import is_safe_refname, is_valid_refname

        names = []
        record_at = self.record_at
        pos = start
        while pos < end:
            rec = record_at(pos)
            name = rec.name
            if not is_valid_refname(name):
                if not is_safe_refname(name):
                    raise self.corrupt(
                        f"packed refname is dangerous: {name.decode('utf-8', 'replace')}", rec.offset
                    )
                raise self.broken_name(name, rec.offset)
            names.append(name)
            pos += rec.length
        return names


class Offsets:
    """Record starts in name order made of pieces of earlier row indexes (a read-only sequence: ``len``,
    indexing, iteration, bisection). Piece k covers rows ``firsts[k]`` up to the next piece's first row:
    row r is ``arr[lo + r - firsts[k]] + delta``. A rewrite of packed-refs that changed a few records
    reuses the previous index this way instead of re-reading a million records (``PackedRefs.follow``)."""

    __slots__ = ("firsts", "pieces", "n")

    def __init__(self, firsts: list[int], pieces: list[tuple], n: int) -> None:
        self.firsts = firsts
        self.pieces = pieces
        self.n = n

    @staticmethod
    def splice(old, ra0: int, ra1: int, mid: array, delta: int):
        """``old`` (array or Offsets) with rows [ra0, ra1) replaced by ``mid`` and the rows after them
        moved by ``delta`` bytes."""
        n_old = len(old)
        src = (
            list(zip(old.firsts, old.pieces, strict=True)) if isinstance(old, Offsets) else [(0, (old, 0, 0))]
        )
        firsts: list[int] = []
        pieces: list[tuple] = []

        def emit(a: int, b: int, row0: int, extra: int) -> None:
            for k, (first, (arr, lo, d)) in enumerate(src):
                end = src[k + 1][0] if k + 1 < len(src) else n_old
                s, e = max(first, a), min(end, b)
                if s < e:
                    firsts.append(row0 + s - a)
                    pieces.append((arr, lo + s - first, d + extra))

        emit(0, ra0, 0, 0)
        if len(mid):
            firsts.append(ra0)
            pieces.append((mid, 0, 0))
        emit(ra1, n_old, ra0 + len(mid), delta)
        n = n_old - (ra1 - ra0) + len(mid)
        out = Offsets(firsts, pieces, n)
        if len(pieces) > MAX_PIECES:
            return array("q", out)
        if len(pieces) == 1 and pieces[0][1] == 0 and pieces[0][2] == 0 and len(pieces[0][0]) == n:
            return pieces[0][0]
        return out

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return array("q", [self[k] for k in range(*i.indices(self.n))])
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("row out of range")
        k = bisect_right(self.firsts, i) - 1
        arr, lo, d = self.pieces[k]
        return arr[lo + i - self.firsts[k]] + d

    def __iter__(self) -> Iterator[int]:
        firsts, pieces, n = self.firsts, self.pieces, self.n
        for k, (arr, lo, d) in enumerate(pieces):
            end = firsts[k + 1] if k + 1 < len(firsts) else n
            part = arr[lo : lo + end - firsts[k]]
            if d:
                yield from map(d.__add__, part)
            else:
                yield from part


# -- comparing two versions of the file (a rewrite): common head and tail, at memcmp speed ---------------


def _common_prefix(a, b) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(i + _CHUNK, n)
        if a[i:j] != b[i:j]:
            lo, hi = i, j
            while hi - lo > 64:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            while lo < hi and a[lo] == b[lo]:
                lo += 1
            return lo
        i = j
    return n


def _common_suffix(a, b, limit: int) -> int:
    """Length of the common tail of a and b, at most ``limit``."""
    la, lb = len(a), len(b)
    s = 0
    while s < limit:
        t = min(s + _CHUNK, limit)
        if a[la - t : la - s] != b[lb - t : lb - s]:
            lo, hi = s, t  # common tail length is in [lo, hi)
            while hi - lo > 64:
                mid = (lo + hi) // 2
                if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
                    lo = mid
                else:
                    hi = mid
            while lo < hi and a[la - lo - 1] == b[lb - lo - 1]:
                lo += 1
            return lo
        s = t
    return limit


def _shared_record_start(a, b, pos: int) -> int:
    """Start of the record containing byte ``pos`` in both files (which share bytes ``[0, pos)``).

    A ``^peeled`` line belongs to the record above it, in either file.
    """
    start = a.rfind(b"\n", 0, pos) + 1 if pos > 0 else 0
    while start > 0 and b"^" in (a[start : start + 1], b[start : start + 1]):
        start = a.rfind(b"\n", 0, start - 1) + 1
    return start


def _next_record_start(buf, pos: int, end: int) -> int:
    """First record start after the first LF at or after ``pos``.

    ``buf[pos:end]`` is a tail both files share byte for byte, but the byte before ``pos`` may differ: only
    an LF inside the shared tail marks a line start that is one in both files.
    """
    nl = buf.find(b"\n", pos, end)
    pos = end if nl < 0 else nl + 1
    while pos < end and buf[pos : pos + 1] == b"^":
        nl = buf.find(b"\n", pos, end)
        pos = end if nl < 0 else nl + 1
    return pos


def changed_span(a, b) -> tuple[int, int, int]:
    """``(start, a_end, b_end)``: files ``a`` and ``b`` (bytes or mmap) share their bytes before ``start``
    and from ``a_end``/``b_end`` on, all three record boundaries (a ``^`` line belongs to the record above
    it) in both; only records in ``a[start:a_end]`` and ``b[start:b_end]`` differ. Identical files give
    ``(len, len, len)``."""
    p = _common_prefix(a, b)
    la, lb = len(a), len(b)
    if p == la == lb:
        return la, la, lb
    start = _shared_record_start(a, b, p)
    s = _common_suffix(a, b, min(la, lb) - start)
    a_end = _next_record_start(a, la - s, la) if s else la
    b_end = _next_record_start(b, lb - s, lb) if s else lb
    if a_end < start or b_end < start:  # pragma: no cover - defensive; cannot happen with limit
        a_end, b_end = la, lb
    return start, a_end, b_end


# bytes no ref name may hold -> "!" (tab too: a tab separator sends the chunk to the exact path);
# separators "/ . SP LF" -> "S" (two adjacent: "..", "//", "/.", leading or trailing "/" or ".", empty name)
_NAMECHK = bytearray(b"a" * 256)
for _c in [*range(0x00, 0x20), 0x7F, *b"~:?[\\*"]:
    _NAMECHK[_c] = ord("!")
for _c in b"/. \n":
    _NAMECHK[_c] = ord("S")
_NAMECHK[ord("k")] = ord("k")  # no "k" in a chunk: no ".lock" either (skips that search)
_NAMECHK = bytes(_NAMECHK)


def _maybe_hidden(data: bytes, nl: int, nc: int) -> bool:
    """Might a record in ``data`` (whole records; ``nl`` LFs, ``nc`` carets) have a name git rejects?
    Never False when one does (property-tested against check_refname); True sends the chunk down the
    exact record-by-record path. Spaces plus carets equal lines: a ref line holds one space and no
    caret, a peeled line one caret (its first byte) and no space, so a space or caret inside any name
    (which never cancel: both only add) breaks the equality. No forbidden byte; no two adjacent
    separators; no ``@{``, lone ``@`` or ``.lock`` component end."""
    if data.count(b" ") + nc != nl:
        return True
    t = data.translate(_NAMECHK)
    if b"!" in t or b"SS" in t:
        return True
    if b"@" in data and (b"@{" in data or b" @\n" in data):
        return True
    return b"k" in t and b".lock" in data and (b".lock/" in data or b".lock\n" in data)


# -- the whole-file check (``validate``) ---------------------------------------------------------------
# ``validate`` must look at every record before a splice copies them through, in a process that should
# cost no more than git's own rewrite. Per record in Python that is ~1 us each; a chunk of plain records
# (the usual case) is instead checked with a few C-speed operations over the whole chunk
# (``checked_names``), and anything it is unsure of goes down the record-by-record path.

# bytes no valid name holds (controls but LF, DEL, ``~^:?[\\*``) -> "!"; the separators "/", "." and LF
# -> "S"; "k" kept (no "k": no ".lock"); SP kept; the rest -> "a".
_VALID = bytearray(b"a" * 256)
for _c in [*range(0x00, 0x20), 0x7F, *b"~^:?[\\*"]:
    _VALID[_c] = ord("!")
for _c in b"/.\n":
    _VALID[_c] = ord("S")
for _c in b"k ":
    _VALID[_c] = _c
_VALID = bytes(_VALID)
_NOT_SP_LF = bytes(c for c in range(256) if c not in b" \n")


def checked_names(data: bytes, hexlen: int) -> list[bytes] | None:
    """The names of a run of whole records (``^`` lines allowed) when every record reads cleanly, names
    increase strictly and every name passes check_refname_format under ``refs/``; None when any of that
    is not certain (the caller then decodes record by record, with git's exact errors).

    Each ``^`` line is checked and cut out (``peeled_parts``). In the rest, spaces and LFs alternate
    (one space per line); one split on both gives the oids (each ``hexlen`` lowercase hex digits) and the
    names. Strictly increasing, with the first and the last under ``refs/``, every name is under
    ``refs/``: none is empty or starts with "/" or ".". Over one translation (``_VALID``): no byte a name
    cannot hold, and no two adjacent separators ("//", "/.", "..", "./", a trailing "/" or "."); then
    "@{" and a ".lock" component end. About 33 ms for 100k records on one core (in 512 KiB chunks),
    against ~85 ms for the check this replaced."""
    if not data:
        return []
    if b"^" in data:
        parts = peeled_parts(data, hexlen)
        if parts is None:
            return None
        first, rest = parts
        data = first + b"".join([b"\n" + p[hexlen + 1 :] for p in rest])
    seps = data.translate(None, _NOT_SP_LF)
    n = len(seps) >> 1
    if seps != b" \n" * n:
        return None  # not one space per line
    pieces = data.replace(b"\n", b" ").split(b" ")
    oids = pieces[0:-1:2]
    if set(map(len, oids)) != {hexlen} or b"".join(oids).translate(None, LOWER_HEX):
        return None
    names = pieces[1::2]
    if not all(map(lt, names, islice(names, 1, None))):
        return None
    if not (names[0].startswith(b"refs/") and names[-1].startswith(b"refs/")):
        return None
    t = data.translate(_VALID)
    if b"!" in t or b"SS" in t:
        return None
    if b"@" in data and b"@{" in data:
        return None
    if b"k" in t and (b".lock/" in data or b".lock\n" in data):
        return None
    return names


def peeled_parts(data: bytes, hexlen: int) -> tuple[bytes, list[bytes]] | None:
    """A run of whole records cut at its ``^`` lines: the part before the first and, for each ``^`` line,
    the part after its caret (the peeled oid, LF, then the ref lines up to the next ``^``). None unless
    every ``^`` line is a lowercase oid and LF following a ref line."""
    parts = data.split(b"\n^")
    first = parts[0]
    rest = parts[1:]
    if first[:1] == b"^" or not first:
        return None
    nl = b"\n"
    if any(p[hexlen : hexlen + 1] != nl for p in rest):
        return None
    if b"".join([p[:hexlen] for p in rest]).translate(None, LOWER_HEX):
        return None
    return first, rest
