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
proportional to the new tables, not to the base (1M refs: ~10-20 ms instead of ~110 ms).
"""

from __future__ import annotations

import _thread
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from ...errors import CorruptStore
from ...formats.reftable.block import ref_block_pairs, ref_rows
from ...formats.reftable.merged import MergedTables
from ...formats.reftable.record import tz_minutes
from ...formats.reftable.stack import Stack, read_tables_list_stat
from ...formats.reftable.table import Table
from ...model import PER_WORKTREE_PREFIXES, SYMREF_MAXDEPTH, TABLE, Location, LogEntry, Ref
from ..batches import ref_batches
from ..seq import next_read_seq

# Bytes check_refname never rejects on their own ('/' among them). The block check joins the names with
# '/', so one search for '//' finds empty components, names starting or ending with '/' and empty names;
# the rest are conservative substring tests (a hit falls back to the exact per-name check). All C-speed
# (a regex over the block was 50x slower; four separate two-byte searches cost twice as much).
_GOOD_BYTES = bytes(c for c in range(256) if not (c <= 0x20 or c == 0x7F or c in b"~^:?[\\*"))
# ... and of those the ones a JSON string (and plain output) takes as they are: printable ASCII but '"'.
_PLAIN_BYTES = bytes(c for c in _GOOD_BYTES if c < 0x7F and c != 0x22)
_SUSPECT_DOT = (b"..", b"/.", b"./", b".lock")


def _joined_suspect(joined: bytes, names: list[bytes]) -> bool:
    """The substring part of the check, over ``b"/".join(names)`` (bytes already checked)."""
    if not joined or b"//" in joined or joined[:1] == b"/" or joined[-1:] == b"/":
        return True
    if b"." in joined and (
        joined[:1] == b"." or joined[-1:] == b"." or any(s in joined for s in _SUSPECT_DOT)
    ):
        return True
    return b"@" in joined and (b"@{" in joined or b"@" in names)


def block_names_suspect(names: list[bytes]) -> bool:
    """May any of ``names`` fail check_refname? Never False for an invalid name; True for few valid ones."""
    joined = b"/".join(names)
    return bool(joined.translate(None, _GOOD_BYTES)) or _joined_suspect(joined, names)


def pairs_plain(names: list[bytes]) -> bool:
    """Every name passes check_refname and is printable ASCII without '"' (as it is in JSON and plain
    output): the bulk listing may print them as they are."""
    joined = b"/".join(names)
    return not joined.translate(None, _PLAIN_BYTES) and not _joined_suspect(joined, names)


_EMPTY: frozenset[int] = frozenset()


def hidden_in(rb, table: Table | None = None) -> frozenset[int]:
    """Indices of records of a decoded block that git's ref iterator does not list although they are not
    tombstones: names failing check_refname ("ignoring ref with broken name") and null object ids. A name
    that is not even safe makes git die ("refname is dangerous"): CorruptStore. Symrefs are judged by the
    caller (they need the merged view to resolve). Two C-speed checks per block in the normal case."""
    h = rb.hidden
    if h is not None:
        return h
    names = rb.names
    bad: set[int] = set()
    if names and block_names_suspect(names):
        from ...refname import is_safe_refname, is_valid_refname  # rarely needed: not on the startup path

        types = rb.types
        for j, n in enumerate(names):
            if types[j] and not is_valid_refname(n):
                if b"\0" in n:
                    # git reads such a key as a C string, up to the NUL: the record is damage, not a
                    # name. It is not served (every other ref is); the table remembers it for the
                    # warning a listing prints, and no transaction can name it (check_refname refuses).
                    bad.add(j)
                    if table is not None:
                        table.nul_names[n] = rb.offset
                    continue
                if not is_safe_refname(n):
                    shown = n.decode("utf-8", "backslashreplace")
                    raise CorruptStore(rb.file, f"refname is dangerous: {shown}", rb.offset)
                bad.add(j)
    zero = bytes(rb.hash_size)
    if zero in rb.data:
        types = rb.types
        for j in range(len(names)):
            t = types[j]
            if (t == 1 or t == 2) and rb.oid(j).strip(b"0") == b"":
                bad.add(j)
    h = frozenset(bad) if bad else _EMPTY
    rb.hidden = h
    if table is not None:
        table.hidden_cache[rb.offset] = h  # later decodes of this block skip the check
    return h


def _is_root_ref_syntax(name: bytes) -> bool:
    return all(c == 0x2D or c == 0x5F or 0x41 <= c <= 0x5A for c in name)


def is_current_worktree_ref(name: bytes) -> bool:
    """git's is_current_worktree_ref: root-ref syntax (HEAD, FETCH_HEAD...) or a per-worktree prefix."""
    return name.startswith(PER_WORKTREE_PREFIXES) or _is_root_ref_syntax(name)


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


def value_key(rb, j: int) -> bytes | None:
    """``RefBlock.value_key``: what makes a record's ref "the same" (``diff.ref_value``)."""
    return rb.value_key(j)


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


_new = tuple.__new__  # builds NamedTuples without their Python-level __new__ (hot path)


def ref_from(name: bytes, table: Table, rb, j: int) -> Ref:
    """The Ref row of record ``j`` of the decoded block ``rb`` of ``table``, listed as ``name``."""
    ui, oid, peeled, target = rb.fields(j)
    return _new(Ref, (name, oid, peeled, target, _new(Location, (TABLE, table.name, rb.offset, ui))))


def _iter_single(t: Table, start: bytes, resolve) -> Iterator[Ref]:
    """Rows of a one-table stack (``block.ref_rows``, the hot loop). Hidden records (``hidden_in``) and
    symrefs that do not resolve are skipped, as git's iterator does."""
    return ref_rows(t.iter_ref_blocks(start), t.name, lambda rb: hidden_in(rb, t), resolve)


def _all_visible(rb, table: Table) -> bool:
    """Every record of the block is listed (no tombstone, hidden record or symref to resolve)."""
    return not rb.tombstones and not rb.symrefs and not hidden_in(rb, table)


def _names_single(t: Table, start: bytes, resolve) -> Iterator[bytes]:
    for rb, i in t.iter_ref_blocks(start):
        names = rb.names
        if not names:
            continue
        if _all_visible(rb, t) and names[i].startswith(b"refs/") and names[-1].startswith(b"refs/"):
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


# A base table's own row candidates, shared by every snapshot whose stack starts with that table (see
# ``_base_rows``). Keyed weakly: a table compacted away takes its index with it.
_BASE_ROWS = None  # weakref.WeakKeyDictionary, made on first use (no weakref import on the CLI path)
_BASE_LOCK = _thread.allocate_lock()
# Row-index work counters (tests check that a refresh reuses the base's rows instead of walking its blocks).
INDEX_STATS = {"base_builds": 0, "base_blocks_decoded": 0, "spliced": 0, "walked": 0}
# Above this many overlay records a snapshot's index is walked block by block instead (each spliced record
# costs one seek into the base table).
SPLICE_MAX = 4096


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
            i = bisect_left(names, b"refs/")
            if i >= n:
                continue
            k = n if names[-1].startswith(b"refs/") else bisect_left(names, b"refs0", i)
            if k <= i:
                break
            if i == 0 and k == n and _all_visible(rb, base):
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


class ReftableSnapshot:
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
        hidden = _EMPTY
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
        hidden = _EMPTY
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

    # --- row index ---------------------------------------------------------------------------------------

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
            i = bisect_left(names, b"refs/")
            if i >= n:
                continue
            k = n if names[-1].startswith(b"refs/") else bisect_left(names, b"refs0", i)
            if k <= i:
                break
            bound = names[k - 1]
            whole = i == 0 and k == n and _all_visible(rb, base)
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
