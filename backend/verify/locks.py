"""Lock files left in the ref storage: their age and who might own them (a scan of /proc), and the one
removal verify offers, refused whenever any process could be holding the lock.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import LockBusy, TransactionRefused
from .findings import Collector

# Locks older than this with no live holder are "stale" (an error: git commands needing them will fail).
STALE_AFTER_S = 60.0


class LockInfo(NamedTuple):
    """A ``.lock`` file found in the ref storage, with what is known about who might own it."""

    path: str
    age_s: float  # seconds since its mtime
    mtime: float
    size: int
    holders: list[tuple[int, str]]  # (pid, comm) of processes with the file open
    git_processes: list[tuple[int, str]]  # (pid, comm) of git processes whose cwd is inside the repository

    def owner_hint(self) -> str:
        if self.holders:
            return "held open by " + ", ".join(f"pid {p} ({c})" for p, c in self.holders)
        if self.git_processes:
            return (
                "no process has it open, but git is running in this repository ("
                + ", ".join(f"pid {p}" for p, _ in self.git_processes)
                + ")"
            )
        return "no process has it open and no git process runs in this repository"

    def could_be_held(self) -> bool:
        return bool(self.holders or self.git_processes)


def _proc_scan() -> Iterator[tuple[int, str, str | None, list[str]]]:
    """(pid, comm, cwd, open file paths) of every process we may inspect."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        base = f"/proc/{pid}"
        try:
            with open(f"{base}/comm", "rb") as fh:
                comm = fh.read().decode("utf-8", "replace").strip()
        except OSError:
            continue
        try:
            cwd = os.readlink(f"{base}/cwd")
        except OSError:
            cwd = None
        files: list[str] = []
        try:
            for fd in os.listdir(f"{base}/fd"):
                with contextlib.suppress(OSError):
                    files.append(os.readlink(f"{base}/fd/{fd}"))
        except OSError:
            pass
        yield pid, comm, cwd, files


def _repo_dirs(repo) -> list[str]:
    dirs = {os.path.realpath(repo.gitdir), os.path.realpath(repo.commondir)}
    if repo.worktree:
        dirs.add(os.path.realpath(repo.worktree))
    return sorted(dirs)


def _inside(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _git_dirs(repo) -> list[str]:
    """The common dir, this git dir and every linked worktree's (``worktrees/<id>``): each holds a HEAD
    and per-worktree refs that a ref transaction locks (a rename of a branch checked out elsewhere takes
    that worktree's HEAD.lock)."""
    dirs = [repo.commondir, repo.gitdir]
    with contextlib.suppress(OSError):
        top = os.path.join(repo.commondir, "worktrees")
        dirs.extend(os.path.join(top, e) for e in sorted(os.listdir(top)))
    return list(dict.fromkeys(dirs))


def _lock_candidates(repo) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    for rel in ("config.lock", "config.worktree.lock"):  # a branch rename moves its config section
        p = os.path.join(repo.commondir, rel)
        if os.path.lexists(p):
            found.append(p)
    for base in _git_dirs(repo):
        for rel in (
            "packed-refs.lock",
            "HEAD.lock",
            "ORIG_HEAD.lock",
            "FETCH_HEAD.lock",
            "config.worktree.lock",
        ):
            p = os.path.join(base, rel)
            if os.path.lexists(p):
                found.append(p)
        # Ref locks beside the refs; reflog locks (git reflog expire rewrites logs/<ref> via <ref>.lock).
        for sub in ("refs", "logs"):
            _find_locks(os.path.join(base, sub), found)
        rdir = os.path.join(base, "reftable")
        try:
            for entry in sorted(os.listdir(rdir)):
                if entry.endswith(".lock"):
                    found.append(os.path.join(rdir, entry))
        except OSError:
            pass
    out = []
    for p in found:
        rp = os.path.realpath(p)
        if rp not in seen:
            seen.add(rp)
            out.append(p)
    return sorted(out)


def _find_locks(top: str, found: list[str]) -> None:
    """Every ``*.lock`` under ``top`` (names and d_type only: no stat per file, cheap on 100k reflogs)."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".lock"):
            found.append(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            _find_locks(entry.path, found)


def _lock_info(path: str, procs: list, dirs: list[str], now: float) -> LockInfo | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    holders = [(pid, comm) for pid, comm, _cwd, files in procs if real in files or path in files]
    gits = [
        (pid, comm)
        for pid, comm, cwd, _files in procs
        if comm.startswith("git") and cwd is not None and _inside(cwd, dirs) and pid != os.getpid()
    ]
    return LockInfo(path, max(0.0, now - st.st_mtime), st.st_mtime, st.st_size, holders, gits)


def stale_locks(repo) -> list[LockInfo]:
    """Every ref-storage ``.lock`` file of ``repo`` with its age and owner hint (nothing is removed)."""
    paths = _lock_candidates(repo)
    if not paths:
        return []
    procs = list(_proc_scan())
    dirs = _repo_dirs(repo)
    now = time.time()
    infos = [_lock_info(p, procs, dirs, now) for p in paths]
    return [i for i in infos if i is not None]


def remove_stale_lock(path: str, repo=None, *, min_age_s: float = STALE_AFTER_S) -> LockInfo:
    """Remove one stale lock, refusing (LockBusy) when any process could hold it.

    git closes lock fds right after creating loose-ref locks, so "nobody has it open" is not enough:
    refuse also when the lock is younger than ``min_age_s`` or a git process runs inside the repository.
    Returns what was removed.
    """
    if not path.endswith(".lock"):
        raise TransactionRefused(path, "not a lock file (name does not end in '.lock')")
    procs = list(_proc_scan())
    dirs = _repo_dirs(repo) if repo is not None else [os.path.dirname(os.path.realpath(path))]
    if repo is not None and not _inside(os.path.realpath(path), dirs):
        raise TransactionRefused(path, "lock file is not inside this repository")
    info = _lock_info(path, procs, dirs, time.time())
    if info is None:
        raise TransactionRefused(path, "lock file does not exist")
    if info.holders:
        raise LockBusy(path, f"lock is in use: {info.owner_hint()}")
    if info.git_processes:
        raise LockBusy(path, f"lock may be in use: {info.owner_hint()}")
    if info.age_s < min_age_s:
        raise LockBusy(path, f"lock is only {info.age_s:.0f} s old; it may belong to a running operation")
    os.unlink(path)
    return info


def _fmt_age(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def report_locks(out: Collector, repo) -> None:
    """Every lock file as a finding: an error when stale and nobody could hold it, else a warning."""
    for info in stale_locks(repo):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info.mtime))
        text = f"lock file left behind, {_fmt_age(info.age_s)} old (mtime {stamp} UTC); {info.owner_hint()}"
        if info.age_s >= STALE_AFTER_S and not info.could_be_held():
            out.error(
                info.path,
                None,
                text + "; git commands that need it fail with 'File exists' until it is removed",
            )
        else:
            out.warning(info.path, None, text)
