"""The tables of one reftable stack read as one (git's reftable/merged.c): the newest table wins for each
key, a tombstone (ref value type 0, log type 0) hides the older tables' records of its key.

``MergedTables`` is the one place that merge is written; the reading ``Stack`` (stack.py), the locked
writer (engines/stack_io.py) and the ref store build on it. Within one table every lookup goes through the
Table's API (indexed seeks, block iteration); the batched lookups walk blocks with the block layer's
``seek_refs`` / ``scan_log_keys``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from .block import first_key, scan_log_keys, seek_refs
from .record import BLOCK_LOG, BLOCK_REF, LOG_DELETION, VALUE_DELETION, VALUE_SYMREF, LogRecord, RefRecord

# Up to this many names, lookups seek through each table's index; beyond, one key-only pass per table.
SEEK_LIMIT = 64

# The log value fields last decoded (see block.scan_log_keys) start unset: eleven 0xff bytes never start a
# valid value (a varint with ten continuation bytes overflows 64 bits).
_NO_IDENT = b"\xff" * 11


def follow_symrefs(lookup, name: bytes, depth: int = 5) -> bytes | None:
    """Follow symrefs from ``name`` through ``lookup`` (name -> live record or None) to an oid; None when
    dangling, missing or deeper than ``depth``."""
    for _ in range(depth):
        rec = lookup(name)
        if rec is None:
            return None
        if rec.value_type != VALUE_SYMREF:
            return rec.value
        name = rec.target
    return None


class MergedTables:
    """``tables`` (oldest first) as one merged view."""

    __slots__ = ("tables",)

    def __init__(self, tables: list) -> None:
        self.tables = tables

    # --- refs ------------------------------------------------------------------------------------------

    def locate(self, name: bytes):
        """(table, RefBlock, index) of the newest record of ``name`` (tombstone included), or None."""
        for t in reversed(self.tables):
            got = t.locate_ref(name)
            if got is not None:
                return t, got[0], got[1]
        return None

    def lookup(self, name: bytes) -> RefRecord | None:
        """The newest record of ``name`` (None if absent or deleted)."""
        for t in reversed(self.tables):
            rec = t.seek_ref(name)
            if rec is not None:
                return None if rec.value_type == VALUE_DELETION else rec
        return None

    def lookup_many(self, names: list[bytes]) -> dict[bytes, RefRecord | None]:
        """``lookup`` for many names at once: few names seek one by one, many go through ``lookup_all``
        (one sorted pass over each table's ref blocks instead of one index seek per name and table)."""
        if len(names) <= SEEK_LIMIT:
            return {n: self.lookup(n) for n in names}
        return self.lookup_all(names)

    def lookup_all(self, names: list[bytes]) -> dict[bytes, RefRecord | None]:
        """The newest record of each of ``names``; None when absent or deleted.

        Newest table first, each table resolves the names no newer table had, in one merge pass: the names
        are sorted, every ref block is entered only when it can hold the next wanted name (its successor's
        first key decides), and inside a block only the restart intervals that can hold one are walked,
        each up to its last wanted name (``block.seek_refs``). Values are decoded for the names found only."""
        found: dict[bytes, RefRecord] = {}
        want = sorted(set(names))
        for t in reversed(self.tables):
            if not want:
                break
            if t.has_refs:
                _seek_table(t, want, found)
                want = [n for n in want if n not in found]
        out: dict[bytes, RefRecord | None] = {}
        for n in names:
            rec = found.get(n)
            out[n] = None if rec is None or rec.value_type == VALUE_DELETION else rec
        return out

    def resolve(self, name: bytes, depth: int = 5) -> bytes | None:
        """Follow symrefs to an oid (None when dangling/missing)."""
        return follow_symrefs(self.lookup, name, depth)

    def records(self, start: bytes) -> Iterator[tuple[bytes, int, object, int]]:
        """(name, table index, RefBlock, record index) of the newest record of every name from ``start``,
        in name order, tombstones included (they hide what older tables hold)."""
        tables = self.tables
        if not tables:
            return
        last = None
        from heapq import merge  # only stacks of several tables merge (and heapq.py costs ~1 ms to import)

        for name, neg, rb, j in merge(*(keyed_records(ti, t, start) for ti, t in enumerate(tables))):
            if name != last:
                last = name
                yield name, -neg, rb, j

    def stream(self, start: bytes) -> Iterator[tuple[bytes, int, object, int]]:
        """``records`` without the tombstones: the effective records from ``start`` (the hot path of
        listing a stack: one table is walked block by block, several are merged inline)."""
        tables = self.tables
        if not tables:
            return
        if len(tables) == 1:
            for rb, i in tables[0].iter_ref_blocks(start):
                names = rb.names
                meta = rb.meta
                for j in range(i, len(names)):
                    if meta[j] & 7:
                        yield names[j], 0, rb, j
            return

        last = None
        from heapq import merge

        for name, neg, rb, j in merge(*(keyed_records(ti, t, start) for ti, t in enumerate(tables))):
            if name == last:
                continue
            last = name
            if rb.meta[j] & 7:
                yield name, -neg, rb, j

    # --- logs ------------------------------------------------------------------------------------------

    def log_records(self, name: bytes) -> list[LogRecord]:
        """Effective log records of ``name`` newest first: per update index the newest table's record,
        deletion records hiding older ones (and themselves)."""
        seen: dict[int, LogRecord] = {}
        for t in reversed(self.tables):
            for rec in t.iter_logs(name):
                if rec.update_index not in seen:
                    seen[rec.update_index] = rec
        out = [r for r in seen.values() if r.log_type != LOG_DELETION]
        out.sort(key=lambda r: -r.update_index)
        return out

    def has_log(self, name: bytes) -> bool:
        return bool(self.log_records(name))

    def log_indexes(self, names: list[bytes]) -> dict[bytes, list[int]]:
        """Update indexes of every live reflog entry of each of ``names`` (newest table wins per key;
        names without one are left out).

        Keys only are read, values skipped, never decoded (deleting 10k of 100k refs must not decode 100k
        entries, nor one ref's the 40-odd entries around it). Many names: one sorted pass over each table's
        log blocks. Few: one such pass per name from its own seek through the log index (a sorted pass
        would inflate every block between names far apart)."""
        ordered = sorted(set(names))
        if len(ordered) > SEEK_LIMIT:
            return self._log_pass(ordered)
        out: dict[bytes, list[int]] = {}
        for n in ordered:
            out.update(self._log_pass([n]))
        return out

    def _log_pass(self, ordered: list[bytes]) -> dict[bytes, list[int]]:
        """``log_indexes`` of ``ordered`` (sorted, distinct) in one pass over each table."""
        targets = [n + b"\0" for n in ordered]  # every log key of name n is n NUL <8-byte index>
        seen: dict[tuple[bytes, int], int] = {}
        skip = (_NO_IDENT, _NO_IDENT)
        for t in reversed(self.tables):
            off = t.seek_log_block(targets[0])
            k = 0
            while off is not None and k < len(targets):
                blk = t.block_at(off)
                if blk is None or blk.type != BLOCK_LOG:
                    break
                k, skip = scan_log_keys(blk, targets, ordered, k, seen, skip)
                off = blk.offset + blk.full_size
        out: dict[bytes, list[int]] = {}
        for (name, ui), lt in seen.items():
            if lt != LOG_DELETION:
                out.setdefault(name, []).append(ui)
        return out


def keyed_records(ti: int, t, start: bytes):
    """Table ``ti``'s ref records from ``start`` as ``(name, -ti, RefBlock, index)``: merged across tables with
    ``heapq.merge``, equal names come newest table first."""
    neg = -ti
    for rb, i in t.iter_ref_blocks(start):
        names = rb.names
        for j in range(i, len(names)):
            yield names[j], neg, rb, j


def _seek_table(t, want: list[bytes], found: dict) -> None:
    """``lookup_all``'s pass over one table: each ref block from the one that may hold ``want[0]`` gets the
    wanted names below its successor's first key."""
    n = len(want)
    off = t.seek_ref_block(want[0])
    if off is None:
        return
    blk = t.block_at(off)
    if blk is None or blk.type != BLOCK_REF:
        return
    min_ui = t.min_update_index
    k = 0
    while k < n:
        nxt = t.next_block(blk, BLOCK_REF)
        if nxt is None:
            seek_refs(blk, want, k, n, found, min_ui)
            break
        limit = first_key(nxt)
        if want[k] < limit:
            k = seek_refs(blk, want, k, bisect_left(want, limit, k), found, min_ui)
        blk = nxt
