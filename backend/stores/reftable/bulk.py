"""Bulk reads of a reftable snapshot: names and column batches for ``refscope list`` and the TUI's filter.

A big base table under small ones (git's geometric compaction keeps stacks so) is read block by block, a
common block decoded straight into (oid, name) pairs (``block.ref_block_pairs``); only the blocks records
of newer tables fall into are merged row by row (the "overlay").
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from ...formats.reftable.block import ref_block_pairs
from ...formats.reftable.merged import MergedTables
from ...formats.reftable.table import Table
from .rows import NOTHING_HIDDEN, all_visible, hidden_in, pairs_plain


def _names_single(t: Table, start: bytes, resolve) -> Iterator[bytes]:
    for rb, i in t.iter_ref_blocks(start):
        names = rb.names
        if not names:
            continue
        if all_visible(rb, t) and names[i].startswith(b"refs/") and names[-1].startswith(b"refs/"):
            yield from names[i:] if i else names
            continue
        types = rb.types
        hidden = hidden_in(rb, t)
        for j in range(i, len(names)):
            vt = types[j]
            if vt and j not in hidden:
                name = names[j]
                if not name.startswith(b"refs/"):
                    return
                if vt != 3 or resolve(name) is not None:
                    yield name


class BulkReads:
    """The bulk half of ``ReftableSnapshot`` (a mixin: it reads the snapshot's ``tables``, ``resolve``,
    ``_single`` and ``_stream``)."""

    def iter_columns(
        self, start: bytes = b"", chunk: int = 1024
    ) -> Iterator[tuple[list, list, list | None, list | None]]:
        """Rows from the first name >= ``start`` as columns, a batch at a time: ``(names, oids, peeled,
        targets)``, lists of equal length (``peeled``/``targets`` None when every entry would be None; a
        symref has oid None). For bulk output (``refscope list``): a plain block of a one-table stack becomes
        its columns with two slices and one comprehension, no per-row objects."""
        for pairs, cols in self.iter_bulk(start, chunk):
            if pairs is not None:
                yield pairs[1::2], pairs[0::2], None, None
            else:
                yield cols

    def _base(self) -> Table | None:
        """The table the bulk paths stream block by block: the only table, or the oldest one of a stack
        whose newer tables together are no bigger than it (git's geometric compaction keeps stacks so).
        The newer tables are merged in row by row as an overlay (``_overlay``)."""
        tables = self.tables
        if self.worktree_stack is not None or not tables:
            return None
        base = tables[0]
        if len(tables) > 1 and sum(t.size for t in tables[1:]) > base.size:
            return None
        return base

    def split_name(self, min_size: int = 1 << 20) -> bytes | None:
        """A ref name near the middle of the listing (the base table's ref index says where), so a bulk
        reader can list ``< name + NUL`` and ``>=`` it separately, or None when the base table is smaller
        than ``min_size`` bytes or has no ref index."""
        base = self._base()
        if base is None or base.size < min_size:
            return None
        key = base.middle_ref_key()
        return key if key is not None and key.startswith(b"refs/") else None

    def _overlay(self, start: bytes) -> Iterator[tuple[bytes, Table, object, int, bool]]:
        """The merged records of the tables above the base from ``start`` (>= ``refs/``), under refs/:
        ``(name, table, RefBlock, index, visible)``, the newest record of each name, tombstones included
        (``visible`` False: the name is not listed, whatever the base holds), as ``_stream`` judges them."""
        tables = self.tables[1:]
        if not tables:
            return

        last_rb = None
        hidden = NOTHING_HIDDEN
        resolve = self.resolve
        for name, ti, rb, j in MergedTables(tables).records(start):
            if not name.startswith(b"refs/"):
                return
            t = tables[ti]
            vt = rb.value_type(j)
            visible = False
            if vt:
                if rb is not last_rb:
                    last_rb = rb
                    hidden = hidden_in(rb, t)
                visible = j not in hidden and (vt != 3 or resolve(name) is not None)
            yield name, t, rb, j, visible

    def _block_cols(self, t: Table, rb, i: int, k: int) -> tuple[list, list, list | None, list | None]:
        """Columns of the listed records ``i:k`` of one block of ``t`` (no merging)."""
        names = rb.names
        hidden = hidden_in(rb, t)
        if not (rb.tombstones or rb.symrefs or hidden):  # every record listed: oids sliced in bulk
            oids, peeled = rb.oid_columns(i, k)
            return names[i:k] if (i or k < len(names)) else names, oids, peeled, None
        cols: tuple[list, list, list, list] = ([], [], [], [])
        types = rb.types
        for j in range(i, k):
            vt = types[j]
            if vt and j not in hidden and (vt != 3 or self.resolve(names[j]) is not None):
                cols[0].append(names[j])
                cols[1].append(rb.oid(j))
                cols[2].append(rb.peeled(j))
                cols[3].append(rb.target(j))
        return cols

    @staticmethod
    def _merge_cols(cols, over: list) -> tuple[list, list, list, list]:
        """Base columns with overlay records merged in (an overlay record replaces or hides the base
        record of its name)."""
        names, oids, peeled, targets = cols
        n = len(names)
        if peeled is None:
            peeled = [None] * n
        if targets is None:
            targets = [None] * n
        out: tuple[list, list, list, list] = ([], [], [], [])
        i = 0
        for name, _t, rb, j, visible in over:
            k = bisect_left(names, name, i)
            if k > i:
                out[0].extend(names[i:k])
                out[1].extend(oids[i:k])
                out[2].extend(peeled[i:k])
                out[3].extend(targets[i:k])
            i = k + 1 if k < n and names[k] == name else k
            if visible:
                out[0].append(name)
                out[1].append(rb.oid(j))
                out[2].append(rb.peeled(j))
                out[3].append(rb.target(j))
        out[0].extend(names[i:])
        out[1].extend(oids[i:])
        out[2].extend(peeled[i:])
        out[3].extend(targets[i:])
        return out

    def iter_bulk(self, start: bytes = b"", chunk: int = 1024) -> Iterator[tuple[list | None, tuple | None]]:
        """Rows from the first name >= ``start``, a batch at a time, as ``(pairs, None)`` or ``(None,
        columns)``. ``pairs`` = ``[oid0, name0, oid1, name1, ...]`` of plain refs (one oid, no peeled
        value, not a symref) whose names pass check_refname and are printable ASCII without '"', so output
        can be formatted from them with one ``%`` per batch; ``columns`` as ``iter_columns`` yields them.

        The fast path of ``refscope list``: the base table (``_base``) is read block by block, a common
        block decoded straight into pairs (``block.ref_block_pairs``) with no per-row object beyond two
        slices; only blocks that records of newer tables fall into are merged row by row."""
        base = self._base()
        if base is None:
            from ..batches import ref_batches  # (the general form: not on the listing's fast path)

            yield from ref_batches(self.iter_from(start), chunk)
            return
        start = max(start, b"refs/")
        over = self._overlay(start)
        head = next(over, None)
        zero = bytes(base.hash_size)
        first = True
        for blk in base.iter_ref_raw_blocks(start):
            cols = None
            stop = False
            pairs = ref_block_pairs(blk) if zero not in blk.data else None
            if pairs is not None:
                names = pairs[1::2]
                if names[-1].startswith(b"refs/") and pairs_plain(names):
                    if first:
                        i = bisect_left(names, start)
                        if i:
                            pairs = pairs[2 * i :]
                        first = False
                        if not pairs:
                            continue
                    bound = pairs[-1]
                    if head is None or head[0] > bound:
                        yield pairs, None
                        continue
                    cols = (pairs[1::2], pairs[0::2], None, None)
            if cols is None:
                rb = base.decode_ref(blk)
                names = rb.names
                n = len(names)
                i = bisect_left(names, start) if first else 0
                first = False
                if i >= n:
                    continue
                k = n if names[-1].startswith(b"refs/") else bisect_left(names, b"refs0", i)
                if k <= i:
                    break
                stop = k < n
                bound = names[k - 1]
                cols = self._block_cols(base, rb, i, k)
            if head is not None and head[0] <= bound:
                got = []
                while head is not None and head[0] <= bound:
                    got.append(head)
                    head = next(over, None)
                cols = self._merge_cols(cols, got)
            if cols[0]:
                yield None, cols
            if stop:
                break
        rest: list = []
        while head is not None:
            rest.append(head)
            head = next(over, None)
            if len(rest) >= chunk or head is None:
                cols = self._merge_cols(([], [], None, None), rest)
                if cols[0]:
                    yield None, cols
                rest = []

    def iter_names(self, start: bytes = b"") -> Iterator[bytes]:
        """Just the names, fastest path for rendering."""
        t = self._single()
        if t is not None:
            yield from _names_single(t, max(start, b"refs/"), self.resolve)
            return
        if self._base() is not None:  # a big table under small ones: block by block, overlay merged in
            for pairs, cols in self.iter_bulk(start):
                yield from pairs[1::2] if pairs is not None else cols[0]
            return
        for name, _t, _rb, _j in self._stream(start):
            yield name
