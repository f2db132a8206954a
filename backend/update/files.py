"""The files engine for general transactions (refs/files-backend.c ``files_transaction_prepare`` and
``files_transaction_finish``), step for step.

Prepare, per update in order: lock ``<ref>.lock`` (leading directories made; a file in the way is git's
D/F conflict, an empty directory in the way is removed), read the loose ref under the lock (packed-refs
when there is none), split symrefs and HEAD, check the old value, and write the new contents into the
lock (``oid LF`` or ``ref: target LF``, fsynced when core.fsync asks), closing its fd at once. Then the
names that did not exist are checked against packed-refs and the batch; with deletions, packed-refs.lock
is taken and ``packed-refs.new`` spliced when a deleted ref is packed.
Finish: every reflog entry (taken back if one cannot be written, so that a refusal there too changes
no byte), then the rename of each lock (a rename's part in its place); the deleted refs' reflogs unlinked; ``packed-refs.new`` renamed; the deleted loose files unlinked; every lock released;
empty parent directories removed. A refusal before the finish changes no byte.

Over 500 lines, on purpose: prepare and finish are the two halves of one transaction over one state (the
locks, the packed-refs view, the reflog journal, the directories made); the reflog appends are part of
the finish's all-or-nothing (taken back with the rest), so they stay beside it.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
import stat as _stat

from ..engines.common import (
    fsync_references,
    log_all_ref_updates,
    log_path,
    ref_base,
    ref_path,
    reflog_message,
)
from ..engines.crashpoint import step
from ..engines.files import IN_THE_WAY, PackedSteps, read_loose, reflog_flags
from ..engines.packed_splice import identity, kept_ranges, write_spliced
from ..errors import TransactionRefused
from ..errors import name_text as _t
from ..fileio import refused_write, write_all
from ..formats.packed import PackedRefs
from ..lockfile import LOCK_SUFFIX, busy_error, create_with_timeout, remove, rename, two_phase
from ..lockfile import unable_to_lock_message as lock_message
from ..model import HASH_HEXSZ
from . import nested, rename_journal
from .ident import committer_ident
from .plan import MISSING, REGULAR, SYMREF, Plan, Upd
from .reflog_undo import ReflogJournal, missing_dirs
from .rename import files_cleanup, files_commit, files_heads, files_move_log, files_prepare

if os.access in os.supports_effective_ids and os.access in os.supports_follow_symlinks:

    def _lexists(path: str) -> bool:
        """Is there anything at ``path`` (a symlink itself counts)? One faccessat, no exception when not.
        Within a directory just locked into, False can only mean ENOENT."""
        return os.access(path, os.F_OK, effective_ids=True, follow_symlinks=False)
else:  # pragma: no cover

    def _lexists(path: str) -> bool:
        return True  # read_loose decides


class _Lock:
    __slots__ = ("path", "fd", "dirs", "loose")

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.dirs: list[str] = []
        self.loose = False  # a loose file (or symlink) held the ref under the lock


class FilesUpdate(Plan, PackedSteps):
    def __init__(self, repo, commands, peeled, *, snapshot=None, message: bytes = b"") -> None:
        hexsz = HASH_HEXSZ[repo.hash_name]
        self.journal: ReflogJournal | None = None  # the finish's reflog appends, to take back
        self.rename_journal = ""  # the journal of the renames' reflog moves, on disk (rename_journal.py)
        super().__init__(repo, commands, peeled, b"0" * hexsz)
        self.hexsz = hexsz
        self.snapshot = snapshot
        self.message = reflog_message(message) if message else b""
        self.timeout = repo.config.files_ref_lock_timeout()
        self.do_fsync = fsync_references(repo)
        self.locked: list[Upd] = []
        self.packed_view: PackedRefs | None = None
        self.packed_lock = ""
        self.new_path = ""
        self.deletions: list[Upd] = []  # the updates that delete a ref (``prepare_packed``)
        self.absent_log_dirs: set[str] = set()  # reflog directories found missing (``_no_log_dir``)

    # -- reads ----------------------------------------------------------------------------------------
    def head_ref(self) -> bytes | None:
        kind, value = read_loose(os.path.join(self.repo.gitdir, "HEAD"), b"HEAD", self.hexsz)
        return value if kind == SYMREF else None

    def packed(self) -> PackedRefs:
        """packed-refs as git's packed store reads it (without its lock): the snapshot's mapping while
        the file is the same, else read afresh and checked whole. Read once for the prepare: what is read
        from it is checked again where it matters, under packed-refs.lock, for the deletions."""
        view = self.packed_view
        if view is not None:
            return view
        path = os.path.join(self.repo.commondir, "packed-refs")
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        snap = self.snapshot.packed if self.snapshot is not None and self.snapshot.format == "files" else None
        if st is None:
            view = PackedRefs.from_bytes(b"", path, self.repo.hash_name)
        elif _stat.S_ISLNK(st.st_mode):
            raise TransactionRefused(path, "packed-refs is a symbolic link; refusing to rewrite it")
        elif snap is not None and snap.stat is not None and identity(snap.stat) == identity(st):
            view = snap
        else:
            view = PackedRefs.open(path, self.repo.hash_name)
            view.validate()
        self.packed_view = view
        return view

    def resolve(self, name: bytes, placed: dict[bytes, tuple] | None = None) -> bytes | None:
        """The oid ``name`` resolves to on disk, symrefs followed (``placed``: name -> (oid, target) of
        refs to take at those values instead, as a ref-by-ref finish has written them)."""
        for _ in range(5):
            hit = placed.get(name) if placed else None
            if hit is not None:
                if hit[1] is None:
                    return None if hit[0] in (None, self.zero) else hit[0]
                name = hit[1]
                continue
            kind, value = read_loose(ref_path(self.repo, name), name, self.hexsz)
            if kind == REGULAR:
                return value
            if kind == SYMREF:
                name = value
                continue
            rec = self.packed().lookup(name)
            return rec.oid if rec is not None else None
        return None

    def exists(self, name: bytes) -> bool:
        return self.packed().lookup(name) is not None

    def descendants(self, prefixes: list[bytes]) -> dict[bytes, bytes]:
        view = self.packed()
        out = {}
        if view.size <= view.header_end:
            return out
        for p in prefixes:
            off = view.seek(p)
            if off < view.size:
                name = view.record_at(off).name
                if name.startswith(p):
                    out[p] = name
        return out

    def below_besides(self, prefix: bytes, skip: bytes) -> bytes | None:
        """Loose refs (lock files aside) and packed records under ``prefix``, ``skip`` aside: the first."""
        found = []
        base = ref_base(self.repo, prefix)
        for root, _dirs, files in os.walk(os.path.join(base, os.fsdecode(prefix))):
            rel = os.fsencode(os.path.relpath(root, base))
            for f in files:
                name = rel + b"/" + os.fsencode(f)
                if not f.endswith(LOCK_SUFFIX) and name != skip and os.path.isfile(os.path.join(root, f)):
                    found.append(name)
        view = self.packed()
        if view.size > view.header_end:
            for rec in view.iter_from(prefix):
                if not rec.name.startswith(prefix):
                    break
                if rec.name != skip:
                    found.append(rec.name)
                    break
        return min(found) if found else None

    def _loose_or_packed(self, name: bytes) -> bool:
        base = ref_base(self.repo, name)
        return os.path.isfile(os.path.join(base, os.fsdecode(name))) or self.exists(name)

    def _store_conflict(self, u: Upd) -> str:
        """refs_verify_refname_available against the whole store (loose and packed) and the batch: the
        words for a lock that a file or a directory is in the way of."""
        name = u.name
        j = name.find(b"/")
        while j >= 0:
            d = name[:j]
            j = name.find(b"/", j + 1)
            if self._loose_or_packed(d):
                return f"'{_t(d)}' exists; cannot create '{_t(name)}'"
            if d in self.names:
                return f"cannot process '{_t(name)}' and '{_t(d)}' at the same time"
        prefix = name + b"/"
        found = []
        top = os.path.join(ref_base(self.repo, name), os.fsdecode(name))
        for root, _dirs, files in os.walk(top):
            rel = os.path.relpath(root, ref_base(self.repo, name))
            found += [os.fsencode(os.path.join(rel, f)) for f in files if not f.endswith(LOCK_SUFFIX)]
        hit = self.descendants([prefix]).get(prefix)
        if hit is not None:
            found.append(hit)
        if found:
            return f"'{_t(min(found))}' exists; cannot create '{_t(name)}'"
        for other in sorted(self.names):
            if other.startswith(prefix):
                return f"cannot process '{_t(name)}' and '{_t(other)}' at the same time"
        return ""

    def read(self, u: Upd) -> tuple[int, bytes | None]:
        if u.rename is not None and u.rename.nested and u is u.rename.made:
            return nested.read_new(self, u)
        path = ref_path(self.repo, u.name)
        self._lock(u, path)
        if u.old == self.zero and not u.log_only and not _lexists(path):
            # a create: the ref is most likely missing, and saying so takes no exception (under the lock,
            # nothing else can make the file: every writer of a ref holds its lock)
            kind, value = MISSING, None
            view = self.packed()
            if view.size > view.header_end:
                rec = view.lookup(u.name)
                if rec is not None:
                    return REGULAR, rec.oid
            return kind, value
        kind, value = read_loose(path, u.name, self.hexsz)
        if value is IN_THE_WAY:
            if self.expects_existing(u):
                raise self.refuse(u, f"unable to resolve reference '{_t(u.name)}'", stale=True)
            if not self._remove_empty_tree(path):
                why = self._store_conflict(u) or (
                    f"there is a non-empty directory '{path}' blocking reference '{_t(u.name)}'"
                )
                raise self.refuse(u, why)
            kind, value = MISSING, None
        if kind == MISSING:
            rec = self.packed().lookup(u.name)
            if rec is not None:
                return REGULAR, rec.oid
        else:
            u.lock.loose = True
        return kind, value

    def _remove_empty_tree(self, path: str) -> bool:
        step("rmdir in the way", path)
        try:
            for top, _dirs, files in os.walk(path, topdown=False):
                if files:
                    return False
                os.rmdir(top)
        except OSError:
            return False
        return True

    def _lock(self, u: Upd, path: str) -> None:
        lock_path = path + LOCK_SUFFIX
        step("lock", u.name)
        fd = create_with_timeout(lock_path, self.timeout)
        made: list[str] = []
        attempts = 3
        while fd in (-errno.ENOENT, -errno.ENOTDIR) and attempts:
            attempts -= 1
            if not self._make_dirs(u, path, made):
                self._drop_dirs(u.name, made)
                what = self._store_conflict(u)
                if self.expects_existing(u) or not what:
                    what = f"unable to resolve reference '{_t(u.name)}'"
                raise self.refuse(u, what)
            fd = create_with_timeout(lock_path, self.timeout)
        if fd < 0:
            self._drop_dirs(u.name, made)
            if fd == -errno.EEXIST:
                raise busy_error(path, f"cannot lock ref '{_t(self.original(u))}': ")
            raise TransactionRefused(
                lock_path, f"cannot lock ref '{_t(self.original(u))}': " + lock_message(path, -fd)
            )
        u.lock = _Lock(lock_path, fd)
        u.lock.dirs = made
        self.locked.append(u)

    def _make_dirs(self, u: Upd, path: str, made: list[str]) -> bool:
        """git's safe_create_leading_directories; False when a file is in the way (SCLD_EXISTS)."""
        base = ref_base(self.repo, u.name)
        missing = []
        d = os.path.dirname(path)
        while d != base and len(d) > len(base):
            try:
                st = os.stat(d)
            except FileNotFoundError:
                missing.append(d)
                d = os.path.dirname(d)
                continue
            except NotADirectoryError:
                missing.append(d)
                d = os.path.dirname(d)
                continue
            if not _stat.S_ISDIR(st.st_mode):
                return False
            break
        for d in reversed(missing):
            step("mkdir", d)
            try:
                os.mkdir(d, 0o777)
            except FileExistsError:
                if not os.path.isdir(d):
                    return False
            except NotADirectoryError:
                return False
            else:
                made.append(d)
        return True

    def _drop_dirs(self, name: bytes, made: list[str]) -> None:
        for d in reversed(made):
            try:
                os.rmdir(d)
            except OSError:
                return

    def after(self, u: Upd) -> None:
        lk = u.lock
        if lk is None or lk.fd < 0:
            return
        fd, lk.fd = lk.fd, -1
        try:
            if u.write and not u.log_only or u.rename is not None and u.rename.nested and not lk.loose:
                if not u.write:  # a nested rename's packed-only old ref: its value, to link (nested.py)
                    data = u.current + b"\n"
                else:
                    data = b"ref: %s\n" % u.new_target if u.new_target is not None else u.new + b"\n"
                step("write lock", u.name)
                try:
                    write_all(fd, data)
                    if self.do_fsync:
                        os.fsync(fd)
                except OSError as err:  # ENOSPC, EDQUOT, EIO: the lock is named (os.write names nothing)
                    raise refused_write(lk.path, err) from None
        finally:
            os.close(fd)

    # -- commit ---------------------------------------------------------------------------------------
    def prepare_packed(self) -> None:
        deleting = self.deletions = [u for u in self.updates if not u.log_only and self.deleting(u)]
        moving = [m for m in self.renames if m.nested] if self.renames else ()
        if not deleting:
            return
        path = self._take_packed_lock()
        self.packed_view = None  # re-read under the lock (identity check: the mapping is reused when same)
        view = self.packed()
        inserts = [nested.packed_insert(self, m, view) for m in moving]
        if view.size <= view.header_end and not inserts:
            return
        dropped = []
        for u in deleting if view.size > view.header_end else ():
            span = view.locate(u.name)
            if span is not None:
                dropped.append(span)
        if dropped or inserts:
            if self.snapshot is not None and view is self.snapshot.packed:
                view.validate()
            self.new_path = path + ".new"
            kept = kept_ranges(view, sorted(set(dropped))) if view.size > view.header_end else []
            if inserts:  # a nested rename's new name comes in with this rewrite (nested.py)
                kept = nested.splice_items(kept, inserts)
            write_spliced(self.new_path, view.buf, kept, self.do_fsync)

    def _reflog_entry(
        self, old: bytes | None, new: bytes, ident_line: bytes, message: bytes | None = None
    ) -> bytes:
        if message is None:
            return super()._reflog_entry(old, new, ident_line)
        return b"%s %s %s\t%s\n" % (old or self.zero, new, ident_line, message)

    def _append_reflog(
        self, u: Upd, old: bytes | None, new: bytes, ident: bytes, mode: str, message: bytes | None = None
    ) -> None:
        self._append_reflog_at(log_path(self.repo, u.name), u.name, old, new, ident, mode, message)

    def _append_reflog_at(
        self, path: str, name: bytes, old, new: bytes, ident: bytes, mode: str, message: bytes | None = None
    ) -> None:
        """``message``: this entry's own (a rename's), else the transaction's. While ``self.journal`` is
        set, what the append did is recorded in it, to be taken back."""
        flags, create = reflog_flags(mode, name)
        step("reflog", name)
        if not create and self._no_log_dir(path):
            return  # no reflog to append to, and none is made
        entry = self._reflog_entry(old, new, ident, message)
        journal = self.journal
        made: list[str] = []
        created = False
        for _ in range(3):
            try:
                if create and journal is not None and (old is None or old == self.zero):
                    try:  # a new ref's reflog is usually new: O_EXCL says whether this append created it
                        fd = os.open(path, flags | os.O_EXCL, 0o666)
                        created = True
                        break
                    except FileExistsError:
                        pass
                fd = os.open(path, flags, 0o666)
                break
            except FileNotFoundError:
                if not create:
                    return
                made += self.make_log_dirs(path)
            except IsADirectoryError:
                if not create:
                    return
                if not self._remove_empty_tree(path):
                    raise TransactionRefused(
                        path, f"cannot update the ref '{_t(name)}': there are still logs under '{path}'"
                    ) from None
        else:
            raise TransactionRefused(
                path, f"cannot update the ref '{_t(name)}': unable to append to '{path}'"
            )
        done = journal.appended(path, created, made) if journal is not None else None
        try:
            write_all(fd, entry, done)
            if self.do_fsync:
                os.fsync(fd)
        except OSError as err:
            raise refused_write(path, err) from None
        finally:
            os.close(fd)

    def _log_new_after(self, u: Upd, placed: dict[bytes, tuple]) -> bytes | None:
        """``log_new(u)`` as git's finish sees it, ref by ref: a symref's target resolved with the refs
        before ``u`` (``placed``: name -> (oid, target)) already at their new values."""
        name = u.new_target
        if name is None:
            return u.new
        return self.resolve(name, placed)

    def _no_log_dir(self, path: str) -> bool:
        """Is the directory of the reflog ``path`` missing (ENOENT)? Then no reflog in it exists, and none
        is appended to: one stat for all the refs of a directory instead of a failed open per ref. The
        answer holds for the whole finish: only a writer holding a ref's lock makes its reflog (git's, and
        ours hold all of them); the directories this finish makes itself forget the answers."""
        d = path.rpartition("/")[0]
        absent = self.absent_log_dirs
        if d in absent:
            return True
        try:
            os.stat(d)
        except FileNotFoundError:
            absent.add(d)
            return True
        except OSError:
            pass  # ENOTDIR, EACCES...: the open says what git says
        return False

    def make_log_dirs(self, path: str) -> list[str]:
        """The directories leading to the reflog ``path`` made (raises OSError as os.makedirs), and
        which of them were missing, outermost first."""
        made = missing_dirs(os.path.dirname(path))
        if made:
            self.absent_log_dirs.clear()
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return made

    def journal_move(self, old: str, new: str, made: list[str]) -> None:
        """Record a rename's reflog moved from ``old`` to ``new`` (``made``: the directories made)."""
        if self.journal is not None:
            self.journal.moved(old, new, made)

    def finish(self) -> None:
        mode = log_all_ref_updates(self.repo)
        ident = None
        # Every reflog entry first, then the renames of the locks: a reflog that cannot be written (disk
        # full, EACCES, a symlink loop) takes back the entries before it, so the refusal changes no byte
        # (git's own finish would have moved the refs before it).
        self.journal = ReflogJournal()
        if self.renames:  # a crash from here on: recovered by the next rename (rename_journal.py)
            rename_journal.write(self)
        placed: dict[bytes, tuple] = {}  # the refs git's finish would have renamed into place by now
        try:
            for u in self.updates:
                if not u.write:
                    continue
                if u.rename is not None:  # a rename's new name: its reflog moved (rename.py)
                    if ident is None:
                        ident = committer_ident(self.repo).line()
                    files_move_log(self, u, ident, mode)
                    placed[u.name] = (u.rename.made.new, None)
                    continue
                if u.new_target is None:
                    new = u.new
                else:
                    new = self._log_new_after(u, placed) if placed else self.log_new(u)
                if not u.log_only:
                    placed[u.name] = (u.new, u.new_target)
                if new is not None:
                    if ident is None:
                        ident = committer_ident(self.repo).line()
                    self._append_reflog(u, u.current, new, ident, mode)
        except BaseException:
            self.journal.undo()
            self.journal = None
            if self.rename_journal:
                rename_journal.drop(self)
            raise
        self.journal = None
        for u in self.updates:
            if not u.write:
                continue
            if u.rename is not None:  # a rename's new name (rename.py)
                files_commit(self, u)
                continue
            if not u.log_only:
                step("commit lock", u.name)
                rename(u.lock.path, u.lock.path[: -len(LOCK_SUFFIX)])
                u.lock.path = ""
        deleting = self.deletions
        moving = [m for m in self.renames if m.nested] if self.renames else ()
        if self.renames and not moving:
            files_heads(self, ident or committer_ident(self.repo).line(), mode)
        self._unlink_reflogs(deleting)
        if moving:  # a nested rename: packed-refs is its commit point, the HEADs follow it (nested.py)
            for m in moving:
                nested.materialize(self, m)
            self._commit_packed()
            files_heads(self, ident or committer_ident(self.repo).line(), mode)
        else:
            self._commit_packed()
        for u in deleting:
            if u.lock.loose:
                step("unlink", u.name)
                try:
                    os.unlink(ref_path(self.repo, u.name))
                except FileNotFoundError:
                    pass
        if self.rename_journal:
            rename_journal.drop(self)
        self.cleanup(done=True)

    def cleanup(self, done: bool = False) -> None:
        if self.renames:
            files_cleanup(self)
        for u in self.locked:
            lk = u.lock
            if lk.fd >= 0:
                os.close(lk.fd)
                lk.fd = -1
            if lk.path:
                step("unlock", u.name)
                remove(lk.path)
                lk.path = ""
        self._unlock_packed()
        # git's files_transaction_cleanup: empty parent directories of every locked ref go, committed or
        # not (those a lock needed, those a deletion emptied). Once per directory: a second try from the
        # same one finds it gone or still full (a directory emptied by the try from one below it was tried
        # by that one), and refs directly under refs/<x>/ have none to try.
        tried: set[bytes] = set()
        for u in self.locked:
            parent = u.name.rpartition(b"/")[0]
            if parent.count(b"/") < 2 or parent in tried:
                continue
            tried.add(parent)
            self._remove_empty_parents(u.name, ref_base(self.repo, u.name))
        self.locked = []

    def run(self) -> list[Upd]:
        if self.renames:  # the reflogs an interrupted rename left, put beside their refs first
            rename_journal.recover(self.repo)
        two_phase(self._prepare_all, self.finish, self.cleanup)
        return self.updates

    def _prepare_all(self) -> None:
        self.prepare()
        if self.renames:
            files_prepare(self)
        self.prepare_packed()
