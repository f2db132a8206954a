"""The ref-level difference between two snapshots of one store, in time proportional to the change.

Why: the watcher refreshes after every write git makes. On a 1M-ref repository a comparison of two whole
snapshots costs about a second; one ``git update-ref`` changes one ref. So the diff never walks the refs:
it first derives a small set of *candidate names* from what changed on disk, then looks each candidate up
in the old and the new snapshot (``Snapshot.lookup``: a seek, no row index).

Where the candidates come from (the design):

reftable
    Tables are immutable and their names unique (random suffix), so a table present in both stacks
    holds the same records in both. Only tables that appeared or went away can change the merged view.
    ``plan_tables`` lines the two stacks up:

    - *appended*: new tables above the old top (update indexes > old max). Candidates: their records.
    - *pure compaction*: a new table covering exactly the update-index range of the contiguous run of
      tables it replaced, with no update index beyond the old stack's max. Compaction keeps the merged
      view by construction (git only drops tombstones when the run starts at the base table, where
      nothing is below them), so it names no candidate and nothing is read.
    - *compaction with new writes*: git's auto-compaction right after a commit often lands in the same
      debounce window as the commit, so the output covers replaced tables *and* update indexes never seen.
      Candidates: the records of the output and of the tables it replaced (a ref deleted in the unseen
      table may have had its tombstone dropped: then only the replaced table still names it).
      This reads what git itself just rewrote: the cost of the change.
    - anything else (a stack replaced wholesale, tables vanishing uncovered): a full merge walk.

files
    - loose refs: every loose file whose identity appeared, went away or changed in ``Snapshot.files()``,
      plus names the caller knows were touched (the watcher passes the paths of its file events, because
      identity alone can miss a rewrite: ext4 reuses a freed inode at once, and a ref rewritten twice
      between two snapshots can come back with the same inode and size).
    - packed-refs rewritten: the two files are compared byte-wise. Their common prefix and common suffix
      (found with slice compares in 64 KiB chunks: near memcmp speed) are aligned to record boundaries and
      skipped; only records in the differing middle are parsed into candidates. Deleting one of 100k packed
      refs thus parses one record (and compares the files at memory speed: proportional to the file, but
      with a tiny constant). When the two files' bytes are not available, a full merge walk.

Values compare by (oid, symref target). ``peeled`` is a cache of the object graph, not part of a ref's
value: packing a loose annotated tag adds it without changing the ref, so it does not count as a change.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from .formats.packed import changed_span
from .model import Ref

# How a Diff was computed (reported, so tests and benchmarks can check the cost is the change's).
NONE = "none"  # nothing could have changed: no candidates at all
CANDIDATES = "candidates"  # looked up the candidate names only, one by one
SORTED = "sorted"  # the candidate names, sorted, resolved by one forward walk per table (many candidates)
PACKED = "packed"  # the differing middles of two packed-refs files merged, plus loose candidates looked up
FULL = "full"  # merge walk over both snapshots


class Diff(NamedTuple):
    """Refs added / removed / changed between two snapshots (sorted names), and how it was found.

    ``examined`` is how many names were looked up (candidates) or walked (full): the cost measure.
    """

    added: tuple[bytes, ...] = ()
    removed: tuple[bytes, ...] = ()
    changed: tuple[bytes, ...] = ()
    method: str = NONE
    examined: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def names(self) -> set[bytes]:
        return {*self.added, *self.removed, *self.changed}

    def to_json(self) -> dict:
        """The fields for JSON; names stay bytes (``display.to_json`` encodes them)."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "method": self.method,
            "examined": self.examined,
        }


EMPTY = Diff()


def ref_value(ref: Ref | None) -> tuple[bytes | None, bytes | None] | None:
    """What makes two refs "the same": (oid, target); None for a missing ref."""
    if ref is None:
        return None
    return (ref.oid, ref.target)


# From this many candidates on, ``diff_names`` resolves them by one forward walk over each snapshot's tables
# (``values_sorted``) instead of one seek each. Measured on a 1M-ref table (``bench_live_scale.py
# --crossover``): below it both cost about the same (each name then lies in a block of its own), from it on
# the seeks grow with the names while the walk levels off at one decode of every block.
SORTED_WALK_MIN = 1024


def diff_names(old, new, names: Iterable[bytes]) -> Diff:
    """Compare only ``names``. Names outside ``refs/`` are skipped: snapshots list only ``refs/`` rows
    (HEAD is the watcher's business). A few names are looked up one by one; many are sorted and resolved
    by one forward walk over each snapshot's tables when both snapshots offer it (``values_sorted``), so
    the cost never exceeds about one merge of the candidates with the blocks that hold them."""
    names = [n for n in names if n.startswith(b"refs/")]
    if len(names) >= SORTED_WALK_MIN and old.format == new.format == "reftable":
        names = sorted(set(names))
        a_vals = old.values_sorted(names)
        b_vals = new.values_sorted(names)
        added = [n for n, a, b in zip(names, a_vals, b_vals, strict=True) if a is None and b is not None]
        removed = [n for n, a, b in zip(names, a_vals, b_vals, strict=True) if b is None and a is not None]
        changed = [n for n, a, b in zip(names, a_vals, b_vals, strict=True) if a != b and a and b]
        return Diff(tuple(added), tuple(removed), tuple(changed), SORTED, len(names))
    added: list[bytes] = []
    removed: list[bytes] = []
    changed: list[bytes] = []
    n = 0
    for name in names:
        n += 1
        a = ref_value(old.lookup(name))
        b = ref_value(new.lookup(name))
        if a == b:
            continue
        if a is None:
            added.append(name)
        elif b is None:
            removed.append(name)
        else:
            changed.append(name)
    return Diff(tuple(sorted(added)), tuple(sorted(removed)), tuple(sorted(changed)), CANDIDATES, n)


def full_diff(old, new) -> Diff:
    """Merge walk of both snapshots in name order: O(refs). The fallback when the change is not understood."""
    added: list[bytes] = []
    removed: list[bytes] = []
    changed: list[bytes] = []
    a_it = iter(old)
    b_it = iter(new)
    a = next(a_it, None)
    b = next(b_it, None)
    n = 0
    while a is not None or b is not None:
        n += 1
        if b is None or (a is not None and a.name < b.name):
            removed.append(a.name)
            a = next(a_it, None)
        elif a is None or b.name < a.name:
            added.append(b.name)
            b = next(b_it, None)
        else:
            if ref_value(a) != ref_value(b):
                changed.append(a.name)
            a = next(a_it, None)
            b = next(b_it, None)
    return Diff(tuple(added), tuple(removed), tuple(changed), FULL, n)


# --- reftable ------------------------------------------------------------------------------------------


class Compaction(NamedTuple):
    """Tables ``inputs`` (names, oldest first) were replaced by ``output``. ``pure`` when the output covers
    exactly their update-index range (no ref changed); otherwise it also holds writes never seen as tables
    of their own, in update indexes ``new_from``..``output``'s max."""

    inputs: tuple[str, ...]
    output: str
    pure: bool
    new_from: int = 0


class TablePlan(NamedTuple):
    """How the new stack relates to the old one (table names, oldest first)."""

    appended: tuple[str, ...]  # new tables holding only new update indexes
    compactions: tuple[Compaction, ...]
    unexplained: bool  # tables went away (or appeared) in a way neither append nor compaction explains
    unchanged: bool  # same table names in the same order


def _range(table) -> tuple[int, int]:
    lo = getattr(table, "min_update_index", None)
    hi = getattr(table, "max_update_index", None)
    if lo is None or hi is None:  # derive from git's file name 0x<min>-0x<max>-<rand>.ref
        parts = os.path.basename(table.name).split("-")
        lo, hi = int(parts[0], 16), int(parts[1], 16)
    return lo, hi


def _name(table) -> str:
    return os.path.basename(getattr(table, "name", None) or table.path)


def plan_tables(old_tables: list, new_tables: list) -> TablePlan:
    """Line up two stacks by table name and explain the difference (no table is read)."""
    old_names = [_name(t) for t in old_tables]
    new_names = [_name(t) for t in new_tables]
    if old_names == new_names:
        return TablePlan((), (), False, True)
    old_set = set(old_names)
    new_set = set(new_names)
    removed = [(n, _range(t)) for n, t in zip(old_names, old_tables, strict=True) if n not in new_set]
    added = [(n, _range(t)) for n, t in zip(new_names, new_tables, strict=True) if n not in old_set]
    old_max = max((_range(t)[1] for t in old_tables), default=0)
    appended: list[str] = []
    compactions: list[Compaction] = []
    covered: set[str] = set()
    for name, (lo, hi) in added:
        inputs = tuple(r for r, (rlo, rhi) in removed if lo <= rlo and rhi <= hi)
        if not inputs:
            if lo > old_max:
                appended.append(name)
                continue
            return TablePlan((), (), True, False)
        covered.update(inputs)
        in_lo = min(_range_of(removed, r)[0] for r in inputs)
        in_hi = max(_range_of(removed, r)[1] for r in inputs)
        if lo != in_lo:  # the output reaches below its inputs, into tables that survived: not git's doing
            return TablePlan((), (), True, False)
        pure = hi == in_hi and hi <= old_max
        compactions.append(Compaction(inputs, name, pure, 0 if pure else max(in_hi, old_max) + 1))
    if len(covered) != len(removed):
        return TablePlan(tuple(appended), tuple(compactions), True, False)
    return TablePlan(tuple(appended), tuple(compactions), False, False)


def _range_of(removed: list[tuple[str, tuple[int, int]]], name: str) -> tuple[int, int]:
    for n, r in removed:
        if n == name:
            return r
    raise KeyError(name)


def table_candidates(plan: TablePlan, old_tables: list, new_tables: list) -> set[bytes] | None:
    """Names whose merged value may differ, from the tables the plan says to read; None = walk everything."""
    if plan.unexplained:
        return None
    by_name = {_name(t): t for t in old_tables}
    by_name.update((_name(t), t) for t in new_tables)
    to_read = list(plan.appended)
    for c in plan.compactions:
        if not c.pure:
            to_read.append(c.output)
            to_read.extend(c.inputs)
    names: set[bytes] = set()
    for tname in to_read:
        for rb, _i in by_name[tname].iter_ref_blocks():
            names.update(rb.names)
    return names


def appended_diff(old, appended: list) -> Diff:
    """The diff when the only change to a one-stack view is ``appended`` tables on top (oldest first):
    their records *are* the new values (newest table first), read once while collecting the names; the
    old values come from one sorted walk of the old stack (``values_sorted``): for a tombstone only
    whether the old view had the ref (no value decoded), for a written ref its old value."""
    from bisect import bisect_left

    from .stores.reftable import value_key

    known: dict[bytes, bytes | None] = {}
    single = len(appended) == 1  # (then nothing is shadowed and the names come in order)
    order: list[bytes] = []
    for t in reversed(appended):
        for rb, _i in t.iter_ref_blocks():
            names = rb.names
            if single:
                order.extend(names)
            if rb.tombstones == len(names):
                if single:
                    known.update(dict.fromkeys(names))
                else:
                    for nm in names:
                        known.setdefault(nm, None)
                continue
            for j, nm in enumerate(names):
                if single or nm not in known:
                    known[nm] = value_key(rb, j)
    if not single:
        order = sorted(known)
    names = order[bisect_left(order, b"refs/") : bisect_left(order, b"refs0")]
    dead = [n for n in names if known[n] is None]
    live = [n for n in names if known[n] is not None]
    method = SORTED
    if len(names) < SORTED_WALK_MIN:
        method = CANDIDATES
        was_dead = [_record_key(old.stack, n) for n in dead]
        was_live = [_record_key(old.stack, n) for n in live]
    else:
        was_dead = old.values_sorted(dead, values=False) if dead else []
        was_live = (
            old.values_sorted(live)
            if len(live) >= SORTED_WALK_MIN
            else [_record_key(old.stack, n) for n in live]
        )
    removed = [n for n, a in zip(dead, was_dead, strict=True) if a is not None]
    added = [n for n, a in zip(live, was_live, strict=True) if a is None]
    changed = [n for n, a in zip(live, was_live, strict=True) if a is not None and a != known[n]]
    return Diff(tuple(added), tuple(removed), tuple(changed), method, len(names))


def _record_key(stack, name: bytes) -> bytes | None:
    from .stores.reftable import value_key

    got = stack.locate(name)
    return None if got is None else value_key(got[1], got[2])


# --- packed-refs ---------------------------------------------------------------------------------------


def _names_in(buf, start: int, end: int, out: set[bytes]) -> None:
    for line in bytes(buf[start:end]).split(b"\n"):
        if not line or line[:1] in (b"#", b"^"):
            continue
        sp = line.find(b" ")
        if sp > 0:
            out.add(line[sp + 1 :])


def packed_candidates(old_buf, new_buf, span: tuple[int, int, int] | None = None) -> set[bytes]:
    """Names of packed-refs records that are not byte-identical in both files (see module docstring).

    ``old_buf``/``new_buf``: the whole files as bytes-like objects supporting slicing, ``find``/``rfind``
    (bytes or mmap). Records in the common prefix or suffix are identical in both files, so their packed
    values did not change; every other record is a candidate. ``span``: ``changed_span(old_buf, new_buf)``
    when the caller has it already (``PackedRefs.span_from`` caches it for the row index too).
    """
    start, a_end, b_end = changed_span(old_buf, new_buf) if span is None else span
    out: set[bytes] = set()
    if start == a_end == b_end:
        return out
    _names_in(old_buf, start, a_end, out)
    _names_in(new_buf, start, b_end, out)
    return out


def _lines_diff(
    a_lines: list[bytes], b_lines: list[bytes], hexlen: int, out: tuple, peeled: bool = False
) -> None:
    """Append to ``out`` = (added, removed, changed) the names whose record lines differ between two
    sorted runs of lines: each side's lines looked up in a set of the other's (C speed), and only the
    lines that differ sliced into names, in file order. ``peeled``: the runs are whole records (a record
    line with its ``^peeled`` line, see ``_records``), so a peeled line that came or went changes it."""
    b_set = set(b_lines)
    only_a = [ln for ln in a_lines if ln not in b_set]
    a_set = set(a_lines)
    only_b = [ln for ln in b_lines if ln not in a_set]
    if not only_a and not only_b:
        return
    sep = b" "
    # a record line has the space right after its oid; peeled ("^oid") and empty lines have not
    a_names = [ln[hexlen + 1 :] for ln in only_a if ln[hexlen : hexlen + 1] == sep]
    b_names = [ln[hexlen + 1 :] for ln in only_b if ln[hexlen : hexlen + 1] == sep]
    if peeled:  # (a record's name ends where its peeled line starts)
        a_names = [n.partition(b"\n")[0] for n in a_names]
        b_names = [n.partition(b"\n")[0] for n in b_names]
    a_set = set(a_names)
    b_set = set(b_names)
    out[0].extend(n for n in b_names if n not in a_set)
    out[1].extend(n for n in a_names if n not in b_set)
    out[2].extend(n for n in a_names if n in b_set)


def _records(data: bytes, peeled: bool) -> list[bytes]:
    """The lines of a run of packed-refs records; with ``peeled``, each record's ``^`` line stays joined
    to it (a split at every LF not followed by ``^``, at C speed)."""
    if not peeled:
        return data.split(b"\n")
    import re

    return re.split(rb"\n(?!\^)", data)


PACKED_CHUNK = 1 << 20  # bytes of the old file compared at a time: bounds the memory of a huge diff


def packed_diff(old_buf, new_buf, span=None, hexlen: int = 40, seek_new=None, progress=None, peeled=False):
    """(added, removed, changed) name lists, in name order, between two packed-refs files: only their
    differing middles (``packed_candidates``' span) are read, a chunk of ``PACKED_CHUNK`` bytes of the
    old file at a time against the new file's records below the same name (``seek_new(name)``: the
    offset of the new file's first record >= name; without it, for files not in name order, the
    middles are compared whole). One linear pass over the change, however many records it holds, no
    per-name seek, and memory bounded by the chunk, not by the change. ``progress(done, total)``: bytes
    of the old middle compared so far, after each chunk. ``peeled``: a record whose ``^peeled`` line
    came, went or differs counts as changed (the records as written; a ref's value ignores it)."""
    start, a_end, b_end = changed_span(old_buf, new_buf) if span is None else span
    out: tuple[list, list, list] = ([], [], [])
    if start == a_end == b_end:
        return out
    a_pos = b_pos = start
    while a_pos < a_end or b_pos < b_end:
        a_next = a_end
        if seek_new is not None and a_end - a_pos > PACKED_CHUNK:
            cut = old_buf.find(b"\n", a_pos + PACKED_CHUNK, a_end)
            while 0 <= cut < a_end - 1 and old_buf[cut + 1 : cut + 2] == b"^":
                cut = old_buf.find(b"\n", cut + 1, a_end)  # a peeled line stays with its record
            if 0 <= cut < a_end - 1:
                a_next = cut + 1
        if a_next < a_end:
            eol = old_buf.find(b"\n", a_next, a_end)
            name = bytes(old_buf[a_next + hexlen + 1 : eol if eol >= 0 else a_end])
            b_next = min(max(seek_new(name), b_pos), b_end)
        else:
            b_next = b_end
        _lines_diff(
            _records(bytes(old_buf[a_pos:a_next]), peeled),
            _records(bytes(new_buf[b_pos:b_next]), peeled),
            hexlen,
            out,
            peeled,
        )
        a_pos, b_pos = a_next, b_next
        if progress is not None:
            progress(a_pos - start, a_end - start)
    return out


def packed_records_diff(old, new, *, peeled: bool = False, progress=None):
    """``packed_diff`` of two versions of one packed-refs file (``PackedRefs``): their differing middle
    only (``span_from``, cached for the derived row index too), seeking by name when both files are in
    name order. (added, removed, changed) name lists, each in name order."""
    span = new.span_from(old)
    seek = new.seek if old.in_name_order and new.in_name_order else None
    added, removed, changed = packed_diff(old.buf, new.buf, span, new.hexlen, seek, progress, peeled)
    return sorted(added), sorted(removed), sorted(changed)


# --- loose refs ----------------------------------------------------------------------------------------


class LooseChange(NamedTuple):
    kind: str  # "created", "changed", "deleted"
    path: str
    name: bytes


def loose_name(path: str, gitdir: str, commondir: str) -> bytes | None:
    """The ref name a loose file path stands for (per-worktree refs under gitdir first), or None."""
    for base in (gitdir, commondir):
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix):
            rel = path[len(prefix) :]
            if rel.startswith("refs/"):
                return os.fsencode(rel)
            return None
    return None


def loose_changes(old_files: dict, new_files: dict, gitdir: str, commondir: str) -> list[LooseChange]:
    """Loose ref files created, changed (identity differs) or deleted between two ``Snapshot.files()``."""
    out: list[LooseChange] = []
    for path, ident in new_files.items():
        name = loose_name(path, gitdir, commondir)
        if name is None:
            continue
        before = old_files.get(path)
        if before is None:
            out.append(LooseChange("created", path, name))
        elif before != ident:
            out.append(LooseChange("changed", path, name))
    for path in old_files:
        if path not in new_files:
            name = loose_name(path, gitdir, commondir)
            if name is not None:
                out.append(LooseChange("deleted", path, name))
    out.sort(key=lambda c: c.name)
    return out
