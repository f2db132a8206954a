"""The reftable engine for general transactions (refs/reftable-backend.c + reftable/stack.c).

1. Take ``tables.list.lock`` of each stack an update names, in order (``reftable.lockTimeout``), and
   check the stack once under it: ``tables.list`` read one time, every table already open reused
   (the 2026 "avoid reloading the stack when already locked" patch, taken to its end: no per-ref reload).
2. The shared prepare (``plan.Plan``): HEAD and symref splits, old values, D/F conflicts -- with the
   records of every name the batch gives read in one sorted pass per table, not one seek per name.
3. ONE new table per stack at ``newest max + 1``: ref records (values, peeled tags, symrefs,
   tombstones), reflog entries as git writes them and a log deletion record for each live entry of a
   deleted ref; temp file, fsync as core.fsync asks, rename; then ``tables.list`` through its lock.
4. Auto-compaction with git's geometric policy; its lock failures are ignored (the batch is durable).
   When the policy would merge the new table at once with every table below it (a big batch on a small
   stack: the seed's 50k creates into a fresh repository), the merged table is written instead, the
   stack's tables locked as compaction locks them, and one ``tables.list`` rename swaps it in for them:
   the state git's commit and compaction leave, byte for byte, without writing, decoding and encoding
   the batch's own table first. A table locked by someone else: the plain table, then auto-compaction.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os
from bisect import bisect_left
from collections import namedtuple

from ..engines.common import (
    fsync_references,
    log_all_ref_updates,
    reflog_message,
    should_autocreate_reflog,
)
from ..engines.compaction import folds_whole_stack, lock_tables, merge_tables, retire_tables
from ..engines.reftable import load_stack, snapshot_stack, stack_dir_for
from ..engines.stack_io import StackWriter, table_bytes
from ..errors import TransactionRefused
from ..formats.reftable.merged import SEEK_LIMIT, follow_symrefs
from ..formats.reftable.record import (
    LOG_DELETION,
    LOG_UPDATE,
    VALUE_DELETION,
    VALUE_SYMREF,
    VALUE_VAL1,
    VALUE_VAL2,
    LogRecord,
    RefRecord,
)
from ..formats.reftable.table import Table
from ..lockfile import committing, discard, remove
from ..model import HASH_HEXSZ
from .creates import build_creates, creates_only
from .ident import committer_ident
from .plan import MISSING, REGULAR, SYMREF, Plan, Upd
from .rename import reftable_records, reftable_worktrees

_UNREAD = object()  # a name the read-ahead did not read
_new = tuple.__new__  # records without the NamedTuples' Python-level __new__ (50k-ref batches)


class TablePlan(namedtuple("TablePlan", "st lo hi data folds refs logs")):
    """What a transaction writes to one stack: the table ``data`` for update indexes ``lo``..``hi``
    (None: nothing left once folded); ``folds``: it replaces every table of ``st`` (else it goes on top);
    ``refs``/``logs``: the transaction's own records (for the plain table when the fold cannot lock)."""

    __slots__ = ()


class ReftableUpdate(Plan):
    def __init__(self, store, commands, peeled, *, snapshot=None, message: bytes = b"") -> None:
        repo = store.repo
        zero = b"0" * HASH_HEXSZ[repo.hash_name]
        self.columns = creates_only(commands, zero)  # (names, new oids): planned by columns (prebuild)
        super().__init__(repo, commands, peeled, zero, defer=self.columns is not None)
        self.commands = commands
        self.peeled = peeled
        self.raw_message = message
        self.prebuilt: tuple[StackWriter, list[str], list] | None = None
        self.store = store
        self.snapshot = snapshot
        self.message = reflog_message(message) if message else b""
        self.timeout = repo.config.reftable_lock_timeout()
        self.stacks: dict[str, StackWriter] = {}
        self.pre: dict[bytes, RefRecord | None] = {}
        self.written: list[StackWriter] = []
        # without a linked worktree one stack holds every name: no routing per name
        self.single = repo.gitdir == repo.commondir
        self.whole: dict[str, dict[bytes, RefRecord]] = {}  # stack dir -> its live records (small stacks)
        self._sorted: dict[str, list[bytes]] = {}
        self.main: StackWriter | None = None

    # -- stacks ---------------------------------------------------------------------------------------
    def stack(self, name: bytes, lock: bool = True) -> StackWriter:
        if self.main is not None:
            return self.main
        d = stack_dir_for(self.repo, name)
        st = self.stacks.get(d)
        if st is not None:
            return st
        st = StackWriter(d, self.repo.hash_name)
        if lock:
            st.lock(self.timeout)
            self.stacks[d] = st
        try:
            load_stack(st, self.snapshot, d)
            if self.single and lock:
                self.main = st
        except BaseException:
            if lock:
                st.unlock()
                del self.stacks[d]
            raise
        return st

    def lookup(self, name: bytes) -> RefRecord | None:
        if name in self.pre:
            return self.pre[name]
        return self.stack(name).lookup(name)

    # -- reads ----------------------------------------------------------------------------------------
    def head_ref(self) -> bytes | None:
        # git locks the stack of every update first, then reads HEAD from its own stack
        by_stack: dict[str, list[bytes]] = {}
        if self.single and self.updates:  # one stack holds every name: no routing per name
            by_stack[self.stack(b"HEAD").dir] = [u.name for u in self.updates]
        else:
            for u in self.updates:
                by_stack.setdefault(self.stack(u.name).dir, []).append(u.name)
        for d, names in by_stack.items():
            st = self.stacks[d]
            small = self.small_stack(st, len(names) // 4) if len(names) > 256 else None
            if small is not None:  # a small stack under a big batch (the seed's creates): read it whole
                self.pre.update(zip(names, map(small.get, names), strict=True))
            else:
                self.pre.update(st.lookup_many(names))
        d = stack_dir_for(self.repo, b"HEAD")
        st = self.stacks.get(d) or self.stack(b"HEAD", lock=False)
        rec = st.lookup(b"HEAD")
        return rec.target if rec is not None and rec.value_type == VALUE_SYMREF else None

    def read(self, u: Upd) -> tuple[int, bytes | None]:
        rec = self.pre.get(u.name, _UNREAD) if u.parent is None else _UNREAD
        if rec is _UNREAD:
            rec = self.stack(u.name).lookup(u.name)
        if rec is None:
            return MISSING, None
        if rec.value_type == VALUE_SYMREF:
            return SYMREF, rec.target
        return REGULAR, rec.value

    def resolve(self, name: bytes) -> bytes | None:
        return follow_symrefs(lambda n: self.stack(n).lookup(n), name)

    def small_stack(self, st: StackWriter, cap: int) -> dict[bytes, RefRecord] | None:
        """Every live record of ``st`` by name, when it holds at most ``cap`` records in all (else None):
        one pass over a few blocks instead of a sorted lookup of every name of a big batch."""
        whole = self.whole.get(st.dir)
        if whole is not None:
            return whole
        seen: dict[bytes, RefRecord] = {}
        n = 0
        for t in reversed(st.tables):
            for rec in t.iter_refs():
                n += 1
                if n > cap:
                    return None
                seen.setdefault(rec.name, rec)
        live = {k: r for k, r in seen.items() if r.value_type != VALUE_DELETION}
        self.whole[st.dir] = live
        return live

    def exists(self, name: bytes) -> bool:
        st = self.stack(name)
        whole = self.whole.get(st.dir)
        return name in whole if whole is not None else st.lookup(name) is not None

    def descendants(self, prefixes: list[bytes]) -> dict[bytes, bytes]:
        out: dict[bytes, bytes] = {}
        if len(self.whole) == len(self.stacks):  # every stack read whole already (small stacks)
            if self.single:  # the first name under each directory of the stack's names, looked up
                under = self.whole_dirs(self.stack(b"HEAD").dir)
                return {p: under[p] for p in prefixes if p in under}
            for p in prefixes:
                names = self.whole_names(self.stack(p).dir)
                k = bisect_left(names, p)
                if k < len(names) and names[k].startswith(p):
                    out[p] = names[k]
            return out
        groups: dict[str, list[bytes]] = {}
        for p in prefixes:
            groups.setdefault(self.stack(p).dir, []).append(p)
        for d, ps in groups.items():
            st = self.stacks[d]
            ps = sorted(set(ps))
            cands: dict[bytes, set[bytes]] = {}
            for t in st.tables:
                if len(ps) <= SEEK_LIMIT:
                    for p in ps:
                        for rec in t.iter_refs(p):
                            if not rec.name.startswith(p):
                                break
                            cands.setdefault(p, set()).add(rec.name)
                            if len(cands[p]) > 8:
                                break
                    continue
                names = [n for rb, i in t.iter_ref_blocks(ps[0]) for n in rb.names[i:]]
                if not names:
                    continue
                for p in ps:
                    k = bisect_left(names, p)
                    while k < len(names) and names[k].startswith(p):
                        cands.setdefault(p, set()).add(names[k])
                        k += 1
            for p, found in cands.items():
                for n in sorted(found):
                    if st.lookup(n) is not None:
                        out[p] = n
                        break
        return out

    def below_besides(self, prefix: bytes, skip: bytes) -> bytes | None:
        for name, *_ in self.stack(prefix).stream(prefix):
            if not name.startswith(prefix):
                return None
            if name != skip:
                return name
        return None

    def whole_dirs(self, d: str) -> dict[bytes, bytes]:
        """Every directory prefix (``refs/``, ``refs/heads/``...) of the names of the stack read whole,
        with the first name under it: ``descendants`` for a big batch as one dict lookup per name."""
        under: dict[bytes, bytes] = {}
        for name in reversed(self.whole_names(d)):
            j = name.find(b"/")
            while j >= 0:
                under[name[: j + 1]] = name  # walking back: the first name under it wins
                j = name.find(b"/", j + 1)
        return under

    def whole_names(self, d: str) -> list[bytes]:
        names = self._sorted.get(d)
        if names is None:
            names = self._sorted[d] = sorted(self.whole[d])
        return names

    # -- writing --------------------------------------------------------------------------------------
    def queued(self, u: Upd) -> bool:
        """git's queue_transaction_update: what the new table records for ``u``."""
        if u.kind == MISSING and not u.head_split:  # a new value, not the deletion of a missing ref
            return u.new_target is not None or (u.new is not None and u.new != self.zero)
        if u.kind == SYMREF or u.log_only:
            return True
        return u.have_new and (u.current or self.zero) != (u.new or self.zero)

    def write(self) -> None:
        self.publish(self.build())

    def build(self) -> list[TablePlan]:
        """What the transaction writes to every stack (see ``table_plan``)."""
        mode = log_all_ref_updates(self.repo)
        queued = self.queued
        batches: dict[str, list[Upd]]
        if self.main is not None:  # one stack: no routing per name
            batches = {self.main.dir: [u for u in self.updates if queued(u)]}
        else:
            batches = {}
            for u in self.updates:
                if queued(u):
                    batches.setdefault(self.stack(u.name).dir, []).append(u)
        plans = []
        who = None
        zero = self.zero
        msg = self.log_message()
        for d, ups in batches.items():
            if not ups:
                continue
            st = self.stacks[d]
            ts = st.next_update_index()
            refs: list[RefRecord] = []
            logs: list[LogRecord] = []
            # a deletion (not of a symref itself) drops the ref's reflog: a deletion record per live entry
            dropped = {u.name for u in ups if u.new == zero and u.new_target is None and u.kind != SYMREF}
            live = st.log_indexes(list(dropped)) if dropped else {}
            # who else gets an entry: every name (always), the autocreated ones, the ones with a reflog
            if mode == "always":
                logged = None
            else:
                names = [u.name for u in ups]
                auto = {n for n in names if should_autocreate_reflog(mode, n)} if mode != "false" else set()
                check = [n for n in names if n not in auto and n not in dropped]
                if check and any(t.has_logs for t in st.tables):
                    auto.update(st.log_indexes(check))
                logged = auto
            renaming = bool(self.renames)
            for u in ups:
                if renaming and u.rename is not None:
                    continue  # a rename's two sides: rename.reftable_records below
                name = u.name
                new = u.new
                target = u.new_target
                dropping = target is None and new == zero
                if dropping and u.kind != SYMREF:
                    logs += [_new(LogRecord, (name, ui, LOG_DELETION, b"", b"", b"", b"", 0, 0, b"")) for ui in live.get(name, ())]  # fmt: skip
                elif (new is not None or target is not None) and (logged is None or name in logged):
                    value = self.log_new(u)
                    if value is not None:
                        if who is None:
                            who = self.who(msg)
                        logs.append(_new(LogRecord, (name, ts, LOG_UPDATE, u.current or zero, value, *who)))
                if u.log_only:
                    continue
                if target is not None:
                    refs.append(_new(RefRecord, (name, ts, VALUE_SYMREF, None, None, target)))
                elif new is None:
                    continue
                elif dropping:
                    refs.append(_new(RefRecord, (name, ts, VALUE_DELETION, None, None, None)))
                elif u.peeled is not None:
                    refs.append(_new(RefRecord, (name, ts, VALUE_VAL2, new, u.peeled, None)))
                else:
                    refs.append(_new(RefRecord, (name, ts, VALUE_VAL1, new, None, None)))
            top = reftable_records(self, st, ts, refs, logs) if self.renames else ts
            if refs or logs:
                plans.append(self.table_plan(st, ts, refs, logs, top))
        if self.renames:
            plans += reftable_worktrees(self, set(batches))
        return plans

    def log_message(self) -> bytes:
        # git: xstrndup(msg, block_size / 2), then its writer drops trailing LFs and adds one (one line: reflog_message)
        return self.message[: self.repo.config.reftable_block_size() // 2].rstrip(b"\n") + b"\n"

    def who(self, msg: bytes) -> tuple:
        """A log record's committer fields and message (its last five)."""
        ident = committer_ident(self.repo)
        return (ident.name, ident.email, ident.time, ident.tz_hhmm(), msg)

    def table_plan(
        self, st: StackWriter, ts: int, refs: list, logs: list, top: int | None = None
    ) -> TablePlan:
        """The table of ``refs`` and ``logs`` for ``st``; when git's auto-compaction would merge it at once
        with the whole stack, the merged table itself (what ``compact_range`` would write: the stack's
        records and the new ones, tombstones dropped), which then replaces the stack in one list swap."""
        if top != ts and top is not None:  # a rename's two indexes (rename.reftable_records): never folded
            data = table_bytes(self.repo, refs, logs, ts, top, exact_log_message=True)
            return TablePlan(st, ts, top, data, False, refs, logs)
        if folds_whole_stack(self.repo, st, refs, logs):
            m_refs, m_logs = merge_tables(st.tables, True, refs, logs)
            lo = st.tables[0].min_update_index
            data = None
            if m_refs or m_logs:
                data = table_bytes(self.repo, m_refs, m_logs, lo, ts, exact_log_message=True)
            return TablePlan(st, lo, ts, data, True, refs, logs)
        data = table_bytes(self.repo, refs, logs, ts, ts, exact_log_message=True)
        return TablePlan(st, ts, ts, data, False, refs, logs)

    def publish(self, plans: list[TablePlan]) -> None:
        do_fsync = fsync_references(self.repo)
        for plan in plans:
            st, lo, hi, data, folds = plan[:5]
            locks = lock_tables(st) if folds else None
            if folds and locks is None:  # a table is being compacted: our own table, auto-compaction after
                folds = False
                data = table_bytes(self.repo, plan.refs, plan.logs, hi, hi, exact_log_message=True)
            if not folds:
                self.append(st, data, hi, do_fsync, lo)
                continue
            try:
                self.fold(st, data, lo, hi, do_fsync, locks)
            finally:
                for lock in locks:
                    discard(lock)  # (gone already once the old tables are)

    def append(self, st: StackWriter, data: bytes, ts: int, do_fsync: bool, lo: int | None = None) -> None:
        """The new table on top of the stack (git's reftable_addition_commit); auto-compaction follows."""
        name = st.write_table(data, ts if lo is None else lo, ts, do_fsync)
        path = os.path.join(st.dir, name)
        try:
            st.commit_list([*st.names, name], do_fsync, publish=(path,))
        except BaseException:
            try:
                remove(path)
            except OSError:
                pass
            raise
        st.tables.append(Table.from_bytes(data, path))
        self.written.append(st)

    def fold(self, st, data: bytes | None, lo: int, hi: int, do_fsync: bool, locks: list[str]) -> None:
        """The merged table in place of the whole stack, its tables locked (``locks``): what git's
        commit and the compaction right after leave, in one ``tables.list`` swap (the stack is never
        seen with the transaction's own table on top; compaction has nothing left to do)."""
        name = st.write_table(data, lo, hi, do_fsync) if data is not None else None
        path = os.path.join(st.dir, name) if name else None
        published = (path,) if path else ()
        with committing():  # from the new list on, a signal waits until the old tables are gone
            try:
                st.commit_list([name] if name else [], do_fsync, publish=published)
            except BaseException:
                for p in published:
                    discard(p)
                raise
            retire_tables(locks)
        st.tables = [Table.from_bytes(data, path)] if path else []

    def release(self) -> None:
        for st in self.stacks.values():
            st.unlock()

    def run(self) -> list[Upd]:
        if self.prebuilt is not None:
            return self._run_prebuilt()
        if not self.taken:
            self.take(self.commands, self.peeled)
        try:
            self.prepare()
            self.write()
        finally:
            self.release()
        return self.updates

    # -- the whole plan before the lock ---------------------------------------------------------------
    def prebuild(self) -> bool:
        """Plan the transaction and build its table against the snapshot's stack, before any lock (the
        delete engine's read-ahead, taken to the table itself): under the lock, ``run`` then reads
        ``tables.list`` once and, when it names the very tables planned against (tables never change),
        only writes the table and the list. Only for one stack (no linked worktree). False when there is
        nothing to plan against, or the plan was refused (``run`` must then be a fresh engine's, which
        decides under the lock as git does)."""
        if not self.single or self.snapshot is None:
            return False
        d = os.path.join(self.repo.commondir, "reftable")
        snap = snapshot_stack(self.snapshot, d)
        if snap is None:
            return False
        st = StackWriter(d, self.repo.hash_name)
        st.adopt(*snap)
        self.stacks[d] = st
        self.main = st
        try:
            plans = build_creates(self, st) if self.columns is not None else None
            if plans is None:
                if not self.taken:
                    self.take(self.commands, self.peeled)
                self.prepare()
                plans = self.build()
        except TransactionRefused:
            return False
        finally:
            del self.stacks[d]
            self.main = None
        self.prebuilt = (st, list(st.names), plans)
        return True

    def _run_prebuilt(self) -> list[Upd]:
        st, names, plans = self.prebuilt
        st.lock(self.timeout)
        self.stacks[st.dir] = st
        self.main = st
        try:
            st.load()  # one read of tables.list under the lock
            if st.names == names:
                self.publish(plans)
                return self.updates
        finally:
            self.release()
        # the stack moved since the snapshot: plan again, under the lock, as git does
        fresh = ReftableUpdate(
            self.store, self.commands, self.peeled, snapshot=None, message=self.raw_message
        )
        updates = fresh.run()
        self.written = fresh.written
        self.rows = fresh.rows
        return updates
