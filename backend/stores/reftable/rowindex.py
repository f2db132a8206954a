"""The row index of a reftable snapshot: random access (``row``, ``name_at``, ``len``, ``prefix_range``).

Built lazily, only as far as needed, and cached in the snapshot. When the stack is a big base table under
small ones, the base's own rows are built once per table (``BaseRows``) and each snapshot splices the
records of its newer tables in: after another process appends a table, the refreshed snapshot is indexed in
time proportional to the new tables, not to the base.
"""

from __future__ import annotations

import _thread
from array import array
from bisect import bisect_left, bisect_right

from ...formats.reftable.table import Table
from ...model import Ref
from .rows import all_visible, hidden_in, ref_from

# A base table's own row candidates, shared by every snapshot whose stack starts with that table (see
# ``_base_rows``). Keyed weakly: a table compacted away takes its index with it.
_BASE_ROWS = None  # weakref.WeakKeyDictionary, made on first use (no weakref import on the CLI path)
_BASE_LOCK = _thread.allocate_lock()
# Row-index work counters (tests check that a refresh reuses the base's rows instead of walking its blocks).
INDEX_STATS = {"base_builds": 0, "base_blocks_decoded": 0, "spliced": 0, "walked": 0}
# Above this many overlay records a snapshot's index is walked block by block instead (each spliced record
# costs one seek into the base table).
SPLICE_MAX = 4096


def refs_span(names: list[bytes]) -> tuple[int, int]:
    """[i, k) of the names under refs/ among a block's sorted ``names`` (i == len: none yet; k <= i: the
    block is past refs/)."""
    n = len(names)
    i = bisect_left(names, b"refs/")
    if i >= n:
        return n, n
    return i, (n if names[-1].startswith(b"refs/") else bisect_left(names, b"refs0", i))


class BaseRows:
    """The rows a base table contributes on its own, in name order: ``blocks``/``recs`` (block offset and
    record index of every record under refs/ that is neither a tombstone nor hidden) and ``symrefs``
    (positions among them of symrefs, whose visibility depends on the whole stack). Immutable once built."""

    __slots__ = ("blocks", "recs", "symrefs", "__weakref__")

    def __init__(self, blocks: array, recs: array, symrefs: list[int]) -> None:
        self.blocks = blocks
        self.recs = recs
        self.symrefs = symrefs


def _base_rows(base: Table) -> BaseRows:
    """``base``'s BaseRows, built once per Table object (one walk; blocks known to be listed whole are
    taken from ``Table.listed_cache`` without decoding) and then shared."""
    global _BASE_ROWS
    cache = _BASE_ROWS
    got = cache.get(base) if cache is not None else None
    if got is not None:
        return got
    with _BASE_LOCK:
        if _BASE_ROWS is None:
            import weakref

            _BASE_ROWS = weakref.WeakKeyDictionary()
        cache = _BASE_ROWS
        got = cache.get(base)
        if got is not None:
            return got
        INDEX_STATS["base_builds"] += 1
        rbk, rr = array("Q"), array("I")
        sym: list[int] = []
        listed = base.listed_cache
        for off, blk in base.iter_ref_offsets():
            whole = listed.get(off)
            if whole is not None:
                n = whole[0]
                rr.extend(range(n))
                rbk.extend([off] * n)
                continue
            rb = base.decode_ref(blk or base.block_at(off))
            INDEX_STATS["base_blocks_decoded"] += 1
            names = rb.names
            n = len(names)
            i, k = refs_span(names)
            if i >= n:
                continue
            if k <= i:
                break
            if i == 0 and k == n and all_visible(rb, base):
                listed[off] = (n, names[-1])
                rr.extend(range(n))
                rbk.extend([off] * n)
                continue
            hidden = hidden_in(rb, base)
            types = rb.types
            for j in range(i, k):
                vt = types[j]
                if vt and j not in hidden:
                    if vt == 3:
                        sym.append(len(rr))
                    rbk.append(off)
                    rr.append(j)
            if k < n:
                break
        got = BaseRows(rbk, rr, sym)
        cache[base] = got
        return got


class RowIndex:
    """The row-index half of ``ReftableSnapshot`` (a mixin: it reads the snapshot's ``_stream``,
    ``_base``, ``_overlay``, ``resolve``, ``_tidx`` and ``_all_tables``, and keeps the index in its
    ``_rows_*`` attributes)."""

    def _extend_rows(self, upto: int) -> None:
        """Grow the row index until it has more than ``upto`` rows (or is complete)."""
        if self._rows_done:
            return
        with self._rows_lock:
            self._extend_rows_locked(upto)

    def _extend_rows_locked(self, upto: int) -> None:
        if self._rows_done:
            return
        if self._rows_iter is None:
            self._rows_iter = self._stream(b"")
        it = self._rows_iter
        rt, rbk, rr = self._rows_t, self._rows_b, self._rows_r
        tidx = self._tidx
        last_rb = None
        ti = 0
        while len(rr) <= upto:
            got = next(it, None)
            if got is None:
                self._rows_done = True
                self._rows_iter = None
                return
            _name, t, rb, j = got
            if rb is not last_rb:
                last_rb = rb
                ti = tidx[id(t)]
            rt.append(ti)
            rbk.append(rb.offset)
            rr.append(j)

    def _build_all(self) -> None:
        if self._rows_done:
            return
        with self._rows_lock:
            self._build_all_locked()

    def _build_all_locked(self) -> None:
        if self._rows_done:
            return
        base = self._base()
        if base is not None:
            # the base table's own rows (built once per table, shared by every refresh that keeps it) with
            # the few records of the newer tables spliced in: time proportional to the overlay
            if self._build_spliced(base):
                INDEX_STATS["spliced"] += 1
                return
            self._build_based(base)  # a big overlay: block by block, much faster than the per-row stream
            INDEX_STATS["walked"] += 1
            return
        self._extend_rows_locked(1 << 62)

    def _build_spliced(self, base: Table) -> bool:
        """The row index as the base's ``BaseRows`` with the overlay applied: each overlay record replaces
        or hides the base record of its name (one seek into the base each), base symrefs that do not
        resolve in this snapshot are dropped, the rest is copied as array slices. False (nothing done)
        when the overlay has more than SPLICE_MAX records. The rows are exactly those of ``_stream``."""
        over = []
        for item in self._overlay(b"refs/"):
            over.append(item)
            if len(over) > SPLICE_MAX:
                return False
        rows = _base_rows(base)
        brbk, brr = rows.blocks, rows.recs
        n = len(brr)
        drop: set[int] = set()
        resolve = self.resolve
        for p in rows.symrefs:
            if resolve(base.ref_block(brbk[p]).names[brr[p]]) is None:
                drop.add(p)
        inserts: dict[int, list] = {}
        tidx = self._tidx
        for name, t, rb, j, visible in over:
            p = self._base_position(base, rows, name)
            if p < n and base.ref_block(brbk[p]).names[brr[p]] == name:
                drop.add(p)
            if visible:
                inserts.setdefault(p, []).append((tidx[id(t)], rb.offset, j))
        if not drop and not inserts:
            rbk, rr = brbk, brr  # shared: never mutated once complete
            rt = array("H", bytes(2 * n))
        else:
            rbk, rr, rt = array("Q"), array("I"), array("H")
            cur = 0
            for p in sorted(drop.union(inserts)):
                if p > cur:
                    rbk.extend(brbk[cur:p])
                    rr.extend(brr[cur:p])
                    rt.frombytes(bytes(2 * (p - cur)))
                    cur = p
                for ti, off, j in inserts.get(p, ()):
                    rt.append(ti)
                    rbk.append(off)
                    rr.append(j)
                if p in drop:
                    cur = p + 1
            if cur < n:
                rbk.extend(brbk[cur:])
                rr.extend(brr[cur:])
                rt.frombytes(bytes(2 * (n - cur)))
        self._rows_iter = None
        self._rows_t, self._rows_b, self._rows_r = rt, rbk, rr
        self._rows_done = True
        self.index_method = "spliced"
        return True

    @staticmethod
    def _base_position(base: Table, rows: BaseRows, name: bytes) -> int:
        """Position among ``rows`` of the first base row whose name is >= ``name``: one seek in the base
        table to (block, record), then C-speed bisections of the row arrays."""
        for rb, i in base.iter_ref_blocks(name):
            if i < len(rb.names):
                off = rb.offset
                break
        else:
            return len(rows.recs)
        lo = bisect_left(rows.blocks, off)
        hi = bisect_right(rows.blocks, off, lo)
        return bisect_left(rows.recs, i, lo, hi)

    def _build_based(self, base: Table) -> None:
        """The whole row index from the base table block by block (a block no newer record falls into
        and with every record listed costs two C-speed array extends), newer tables merged in row by row.
        The rows are exactly those of ``_stream``. The base table remembers which of its blocks are listed
        whole (``Table.listed_cache``: offset -> (record count, last name)), so the next snapshot that
        shares the table (a refresh after another process wrote) indexes them without decoding them."""
        rbk, rr, rt = array("Q"), array("I"), array("H")  # swapped in when complete (readers may race)
        tidx = self._tidx
        bti = tidx[id(base)]  # 0
        over = self._overlay(b"refs/")
        head = next(over, None)
        resolve = self.resolve
        listed = base.listed_cache
        for off, blk in base.iter_ref_offsets():
            got = listed.get(off)
            if got is not None and (head is None or head[0] > got[1]):
                n = got[0]
                rr.extend(range(n))
                rbk.extend([off] * n)
                rt.frombytes(bytes(2 * n))  # bti: the base is tables[0], table index 0
                continue
            rb = base.decode_ref(blk or base.block_at(off))
            names = rb.names
            n = len(names)
            i, k = refs_span(names)
            if i >= n:
                continue
            if k <= i:
                break
            bound = names[k - 1]
            whole = i == 0 and k == n and all_visible(rb, base)
            if whole:
                listed[off] = (n, bound)
                if head is None or head[0] > bound:
                    rr.extend(range(n))
                    rbk.extend([off] * n)
                    rt.frombytes(bytes(2 * n))
                    continue
            hidden = hidden_in(rb, base)
            types = rb.types
            for j in range(i, k):
                name = names[j]
                if head is not None and head[0] <= name:
                    while head is not None and head[0] < name:
                        if head[4]:
                            rt.append(tidx[id(head[1])])
                            rbk.append(head[2].offset)
                            rr.append(head[3])
                        head = next(over, None)
                    if head is not None and head[0] == name:
                        if head[4]:
                            rt.append(tidx[id(head[1])])
                            rbk.append(head[2].offset)
                            rr.append(head[3])
                        head = next(over, None)
                        continue
                vt = types[j]
                if vt and j not in hidden and (vt != 3 or resolve(name) is not None):
                    rt.append(bti)
                    rbk.append(off)
                    rr.append(j)
            if k < n:
                break
        while head is not None:
            if head[4]:
                rt.append(tidx[id(head[1])])
                rbk.append(head[2].offset)
                rr.append(head[3])
            head = next(over, None)
        self._rows_iter = None
        self._rows_t, self._rows_b, self._rows_r = rt, rbk, rr
        self._rows_done = True
        self.index_method = "walked"

    def _row_block(self, i: int):
        if i < 0:
            raise IndexError(i)
        if i >= len(self._rows_r):
            self._extend_rows(i)
            if i >= len(self._rows_r):
                raise IndexError(i)
        rt, rbk, rr = self._rows_t, self._rows_b, self._rows_r
        t = self._all_tables[rt[i]]
        return t, t.ref_block(rbk[i]), rr[i]

    def __len__(self) -> int:
        self._build_all()
        return len(self._rows_r)

    def row(self, i: int) -> Ref:
        if i < 0:
            i += len(self)
        t, rb, j = self._row_block(i)
        return ref_from(rb.names[j], t, rb, j)

    def name_at(self, i: int) -> bytes:
        if i < 0:
            i += len(self)
        _t, rb, j = self._row_block(i)
        return rb.names[j]

    def prefix_range(self, prefix: bytes) -> range:
        n = len(self)
        lo = self._bisect(prefix, 0, n)
        if not prefix:
            return range(lo, n)
        # the first name > every name starting with prefix
        hi = lo
        step = 1
        while hi + step <= n and self.name_at(hi + step - 1).startswith(prefix):
            hi += step
            step *= 2
        # now names [lo, hi) match; binary search the boundary in [hi, min(n, hi+step))
        a, b = hi, min(n, hi + step)
        while a < b:
            m = (a + b) // 2
            if self.name_at(m).startswith(prefix):
                a = m + 1
            else:
                b = m
        return range(lo, a)

    def _bisect(self, key: bytes, lo: int, hi: int) -> int:
        while lo < hi:
            m = (lo + hi) // 2
            if self.name_at(m) < key:
                lo = m + 1
            else:
                hi = m
        return lo
