"""The reftable ref store: the merged view of a repository's reftable stack(s).

One stack per git dir: ``$GIT_COMMON_DIR/reftable`` holds the shared refs (and the main worktree's HEAD and
per-worktree refs); a linked worktree's ``$GIT_DIR/reftable`` holds its HEAD and its per-worktree refs
(``refs/worktree/``, ``refs/bisect/``, ``refs/rewritten/``, root refs), as refs/reftable-backend.c routes them.
Within a stack the newest table wins and tombstones hide older values. Listing merges the worktree stack over
the common one as git's ``ref_iterator_select`` does (worktree refs shadow common ones of the same name;
per-worktree refs of the common stack belong to the main worktree and are skipped).

Opening a snapshot reads tables.list and the header and footer of each table: nothing proportional to the
number of refs. ``iter_from`` streams through the indexes; ``row``/``len`` use a row index that is built
lazily, only as far as needed, and cached in the snapshot. When the stack is a big base table under small
ones, the base's own rows are built once per table (``BaseRows``) and each snapshot splices the records of
its newer tables in: after another process appends a table, the refreshed snapshot is indexed in time
proportional to the new tables, not to the base.

The package: ``snapshot`` (this: the store, the snapshot, lookups and streaming), ``rows`` (which records
are rows), ``rowindex`` (random access), ``bulk`` (names and column batches for listing).
"""

from __future__ import annotations

import _thread
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from ...formats.reftable.block import ref_rows
from ...formats.reftable.record import tz_minutes
from ...formats.reftable.stack import Stack, read_tables_list_stat
from ...formats.reftable.table import Table
from ...model import PER_WORKTREE_PREFIXES, SYMREF_MAXDEPTH, LogEntry, Ref
from ..seq import next_read_seq
from .bulk import BulkReads
from .rowindex import RowIndex
from .rows import (
    NOTHING_HIDDEN,
    hidden_in,
    is_current_worktree_ref,
    ref_from,
    value_key,
)


def values_sorted(stack: Stack, names: list[bytes], values: bool = True) -> list:
    """The value key (``value_key``) of each of ``names`` (sorted, unique) in ``stack``'s merged view, None
    where absent (``values`` False: True where present, no value decoded): one forward walk per table over
    only the blocks that hold a candidate, so many names cost a merge of the candidates with those blocks
    (a block is decoded once, not once per name) and a few names cost about one seek each."""
    out: list = [_UNSEEN] * len(names)
    todo = list(range(len(names)))
    for t in reversed(stack.tables):
        if not todo:
            break
        todo = _table_values(t, names, todo, out, values)
    return [None if v is _UNSEEN else v for v in out]


_UNSEEN = object()


def _table_values(t: Table, names: list[bytes], todo: list[int], out: list, values: bool = True) -> list[int]:
    """Fill ``out[i]`` for the ``todo`` names (indexes into sorted ``names``) that table ``t`` holds a
    record of (tombstones too: they hide older tables); return the indexes it does not hold."""
    rest: list[int] = []
    sub = [names[i] for i in todo]
    n = len(sub)
    k = 0
    gen = None
    dense = False  # did the last block hold several candidates? Then the next one likely holds some too
    while k < n:
        name = sub[k]
        rb = None
        if gen is not None and dense:  # the next block is the usual next stop of a dense walk: no seek
            got = next(gen, None)
            if got is not None and got[0].names and got[0].names[-1] >= name:
                rb = got[0]
        if rb is None:
            gen = t.iter_ref_blocks(name)
            while True:
                got = next(gen, None)
                if got is None or (got[0].names and got[0].names[-1] >= name):
                    break
            if got is None:
                rest.extend(todo[k:])
                break
            rb = got[0]
        bnames = rb.names
        hi = bisect_right(sub, bnames[-1], k)
        dense = hi - k > 1
        types = None if values else rb.types
        if hi - k > 8:
            pos = {nm: j for j, nm in enumerate(bnames)}
            for m in range(k, hi):
                j = pos.get(sub[m])
                if j is None:
                    rest.append(todo[m])
                else:
                    out[todo[m]] = value_key(rb, j) if values else (True if types[j] else None)
        else:
            for m in range(k, hi):
                j = bisect_left(bnames, sub[m])
                if j < len(bnames) and bnames[j] == sub[m]:
                    out[todo[m]] = value_key(rb, j) if values else (True if types[j] else None)
                else:
                    rest.append(todo[m])
        k = hi
    return rest


def _iter_single(t: Table, start: bytes, resolve) -> Iterator[Ref]:
    """Rows of a one-table stack (``block.ref_rows``, the hot loop). Hidden records (``hidden_in``) and
    symrefs that do not resolve are skipped, as git's iterator does."""
    return ref_rows(t.iter_ref_blocks(start), t.name, lambda rb: hidden_in(rb, t), resolve)


class ReftableSnapshot(BulkReads, RowIndex):
    """An immutable merged view (see the module docstring). Attributes for the transaction engine:
    ``tables`` (common stack, oldest first), ``worktree_tables`` (this linked worktree's stack, or []),
    ``stacks`` (reftable dir -> tables), ``stack``/``worktree_stack`` (Stack objects),
    ``tables_list_stat`` (identity of the common tables.list when read)."""

    format = "reftable"

    def __init__(self, store: ReftableStore, common: Stack, wt: Stack | None) -> None:
        self.store = store
        self.hash_name = store.repo.hash_name
        self.gitdir = store.gitdir
        self.commondir = store.commondir
        self.stack = common
        self.worktree_stack = wt
        self.tables = common.tables
        self.worktree_tables = wt.tables if wt is not None else []
        self.tables_list_stat = common.list_stat
        self.stacks = {common.dir: common.tables}
        if wt is not None:
            self.stacks[wt.dir] = wt.tables
        self._all_tables = list(common.tables) + (list(wt.tables) if wt is not None else [])
        self._tidx = {id(t): i for i, t in enumerate(self._all_tables)}
        self._rows_t = array("H")
        self._rows_b = array("Q")
        self._rows_r = array("I")
        self._rows_iter = None
        self._rows_done = False
        self._rows_lock = _thread.allocate_lock()  # the row index grows lazily; views and watchers share them
        self.read_seq = 0  # set by the store (seq.next_read_seq) before anyone sees the snapshot
        self.index_method: str | None = None  # how the complete row index was built: "spliced" or "walked"

    # --- routing -----------------------------------------------------------------------------------------

    def _stack_for(self, name: bytes) -> tuple[Stack, bytes]:
        """git's backend_for: which stack holds ``name`` and the name inside it."""
        if name.startswith(b"worktrees/"):
            rest = name[len(b"worktrees/") :]
            slash = rest.find(b"/")
            if slash > 0 and is_current_worktree_ref(rest[slash + 1 :]):
                wtid = rest[:slash].decode("utf-8", "surrogateescape")
                d = os.path.join(self.commondir, "worktrees", wtid, "reftable")
                return Stack.load(d, self.hash_name), rest[slash + 1 :]
        if name.startswith(b"main-worktree/") and is_current_worktree_ref(name[14:]):
            return self.stack, name[14:]
        if self.worktree_stack is not None and is_current_worktree_ref(name):
            return self.worktree_stack, name
        return self.stack, name

    # --- lookups -----------------------------------------------------------------------------------------

    def lookup(self, name: bytes) -> Ref | None:
        """The effective ref ``name`` (any name: refs/..., HEAD, other root refs), or None."""
        stack, inner = self._stack_for(name)
        got = stack.locate(inner)
        if got is None:
            return None
        t, rb, j = got
        if not rb.value_type(j):
            return None
        return ref_from(name, t, rb, j)

    def values_sorted(self, names: list[bytes], values: bool = True) -> list:
        """``Stack.values_sorted`` over this snapshot's view of ``names`` (sorted, unique, under refs/):
        names a linked worktree's stack holds are looked up one by one (they are few)."""
        wt = self.worktree_stack
        out = values_sorted(self.stack, names, values)
        if wt is None:
            return out
        for i, name in enumerate(names):
            if is_current_worktree_ref(name):
                got = wt.locate(name)
                key = None if got is None else value_key(got[1], got[2])
                out[i] = key if values or key is None else True
        return out

    def head(self) -> Ref | None:
        return self.lookup(b"HEAD")

    def resolve_full(self, name: bytes) -> tuple[bytes, bytes] | None:
        """(oid, final ref name) following symrefs as ``resolve`` does; None when it does not resolve."""
        for _ in range(SYMREF_MAXDEPTH):
            ref = self.lookup(name)
            if ref is None:
                return None
            if ref.target is None:
                return ref.oid, name
            name = ref.target
        return None

    def resolve(self, name: bytes, depth: int = SYMREF_MAXDEPTH) -> bytes | None:
        """The oid ``name`` finally points at (following symrefs as git does: at most ``depth`` reads),
        or None."""
        for _ in range(depth):
            ref = self.lookup(name)
            if ref is None:
                return None
            if ref.target is None:
                return ref.oid
            name = ref.target
        return None

    # --- streaming ---------------------------------------------------------------------------------------

    def _stream(self, start: bytes) -> Iterator[tuple[bytes, Table, object, int]]:
        """(name, table, RefBlock, index) of every row from the first name >= start: the merged view
        without tombstones, hidden records and symrefs that do not resolve (git's ref iterator)."""
        last = None
        hidden = NOTHING_HIDDEN
        resolve = self.resolve
        for item in self._merged(start):
            rb = item[2]
            if rb is not last:
                last = rb
                hidden = hidden_in(rb, item[1])
                types = rb.types
            j = item[3]
            if hidden and j in hidden:
                continue
            if types[j] == 3 and resolve(item[0]) is None:
                continue
            yield item

    def _merged(self, start: bytes) -> Iterator[tuple[bytes, Table, object, int]]:
        """The merged records (newest wins, tombstones dropped) under refs/ from ``start``."""
        if start < b"refs/":
            start = b"refs/"
        common = self.stack
        wt = self.worktree_stack
        if wt is None:
            tables = common.tables
            for name, ti, rb, j in common.stream(start):
                if not name.startswith(b"refs/"):
                    return
                yield name, tables[ti], rb, j
            return
        ct, wtt = common.tables, wt.tables
        a = wt.stream(start)
        b = common.stream(start)
        na = next(a, None)
        nb = next(b, None)
        while na is not None or nb is not None:
            if nb is None or (na is not None and na[0] <= nb[0]):
                if not na[0].startswith(b"refs/"):
                    na = None
                    continue
                if nb is not None and na[0] == nb[0]:
                    nb = next(b, None)
                yield na[0], wtt[na[1]], na[2], na[3]
                na = next(a, None)
                continue
            name = nb[0]
            if not name.startswith(b"refs/"):
                nb = None
                continue
            if not name.startswith(PER_WORKTREE_PREFIXES):
                yield name, ct[nb[1]], nb[2], nb[3]
            nb = next(b, None)

    def _single(self) -> Table | None:
        """The only table when this view is one table (the common case after compaction)."""
        if self.worktree_stack is None and len(self.tables) == 1:
            return self.tables[0]
        return None

    def row_oids(self, lo: int, hi: int) -> list[bytes | None]:
        """The object ids of rows ``lo..hi-1`` (None for a symref): the bulk batches from row ``lo``'s
        name (blocks of plain refs decoded straight into ids), no ``Ref`` per row."""
        hi = min(hi, len(self))
        if lo >= hi:
            return []
        start = self.name_at(lo)
        want = hi - lo
        if not start.startswith(b"refs/"):  # (the bulk batches list refs/ only)
            return [self.row(i).oid for i in range(lo, hi)]
        out: list[bytes | None] = []
        for pairs, cols in self.iter_bulk(start, min(want, 4096)):
            out.extend(pairs[0::2] if pairs is not None else cols[1])
            if len(out) >= want:
                break
        return out[:want]

    def iter_from(self, start: bytes = b"") -> Iterator[Ref]:
        """Refs in name order from the first name >= ``start``: streaming, no row index needed."""
        t = self._single()
        if t is not None:
            yield from _iter_single(t, max(start, b"refs/"), self.resolve)
            return
        for name, t, rb, j in self._stream(start):
            yield ref_from(name, t, rb, j)

    def __iter__(self) -> Iterator[Ref]:
        return self.iter_from(b"")

    # --- reflogs -----------------------------------------------------------------------------------------

    def reflog_records(self, name: bytes) -> list:
        """Effective LogRecords of ``name`` newest first, existence markers included (the transaction
        engine writes a deletion record for each of them)."""
        stack, inner = self._stack_for(name)
        return stack.log_records(inner)

    def reflog(self, name: bytes) -> list[LogEntry]:
        """The reflog as ``git reflog show`` lists it: newest first, deleted entries and existence markers
        (old and new both null) left out; messages without their trailing LF."""
        out = []
        for r in self.reflog_records(name):
            if not r.old.strip(b"0") and not r.new.strip(b"0"):
                continue
            msg = r.message[:-1] if r.message.endswith(b"\n") else r.message
            out.append(
                LogEntry(r.old, r.new, r.ident_name, r.email, r.time, tz_minutes(r.tz), msg, r.update_index)
            )
        return out

    # --- identity ----------------------------------------------------------------------------------------

    def files(self) -> dict[str, tuple[int, int, int]]:
        out = {}
        for stack in (self.stack, self.worktree_stack):
            if stack is None:
                continue
            if stack.list_stat is not None:
                out[os.path.join(stack.dir, "tables.list")] = stack.list_stat[:3]
            for t in stack.tables:
                out[t.path] = t.stat
        return out


class ReftableStore:
    """The reftable store of one repository (worktree)."""

    format = "reftable"

    def __init__(self, repo) -> None:
        self.repo = repo
        self.gitdir = os.path.abspath(repo.gitdir)
        self.commondir = os.path.abspath(repo.commondir)
        self.common_dir = os.path.join(self.commondir, "reftable")
        self.worktree_dir = os.path.join(self.gitdir, "reftable") if self.gitdir != self.commondir else None

    def snapshot(self) -> ReftableSnapshot:
        seq = next_read_seq()
        common = Stack.load(self.common_dir, self.repo.hash_name)
        wt = Stack.load(self.worktree_dir, self.repo.hash_name) if self.worktree_dir else None
        snap = ReftableSnapshot(self, common, wt)
        snap.read_seq = seq
        return snap

    def refresh(self, previous: ReftableSnapshot) -> ReftableSnapshot:
        """A snapshot of now, reusing every table of ``previous`` whose file is unchanged; ``previous``
        itself when neither tables.list changed."""
        seq = next_read_seq()
        names, lst = read_tables_list_stat(self.common_dir)
        same = previous.stack.unchanged(names, lst)
        if same and self.worktree_dir:
            wnames, wlst = read_tables_list_stat(self.worktree_dir)
            same = previous.worktree_stack is not None and previous.worktree_stack.unchanged(wnames, wlst)
        if same:
            return previous
        common = Stack.load(self.common_dir, self.repo.hash_name, previous.stack)
        wt = (
            Stack.load(self.worktree_dir, self.repo.hash_name, previous.worktree_stack)
            if self.worktree_dir
            else None
        )
        snap = ReftableSnapshot(self, common, wt)
        snap.read_seq = seq
        return snap
