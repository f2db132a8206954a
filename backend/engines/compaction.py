"""Reftable compaction as git does it (reftable/stack.c ``stack_compact_range``), auto or explicit.

Lock ``tables.list``; give up if the stack changed since it was read ("outdated"); lock each table of the
segment newest first with timeout 0 (best effort: a locked table shrinks the segment to the newer tables,
as long as two remain); release the list lock while merging; write the merged table as a temp file; re-lock
the list, re-check that the segment is still a contiguous run, rename the table into place, write the new
list, and unlink the old tables. Tombstones (ref and log deletions) are dropped only when the segment
starts at the base table: otherwise they still hide records in older tables.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
from operator import itemgetter

from ..errors import LockBusy, Outdated, RefscopeError, TransactionRefused
from ..formats.reftable.policy import compaction_size, suggest_compaction_segment
from ..formats.reftable.record import LOG_DELETION, VALUE_DELETION
from ..formats.reftable.table import Table
from ..lockfile import LOCK_SUFFIX, busy_error, committing, create_with_timeout, discard, rename
from .common import auto_compaction, fsync_references
from .crashpoint import step
from .stack_io import StackWriter, make_temp, table_bytes, table_name


def merge_tables(tables: list[Table], drop_tombstones: bool, refs=(), logs=()):
    """(refs, logs) of ``tables`` (oldest first) merged: the newest record per key wins. ``refs`` and
    ``logs``: records newer than every table (a transaction's, not yet written), merged in as the newest."""
    by_name: dict = {}
    by_key: dict = {}
    for recs in [*(t.iter_refs() for t in tables), refs]:
        recs = list(recs)
        by_name.update(zip(map(_name, recs), recs, strict=True))  # oldest first: a newer record overwrites
    for recs in [*(t.iter_logs() for t in tables), logs]:
        recs = list(recs)
        by_key.update(zip(zip(map(_name, recs), map(_update_index, recs), strict=True), recs, strict=True))
    ref_list = list(by_name.values())
    log_list = list(by_key.values())
    if drop_tombstones:
        ref_list = [r for r in ref_list if r.value_type != VALUE_DELETION]
        log_list = [r for r in log_list if r.log_type != LOG_DELETION]
    return ref_list, log_list


_name = itemgetter(0)  # RefRecord.name, LogRecord.name
_update_index = itemgetter(1)  # RefRecord.update_index, LogRecord.update_index


def folds_whole_stack(repo, st: StackWriter, refs, logs) -> bool:
    """Would git's auto-compaction, right after ``st`` gets a table of ``refs`` and ``logs``, merge that
    table with every table below it? Then the transaction can write the merged table itself, in place of
    the stack (``compact_range``'s result, one ``tables.list`` swap). Decided on a lower bound of the new
    table's size, without encoding it: the policy is monotone in that size (each of its comparisons holds
    from some size on), so a segment of the whole stack at the bound is the segment at the true size."""
    if not st.tables or not auto_compaction():
        return False
    from ..formats.reftable.record import VALUE_SYMREF, VALUE_VAL1, VALUE_VAL2
    from ..formats.reftable.table import FOOTER_SIZE, HEADER_SIZE

    hs = st.tables[0].hash_size
    types = list(map(_value_type, refs))
    # every ref record takes at least a prefix length, a suffix length and one byte of suffix, then
    # its update-index delta and value; log blocks are compressed (counted as nothing)
    low = 4 * len(types) + hs * (types.count(VALUE_VAL1) + 2 * types.count(VALUE_VAL2))
    if VALUE_SYMREF in types:
        low += sum(len(r.target) + 1 for r in refs if r.value_type == VALUE_SYMREF)
    version = 1 if st.hash_name == "sha1" else 2
    low += HEADER_SIZE[version] + FOOTER_SIZE[version]
    sizes = [*policy_sizes(st), compaction_size(low, version, st.hash_name)]
    return suggest_compaction_segment(sizes, repo.config.reftable_geometric_factor()) == (0, len(sizes))


_value_type = itemgetter(2)


def policy_sizes(st: StackWriter) -> list[int]:
    return [compaction_size(t.size, t.version, st.hash_name) for t in st.tables]


def compact_range(repo, st: StackWriter, first: int, last: int, *, best_effort: bool) -> str | None:
    """Compact tables[first..last] (inclusive) of ``st``; returns the new table's name (None if empty/no-op).

    Raises LockBusy (list or, without best effort, a table locked) and Outdated (stack changed).
    """
    if first >= last:
        return None
    timeout = repo.config.reftable_lock_timeout()
    do_fsync = fsync_references(repo)
    st.lock(timeout, "compaction: lock tables.list")
    table_locks: list[str] = []
    temp = ""
    try:
        if st.read_names() != st.names:
            raise Outdated(st.list_path, "stack changed; compaction skipped")
        for i in range(last, first - 1, -1):
            path = st.tables[i].path
            step("compaction: lock", path)
            fd = create_with_timeout(path + LOCK_SUFFIX, 0)
            if fd < 0:
                if fd == -errno.EEXIST and best_effort and last - i >= 2:
                    first = i + 1
                    break
                if fd == -errno.EEXIST:
                    raise busy_error(path)
                raise TransactionRefused(path + LOCK_SUFFIX, os.strerror(-fd))
            os.close(fd)
            table_locks.append(path + LOCK_SUFFIX)
        st.unlock("compaction: release tables.list")
        segment = st.tables[first : last + 1]
        min_i = segment[0].min_update_index
        max_i = segment[-1].max_update_index
        refs, logs = merge_tables(segment, drop_tombstones=first == 0)
        empty = not refs and not logs
        if not empty:
            data = table_bytes(repo, refs, logs, min_i, max_i, exact_log_message=True)
            step("compaction: create temp")
            fd, temp = make_temp(os.path.join(st.dir, table_name(min_i, max_i)) + ".temp.")
            try:
                step("compaction: write temp")
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if do_fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        st.lock(timeout, "compaction: re-lock tables.list")
        names = st.read_names()
        old = [t.name for t in st.tables]
        first_name = old[first]
        if names == old:
            start, end = first, last
        else:
            try:
                start = names.index(first_name)
            except ValueError:
                raise Outdated(st.list_path, "stack changed; compaction skipped") from None
            end = start + (last - first)
            if names[start : end + 1] != old[first : last + 1]:
                raise Outdated(st.list_path, "stack changed; compaction skipped")
        new_name = None
        if not empty:
            new_name = table_name(min_i, max_i) + ".ref"
            step("compaction: rename table")
            rename(temp, os.path.join(st.dir, new_name), keep=True)  # ours until the list names it
            temp = ""
        new_names = names[:start] + ([new_name] if new_name else []) + names[end + 1 :]
        new_path = (os.path.join(st.dir, new_name),) if new_name else ()
        # From the new list on, a signal waits until the replaced tables are gone (no strays left behind).
        with committing():
            try:
                st.commit_list(new_names, do_fsync, "compaction: rename tables.list", publish=new_path)
            except BaseException:
                for p in new_path:
                    discard(p)
                raise
            # The stack in memory now mirrors the list: reuse the tables outside the segment.
            reuse = {t.name: t for t in st.tables}
            if not empty:
                reuse[new_name] = Table.from_bytes(data, os.path.join(st.dir, new_name))
            st.tables = []
            st.names = []
            try:
                st.load(reuse)
            except (RefscopeError, OSError):
                pass  # the list moved on after we released it (another writer); the next user reloads
            for lock in table_locks:
                step("compaction: unlink", lock[: -len(LOCK_SUFFIX)])
                discard(lock[: -len(LOCK_SUFFIX)])
        return new_name
    finally:
        st.unlock("compaction: release tables.list")
        for lock in table_locks:
            discard(lock)
        if temp:
            discard(temp)


def lock_tables(st: StackWriter) -> list[str] | None:
    """Lock every table of ``st`` newest first with timeout 0, as ``compact_range`` does (under the held
    ``tables.list`` lock): the lock paths, or None with nothing held when a table is locked already (another
    process is compacting it) or cannot be locked."""
    held: list[str] = []
    for t in reversed(st.tables):
        step("compaction: lock", t.path)
        fd = create_with_timeout(t.path + LOCK_SUFFIX, 0)
        if fd < 0:
            for lock in held:
                discard(lock)
            return None
        os.close(fd)
        held.append(t.path + LOCK_SUFFIX)
    return held


def retire_tables(locks: list[str]) -> None:
    """After the new ``tables.list`` names the table that replaced them: unlink the tables ``lock_tables``
    locked, then their locks (inside ``committing()``: a signal waits until they are gone)."""
    for lock in locks:
        step("compaction: unlink", lock[: -len(LOCK_SUFFIX)])
        discard(lock[: -len(LOCK_SUFFIX)])
    for lock in locks:
        discard(lock)


def auto_compact(repo, st: StackWriter) -> str | None:
    """git's reftable_stack_auto_compact after a commit: lock and outdated failures are ignored."""
    try:
        seg = suggest_compaction_segment(policy_sizes(st), repo.config.reftable_geometric_factor())
        if seg is None:
            return None
        return compact_range(repo, st, seg[0], seg[1] - 1, best_effort=True)
    except (LockBusy, Outdated):
        return None  # git ignores these two: someone else is compacting or has rewritten the stack
    except (RefscopeError, OSError):
        # git would report the error although the batch is already durable; refscope reports the commit
        # as what it is (committed) and leaves the stack for the next compaction
        return None


def compact(store, segment: tuple[int, int] | None = None):
    """Compact ``segment`` ([start, end) table indexes, oldest = 0) of the store's main stack; None = git's
    geometric suggestion; ``(0, len)`` = everything. Returns the OpReport (its name says what happened)."""
    from ..meter import measure

    repo = store.repo
    st = StackWriter(os.path.join(repo.commondir, "reftable"), repo.hash_name)
    with measure("compaction") as m:
        st.load()
        if segment is None:
            segment = suggest_compaction_segment(policy_sizes(st), repo.config.reftable_geometric_factor())
        if segment is not None:
            start, end = segment
            if not (0 <= start < end <= len(st.tables)):
                raise TransactionRefused(
                    st.list_path, f"no such segment [{start}, {end}) of {len(st.tables)} tables"
                )
            compact_range(repo, st, start, end - 1, best_effort=False)
    return m.report
