"""What a batch changed: the ref-level diff of two snapshots and the storage-level changes beside it.

Raw file events are only triggers and hints (inotify coalesces, ext4 reuses a freed inode at once), so what
happened is decided by comparing states: table names and ``Snapshot.files()`` identities, packed-refs
bytes, plus the paths the events named. ``diff.py`` does the ref-level work from the changed parts only.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .. import diff as _diff
from ..diff import EMPTY, Diff
from .events import (
    LOOSE_CHANGED,
    LOOSE_CREATED,
    LOOSE_DELETED,
    PACKED_REWRITTEN,
    TABLES_APPENDED,
    TABLES_COMPACTED,
    TABLES_LIST_REWRITTEN,
    Change,
)


def classify_reftable(
    prev, new, paths: set[str], changes: list[Change], phase: Callable[[str], None]
) -> Diff:
    """The ref-level difference of two reftable snapshots, from the tables that changed; appends the
    table-level changes (appended, compacted, list rewritten) to ``changes``."""
    old_stacks = _stacks(prev)
    new_stacks = _stacks(new)
    cands: set[bytes] = set()
    full = False
    appended_only: list = []  # the new tables when the one stack only grew (the common case)
    for rdir in sorted(set(old_stacks) | set(new_stacks)):
        old_t = old_stacks.get(rdir, [])
        new_t = new_stacks.get(rdir, [])
        plan = _diff.plan_tables(old_t, new_t)
        list_path = os.path.join(rdir, "tables.list")
        if plan.unchanged:
            if list_path in paths and _identity(prev, list_path) != _identity(new, list_path):
                changes.append(Change(TABLES_LIST_REWRITTEN, list_path))
            continue
        if plan.unexplained:
            changes.append(Change(TABLES_LIST_REWRITTEN, list_path))
            full = True
            continue
        if plan.appended or any(not c.pure for c in plan.compactions):
            # tables git appended; () when the writes were compacted before the watcher saw their table
            changes.append(Change(TABLES_APPENDED, list_path, None, plan.appended))
        for c in plan.compactions:
            changes.append(Change(TABLES_COMPACTED, list_path, None, c))
        if not plan.compactions and len(old_stacks) == len(new_stacks) == 1:
            appended_only = new_t[len(old_t) :]
            continue
        more = _diff.table_candidates(plan, old_t, new_t)
        if more is None:
            full = True
        else:
            cands |= more
    if full:
        return _diff.full_diff(prev, new)
    if appended_only and prev.worktree_stack is None:
        size = sum(t.stat[2] for t in appended_only)
        phase(f"comparing {len(appended_only)} new table(s), {size / 1048576:.1f} MiB")
        return _diff.appended_diff(prev, appended_only)
    if appended_only:
        for t in appended_only:
            for rb, _i in t.iter_ref_blocks():
                cands.update(rb.names)
    if not cands:
        return EMPTY
    return _diff.diff_names(prev, new, cands)


def classify_files(
    prev,
    new,
    paths: set[str],
    changes: list[Change],
    gitdir: str,
    commondir: str,
    phase: Callable[[str], None],
) -> Diff:
    """The ref-level difference of two files snapshots: loose files whose identity changed (or that a
    file event named, in case an inode came back), and packed-refs compared byte-wise; appends the
    loose and packed changes to ``changes``."""

    def progress(done: int, total: int) -> None:
        phase(f"comparing packed-refs {100 * done // max(total, 1)}%")

    old_files = prev.files() if prev is not new else {}
    new_files = new.files()
    if prev is new:
        old_files = new_files
    cands: set[bytes] = set()
    # loose files whose identity changed
    seen: set[str] = set()
    for lc in _diff.loose_changes(old_files, new_files, gitdir, commondir):
        kind = {"created": LOOSE_CREATED, "changed": LOOSE_CHANGED, "deleted": LOOSE_DELETED}[lc.kind]
        changes.append(Change(kind, lc.path, lc.name))
        cands.add(lc.name)
        seen.add(lc.path)
    # touched loose files whose identity may have come back (inode reuse): their values decide
    for p in paths:
        if p in seen or p.endswith(".lock"):
            continue
        name = _diff.loose_name(p, gitdir, commondir)
        if name is None or not os.path.isfile(p) and p not in old_files:
            continue
        a = _diff.ref_value(prev.lookup(name))
        b = _diff.ref_value(new.lookup(name))
        if a != b:
            changes.append(Change(LOOSE_CHANGED, p, name))
            cands.add(name)
    # packed-refs: the snapshots keep the mapped file they read; compare the two byte-wise
    pp = os.path.join(commondir, "packed-refs")
    old_p, new_p = prev.packed, new.packed
    if old_p is not new_p:  # (a fresh snapshot maps the same file anew: then only bytes tell)
        span = new_p.span_from(old_p)
        seek = new_p.seek if old_p.in_name_order and new_p.in_name_order else None
        packed = _diff.packed_diff(old_p.buf, new_p.buf, span, prev.hexlen, seek, progress)
        if any(packed) or old_p.identity() != new_p.identity():
            changes.append(Change(PACKED_REWRITTEN, pp))
        if any(packed):
            return _merge_packed(prev, new, packed, cands)
    if not cands:
        return EMPTY
    return _diff.diff_names(prev, new, cands)


def _merge_packed(prev, new, packed: tuple[list, list, list], cands: set[bytes]) -> Diff:
    """The packed-refs records' own differences are the refs' differences except where a loose file
    shadows the name in either snapshot or git hides it (a bad name): those few are looked up."""
    groups = list(packed)
    shadowed = prev.loose.keys() | new.loose.keys()
    odd: set[bytes] = set()
    for group in groups:
        group.sort()  # already in name order unless packed-refs is not sorted (then git sorts it too)
        if shadowed:
            odd.update(n for n in group if n in shadowed)
        odd.update(_hidden_names(group))
    if odd:
        groups = [[n for n in g if n not in odd] for g in groups]
        cands |= odd
    examined = sum(map(len, groups))
    if cands:
        looked = _diff.diff_names(prev, new, cands)
        examined += looked.examined
        groups = [sorted([*g, *extra]) for g, extra in zip(groups, looked[:3], strict=True)]
    return Diff(tuple(groups[0]), tuple(groups[1]), tuple(groups[2]), _diff.PACKED, examined)


def _hidden_names(names: list[bytes], chunk: int = 1024) -> list[bytes]:
    """The names git hides (failing check_refname), checked a chunk at a time at C speed; only a chunk
    that may hold one is checked name by name."""
    from ..refname import is_valid_refname, names_suspect

    out: list[bytes] = []
    for k in range(0, len(names), chunk):
        part = names[k : k + chunk]
        if names_suspect(part):
            out.extend(n for n in part if not is_valid_refname(n))
    return out


def _stacks(snap) -> dict[str, list]:
    """reftable dir -> tables (oldest first) for every stack the snapshot merges."""
    return {d.rstrip("/"): list(tables) for d, tables in snap.stacks.items()}


def _identity(snap, path: str):
    try:
        return snap.files().get(path)
    except Exception:
        return None
