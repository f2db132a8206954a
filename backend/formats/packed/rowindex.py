"""The row index of a ``packed-refs`` file: record starts in name order, the record count and the rows git
hides, and how they are derived from the previous version's after a rewrite (``follow``).

Why apart: these are the parts of ``PackedRefs`` (``RowIndex`` is one of its bases) that a lookup never
needs, and the ones a refresh of a million-ref file must not redo: a rewrite that changed a few records
reuses the old index in pieces (``Offsets``) around the re-read middle, found by comparing the two
versions at memcmp speed (``changed_span``, also the watcher's diff).
"""

from __future__ import annotations

from _weakref import ref as _weakref  # (the weakref module costs ~1 ms of CLI start-up)
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import accumulate, islice
from operator import itemgetter, lt

from ...errors import CorruptStore
from ...refpattern import prefix_successor
from .check import suspect_name_ends

TYPE_CHECKING = False  # (the typing module costs ~3 ms of CLI start-up)

if TYPE_CHECKING:
    from .file import PackedRecord, PackedRefs

# byte comparisons of two versions, a slice at a time (64 KiB: cache-sized copies, ~5x faster than 1 MiB)
COMPARE_CHUNK = 1 << 16
DERIVE_MAX = 65536  # records in the changed middle above which a row index is built afresh
MAX_PIECES = 64  # a spliced row index with more pieces is flattened into one array
# bytes of records per step of the count and the row index: each step is a few C calls over a chunk,
# holding the GIL that long -- and the TUI builds them in a worker while its UI thread paints
CHUNK = 1 << 20


class RowIndex:
    """The row index part of ``PackedRefs`` (a base of it; the state is in its slots)."""

    __slots__ = ()

    # -- row index (random access by row) ------------------------------------------------------------
    @property
    def indexed(self) -> bool:
        """Are the row index and the hidden rows built (a row's position then costs a binary search,
        not a pass over the whole file)?"""
        return self._starts is not None and self._hidden is not None

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
        chunk_size = CHUNK
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
            end = self.chunk_end(pos, CHUNK)
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
        j = min(i + COMPARE_CHUNK, n)
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
        t = min(s + COMPARE_CHUNK, limit)
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
    return suspect_name_ends(data, b"k" in t and b".lock" in data)
