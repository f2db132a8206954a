"""``UpdateTransaction``: any mix of git's ``update-ref --stdin`` commands, committed all or nothing.

Queueing checks what git checks when it reads a command (``commands.parse`` has checked the syntax and
the names): pseudorefs are refused, every new object must exist (a branch must get a commit), and --
refscope's guard, as for deletions -- a branch checked out in a worktree is not deleted unless asked.
``commit()`` hands the updates to an engine, which checks everything else under the locks (duplicates,
old values, symrefs and HEAD, D/F conflicts) and writes the refs and their reflogs:

- ``native``: ``update/files.py`` or ``update/reftable.py`` (git's protocol, one table per commit);
- ``git``: ``git update-ref --stdin -z`` (``update/gitfeed.py``), counted with its child process.

``commands.Rename`` records (``git branch -m`` for any ref; update-ref's language has none) queue beside
the commands: ``rename.check_queued`` checks them against the snapshot, the native engines commit them in
the same transaction (worktree HEADs follow, ``branchconfig`` moves the branch's config section), the git
engine refuses them.

The cost of the commit (first lock to last unlink, auto-compaction apart) is measured by the meter.
"""

from __future__ import annotations

import gc
import os
from collections import namedtuple

from ..errors import CorruptStore, TransactionRefused
from ..errors import name_text as _t
from ..meter import OpReport, measure
from ..model import HASH_HEXSZ
from ..refname import REV_PARSE_RULES
from ..txn import take_snapshot
from .commands import Rename

ENGINES = ("native", "git")
PSEUDOREFS = (b"FETCH_HEAD", b"MERGE_HEAD")  # git's is_pseudo_ref


class UpdateResult(
    namedtuple("UpdateResult", "committed engine updates report phases renamed", defaults=((),))
):
    """``updates``: one (name, old, new) per ref written (``old``/``new``: hex oid, ``ref: <target>``
    for a symref, None for absent), in the order git applies them -- a rename is two of them, (old name,
    oid, None) and (new name, None, oid); ``report``: the commit's OpReport; ``phases``: every OpReport
    (snapshot, objects, commit, auto-compaction...); ``renamed``: one ``RenameDone`` per rename."""

    __slots__ = ()


class RenameDone(namedtuple("RenameDone", "old_name name oid heads")):
    """A committed rename: the ref ``old_name`` is now ``name`` at ``oid`` (hex), its reflog with it;
    ``heads``: the git dirs of the worktrees whose HEAD followed it."""

    __slots__ = ()


class UpdateTransaction:
    """Queued ``commands.Command`` records against one store. Not thread-safe; commit at most once."""

    def __init__(
        self,
        store,
        engine: str = "native",
        *,
        message: bytes = b"",
        allow_checked_out: bool = False,
        snapshot=None,
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r} (expected one of {ENGINES})")
        self.store = store
        self.repo = store.repo
        self.engine = engine
        self.message = message
        self.allow_checked_out = allow_checked_out
        self.commands: list = []  # ``commands.Command`` and ``commands.Rename`` records, in order
        self.renames = 0  # how many of them are renames
        self.peeled: dict[bytes, bytes] = {}
        self._snapshot = snapshot
        self._phases: list[OpReport] = []
        self._done = False

    @property
    def zero(self) -> bytes:
        return b"0" * HASH_HEXSZ[self.repo.hash_name]

    @property
    def snapshot(self):
        if self._snapshot is None:
            self._snapshot = take_snapshot(self.store, self._phases)
        return self._snapshot

    def resolver(self):
        """The ``resolve`` for ``commands.parse``: a value that is a ref name (git's rev-parse rules,
        ``refname.REV_PARSE_RULES``) as its oid."""

        def resolve(arg: bytes) -> bytes | None:
            snap = self.snapshot
            for rule in REV_PARSE_RULES:
                name = rule % arg
                ref = snap.head() if name == b"HEAD" else snap.lookup(name)
                if ref is None:
                    continue
                if ref.target is None:
                    return ref.oid
                oid = snap.resolve(name)
                if oid is not None:
                    return oid
            return self._rev_parse(arg)

        return resolve

    def _rev_parse(self, arg: bytes) -> bytes | None:
        """Any other revision (``HEAD~1``, an abbreviated object name...) as git's get_oid reads it: asked of
        ``git rev-parse --verify``, which reads every syntax (reflogs, paths, ``^{/text}``) and any
        object database (rare in scripts, and the delete path never loads refscope's object reader)."""
        import subprocess

        from ..engines.git import git_binary

        if arg.startswith(b"-"):
            return None
        env = dict(os.environ)
        env.pop("GIT_DIR", None)
        env.pop("GIT_COMMON_DIR", None)
        argv = [
            git_binary(),
            "--git-dir=" + self.repo.gitdir,
            "rev-parse",
            "--verify",
            "--quiet",
            os.fsdecode(arg),
        ]
        try:
            proc = subprocess.run(argv, capture_output=True, env=env)
        except OSError:
            return None
        out = proc.stdout.strip()
        return out if proc.returncode == 0 and len(out) == len(self.zero) else None

    # -- queueing -------------------------------------------------------------------------------------
    def queue(self, commands) -> None:
        """Queue ``commands`` (``commands.Command`` and ``commands.Rename`` records) in order, checking each
        as git does when it reads it (a rename: ``rename.check_queued``)."""
        was = gc.isenabled()
        gc.disable()  # (as in ``commit``)
        try:
            self._queue(list(commands))
        finally:
            if was:
                gc.enable()

    def _queue(self, commands: list) -> None:
        renames = None
        for c in commands:
            if c.name in PSEUDOREFS:
                raise TransactionRefused(self.repo.gitdir, f"refusing to update pseudoref '{_t(c.name)}'")
            if type(c) is Rename:
                renames = renames or []
                renames.append(c)
        plain = commands
        if renames is not None:  # ``commands.Rename`` records: checked by rename.py
            from .rename import check_queued

            check_queued(self, renames)
            plain = [c for c in commands if type(c) is not Rename]
        if plain:
            from .objects import check_new_values

            with measure("objects") as m:
                self.peeled.update(check_new_values(self.repo, plain))
            self._phases.append(m.report)
        if not self.allow_checked_out:
            zero = self.zero
            self._refuse_checked_out([c for c in plain if c.new == zero and c.new_target is None])
        self.commands.extend(commands)
        if renames is not None:
            self.renames += len(renames)

    def _refuse_checked_out(self, deletions) -> None:
        if not deletions:
            return
        from ..effects import checked_out_worktrees

        heads = checked_out_worktrees(self.repo)
        if not heads:
            return
        snap = self.snapshot
        for c in deletions:
            target = c.name
            if not c.no_deref:
                for _ in range(5):
                    ref = snap.head() if target == b"HEAD" else snap.lookup(target)
                    if ref is None or ref.target is None:
                        break
                    target = ref.target
            for branch, path in heads:
                if branch == target and target.startswith(b"refs/heads/"):
                    raise TransactionRefused(
                        self.repo.gitdir,
                        f"cannot delete branch '{_t(target[11:])}' used by worktree at '{path}'",
                    )

    # -- committing -----------------------------------------------------------------------------------
    def commit(self) -> UpdateResult:
        """Commit the queued commands (once). The cycle collector is off meanwhile: a big batch makes a
        few objects per ref (plans, records, rows) that hold no cycle, and each collection would walk
        them all again."""
        was = gc.isenabled()
        gc.disable()
        try:
            return self._commit()
        finally:
            if was:
                gc.enable()

    def _commit(self) -> UpdateResult:
        if self._done:
            raise TransactionRefused(self.repo.gitdir, "transaction already committed")
        store = self.store
        snap = self.snapshot if self.engine == "native" else None
        extra: list[OpReport] = []
        if self.engine == "git":
            from . import gitfeed as engine
        elif store.format == "files":
            from .files import FilesUpdate as Engine
        else:
            from .reftable import ReftableUpdate as Engine
        from ..lockfile import protect

        protect()
        updates = []
        config = None
        try:
            e = None
            if self.engine == "native" and self.commands:
                target = store if store.format == "reftable" else self.repo
                e = Engine(target, self.commands, self.peeled, snapshot=snap, message=self.message)
                if self.renames:  # the branch sections of the config move with them (rename.py)
                    from .branchconfig import ConfigMove

                    config = ConfigMove(self.repo, [c for c in self.commands if type(c) is Rename])
                    config.prepare()
                if store.format == "reftable" and not self.renames:
                    # the plan and its table, built from the snapshot before the lock (its own phase)
                    with measure("prepare") as mp:
                        if not e.prebuild():
                            e = Engine(
                                target, self.commands, self.peeled, snapshot=snap, message=self.message
                            )
                    self._phases.append(mp.report)
            with measure("commit", children=self.engine == "git") as m:
                if not self.commands:
                    pass  # git takes no lock for an empty transaction
                elif self.engine == "git":
                    engine.commit(self.repo, self.commands, message=self.message)
                elif config is not None and config.lock:
                    # the refs and the config, both or neither: a signal waits until both are written
                    from ..lockfile import committing

                    with committing():
                        updates = e.run()
                        config.commit()
                else:
                    updates = e.run()
        except CorruptStore as err:
            raise TransactionRefused(err.file, err.what, err.offset) from None
        except OSError as err:
            file = os.fsdecode(err.filename) if err.filename is not None else self.repo.gitdir
            raise TransactionRefused(file, err.strerror or str(err)) from None
        finally:
            if config is not None:
                config.rollback()  # (nothing once committed)
        self._done = True
        if e is not None and store.format == "reftable" and e.written:
            from ..engines.common import auto_compaction
            from ..engines.compaction import auto_compact

            if auto_compaction():
                for st in e.written:
                    with measure("auto-compaction") as mc:
                        auto_compact(self.repo, st)
                    extra.append(mc.report)
        report = m.report
        return UpdateResult(
            True,
            self.engine,
            e.rows if e is not None and e.rows is not None else _summary(updates, self.commands, self.zero),
            report,
            [*self._phases, report, *extra],
            _renamed(e) if self.renames else (),
        )


def _summary(updates, commands, zero: bytes) -> list[tuple[bytes, bytes | None, bytes | None]]:
    """(name, old, new) of every ref the commit wrote (the git engine: of every command that asks for a
    new value, as git does not say what it found)."""
    out = []
    if updates:
        for u in updates:
            if u.log_only or not u.have_new:
                continue
            new = b"ref: " + u.new_target if u.new_target is not None else (None if u.new == zero else u.new)
            old = b"ref: " + u.referent if u.referent is not None and u.no_deref else u.current
            if old == new:
                continue
            out.append((u.name, old, new))
        return out
    for c in commands:
        if c.new is None and c.new_target is None:
            continue
        new = b"ref: " + c.new_target if c.new_target is not None else (None if c.new == zero else c.new)
        out.append((c.name, None if c.old in (None, zero) else c.old, new))
    return out


def _renamed(engine) -> tuple:
    return tuple(
        RenameDone(m.r.old_name, m.r.name, m.made.new, tuple(h.gitdir for h in m.heads))
        for m in engine.renames
    )
