"""A transaction of queued ref deletions, committed all or nothing through an engine.

The TUI queues deletions as the user marks rows (each with the value it was seen at); the CLI takes them from
arguments or stdin. ``delete()`` validates at once (git's name rules, duplicates, the checked-out branch
guard); ``commit()`` hands everything to an engine, which checks every expected value under the locks:

- ``native``: the store's own writer following git's protocol (``engines/files.py``, ``engines/reftable.py``);
- ``git``: ``git update-ref --stdin -z`` (``engines/git.py``), counted with its child process.

A refusal raises ``TransactionRefused`` (``StaleValue``, ``LockBusy``) with git's wording and leaves every
byte on disk as it was. The cost of the commit (first lock to last unlink) is measured by the meter.
"""

from __future__ import annotations

import os
from collections import namedtuple

from .engines.common import Deletion
from .errors import CorruptStore, InvalidRefName, TransactionRefused
from .errors import name_text as _text
from .lockfile import protect
from .meter import OpReport, measure
from .model import HASH_HEXSZ
from .refname import REV_PARSE_RULES, all_valid_and_safe, check_old_oid, check_refname, is_safe_refname

ENGINES = ("native", "git")
_BATCH = 64  # delete_many reads the values of more names than this in one pass


class CommitResult(
    namedtuple("CommitResult", "committed engine deleted report phases missing", defaults=((),))
):
    """``committed`` (bool), ``engine`` (str), ``deleted`` (list of names), ``report``: the OpReport of the
    commit itself (first lock to last unlink, including git's child process), ``phases``: OpReports of the
    snapshot (when taken here), the commit, auto-compaction (reftable), ...; ``missing``: the names asked
    for that did not exist (git deletes them silently; a user wants to know)."""

    __slots__ = ()


def take_snapshot(store, phases: list[OpReport]):
    """``store.snapshot()`` measured as the phase "snapshot" (appended to ``phases``); a corrupt store
    refuses the transaction (the one path for deletions and update's transactions)."""
    with measure("snapshot") as m:
        try:
            snap = store.snapshot()
        except CorruptStore as err:
            raise TransactionRefused(err.file, err.what, err.offset) from None
    phases.append(m.report)
    return snap


class Transaction:
    """Queued deletions against one store. Not thread-safe; commit at most once."""

    __slots__ = (
        "store",
        "engine",
        "no_deref",
        "allow_checked_out",
        "message",
        "deletions",
        "_names",
        "_snapshot",
        "_phases",
        "_heads",
        "_missing",
        "_done",
        "_known",
        "_on_phase",
    )

    def __init__(
        self,
        store,
        engine: str = "native",
        no_deref: bool = False,
        allow_checked_out: bool = False,
        *,
        message: bytes = b"",
        snapshot=None,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r} (expected one of {ENGINES})")
        self.store = store
        self.engine = engine
        self.no_deref = no_deref
        self.allow_checked_out = allow_checked_out
        self.message = message
        self.deletions: list[Deletion] = []
        self._names: set[bytes] = set()
        self._snapshot = snapshot
        self._phases: list[OpReport] = []
        self._heads: list[tuple[str, bytes]] | None = None
        self._missing: list[bytes] | None = None  # names the git engine's lookups found missing
        self._done = False
        # engines.reftable.StackReads: records and reflog entries read from the snapshot's stack (by
        # delete_many, the read phase, the CLI's child), reused by the engine while its stack is unchanged
        self._known = None
        self._on_phase = _no_phase

    # -- queueing -------------------------------------------------------------------------------------
    @property
    def snapshot(self):
        """The snapshot the deletions were seen in (taken on first need, measured as a phase)."""
        if self._snapshot is None:
            self._snapshot = take_snapshot(self.store, self._phases)
        return self._snapshot

    def delete(self, name: bytes, old_oid: bytes | None = None, _name_checked: bool = False) -> None:
        """Queue the deletion of ``name`` (expected at ``old_oid`` when given). Validates immediately
        (``_name_checked``: ``delete_many`` has already checked every name of its batch at once)."""
        if not isinstance(name, bytes):
            raise TypeError("ref names are bytes")
        if not _name_checked and (check_refname(name) is not None or not is_safe_refname(name)):
            what = f"refusing to update ref with bad name '{_text(name)}'"
            meant = self._meant(name)
            if meant is not None:
                what += f"; did you mean '{_text(meant)}'?"
            raise InvalidRefName(self._where(), what)
        if old_oid is not None:
            old_oid = old_oid.lower()
            why = check_old_oid(old_oid, HASH_HEXSZ[self.store.repo.hash_name])
            if why == "invalid":
                raise TransactionRefused(
                    self._where(), f"delete {_text(name)}: invalid <old-oid>: {_text(old_oid)}"
                )
            if why == "zero":
                raise TransactionRefused(self._where(), f"delete {_text(name)}: zero <old-oid>")
        if name in self._names:
            raise TransactionRefused(self._where(), f"multiple updates for ref '{_text(name)}' not allowed")
        if not self.allow_checked_out:
            self._refuse_checked_out(name)
        self._names.add(name)
        self.deletions.append(Deletion(name, old_oid))

    def delete_many(self, items) -> None:
        """``delete(name, old_oid)`` for each pair, in order, with the same checks and errors; the values
        the checked-out guard needs are read in one sorted pass instead of one lookup per name."""
        items = list(items)
        if len(items) > _BATCH and not self.no_deref and not self.allow_checked_out:
            self._prefetch([n for n, _o in items if isinstance(n, bytes)])
        names = [n for n, _o in items]
        checked = len(items) > _BATCH and all(type(n) is bytes for n in names) and all_valid_and_safe(names)
        for name, old in items:
            self.delete(name, old, checked)

    def _prefetch(self, names: list[bytes]) -> None:
        snap = self.snapshot
        if not _one_stack(snap):
            return  # files: per-name lookups are cheap; linked worktrees route names to two stacks
        from .engines.reftable import read_ahead

        names = [n for n in names if not n.startswith(_OTHER_WORKTREES)]
        try:
            self._known = read_ahead(snap, names, None)
        except CorruptStore as err:
            raise TransactionRefused(err.file, err.what, err.offset) from None

    def _lookup_target(self, snap, name: bytes) -> bytes | None:
        """The symref target of ``name`` in the snapshot (None: not a symref, or absent)."""
        known = self._known
        if known is not None:
            records = known.records
            if name in records:
                rec = records[name]
                return rec.target if rec is not None else None
        ref = snap.head() if name == b"HEAD" else snap.lookup(name)
        return ref.target if ref is not None else None

    def _meant(self, name: bytes) -> bytes | None:
        """The full name git's rev-parse rules would make of a short ``name`` (``main`` ->
        ``refs/heads/main``), when that ref exists: the hint for a refused short name."""
        if name.startswith(b"refs/") or check_refname(b"refs/heads/" + name) is not None:
            return None
        try:
            snap = self.snapshot
            for rule in REV_PARSE_RULES[1:]:  # (as given: not a hint)
                full = rule % name
                if snap.lookup(full) is not None:
                    return full
        except (CorruptStore, TransactionRefused):
            return None
        return None

    def _where(self) -> str:
        """The file a refusal that concerns no single file is reported against: the git dir."""
        return self.store.repo.gitdir

    def _resolve(self, name: bytes) -> bytes:
        """Where a deletion of ``name`` lands: itself with no-deref, else the end of its symref chain."""
        if self.no_deref:
            return name
        snap = self.snapshot
        for _ in range(5):
            target = self._lookup_target(snap, name)
            if target is None:
                return name
            name = target
        return name

    def _refuse_checked_out(self, name: bytes) -> None:
        target = self._resolve(name)
        if not target.startswith(b"refs/heads/"):
            return
        if self._heads is None:
            repo = self.store.repo
            from .repo import checked_out_branches, main_worktree_is_bare

            if repo.gitdir == repo.commondir and not os.path.isdir(os.path.join(repo.commondir, "worktrees")):
                # no linked worktree: HEAD of the snapshot is the only possible checkout (no second read
                # of the store), and a bare repository has none
                head = None if main_worktree_is_bare(repo) else self.snapshot.head()
                self._heads = [(repo.gitdir, head.target)] if head is not None and head.target else []
            else:
                self._heads = checked_out_branches(repo)
        for gitdir, head in self._heads:
            if head == target:
                from .effects import worktree_path

                raise TransactionRefused(
                    self._where(),
                    f"cannot delete branch '{_text(target[11:])}' used by worktree at '{worktree_path(gitdir)}'",
                )

    # -- committing -----------------------------------------------------------------------------------
    def commit(self, on_phase=None) -> CommitResult:
        """Commit every queued deletion atomically; raises TransactionRefused (nothing changed) on refusal.

        ``on_phase(name)`` is called as each phase starts ("check packed-refs", "read", "commit": the names
        of the OpReports in ``phases``), so that a caller on another thread can show where a long commit is.
        """
        if on_phase is not None:
            self._on_phase = on_phase
        if self._done:
            raise TransactionRefused(self._where(), "transaction already committed")
        store = self.store
        repo = store.repo
        snap = self.snapshot
        self._refuse_known_damage(snap)
        existed = self._existing(snap) if self.engine == "git" else None
        children = self.engine == "git"
        # Engines are imported before the meter starts: the commit's figures are the commit's own.
        if self.engine == "git":
            from .engines import git as engine
        elif store.format == "files":
            from .engines import files as engine
        else:
            from .engines import reftable as engine
        if self.engine != "git" and store.format == "files":
            self._check_packed(snap)
        elif self.engine != "git":
            self._read_ahead(snap)
        if store.format == "reftable":
            self._refuse_nul_readings(snap)
        protect()  # the signal handlers, before the meter starts (lockfile.py, "Signals")
        self._on_phase("commit")
        try:
            with measure("commit", children=children) as m:
                extra: list[OpReport] = []
                if self.engine == "git":
                    engine.commit(repo, self.deletions, no_deref=self.no_deref, message=self.message)
                    deleted = existed
                elif store.format == "files":
                    deleted = engine.commit(
                        repo, self.deletions, snapshot=snap, no_deref=self.no_deref, message=self.message
                    )
                else:
                    deleted, extra = engine.commit(
                        store,
                        self.deletions,
                        snapshot=snap,
                        no_deref=self.no_deref,
                        message=self.message,
                        known=self._known,
                    )
        except CorruptStore as err:
            raise TransactionRefused(err.file, err.what, err.offset) from None
        except OSError as err:
            # Any OS error no writer typed (the engines remove their locks and temp files on the way out):
            # a refusal, one line, never a traceback. A typed one names the file it was writing.
            file = os.fsdecode(err.filename) if err.filename is not None else self._where()
            raise TransactionRefused(file, err.strerror or str(err)) from None
        self._done = True
        report = m.report
        done = set(deleted)
        missing = [d.name for d in self.deletions if d.name not in done and self._resolve(d.name) not in done]
        return CommitResult(True, self.engine, deleted, report, [*self._phases, report, *extra], missing)

    def _refuse_known_damage(self, snap) -> None:
        """A write lands on every table of the stack (the new table shadows them all): when a read in
        this process already found one of them damaged -- the listing on screen, a lookup -- the commit is
        refused with that finding, whichever engine, even if this transaction reads only healthy blocks."""
        if snap.format != "reftable":
            return  # packed-refs is checked whole before any rewrite (``_check_packed``)
        from .errors import known_damage

        for t in (*snap.tables, *snap.worktree_tables):
            found = known_damage(t.path)
            if found is not None:
                raise TransactionRefused(*found)

    def _refuse_nul_readings(self, snap) -> None:
        """A reftable key with a NUL byte is read by git as the name before the NUL: git lists, resolves
        and deletes ``refs/heads/ab`` for the damaged record ``refs/heads/ab\\0c``. refscope does not
        serve that record, so a deletion of such a name finds nothing -- and is refused rather than done
        as a silent no-op (or, through git, as a write onto the damaged record). Only names this
        transaction found missing are looked at: one seek per table of the stack that holds the name."""
        if self._missing is not None:  # the git engine's lookups found these missing
            candidates = self._missing
        else:
            known = self._known.records if self._known is not None else {}
            candidates = []
            for d in self.deletions:
                name = d.name
                if name in known:
                    rec = known[name]
                    if rec is None or not rec.value_type:
                        candidates.append(name)
                elif (snap.head() if name == b"HEAD" else snap.lookup(name)) is None:
                    candidates.append(name)
        if not candidates:
            return
        common = tuple(snap.tables)
        own = tuple(snap.worktree_tables)
        linked = snap.worktree_stack is not None
        if linked:
            from .stores.reftable import is_current_worktree_ref
        for name in candidates:
            # only the stack git reads the name from (a linked worktree's own refs are in its stack)
            tables = own if linked and is_current_worktree_ref(name) else common
            prefix = name + b"\0"
            for t in tables:
                try:
                    first = next(t.iter_refs(name), None)
                except CorruptStore as err:
                    raise TransactionRefused(err.file, err.what, err.offset) from None
                if first is not None and first.name.startswith(prefix):
                    from .display import escape_name

                    raise TransactionRefused(
                        t.path,
                        f"'{escape_name(name)}' is how git reads the damaged record "
                        f"'{escape_name(first.name)}' (a NUL byte in its name): refusing to write",
                    )

    def _check_packed(self, snap) -> None:
        """Refuse to rewrite a damaged packed-refs: the native splice copies unchanged records through
        unparsed, so the whole file is checked first (once per mapping; the engine re-checks under the lock
        only a file that changed since). Its own phase, counting the forked child that checks half of a big
        file: the commit window stays the commit."""
        if snap.format != "files":
            return
        packed = snap.packed
        self._on_phase("check packed-refs")
        with measure("check packed-refs", children=packed.check_forks()) as m:
            try:
                packed.validate()
            except CorruptStore as err:
                raise TransactionRefused(err.file, err.what, err.offset) from None
        self._phases.append(m.report)

    def add_reads(self, reads) -> None:
        """Adopt ``StackReads`` made elsewhere from this transaction's snapshot (the CLI reads the reflog
        entries in a second process while names are checked here); ignored unless read from the same
        tables as what this transaction already holds."""
        known = self._known
        if known is None:
            self._known = reads
        elif known.dir == reads.dir and known.names == reads.names:
            self._known = known._replace(
                logged=known.logged | reads.logged, logs={**known.logs, **reads.logs}
            )

    def _read_ahead(self, snap) -> None:
        """reftable: read what the commit needs from the snapshot -- the deleted refs' records and the
        update indexes of their reflog entries -- before the lock, as a phase of its own. Under the lock the
        commit checks once that tables.list still names the same tables (tables never change) and then
        only checks and writes: the lock is held for the writes, not for scanning 100k log records. When
        the stack moved meanwhile it reads again under the lock, as git does."""
        if not _one_stack(snap):
            return  # linked worktrees route names to two stacks: read under the lock
        names = [d.name for d in self.deletions]
        if not names or any(n.startswith(_OTHER_WORKTREES) for n in names):
            return
        from .engines.reftable import read_ahead

        self._on_phase("read")
        with measure("read") as m:
            try:
                # the records, then the logs of their targets (without a symref each is its own target)
                self._known = known = read_ahead(snap, names, self._known)
                targets = names
                if not self.no_deref and any(
                    r is not None and r.target for r in map(known.records.get, names)
                ):
                    targets = [self._resolve(n) for n in names]
                self._known = read_ahead(snap, names, known, targets)
            except CorruptStore as err:
                raise TransactionRefused(err.file, err.what, err.offset) from None
        self._phases.append(m.report)

    def _existing(self, snap) -> list[bytes]:
        out = []
        missing = []
        for d in self.deletions:
            target = self._resolve(d.name)
            ref = snap.head() if target == b"HEAD" else snap.lookup(target)
            if ref is not None:
                out.append(target)
            elif target == d.name:
                missing.append(d.name)
        self._missing = missing
        return out


_OTHER_WORKTREES = (b"worktrees/", b"main-worktree/")  # names of another worktree's refs


def _no_phase(name: str) -> None:
    """``Transaction.commit``'s default ``on_phase``: nobody is watching."""


def _one_stack(snap) -> bool:
    """A reftable snapshot without a linked worktree's stack: one stack holds every name, so what the
    commit needs can be read from it before the lock."""
    return snap is not None and snap.format == "reftable" and snap.worktree_stack is None
