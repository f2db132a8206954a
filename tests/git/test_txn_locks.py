"""Locks: git's lock-file protocol, and transactions that meet a lock held by someone else.

A held ``packed-refs.lock``, ``<ref>.lock`` or ``tables.list.lock`` makes the commit fail after the configured
timeout with git's text, changing no byte; a lock released within the timeout lets it through (t0600, t0610).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from refscope.backend import lockfile
from refscope.backend.errors import LockBusy, TransactionRefused
from refscope.backend.meter import measure
from refscope.backend.txn import Transaction

from tests.support.git import create_refs, for_each_ref, git, init_repo, tree_bytes
from tests.support.txn import git_delete, open_txn_store


# -- lockfile.py -------------------------------------------------------------------------------------------
def test_lock_commit_and_rollback(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    lock = lockfile.acquire(str(target), keep_open=True)
    assert (tmp_path / "f.lock").exists() and lock.fd >= 0
    os.write(lock.fd, b"new")
    lock.commit()
    assert target.read_bytes() == b"new" and not (tmp_path / "f.lock").exists()
    lock = lockfile.acquire(str(target))
    assert lock.fd == -1  # closed at once, still held
    lock.rollback()
    assert target.read_bytes() == b"new" and not (tmp_path / "f.lock").exists()


def _tries(report, busy: bool = True) -> int:
    """Attempts to create the lock: its ``openat`` calls, counted by the kernel (not by the clock: a busy CI
    machine must not turn "one try" into a failure), less the one that reads ``<path>~pid.lock`` for git's
    advice when the lock is busy."""
    assert report.source == "perf", report.source
    return report.syscalls_by_name.get("openat", 0) - busy


def test_busy_lock_text_and_timeouts(tmp_path: Path) -> None:
    target = tmp_path / "f"
    (tmp_path / "f.lock").write_bytes(b"")
    with measure("timeout 0") as m, pytest.raises(LockBusy) as info:
        lockfile.acquire(str(target), 0)
    assert _tries(m.report) == 1  # timeout 0: one try
    assert info.value.what == f"Unable to create '{tmp_path}/f.lock': File exists."
    assert info.value.hint.startswith("Another git process seems to be running in this repository")
    t0 = time.monotonic()
    with measure("timeout 150") as m, pytest.raises(LockBusy):
        lockfile.acquire(str(target), 150)
    assert time.monotonic() - t0 >= 0.1  # waited (about) the timeout...
    assert 2 <= _tries(m.report) <= 20  # ...retrying with a growing backoff, not spinning


def test_lock_released_while_waiting(tmp_path: Path) -> None:
    target = tmp_path / "f"
    (tmp_path / "f.lock").write_bytes(b"")
    threading.Timer(0.05, lambda: os.unlink(tmp_path / "f.lock")).start()
    lock = lockfile.acquire(str(target), -1)  # -1: wait forever (here: until the timer releases it)
    lock.rollback()


def test_only_eexist_is_retried(tmp_path: Path) -> None:
    with measure("ENOENT") as m, pytest.raises(TransactionRefused, match="No such file or directory") as info:
        lockfile.acquire(str(tmp_path / "missing-dir" / "f"), 1000)
    assert not isinstance(info.value, LockBusy)
    assert _tries(m.report, busy=False) == 1


# -- transactions meeting held locks ---------------------------------------------------------------------
@pytest.fixture
def repo_with_refs(tmp_path: Path, ref_format: str) -> Path:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    oid = create_refs(repo, [b"refs/heads/b%d" % i for i in range(6)])
    if ref_format == "files":
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/loose", oid)
    # short timeouts keep the test fast; the values are honoured as configured
    git(repo, "config", "core.packedRefsTimeout", "100")
    git(repo, "config", "core.filesRefLockTimeout", "50")
    git(repo, "config", "reftable.lockTimeout", "50")
    return repo


def held_lock_paths(repo: Path, fmt: str) -> list[Path]:
    if fmt == "files":
        return [repo / ".git" / "packed-refs.lock", repo / ".git" / "refs" / "heads" / "b2.lock"]
    return [repo / ".git" / "reftable" / "tables.list.lock"]


def test_held_lock_changes_nothing(repo_with_refs: Path, ref_format: str) -> None:
    repo = repo_with_refs
    for lock in held_lock_paths(repo, ref_format):
        lock.write_bytes(b"")
        before = tree_bytes(repo)
        txn = Transaction(open_txn_store(repo))
        for name in (b"refs/heads/b1", b"refs/heads/b2", b"refs/heads/b4"):
            txn.delete(name)
        with pytest.raises(LockBusy) as info:
            txn.commit()
        assert tree_bytes(repo) == before
        # git's own refusal in the same situation names the same condition
        proc = git_delete(
            repo, [(b"refs/heads/b1", None), (b"refs/heads/b2", None), (b"refs/heads/b4", None)]
        )
        assert proc.returncode != 0
        if ref_format == "files":
            assert f"Unable to create '{lock}': File exists." in info.value.what
            assert f"Unable to create '{lock}': File exists." in proc.stderr.decode()
        else:
            assert info.value.what.startswith("cannot lock references")
            assert "cannot lock references" in proc.stderr.decode()
        assert tree_bytes(repo) == before
        lock.unlink()


def test_lock_released_within_timeout(repo_with_refs: Path, ref_format: str) -> None:
    repo = repo_with_refs
    git(repo, "config", "core.packedRefsTimeout", "3000")
    git(repo, "config", "reftable.lockTimeout", "3000")
    lock = held_lock_paths(repo, ref_format)[0]
    lock.write_bytes(b"")
    threading.Timer(0.1, lock.unlink).start()
    txn = Transaction(open_txn_store(repo))
    txn.delete(b"refs/heads/b3")
    assert txn.commit().deleted == [b"refs/heads/b3"]
    assert b"refs/heads/b3" not in [r[0] for r in for_each_ref(repo)]
