"""Crash consistency: the native engine SIGKILLed at every step between its first lock and its last unlink.

The commit runs in a forked child armed with ``crashpoint.arm(at=k)``; it kills itself just before its k-th
on-disk action. Afterwards git must read a valid repository (``git refs verify``; for-each-ref works) in which
every ref is its old value or gone (deleted refs) and every other ref is untouched; every lock left behind
is reported by ``verify.stale_locks``; after removing the leftovers the same transaction commits and the
result is exactly git's.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from refscope.backend.engines import crashpoint
from refscope.backend.repo import discover
from refscope.backend.txn import Transaction
from refscope.backend.verify import stale_locks

from tests.support.git import copy_repo, for_each_ref, git, git_env, use_git_identity
from tests.support.txn import (
    crash_source,
    fast_copy,
    git_delete,
    leftover_files,
    open_txn_store,
    run_armed_child,
)

BATCH = [
    b"refs/heads/p02",  # packed only
    b"refs/heads/p03",  # loose over packed
    b"refs/heads/l02",  # loose only, with a reflog
    b"refs/heads/nested/dir/n1",  # nested (empty dirs pruned)
    b"refs/heads/main",  # HEAD's branch: HEAD's reflog gets an entry
    b"refs/heads/sym",  # through the symref: p01 goes
    b"refs/tags/v1",  # annotated (peeled line in packed-refs)
]


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture(scope="module", params=["files", "reftable"])
def crash_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt = request.param
    root = tmp_path_factory.mktemp(f"crash-{fmt}")
    src = crash_source(root, fmt)
    oracle = copy_repo(src, root / "oracle")
    assert git_delete(oracle, [(n, None) for n in BATCH]).returncode == 0
    return fmt, src, oracle


def commit_batch(repo: Path) -> None:
    txn = Transaction(open_txn_store(repo), allow_checked_out=True)
    for name in BATCH:
        txn.delete(name)
    txn.commit()


def run_child(repo: Path, at: int) -> int:
    """Fork; the child commits the batch armed to die at step ``at``. Returns the child's wait status."""
    return run_armed_child(at, lambda: commit_batch(repo))


def test_crash_at_every_step(crash_base, tmp_path: Path) -> None:
    fmt, src, oracle = crash_base
    steps: list[str] = []
    traced = copy_repo(src, tmp_path / "traced")
    crashpoint.arm(trace=steps)
    try:
        commit_batch(traced)
    finally:
        crashpoint.arm()
    assert for_each_ref(traced) == for_each_ref(oracle)
    assert len(steps) >= 10, steps

    before = {r[0]: r for r in for_each_ref(src)}
    expected = for_each_ref(oracle)
    touched = set(BATCH) | {b"refs/heads/p01"}
    for k in range(1, len(steps) + 1):
        repo = fast_copy(src, tmp_path / f"k{k}")
        status = run_child(repo, k)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, steps[k - 1], status)
        # git reads a valid repository: every ref old or gone, nothing else touched
        git(repo, "refs", "verify")
        after = {r[0]: r for r in for_each_ref(repo)}
        for name, row in after.items():
            assert name in before, (k, steps[k - 1], name)
            assert row == before[name], (k, steps[k - 1], name)
        for name in set(before) - set(after):
            assert name in touched, (k, steps[k - 1], name)
        # every lock left behind is reported
        locks, others = leftover_files(repo)
        if locks:
            reported = {os.path.realpath(i.path) for i in stale_locks(discover(str(repo), git_env()))}
            assert {os.path.realpath(p) for p in locks} <= reported, (k, steps[k - 1])
        # clearing the leftovers lets the same transaction finish with git's result
        for p in locks + others:
            p.unlink()
        commit_batch(repo)
        assert for_each_ref(repo) == expected, (k, steps[k - 1])
