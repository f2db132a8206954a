"""Crash consistency of general transactions: the native engines SIGKILLed at every step.

The commit runs in a forked child armed with ``crashpoint.arm(at=k)``. Afterwards git reads a valid
repository (``git refs verify``) in which every ref of the batch is at its old value or its new one (files:
ref by ref, as git's own finish; reftable: all old or all new, the rename of ``tables.list`` being the one
commit point), every other ref is untouched, and every lock left behind is reported by ``stale_locks``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from refscope.backend.engines import crashpoint
from refscope.backend.repo import discover
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction
from refscope.backend.verify import stale_locks

from tests.support.update import (
    copy_repo,
    crash_source,
    fast_copy,
    for_each_ref,
    git,
    git_env,
    leftover_files,
    open_txn_store,
    run_armed_child,
    use_git_identity,
)


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def batch(repo: Path) -> bytes:
    head = git(repo, "rev-parse", "HEAD").strip()
    second = git(repo, "rev-parse", "HEAD~1").strip()
    tag = git(repo, "rev-parse", "refs/tags/v0").strip()
    p03 = git(repo, "rev-parse", "refs/heads/p03").strip()
    lines = [
        b"create refs/heads/c1 %s" % head,
        b"create refs/heads/deep/x/c2 %s" % second,
        b"update refs/heads/p03 %s %s" % (second if p03 == head else head, p03),  # loose over packed
        b"update refs/heads/p02 %s" % second,  # packed only
        b"delete refs/heads/l02",  # loose, with a reflog
        b"delete refs/heads/p04",  # packed only: packed-refs rewritten
        b"update refs/heads/sym %s" % second,  # through the symref: p01 moves
        b"update HEAD %s" % second,  # HEAD's branch
        b"symref-create refs/heads/s1 refs/heads/c1",
        b"create refs/tags/t1 %s" % tag,  # annotated: peeled in reftable
    ]
    return b"\n".join(lines) + b"\n"


@pytest.fixture(scope="module", params=["files", "reftable"])
def crash_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt = request.param
    root = tmp_path_factory.mktemp(f"upd-crash-{fmt}")
    src = crash_source(root, fmt)
    data = batch(src)
    oracle = copy_repo(src, root / "oracle")
    git(oracle, "update-ref", "--stdin", input=data)
    return fmt, src, oracle, data


def commit_batch(repo: Path, data: bytes) -> None:
    store = open_txn_store(repo)
    txn = UpdateTransaction(store, allow_checked_out=True)
    parsed = parse(data, resolve=txn.resolver())
    txn.queue(parsed.batches[0].commands)
    txn.commit()


def run_child(repo: Path, data: bytes, at: int) -> int:
    return run_armed_child(at, lambda: commit_batch(repo, data))


def test_crash_at_every_step(crash_base, tmp_path: Path) -> None:
    fmt, src, oracle, data = crash_base
    steps: list[str] = []
    traced = copy_repo(src, tmp_path / "traced")
    crashpoint.arm(trace=steps)
    try:
        commit_batch(traced, data)
    finally:
        crashpoint.arm()
    assert for_each_ref(traced) == for_each_ref(oracle)
    assert len(steps) >= 10, steps
    before = {r[0]: r for r in for_each_ref(src)}
    after_all = {r[0]: r for r in for_each_ref(oracle)}
    for k in range(1, len(steps) + 1):
        repo = fast_copy(src, tmp_path / f"k{k}")
        status = run_child(repo, data, k)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, steps[k - 1], status)
        git(repo, "refs", "verify")
        now = {r[0]: r for r in for_each_ref(repo)}
        for name in set(before) | set(after_all) | set(now):
            assert now.get(name) in (before.get(name), after_all.get(name)), (k, steps[k - 1], name)
        if fmt == "reftable":
            assert now in (before, after_all), (k, steps[k - 1])
        locks, _others = leftover_files(repo)
        if locks:
            reported = {os.path.realpath(i.path) for i in stale_locks(discover(str(repo), git_env()))}
            assert {os.path.realpath(p) for p in locks} <= reported, (k, steps[k - 1])
