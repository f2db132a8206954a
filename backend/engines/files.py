"""The native engine for the files backend: git's deletion protocol (refs/files-backend.c), step for step.

Prepare: lock each ``<ref>.lock`` (fd closed at once), read the ref under its lock (a symref is split as git
splits it: the symref gets a reflog entry, its referent is locked and deleted; HEAD's reflog gets an entry
when HEAD's branch goes), take ``packed-refs.lock`` and check ``packed-refs`` under it (re-mapped only if
its identity changed since the snapshot), check every expected value, and write ``packed-refs.new`` as a
splice of the old bytes when a deleted ref is packed.
Finish, in git's order: reflog entries of symrefs/HEAD, unlink the deleted refs' reflogs (pruning empty
log dirs), rename ``packed-refs.new``, unlink loose files, roll back ref locks, release ``packed-refs.lock``,
remove empty parent directories. Any refusal before the rename changes no byte on disk.

The syscall budget matters (the TUI pays it on every commit): deleting one packed ref of 100k with the
snapshot open is 16 syscalls (git: ~1,800): read HEAD (3), lock + read the ref (3), packed-refs.lock (2),
lstat packed-refs (1; its mapping is the snapshot's when unchanged), packed-refs.new by one ``writev`` (3),
unlink the reflog (1), rename (1), unlock both (2).

Over 500 lines, on purpose: it is one protocol, git's files-backend transaction (prepare, the packed-refs
lock, finish, cleanup), held by one class whose steps share its locks and update list, as
refs/files-backend.c holds it (PackedSteps: the steps update's FilesUpdate takes alike); the parts that stand alone are apart already (the packed-refs splice in
packed_splice.py, the update list and reflog rules in common.py, loose-file parsing in formats/loose.py).
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
import stat as _stat

from ..errors import LockBusy, StaleValue, TransactionRefused, UnreadableFile
from ..fileio import write_all
from ..formats.loose import read_contents
from ..formats.packed import PackedRefs
from ..lockfile import (
    LOCK_SUFFIX,
    busy_error,
    create_with_timeout,
    remove,
    rename,
    two_phase,
    unable_to_lock_message,
)
from ..model import HASH_HEXSZ
from .common import (
    Deletion,
    RefUpdate,
    committer_ident,
    fsync_references,
    log_all_ref_updates,
    log_path,
    ref_base,
    ref_path,
    reflog_message,
    should_autocreate_reflog,
    split_symref_update,
    splits_head,
    zero_oid,
)
from .crashpoint import step
from .packed_splice import identity, kept_ranges, write_spliced

_HEX = frozenset(b"0123456789abcdef")
_WS = b" \t\n\r\v\f"

# What a read under the lock found.
MISSING, REGULAR, SYMREF = 0, 1, 2


class _Update(RefUpdate):
    """An update of the files backend: what its lock and the loose file under it held (``kind``,
    ``loose_oid`` or ``referent``), its packed-refs record, the directories made for its lock, and whether
    it is HEAD's log entry for the deletion of HEAD's branch (``head_split``: git's split_head_update)."""

    __slots__ = (
        "head_split",
        "locked",
        "lock_path",
        "kind",
        "loose_oid",
        "referent",
        "created_dirs",
        "packed",
    )

    def __init__(self, name: bytes, old: bytes | None, no_deref: bool) -> None:
        super().__init__(name, old, no_deref)
        self.head_split = False
        self.locked = False
        self.lock_path = ""
        self.kind = MISSING
        self.loose_oid: bytes | None = None
        self.referent: bytes | None = None
        self.created_dirs: list[str] = []
        self.packed: tuple[int, int] | None = None


def _parse_loose(path: str, name: bytes, data: bytes, hexsz: int) -> tuple[int, bytes]:
    if data.startswith(b"ref:"):
        return SYMREF, data[4:].strip(_WS)
    oid = data[:hexsz]
    if len(oid) == hexsz and _HEX.issuperset(oid) and (len(data) == hexsz or data[hexsz] in _WS):
        return REGULAR, oid
    raise TransactionRefused(
        path,
        f"cannot lock ref '{name.decode(errors='replace')}': unable to resolve reference "
        f"'{name.decode(errors='replace')}': reference broken",
    )


IN_THE_WAY = b"/"  # read_loose's value for MISSING when a directory sits where the loose file would be


def read_loose(path: str, name: bytes, hexsz: int) -> tuple[int, bytes | None]:
    """(MISSING|REGULAR|SYMREF, oid or target): git's files_read_raw_ref for the loose part. A directory
    is no ref: (MISSING, IN_THE_WAY), which the commit removes when empty, as git; a file that cannot be
    read refuses the transaction as git does ("unable to resolve reference ...: Permission denied")."""
    try:
        try:
            data = read_contents(path, follow=False)
        except UnreadableFile as err:
            if err.errno == errno.EISDIR:
                return MISSING, IN_THE_WAY
            if err.errno != errno.ELOOP:
                raise
            target = os.readlink(path)  # a symlink: refs/... is git's obsolete symref form
            if target.startswith("refs/"):
                return SYMREF, os.fsencode(target)
            data = read_contents(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING, None
    except UnreadableFile as err:
        if err.errno == errno.EISDIR:
            return MISSING, IN_THE_WAY
        raise TransactionRefused(path, f"unable to resolve reference: {err.why}") from None
    except OSError as err:  # readlink
        raise TransactionRefused(path, f"unable to resolve reference: {err.strerror}") from None
    return _parse_loose(path, name, data, hexsz)


class PackedSteps:
    """The steps the deleting commit (FilesCommit) and update's FilesUpdate take alike, in git's order: the
    packed-refs lock, a reflog entry, the reflogs of deleted refs, packed-refs.new renamed over packed-refs
    and, on the way out, the unlock. A mixin: each engine keeps ``repo``, ``zero``, ``message``,
    ``packed_lock`` and ``new_path`` itself."""

    repo: object
    zero: bytes
    message: bytes
    packed_lock: str
    new_path: str

    def _take_packed_lock(self) -> str:
        """Take packed-refs.lock (git's packed_refs_lock); returns packed-refs' path."""
        path = os.path.join(self.repo.commondir, "packed-refs")
        step("lock packed-refs")
        fd = create_with_timeout(path + LOCK_SUFFIX, self.repo.config.packed_refs_timeout())
        if fd < 0:
            if fd == -errno.EEXIST:
                raise busy_error(path)
            raise TransactionRefused(path + LOCK_SUFFIX, unable_to_lock_message(path, -fd))
        os.close(fd)
        self.packed_lock = path + LOCK_SUFFIX
        return path

    def _reflog_entry(self, old: bytes | None, new: bytes, ident_line: bytes) -> bytes:
        entry = b"%s %s %s" % (old or self.zero, new, ident_line)
        if self.message:
            entry += b"\t" + self.message
        return entry + b"\n"

    def _remove_empty_parents(self, name: bytes, base_dir: str) -> None:
        """git's try_remove_empty_parents: rmdir parents below ``refs/<x>/`` until one is not empty."""
        parts = name.split(b"/")
        for i in range(len(parts) - 1, 2, -1):
            try:
                os.rmdir(os.path.join(base_dir, os.fsdecode(b"/".join(parts[:i]))))
            except OSError:
                return

    def _unlink_reflogs(self, deleting) -> None:
        """The reflogs of the refs being deleted go, and the log directories they emptied."""
        for u in deleting:
            step("unlink reflog", u.name)
            try:
                os.unlink(log_path(self.repo, u.name))
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                continue
            self._remove_empty_parents(u.name, os.path.join(ref_base(self.repo, u.name), "logs"))

    def _commit_packed(self) -> None:
        if self.new_path:
            step("rename packed-refs.new")
            rename(self.new_path, self.packed_lock[: -len(LOCK_SUFFIX)])
            self.new_path = ""

    def _unlock_packed(self) -> None:
        """Roll back a written packed-refs.new and packed-refs.lock."""
        if self.new_path:
            remove(self.new_path)
            self.new_path = ""
        if self.packed_lock:
            step("unlock packed-refs")
            remove(self.packed_lock)
            self.packed_lock = ""


def reflog_flags(mode: str, name: bytes) -> tuple[int, bool]:
    """os.open's flags for appending to ``name``'s reflog, and whether the reflog may be created."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO: ENXIO, never a wait
    create = should_autocreate_reflog(mode, name)
    if create:
        flags |= os.O_CREAT
    return flags, create


def write_reflog(fd: int, entry: bytes, fsync: bool) -> None:
    """Append ``entry`` through ``fd`` (fsynced when core.fsync says so) and close it."""
    try:
        write_all(fd, entry)  # short writes continued: the next one says why (ENOSPC...)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


class FilesCommit(PackedSteps):
    """One commit of deletions through the files backend. ``run()`` returns the names deleted."""

    def __init__(
        self, repo, deletions: list[Deletion], *, snapshot=None, no_deref=False, message=b""
    ) -> None:
        self.repo = repo
        self.hexsz = HASH_HEXSZ[repo.hash_name]
        self.zero = zero_oid(repo.hash_name)
        self.deletions = deletions
        self.snapshot = snapshot
        self.no_deref = no_deref
        self.message = reflog_message(message) if message else b""
        self.updates: list[_Update] = []
        self.names: set[bytes] = set()
        self.packed_lock = ""
        self.new_path = ""
        self.ref_timeout = repo.config.files_ref_lock_timeout()
        self.deleted: list[bytes] = []

    # -- prepare -------------------------------------------------------------------------------------
    def _head_ref(self) -> bytes | None:
        """HEAD's immediate symref target, read now as git reads it before locking anything (a snapshot's
        HEAD may be older: HEAD's reflog entry must follow the HEAD on disk)."""
        kind, value = read_loose(os.path.join(self.repo.gitdir, "HEAD"), b"HEAD", self.hexsz)
        return value if kind == SYMREF else None

    def _lock(self, u: _Update) -> None:
        path = ref_path(self.repo, u.name)
        lock_path = path + LOCK_SUFFIX
        prefix = f"cannot lock ref '{u.name.decode(errors='replace')}': "
        step("lock", u.name)
        fd = create_with_timeout(lock_path, self.ref_timeout)
        attempts = 3
        while fd == -errno.ENOENT and attempts:
            attempts -= 1
            self._make_dirs(u, path)
            fd = create_with_timeout(lock_path, self.ref_timeout)
        if fd < 0:
            if fd == -errno.EEXIST:
                raise busy_error(path, prefix)
            if fd == -errno.ENOTDIR:
                raise self._conflict(u, path)
            raise TransactionRefused(lock_path, prefix + unable_to_lock_message(path, -fd))
        os.close(fd)
        u.locked = True
        u.lock_path = lock_path

    def _conflict(self, u: _Update, path: str) -> TransactionRefused:
        name = u.name.decode(errors="replace")
        if u.old is not None:
            return TransactionRefused(path, f"cannot lock ref '{name}': unable to resolve reference '{name}'")
        parts = u.name.split(b"/")
        base = ref_base(self.repo, u.name)
        for i in range(2, len(parts)):
            prefix = b"/".join(parts[:i])
            if os.path.isfile(os.path.join(base, os.fsdecode(prefix))):
                return TransactionRefused(
                    path,
                    f"cannot lock ref '{name}': '{prefix.decode(errors='replace')}' exists; cannot create '{name}'",
                )
        return TransactionRefused(path, f"cannot lock ref '{name}': unable to create directory for {path}")

    def _make_dirs(self, u: _Update, path: str) -> None:
        """git's safe_create_leading_directories, remembering what we made (removed again at the end).

        mkdir first, deepest directory first, climbing only on ENOENT: one syscall when one level is missing
        (checking each level with stat first cost three more on every commit that needs a directory)."""
        base = ref_base(self.repo, u.name)
        missing = []
        d = os.path.dirname(path)
        while d != base:
            if self._mkdir(u, path, d):
                break
            missing.append(d)
            d = os.path.dirname(d)
        for d in reversed(missing):
            if not self._mkdir(u, path, d):
                raise self._conflict(u, path)

    def _mkdir(self, u: _Update, path: str, d: str) -> bool:
        """Make ``d``; False when its parent is missing. A file in the way is git's conflict."""
        step("mkdir", d)
        try:
            os.mkdir(d, 0o777)
        except FileNotFoundError:
            return False
        except FileExistsError:
            if not os.path.isdir(d):
                raise self._conflict(u, path) from None
        except NotADirectoryError:
            raise self._conflict(u, path) from None
        else:
            u.created_dirs.append(d)
        return True

    def _remove_dir_in_the_way(self, u: _Update) -> None:
        """git's lock_raw_ref on EISDIR: a directory where the ref's file goes may be what deleted refs left;
        unless the ref must exist, remove it when it holds only empty directories, else refuse."""
        path = ref_path(self.repo, u.name)
        name = u.name.decode(errors="replace")
        if u.old is not None:
            raise TransactionRefused(path, f"cannot lock ref '{name}': unable to resolve reference '{name}'")
        step("rmdir in the way", u.name)
        try:
            for top, _dirs, files in os.walk(path, topdown=False):
                if files:
                    raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY))
                os.rmdir(top)
        except OSError:
            raise TransactionRefused(
                path,
                f"cannot lock ref '{name}': there is a non-empty directory '{path}' blocking reference '{name}'",
            ) from None

    def _check_old(self, u: _Update, current: bytes | None, report: _Update) -> None:
        if u.old is None or u.log_only:
            return
        name = report.name.decode(errors="replace")
        if current == u.old:
            return
        if current is None:
            raise StaleValue(
                ref_path(self.repo, u.name),
                f"cannot lock ref '{name}': reference is missing but expected {u.old.decode()}",
            )
        raise StaleValue(
            ref_path(self.repo, u.name),
            f"cannot lock ref '{name}': is at {current.decode()} but expected {u.old.decode()}",
        )

    def _original(self, u: _Update) -> _Update:
        while u.parent is not None and not u.head_split:
            u = u.parent
        return u

    def _add(self, u: _Update) -> None:
        self.updates.append(u)
        self.names.add(u.name)

    def prepare(self) -> None:
        head_ref = self._head_ref()
        for d in self.deletions:
            self._add(_Update(d.name, d.old_oid, self.no_deref))
        i = 0
        # Phase 1: lock every ref (splitting symrefs and HEAD as git does), read the loose files.
        while i < len(self.updates):
            u = self.updates[i]
            i += 1
            if splits_head(self, u, head_ref):
                h = _Update(b"HEAD", u.old, True)
                h.log_only = True
                h.head_split = True
                h.parent = u
                self._add(h)
            self._lock(u)
            kind, value = read_loose(ref_path(self.repo, u.name), u.name, self.hexsz)
            if value is IN_THE_WAY:
                self._remove_dir_in_the_way(u)
            u.kind = kind
            if u.head_split:
                if kind != SYMREF or value != u.parent.name:
                    raise TransactionRefused(self.repo.gitdir, "HEAD has been racily updated")
                continue
            if kind == SYMREF:
                u.referent = value
                if u.no_deref:
                    continue  # resolved (and checked) in phase 2
                self._add(split_symref_update(self, u, value, _Update))
            elif kind == REGULAR:
                u.loose_oid = value
        # Phase 2: packed-refs under its lock; effective values; expected values.
        deleting = [u for u in self.updates if not u.log_only]
        view = self._lock_packed()
        for u in self.updates:
            if u.head_split:
                continue
            if not u.log_only:
                u.packed = view.locate(u.name)  # dropped from packed-refs even when a loose file shadows it
            if u.kind == REGULAR:
                u.current = u.loose_oid
            elif u.kind == MISSING:
                if u.packed is not None:
                    u.current = view.record_at(u.packed[0]).oid
            else:  # symref: resolve its target for the value check / reflog entry
                u.current = self._resolve(u.referent, view)
        for u in self.updates:
            if u.head_split:
                continue
            if u.kind == SYMREF and not u.log_only:
                # a symref deleted itself (no-deref): git reads its referent and checks the old value
                if u.old is not None and u.current is None:
                    raise TransactionRefused(
                        self.repo.gitdir,
                        f"cannot lock ref '{u.name.decode(errors='replace')}': error reading reference",
                    )
                self._check_old(u, u.current, self._original(u))
            elif u.kind != SYMREF:
                if u.current is None and u.old is not None:
                    name = self._original(u).name.decode(errors="replace")
                    raise StaleValue(
                        ref_path(self.repo, u.name),
                        f"cannot lock ref '{name}': unable to resolve reference '{u.name.decode(errors='replace')}'",
                    )
                self._check_old(u, u.current, self._original(u))
        # Log-only parents (symrefs, HEAD) log the old value of what they pointed at.
        for u in reversed(self.updates):
            if u.log_only:
                target = u.parent if u.head_split else self._child_of(u)
                if target is not None:
                    u.current = target.current
        dropped = [u.packed for u in deleting if u.packed is not None]
        if dropped:
            self.new_path = self.packed_lock[: -len(LOCK_SUFFIX)] + ".new"
            write_spliced(self.new_path, view.buf, kept_ranges(view, dropped), fsync_references(self.repo))

    def _child_of(self, u: _Update) -> _Update | None:
        for v in self.updates:
            if v.parent is u and not v.head_split:
                return v
        return None

    def _resolve(self, target: bytes | None, view: PackedRefs) -> bytes | None:
        for _ in range(5):
            if target is None:
                return None
            kind, value = read_loose(ref_path(self.repo, target), target, self.hexsz)
            if kind == REGULAR:
                return value
            if kind == SYMREF:
                target = value
                continue
            rng = view.locate(target)
            return view.record_at(rng[0]).oid if rng is not None else None
        return None

    def _lock_packed(self) -> PackedRefs:
        """Take packed-refs.lock; read packed-refs afresh only when it changed since the snapshot."""
        path = self._take_packed_lock()
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return PackedRefs.from_bytes(b"", path, self.repo.hash_name)
        if _stat.S_ISLNK(st.st_mode):
            raise TransactionRefused(path, "packed-refs is a symbolic link; refusing to rewrite it")
        snap = self.snapshot
        packed = snap.packed if snap is not None and snap.format == "files" else None
        if packed is not None and packed.stat is not None and identity(packed.stat) == identity(st):
            return packed
        # Changed since the snapshot (or none was given): the new file is checked whole before its records
        # are spliced through, as Transaction checks the snapshot's.
        packed = PackedRefs.open(path, self.repo.hash_name)
        packed.validate()
        return packed

    # -- finish --------------------------------------------------------------------------------------
    def _append_reflog(self, u: _Update, ident_line: bytes, mode: str) -> None:
        path = log_path(self.repo, u.name)
        entry = self._reflog_entry(u.current, self.zero, ident_line)
        flags, create = reflog_flags(mode, u.name)
        step("reflog", u.name)
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:
            if not create:
                return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, flags, 0o666)
        except IsADirectoryError:
            return
        write_reflog(fd, entry, fsync_references(self.repo))

    def finish(self) -> None:
        mode = log_all_ref_updates(self.repo)
        log_only = [u for u in self.updates if u.log_only]
        if log_only:
            ident = committer_ident(self.repo).line()
            for u in log_only:
                self._append_reflog(u, ident, mode)
        deleting = [u for u in self.updates if not u.log_only]
        self._unlink_reflogs(deleting)
        self._commit_packed()
        for u in deleting:
            if u.kind != MISSING:
                step("unlink", u.name)
                try:
                    os.unlink(ref_path(self.repo, u.name))
                except FileNotFoundError:
                    pass
            if u.current is not None or u.kind == SYMREF:
                self.deleted.append(u.name)
        self.cleanup(removed=True)

    def cleanup(self, removed: bool = False) -> None:
        """Roll back every lock (and a written packed-refs.new); remove directories we emptied or made."""
        for u in self.updates:
            if u.locked:
                step("unlock", u.name)
                remove(u.lock_path)
                u.locked = False
        self._unlock_packed()
        for u in self.updates:
            if (removed and not u.log_only and u.kind != MISSING) or u.created_dirs:
                self._remove_empty_parents(u.name, ref_base(self.repo, u.name))

    def run(self) -> list[bytes]:
        # The point of no return is the first reflog entry (lockfile.py, "Signals").
        two_phase(self.prepare, self.finish, self.cleanup)
        return self.deleted


def commit(repo, deletions: list[Deletion], *, snapshot=None, no_deref=False, message=b"") -> list[bytes]:
    """Delete ``deletions`` atomically; returns the names that existed and are gone. Raises on refusal."""
    if not deletions:
        return []  # git takes no lock at all for an empty transaction
    return FilesCommit(repo, deletions, snapshot=snapshot, no_deref=no_deref, message=message).run()


__all__ = ["commit", "FilesCommit", "read_loose", "LockBusy"]
