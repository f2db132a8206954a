"""Renaming a ref inside an update transaction: ``git branch -m`` semantics for any ref, atomic with the
other commands of the batch.

git renames outside its transactions (refs.c ``refs_rename_ref``: files-backend.c
``files_copy_or_rename_ref`` deletes the old ref, moves its reflog, writes the new ref; reftable-backend.c
``write_copy_table`` writes one table), then ``builtin/branch.c`` moves each worktree's HEAD that pointed at
the old branch and the ``branch.<old>`` config section. refscope does the ref part in the batch's one
transaction and leaves the refs exactly as git leaves them: the same refs, the same reflogs (entries and
messages), the same HEADs and the same config.

This module holds the checks made when a ``commands.Rename`` is queued (against the snapshot, with the
words the engine would use under the lock, so that a refusal comes early and reads the same).
"""

from __future__ import annotations

from ..errors import TransactionRefused
from ..errors import name_text as _t
from ..refname import is_valid_refname
from .commands import Rename

MESSAGE = b"Branch: renamed %s to %s"  # builtin/branch.c's reflog message, for any ref


def message(r: Rename) -> bytes:
    return MESSAGE % (r.old_name, r.name)


def nested(old_name: bytes, name: bytes) -> bool:
    """A rename into or out of its own name space (``a`` -> ``a/b``, ``a/b`` -> ``a``): the one name is a
    directory of the other, so in the files backend the two cannot be on disk at once."""
    return name.startswith(old_name + b"/") or old_name.startswith(name + b"/")


def check_queued(txn, renames: list[Rename]) -> None:
    """Refuse, with one line, a rename git would refuse or refscope cannot do in one transaction: a bad
    name, a missing or symbolic old ref, an old value that does not match, a name that exists, a D/F
    conflict with the store, a rename between a worktree's own refs and the shared ones."""
    gitdir = txn.repo.gitdir
    if txn.engine == "git":
        raise TransactionRefused(
            gitdir,
            "the git engine cannot rename refs ('git update-ref' has no rename): use the native engine",
        )
    from ..engines.common import is_per_worktree

    snap = txn.snapshot
    worktrees = None
    n_nested = 0
    for r in renames:
        for n in (r.old_name, r.name):
            if not is_valid_refname(n) or not n.startswith(b"refs/"):
                raise TransactionRefused(gitdir, f"invalid ref format: {_t(n)}")
        old_name, name = r.old_name, r.name
        if is_per_worktree(old_name) != is_per_worktree(name):
            raise TransactionRefused(
                gitdir,
                f"cannot rename '{_t(old_name)}' to '{_t(name)}': one is a per-worktree ref, the other is not",
            )
        ref = snap.lookup(old_name)
        if ref is None:
            raise TransactionRefused(gitdir, f"refname {_t(old_name)} not found")
        if ref.target is not None:
            raise TransactionRefused(
                gitdir, f"refname {_t(old_name)} is a symbolic ref, renaming it is not supported"
            )
        if r.old is not None and r.old != ref.oid:
            raise TransactionRefused(
                gitdir,
                f"cannot lock ref '{_t(old_name)}': is at {ref.oid.decode()} but expected {r.old.decode()}",
            )
        if snap.lookup(name) is not None:
            raise TransactionRefused(gitdir, f"cannot lock ref '{_t(name)}': reference already exists")
        # D/F conflicts, the old name itself aside (git's refs_rename_ref_available skips it: ``a`` ->
        # ``a/b`` and back are renames git makes)
        j = name.find(b"/")
        while j >= 0:
            d = name[:j]
            j = name.find(b"/", j + 1)
            if d != old_name and snap.lookup(d) is not None:
                raise TransactionRefused(gitdir, f"'{_t(d)}' exists; cannot create '{_t(name)}'")
        prefix = name + b"/"
        for hit in snap.iter_names(prefix):  # streamed: no row index of a big store
            if not hit.startswith(prefix):
                break
            if hit != old_name:
                raise TransactionRefused(gitdir, f"'{_t(hit)}' exists; cannot create '{_t(name)}'")
        if nested(old_name, name):
            n_nested += 1
            if n_nested > 1 and snap.format == "files":
                raise TransactionRefused(
                    gitdir,
                    f"cannot rename '{_t(old_name)}' to '{_t(name)}': one rename into or out of its own "
                    "directory per transaction (files)",
                )
        if old_name.startswith(b"refs/heads/"):
            if worktrees is None:
                from ..repo import list_worktrees

                worktrees = list_worktrees(txn.repo)
            _refuse_rebase_or_bisect(txn.repo, worktrees, old_name)
        if name.startswith(b"refs/heads/"):
            from .commands import Command
            from .objects import check_new_values

            check_new_values(txn.repo, [Command("create", name, ref.oid, None, None, None, True)])


def _branch_in(path: str) -> bytes | None:
    """wt-status.c get_branch: the branch a rebase or bisect state file names (None: none)."""
    try:
        with open(path, "rb") as f:
            data = f.read().rstrip(b"\n")
    except OSError:
        return None
    if not data or data == b"detached HEAD":
        return None
    return data[11:] if data.startswith(b"refs/heads/") else data


def _refuse_rebase_or_bisect(repo, worktrees, old_name: bytes) -> None:
    """builtin/branch.c reject_rebase_or_bisect_branch: a branch a detached worktree is rebasing or
    bisecting is not renamed."""
    import os

    from ..effects import worktree_path

    short = old_name[11:]
    for gitdir, target in worktrees:
        if target is not None:
            continue
        at = os.path.join
        where = worktree_path(gitdir)
        branch = None
        if os.path.exists(at(gitdir, "rebase-apply")):
            if not os.path.exists(at(gitdir, "rebase-apply", "applying")):
                branch = _branch_in(at(gitdir, "rebase-apply", "head-name"))
        elif os.path.exists(at(gitdir, "rebase-merge")):
            branch = _branch_in(at(gitdir, "rebase-merge", "head-name"))
        if branch == short:
            raise TransactionRefused(repo.gitdir, f"branch {_t(old_name)} is being rebased at {where}")
        if os.path.exists(at(gitdir, "BISECT_LOG")) and _branch_in(at(gitdir, "BISECT_START")) == short:
            raise TransactionRefused(repo.gitdir, f"branch {_t(old_name)} is being bisected at {where}")


# -- in the engines: the shared plan ----------------------------------------------------------------------
class Moving:
    """One queued rename inside an engine's plan: ``gone`` deletes the old name, ``made`` creates the new
    one with the value ``gone`` read under the lock; ``heads`` are the worktree HEADs that follow it."""

    __slots__ = ("r", "gone", "made", "message", "heads", "nested")

    def __init__(self, r: Rename, gone, made) -> None:
        self.r = r
        self.gone = gone
        self.made = made
        self.message = message(r)
        self.heads: list = []
        self.nested = nested(r.old_name, r.name)  # files: update/nested.py does it

    def read(self, plan, u) -> None:
        """Called by the plan once ``u`` is read and checked under its lock: the old ref must be there and
        not a symref; the new one gets its value."""
        if u is not self.gone:
            return
        from .plan import MISSING, SYMREF

        gitdir = plan.repo.gitdir
        if u.kind == MISSING:
            raise TransactionRefused(gitdir, f"refname {_t(u.name)} not found")
        if u.kind == SYMREF:
            raise TransactionRefused(
                gitdir, f"refname {_t(u.name)} is a symbolic ref, renaming it is not supported"
            )
        self.made.new = u.current


def expand(plan, commands, upd_class) -> list:
    """The plan's updates for ``commands``: each ``Command`` as one, each ``Rename`` as two adjacent ones
    (the old name deleted, no-deref; the new one created: it must not exist), which ``Moving`` ties."""
    zero = plan.zero
    out = []
    for c in commands:
        if type(c) is not Rename:
            out.append(upd_class(*c[1:]))
            continue
        gone = upd_class(c.old_name, zero, c.old, None, None, True)
        made = upd_class(c.name, None, zero, None, None, True)
        m = Moving(c, gone, made)
        for u in (gone, made):
            u.via_head = True  # HEAD's entries are the rename's own (git writes them apart, see below)
            u.rename = m
        plan.renames.append(m)
        out += (gone, made)
    return out


def _worktree_heads(plan, old_name: bytes) -> list[str]:
    """The git dirs of the worktrees whose HEAD points at ``old_name`` (builtin/branch.c
    replace_each_worktree_head_symref: the main worktree too, bare or not), as listed once per
    transaction (git lists them first too); each HEAD is read again under its lock."""
    if plan.rename_worktrees is None:
        from ..repo import list_worktrees

        plan.rename_worktrees = list_worktrees(plan.repo)
    return [gitdir for gitdir, target in plan.rename_worktrees if target == old_name]


def _refuse_head_twice(plan, m: Moving) -> None:
    if b"HEAD" in plan.names:
        raise TransactionRefused(
            plan.repo.gitdir,
            f"multiple updates for 'HEAD' (including one via its referent '{_t(m.r.old_name)}') are not allowed",
        )


# -- the files engine -------------------------------------------------------------------------------------
class _HeadLock:
    __slots__ = ("gitdir", "path", "current")

    def __init__(self, gitdir: str, path: str, current: bool) -> None:
        self.gitdir = gitdir
        self.path = path  # HEAD.lock, "" once committed or removed
        self.current = current  # the worktree the transaction runs in


def files_prepare(engine) -> None:
    """Lock the HEAD of every worktree on a renamed branch and write ``ref: <new>`` into its lock (git's
    refs_update_symref on each worktree's store, here in the same transaction)."""
    import os

    from ..engines.crashpoint import step
    from ..engines.files import read_loose
    from ..lockfile import LOCK_SUFFIX, busy_error, create_with_timeout, remove
    from ..lockfile import unable_to_lock_message as lock_message
    from .plan import SYMREF

    repo = engine.repo
    for m in engine.renames:
        _check_log_room(engine, m)
    for m in engine.renames:
        for gitdir in _worktree_heads(engine, m.r.old_name):
            current = os.path.realpath(gitdir) == os.path.realpath(repo.gitdir)
            if current:
                _refuse_head_twice(engine, m)
            path = os.path.join(gitdir, "HEAD")
            step("lock", b"HEAD")
            fd = create_with_timeout(path + LOCK_SUFFIX, engine.timeout)
            if fd < 0:
                import errno

                if fd == -errno.EEXIST:
                    raise busy_error(path, "cannot lock ref 'HEAD': ")
                raise TransactionRefused(path, "cannot lock ref 'HEAD': " + lock_message(path, -fd))
            lk = _HeadLock(gitdir, path + LOCK_SUFFIX, current)
            m.heads.append(lk)
            try:
                kind, value = read_loose(path, b"HEAD", engine.hexsz)
                if kind != SYMREF or value != m.r.old_name:  # moved since it was listed: left as it is
                    m.heads.pop()
                    os.close(fd)
                    fd = -1
                    remove(lk.path)
                    continue
                step("write lock", b"HEAD")
                os.write(fd, b"ref: %s\n" % m.r.name)
                if engine.do_fsync:
                    os.fsync(fd)
            finally:
                if fd >= 0:
                    os.close(fd)


def _check_log_room(engine, m: Moving) -> None:
    """The new name's reflog must be able to go where it goes (files_copy_or_rename_ref's rename_tmp_log
    refuses, and rolls back, when another reflog is in the way): checked before anything is written, so
    that the finish cannot stop half way. An empty directory in the way is removed at the finish."""
    import os

    from ..engines.common import log_all_ref_updates, log_path, ref_base, should_autocreate_reflog

    repo = engine.repo
    old_log = log_path(repo, m.r.old_name)
    if not os.path.isfile(old_log) and not should_autocreate_reflog(log_all_ref_updates(repo), m.r.name):
        return  # no reflog to move nor to create
    new_log = log_path(repo, m.r.name)
    words = f"cannot rename '{_t(m.r.old_name)}' to '{_t(m.r.name)}'"
    if m.nested:
        from .nested import check_log_room

        check_log_room(engine, m, words)
        return
    base = os.path.join(ref_base(repo, m.r.name), "logs")
    d = os.path.dirname(new_log)
    while len(d) > len(base):
        if os.path.lexists(d) and not os.path.isdir(d):
            raise TransactionRefused(d, f"{words}: a reflog is in the way of its directory")
        d = os.path.dirname(d)
    if os.path.isdir(new_log):
        for _top, _dirs, files in os.walk(new_log):
            if files:
                raise TransactionRefused(new_log, f"{words}: directory not empty")


def files_move_log(engine, u, ident: bytes, mode: str) -> None:
    """The new name's reflog, before any lock is renamed (git too moves the log before it writes the
    ref): the old reflog moved to the new name and the rename's own entry appended (old value to old
    value, as files_copy_or_rename_ref's commit_ref_update writes it). The move goes into the engine's
    journal, so that a failure of this or any later reflog is taken back (``reflog_undo``)."""
    import os

    from ..engines.common import log_path
    from ..engines.crashpoint import step

    m = u.rename
    repo = engine.repo
    old_log = log_path(repo, m.r.old_name)
    new_log = log_path(repo, m.r.name)
    if m.nested:  # through a journaled temp file (update/nested.py)
        from .nested import move_log

        move_log(engine, m)
    elif os.path.isfile(old_log) and not os.path.islink(old_log):
        step("move reflog", m.r.old_name)
        made = engine.make_log_dirs(new_log)
        if os.path.isdir(new_log) and not engine._remove_empty_tree(new_log):
            raise TransactionRefused(
                new_log, f"cannot update the ref '{_t(m.r.name)}': there are still logs under '{new_log}'"
            )
        os.rename(old_log, new_log)
        engine.journal_move(old_log, new_log, made)
    engine._append_reflog(u, m.made.new, m.made.new, ident, mode, message=m.message)


def files_commit(engine, u) -> None:
    """The new name's part of the finish: the ref's lock renamed into place, and the old reflog's emptied
    directories removed (git's delete of the old ref: try_remove_empty_parents)."""
    import os

    from ..engines.common import ref_base
    from ..engines.crashpoint import step
    from ..lockfile import LOCK_SUFFIX, rename

    m = u.rename
    if m.nested:
        return  # no lock: the new name comes in with packed-refs (update/nested.py)
    step("commit lock", u.name)
    rename(u.lock.path, u.lock.path[: -len(LOCK_SUFFIX)])
    u.lock.path = ""
    repo = engine.repo
    engine._remove_empty_parents(m.r.old_name, os.path.join(ref_base(repo, m.r.old_name), "logs"))


def files_heads(engine, ident: bytes, mode: str) -> None:
    """Each worktree HEAD that followed a rename: its reflog entries as git writes them (the worktree it
    runs in first gets the old ref's deletion, ``<oid> -> 0``, from refs_delete_ref's HEAD split; then
    every HEAD gets ``0 -> <oid>`` from the symref update) and its lock renamed into place."""
    import os

    from ..engines.crashpoint import step
    from ..lockfile import LOCK_SUFFIX, rename

    zero = engine.zero
    for m in engine.renames:
        value = m.made.new
        for lk in m.heads:
            log = os.path.join(lk.gitdir, "logs", "HEAD")
            if lk.current:
                engine._append_reflog_at(log, b"HEAD", value, zero, ident, mode, m.message)
            engine._append_reflog_at(log, b"HEAD", zero, value, ident, mode, m.message)
            step("commit lock", b"HEAD")
            rename(lk.path, lk.path[: -len(LOCK_SUFFIX)])
            lk.path = ""


def files_cleanup(engine) -> None:
    from ..engines.crashpoint import step
    from ..lockfile import remove

    for m in engine.renames:
        for lk in m.heads:
            if lk.path:
                step("unlock", b"HEAD")
                remove(lk.path)
                lk.path = ""


# -- the reftable engine ----------------------------------------------------------------------------------
def _log_message(repo, text: bytes) -> bytes:
    """git: xstrndup(msg, block_size / 2); its writer drops trailing LFs and adds one."""
    return text[: repo.config.reftable_block_size() // 2].rstrip(b"\n") + b"\n"


def reftable_records(engine, st, ts: int, refs: list, logs: list) -> int:
    """The records of every rename written to ``st`` (git's write_copy_table, in the batch's one table),
    added to ``refs`` and ``logs``; returns the table's max update index. Two indexes, as git's: at ``ts``
    the old ref's deletion (with an entry ``<oid> -> 0`` on the new name, and on HEAD when the main
    worktree's HEAD points at it), at ``ts + 1`` the new ref and its entry ``0 -> <oid>``; the old
    reflog's entries copied under the new name at their own indexes and deleted under the old one. The
    main worktree's HEAD, when it pointed at the old name, points at the new one at ``ts + 1`` with an
    entry ``0 -> <oid>`` (replace_each_worktree_head_symref's own transaction in git; written whatever
    core.logAllRefUpdates says, as HEAD has the entry just written). Entries are written regardless of
    the config, as write_copy_table writes them."""
    import os

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
    from .ident import committer_ident

    repo = engine.repo
    mine = [m for m in engine.renames if engine.stack(m.gone.name).dir == st.dir]
    if not mine:
        return ts
    ident = committer_ident(repo)
    who = (ident.name, ident.email, ident.time, ident.tz_hhmm())
    zero = engine.zero
    main_stack = os.path.realpath(st.dir) == os.path.realpath(os.path.join(repo.commondir, "reftable"))
    head = st.lookup(b"HEAD") if main_stack else None
    for m in mine:
        old_name, name = m.r.old_name, m.r.name
        rec = st.lookup(old_name)
        value = m.made.new
        msg = _log_message(repo, m.message)
        refs.append(RefRecord(old_name, ts, VALUE_DELETION))
        if rec.value_type == VALUE_VAL2:
            refs.append(RefRecord(name, ts + 1, VALUE_VAL2, value, rec.peeled))
        else:
            refs.append(RefRecord(name, ts + 1, VALUE_VAL1, value))
        logs.append(LogRecord(name, ts, LOG_UPDATE, value, zero, *who, msg))
        logs.append(LogRecord(name, ts + 1, LOG_UPDATE, zero, value, *who, msg))
        for old_log in st.log_records(old_name):
            text = old_log.message.rstrip(b"\n") + b"\n"
            logs.append(old_log._replace(name=name, message=text))
            logs.append(LogRecord(old_name, old_log.update_index, LOG_DELETION))
        if head is not None and head.value_type == VALUE_SYMREF and head.target == old_name:
            if repo.gitdir == repo.commondir:
                _refuse_head_twice(engine, m)
            logs.append(LogRecord(b"HEAD", ts, LOG_UPDATE, value, zero, *who, msg))
            refs.append(RefRecord(b"HEAD", ts + 1, VALUE_SYMREF, None, None, name))
            # (the symref update's entry: HEAD has a reflog now, the one just written, whatever the config)
            logs.append(LogRecord(b"HEAD", ts + 1, LOG_UPDATE, zero, value, *who, msg))
            m.heads.append(_HeadLock(repo.commondir, "", repo.gitdir == repo.commondir))
    return ts + 1


def reftable_worktrees(engine, written: set[str]) -> list:
    """The table plans (``ReftableUpdate.table_plan``) for the HEAD of every linked worktree on a renamed branch: in
    its own stack, ``ref: <new>`` and an entry ``0 -> <oid>``, as git's refs_update_symref on that
    worktree's store writes them (after the main stack's table: git's order)."""
    import os

    from ..engines.common import log_all_ref_updates, should_autocreate_reflog
    from ..engines.reftable import load_stack
    from ..engines.stack_io import StackWriter
    from ..formats.reftable.record import LOG_UPDATE, VALUE_SYMREF, LogRecord, RefRecord
    from .ident import committer_ident

    repo = engine.repo
    plans = []
    mode = log_all_ref_updates(repo)
    zero = engine.zero
    for m in engine.renames:
        for gitdir in _worktree_heads(engine, m.r.old_name):
            if os.path.realpath(gitdir) == os.path.realpath(repo.commondir):
                continue  # the main worktree's HEAD lives in the main stack (reftable_records)
            d = os.path.join(gitdir, "reftable")
            if d in written:
                raise TransactionRefused(
                    gitdir,
                    f"cannot rename '{_t(m.r.old_name)}' and update the refs of the worktree it is checked out "
                    "in, in one transaction",
                )
            st = engine.stacks.get(d)
            if st is None:
                st = StackWriter(d, repo.hash_name)
                st.lock(engine.timeout)
                engine.stacks[d] = st
                load_stack(st, engine.snapshot, d)
            head = st.lookup(b"HEAD")
            if head is None or head.value_type != VALUE_SYMREF or head.target != m.r.old_name:
                continue  # moved since it was listed: left as it is
            ts = st.next_update_index()
            ident = committer_ident(repo)
            who = (ident.name, ident.email, ident.time, ident.tz_hhmm())
            logs = []
            if should_autocreate_reflog(mode, b"HEAD") or st.has_log(b"HEAD"):
                logs.append(
                    LogRecord(b"HEAD", ts, LOG_UPDATE, zero, m.made.new, *who, _log_message(repo, m.message))
                )
            refs = [RefRecord(b"HEAD", ts, VALUE_SYMREF, None, None, m.r.name)]
            plans.append(engine.table_plan(st, ts, refs, logs))
            m.heads.append(_HeadLock(gitdir, "", os.path.realpath(gitdir) == os.path.realpath(repo.gitdir)))
    return plans
