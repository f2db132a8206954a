"""The native engine for the reftable backend (refs/reftable-backend.c + reftable/stack.c).

1. Take ``tables.list.lock`` of every stack the transaction touches (``reftable.lockTimeout``).
2. Check once, under the lock, whether the stack changed since the snapshot: ``tables.list`` is read one
   time; when the names are the snapshot's nothing is reloaded, otherwise every table still listed is reused
   and only new ones are mapped (the 2026 "avoid reloading the stack when already locked" patch, taken whole).
3. Resolve and check every expected value against the merged stack.
4. Write one table at ``newest max + 1``: a ref tombstone per deleted ref, a log deletion record for every
   live reflog entry of it, and git's log entries for symrefs/HEAD; ``<name>.temp.XXXXXX``, fsync when
   core.fsync asks, rename to ``0x%012x-0x%012x-%08x.ref``.
5. Old names + the new one through the lock, fsync when asked, rename over ``tables.list``.
6. Auto-compaction with git's geometric policy; its lock failures are ignored (the batch is durable already).
"""

from __future__ import annotations

import os
from collections import namedtuple

from ..errors import StaleValue, TransactionRefused
from ..errors import name_text as _text
from ..formats.reftable.merged import MergedTables
from ..formats.reftable.record import (
    LOG_DELETION,
    LOG_UPDATE,
    VALUE_DELETION,
    VALUE_SYMREF,
    LogRecord,
    RefRecord,
)
from ..formats.reftable.table import Table
from ..lockfile import discard
from ..meter import measure
from .common import (
    Deletion,
    RefUpdate,
    auto_compaction,
    committer_ident,
    fsync_references,
    is_per_worktree,
    log_all_ref_updates,
    reflog_message,
    should_autocreate_reflog,
    split_symref_update,
    splits_head,
    zero_oid,
)
from .compaction import auto_compact
from .stack_io import StackWriter, table_bytes


def stack_dir_for(repo, name: bytes) -> str:
    """git's backend_for: per-worktree refs of a linked worktree live in its own stack."""
    if repo.gitdir != repo.commondir and is_per_worktree(name):
        return os.path.join(repo.gitdir, "reftable")
    return os.path.join(repo.commondir, "reftable")


class _Update(RefUpdate):
    """An update of the reftable backend: the stack it is written to and whether the newest record of
    its name, read under the lock, is a symref."""

    __slots__ = ("stack", "is_symref")

    def __init__(self, name: bytes, old: bytes | None, no_deref: bool) -> None:
        super().__init__(name, old, no_deref)
        self.stack: StackWriter | None = None
        self.is_symref = False


def _original(u: _Update) -> bytes:
    while u.parent is not None:
        u = u.parent
    return u.name


def snapshot_stack(snapshot, directory: str):
    """(names, tables) a reftable snapshot holds for the stack in ``directory``, or None."""
    if snapshot is None or snapshot.format != "reftable":
        return None
    tables = snapshot.stacks.get(directory)
    if tables is None:
        return None
    return [t.name for t in tables], list(tables)


def load_stack(st: StackWriter, snapshot, directory: str) -> None:
    """Read ``st``'s tables.list (once), reusing every table ``snapshot`` holds that is still listed."""
    snap = snapshot_stack(snapshot, directory)
    if snap is not None:
        st.adopt(*snap)
    st.load()


class StackReads(namedtuple("StackReads", "dir names records logged logs")):
    """What a transaction read from its snapshot's stack before taking the lock: ``records`` (name ->
    RefRecord or None) and ``logs`` (name -> update indexes of its live reflog entries, for every name in
    ``logged``), read from the tables ``names`` of the stack in ``dir``. Tables never change once written:
    while the locked ``tables.list`` still names exactly these, the commit reuses them instead of reading
    again, and holds the lock for its checks and writes only."""

    __slots__ = ()


def read_ahead(
    snapshot, names: list[bytes], known: StackReads | None, log_names: list[bytes] | None = None
) -> StackReads:
    """``StackReads`` of a one-stack snapshot: the records of ``names`` and, given ``log_names``, their live
    reflog entries; what ``known`` holds is kept (and not read again) when it was read from the same tables."""
    stack = snapshot.stack
    tables = list(snapshot.tables)
    listed = [t.name for t in tables]
    if known is not None and known.dir == stack.dir and known.names == listed:
        records = known.records
        missing = [n for n in names if n not in records]
        if missing:
            records = {**records, **MergedTables(tables).lookup_all(missing)}
        logged, logs = known.logged, known.logs
    else:
        records = MergedTables(tables).lookup_all(names)
        logged, logs = frozenset(), {}
    missing = [n for n in log_names if n not in logged] if log_names is not None else []
    if missing:
        st = StackWriter(stack.dir, snapshot.hash_name)
        st.adopt(listed, tables)
        logged, logs = logged | frozenset(missing), {**logs, **st.log_indexes(missing)}
    return StackReads(stack.dir, listed, records, logged, logs)


class ReftableCommit:
    def __init__(
        self, store, deletions: list[Deletion], *, snapshot=None, no_deref=False, message=b"", known=None
    ) -> None:
        self.store = store
        self.repo = store.repo
        self.deletions = deletions
        self.snapshot = snapshot
        self.no_deref = no_deref
        self.message = reflog_message(message) if message else b""
        self.zero = zero_oid(self.repo.hash_name)
        self.stacks: dict[str, StackWriter] = {}
        self.known: StackReads | None = known  # read from the snapshot before the lock
        self.updates: list[_Update] = []
        self.names: set[bytes] = set()
        self.timeout = self.repo.config.reftable_lock_timeout()
        self.deleted: list[bytes] = []
        self.written: list[StackWriter] = []
        self._ident = None  # the committer, read once when a symref's entry needs it
        self._main_dir = os.path.join(self.repo.commondir, "reftable")
        linked = self.repo.gitdir != self.repo.commondir
        self._wt_dir = os.path.join(self.repo.gitdir, "reftable") if linked else None

    def _stack(self, name: bytes) -> StackWriter:
        d = self._wt_dir if self._wt_dir is not None and is_per_worktree(name) else self._main_dir
        st = self.stacks.get(d)
        if st is None:
            st = StackWriter(d, self.repo.hash_name)
            st.lock(self.timeout)
            self.stacks[d] = st
            try:
                load_stack(st, self.snapshot, d)  # under the lock
            except BaseException:
                st.unlock()
                del self.stacks[d]
                raise
        return st

    def _add(self, u: _Update) -> None:
        self.updates.append(u)
        self.names.add(u.name)

    def prepare(self) -> None:
        no_deref = self.no_deref
        self.updates = [_Update(d.name, d.old_oid, no_deref) for d in self.deletions]
        self.names.update(u.name for u in self.updates)
        # git locks every stack of the original updates first.
        if self._wt_dir is None and self.updates:  # without linked worktrees one stack holds every name
            st = self._stack(self.updates[0].name)
            for u in self.updates:
                u.stack = st
        else:
            for u in list(self.updates):
                u.stack = self._stack(u.name)
        head_stack = self._stack(b"HEAD") if b"HEAD" in self.names else self._head_stack()
        head = head_stack.lookup(b"HEAD") if head_stack is not None else None
        head_ref = head.target if head is not None and head.value_type == VALUE_SYMREF else None
        queued: list[_Update] = []
        # one batched read per stack for the names asked for (symref targets are looked up one by one)
        pre: dict[bytes, RefRecord | None] = {}
        for st in self.stacks.values():
            names = [u.name for u in self.updates if u.stack is st]
            known = self.known
            if known is not None and known.dir == st.dir and known.names == st.names:
                # the stack is the one those records were read from (tables never change): reuse them
                records = known.records
                pre.update((n, records[n]) for n in names if n in records)
                names = [n for n in names if n not in records]
            if names:
                pre.update(st.lookup_many(names))
        i = 0
        while i < len(self.updates):
            u = self.updates[i]
            i += 1
            if u.stack is None:
                u.stack = self._stack(u.name)
            st = u.stack
            if splits_head(self, u, head_ref):
                h = _Update(b"HEAD", u.old, True)
                h.log_only = True
                self._add(h)
            rec = pre[u.name] if u.name in pre and u.parent is None and not u.log_only else st.lookup(u.name)
            if rec is None:
                if u.old is not None and not u.log_only:
                    raise StaleValue(
                        st.list_path,
                        f"cannot lock ref '{_text(_original(u))}': unable to resolve reference '{_text(u.name)}'",
                    )
                if u.log_only and u.name == b"HEAD":
                    pass  # HEAD vanished: nothing to log
                continue
            if rec.value_type == VALUE_SYMREF:
                u.is_symref = True
                u.current = st.resolve(u.name)
                if u.no_deref:
                    if u.old is not None and not u.log_only and u.current is None:
                        raise TransactionRefused(
                            self.repo.gitdir, f"cannot lock ref '{_text(u.name)}': error reading reference"
                        )
                else:
                    self._add(split_symref_update(self, u, rec.target, _Update))
            else:
                u.current = rec.value
            if u.old is not None and not u.log_only and u.current != u.old:
                where = st.list_path
                if u.current is None:
                    raise StaleValue(
                        where,
                        f"cannot lock ref '{_text(_original(u))}': reference is missing but expected {u.old.decode()}",
                    )
                raise StaleValue(
                    where,
                    f"cannot lock ref '{_text(_original(u))}': is at {u.current.decode()} "
                    f"but expected {u.old.decode()}",
                )
            queued.append(u)
        self.queued = queued

    def _head_stack(self) -> StackWriter | None:
        d = stack_dir_for(self.repo, b"HEAD")
        st = self.stacks.get(d)
        if st is not None:
            return st
        # HEAD's stack is not part of the transaction: read it as git does, without locking it.
        st = StackWriter(d, self.repo.hash_name)
        snap = snapshot_stack(self.snapshot, d)
        if snap is not None:
            st.adopt(*snap)
            return st
        try:
            st.load()
        except TransactionRefused:
            return None
        return st

    def write(self) -> None:
        # every stack's records are read before the first table is written: a read error changes nothing
        mode = log_all_ref_updates(self.repo)
        batches = [
            (st, *self._records(st, [u for u in self.queued if u.stack is st], mode))
            for st in dict.fromkeys(u.stack for u in self.queued)  # in the order the updates name them
        ]
        self.deleted = [u.name for u in self.queued if not u.log_only]
        do_fsync = fsync_references(self.repo)
        for st, refs, logs in batches:
            if not refs and not logs:
                continue
            ts = st.next_update_index()
            data = table_bytes(self.repo, refs, logs, ts, ts)
            name = st.write_table(data, ts, ts, do_fsync)
            path = os.path.join(st.dir, name)
            try:
                st.commit_list([*st.names, name], do_fsync, publish=(path,))
            except BaseException:
                discard(path)
                raise
            st.tables.append(Table.from_bytes(data, os.path.join(st.dir, name)))
            self.written.append(st)

    def _records(
        self, st: StackWriter, ups: list[_Update], mode: str
    ) -> tuple[list[RefRecord], list[LogRecord]]:
        """The records of the table ``ups`` add to ``st``: a tombstone per deleted ref; a log deletion
        record for every live entry of the reflog of each update that is not a symref (a deletion drops
        the whole reflog, entry by entry); git's reflog entry for a symref when it is logged."""
        ts = st.next_update_index()
        new = tuple.__new__  # records without the NamedTuples' Python-level __new__ (10k-ref batches)
        plain = [u.name for u in ups if not u.is_symref]
        logs: list[LogRecord] = []
        if plain:
            known = self.known
            if (
                known is not None
                and known.dir == st.dir
                and known.names == st.names
                and known.logged.issuperset(plain)
            ):
                live = known.logs  # read before the lock from these very tables
            else:
                live = st.log_indexes(plain)
            # name, update index, type 0 and a deletion record's empty data fields
            logs = [new(LogRecord, (n, ui, LOG_DELETION, b"", b"", b"", b"", 0, 0, b"")) for n in plain for ui in live.get(n, ())]  # fmt: skip
        for u in ups:
            if u.is_symref and (
                mode == "always" or should_autocreate_reflog(mode, u.name) or st.has_log(u.name)
            ):
                logs.append(self._symref_entry(u, ts))
        if len(plain) < len(ups) or any(u.log_only for u in ups):
            logs = _dedupe_logs(logs)  # one entry per (name, index) once symrefs are logged
        refs = [new(RefRecord, (u.name, ts, VALUE_DELETION, None, None, None)) for u in ups if not u.log_only]
        return refs, logs

    def _symref_entry(self, u: _Update, ts: int) -> LogRecord:
        """git's reflog entry for a deletion through symref ``u``: from its value to zero."""
        if self._ident is None:
            self._ident = committer_ident(self.repo)
        ident = self._ident
        return LogRecord(
            u.name,
            ts,
            LOG_UPDATE,
            u.current or self.zero,
            self.zero,
            ident.name,
            ident.email,
            ident.time,
            ident.tz_hhmm(),
            self.message,
        )

    def release(self) -> None:
        for st in self.stacks.values():
            st.unlock()

    def run(self) -> list[bytes]:
        try:
            self.prepare()
            self.write()
        finally:
            self.release()
        return self.deleted


def _dedupe_logs(logs: list[LogRecord]) -> list[LogRecord]:
    seen = set()
    out = []
    for rec in logs:
        key = (rec.name, rec.update_index)
        if key in seen:
            continue
        seen.add(key)
        out.append(rec)
    return out


def commit(store, deletions: list[Deletion], *, snapshot=None, no_deref=False, message=b"", known=None):
    """Commit the deletions; then auto-compact. Returns (deleted names, [compaction OpReport...]).

    ``known``: the ``StackReads`` read from the snapshot before the lock; used when the stack under the
    lock still lists exactly those tables."""
    if not deletions:
        return [], []  # git takes no lock at all for an empty transaction
    c = ReftableCommit(store, deletions, snapshot=snapshot, no_deref=no_deref, message=message, known=known)
    deleted = c.run()
    extra = []
    if c.written and auto_compaction():
        for st in c.written:
            with measure("auto-compaction") as m:
                auto_compact(c.repo, st)
            extra.append(m.report)
    return deleted, extra


__all__ = ["commit", "read_ahead", "ReftableCommit", "StackReads", "VALUE_DELETION"]
