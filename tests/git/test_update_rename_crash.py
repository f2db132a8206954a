"""Crash consistency of a rename mixed with creates, updates and deletes: the native engines SIGKILLed at
every step (``crashpoint.arm(at=k)`` in a forked child, as test_update_crash.py).

Afterwards ``git refs verify`` passes, every ref is at its value before or after (reftable: the main stack
all before or all after), each worktree's HEAD points at a ref that exists (the old name while it is
there, the new one once it is), the config is git's before or after, and every lock left behind is one
the commit was holding, each reported by ``stale_locks`` (refs' locks, a worktree's HEAD.lock, config.lock)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from refscope.backend.engines import crashpoint
from refscope.backend.repo import discover
from refscope.backend.update.commands import Command, Rename
from refscope.backend.update.txn import UpdateTransaction
from refscope.backend.verify import stale_locks, verify

from tests.support.update import (
    build_repo,
    copy_repo,
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


def items(repo: Path) -> list:
    head = git(repo, "rev-parse", "HEAD").strip()
    second = git(repo, "rev-parse", "HEAD~1").strip()
    zero = b"0" * len(head)
    return [
        Command("create", b"refs/heads/c1", head, zero, None, None, False),
        Rename(b"refs/heads/main", b"refs/heads/x/trunk", None),  # checked out here, with config
        Command("delete", b"refs/heads/l02", zero, None, None, None, False),  # loose, with a reflog
        Rename(b"refs/heads/wt-branch", b"refs/heads/wt2", None),  # checked out in the other worktree
        Command("update", b"refs/heads/p02", second, None, None, None, False),  # packed only
        Rename(b"refs/heads/p04", b"refs/heads/deep/p4", None),  # packed only
    ]


@pytest.fixture(scope="module", params=["files", "reftable"])
def crash_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt = request.param
    root = tmp_path_factory.mktemp(f"rename-crash-{fmt}")
    src = build_repo(root / "repo", fmt, "sha1", n_branches=8)
    git(src, "config", "branch.main.remote", "origin")
    git(src, "config", "branch.wt-branch.merge", "refs/heads/up")
    oracle = copy_repo(src, root / "oracle")
    batch = items(src)
    lines = b"create refs/heads/c1 %s\ndelete refs/heads/l02\nupdate refs/heads/p02 %s\n" % (
        batch[0].new,
        batch[4].new,
    )
    git(oracle, "update-ref", "--stdin", input=lines)
    for r in (batch[1], batch[3], batch[5]):
        git(oracle, "branch", "-m", r.old_name.decode()[11:], r.name.decode()[11:])
    return fmt, src, oracle, batch


def commit_batch(repo: Path, batch: list) -> None:
    txn = UpdateTransaction(open_txn_store(repo))
    txn.queue(batch)
    txn.commit()


def heads(repo: Path) -> tuple[bytes, bytes]:
    return git(repo, "symbolic-ref", "HEAD").strip(), git(repo / "wt", "symbolic-ref", "HEAD").strip()


def test_rename_crash_at_every_step(crash_base, tmp_path: Path) -> None:
    fmt, src, oracle, batch = crash_base
    steps: list[str] = []
    traced = copy_repo(src, tmp_path / "traced")
    crashpoint.arm(trace=steps)
    try:
        commit_batch(traced, batch)
    finally:
        crashpoint.arm()
    assert for_each_ref(traced) == for_each_ref(oracle)
    assert heads(traced) == heads(oracle)
    assert (traced / ".git" / "config").read_bytes() == (oracle / ".git" / "config").read_bytes()
    assert len(steps) >= 10, steps
    before = {r[0]: r for r in for_each_ref(src)}
    after_all = {r[0]: r for r in for_each_ref(oracle)}
    configs = {(src / ".git" / "config").read_bytes(), (oracle / ".git" / "config").read_bytes()}
    for k in range(1, len(steps) + 1):
        repo = fast_copy(src, tmp_path / f"k{k}")
        status = run_armed_child(k, lambda repo=repo: commit_batch(repo, batch))
        where = (k, steps[k - 1])
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (*where, status)
        git(repo, "refs", "verify")
        now = {r[0]: r for r in for_each_ref(repo)}
        for name in set(before) | set(after_all) | set(now):
            assert now.get(name) in (before.get(name), after_all.get(name)), (*where, name)
        if fmt == "reftable":
            assert now in (before, after_all), where
        main_head, wt_head = heads(repo)
        assert main_head in now, where  # never a HEAD on a name that is gone
        if fmt == "files":  # (reftable: the worktree's own stack is written after the main one, as git's)
            assert wt_head in now, where
        assert (repo / ".git" / "config").read_bytes() in configs, where
        locks, _others = leftover_files(repo)
        if locks:
            reported = {os.path.realpath(i.path) for i in stale_locks(discover(str(repo), git_env()))}
            assert {os.path.realpath(p) for p in locks} <= reported, where  # verify names every one


# -- a nested rename (into or out of its own name space): update/nested.py's sequence ---------------------
NESTED_BATCHES = {
    "into-packed-checked-out": lambda head, zero: [Rename(b"refs/heads/main", b"refs/heads/main/x", None)],
    "into-loose": lambda head, zero: [Rename(b"refs/heads/l03", b"refs/heads/l03/x/y", None)],
    "out-loose-other-worktree": lambda head, zero: [Rename(b"refs/heads/wt/one", b"refs/heads/wt", None)],
    "out-packed": lambda head, zero: [Rename(b"refs/heads/solo/one", b"refs/heads/solo", None)],
    "mixed": lambda head, zero: [
        Command("create", b"refs/heads/c1", head, zero, None, None, False),
        Rename(b"refs/heads/main", b"refs/heads/main/trunk", None),
        Command("delete", b"refs/heads/l02", zero, None, None, None, False),
        Rename(b"refs/heads/wt/one", b"refs/heads/wt2", None),
        Command("delete", b"refs/heads/p04", zero, None, None, None, False),
    ],
}


@pytest.fixture(scope="module", params=["files", "reftable"])
def nested_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt = request.param
    root = tmp_path_factory.mktemp(f"nested-crash-{fmt}")
    src = build_repo(root / "repo", fmt, "sha1", n_branches=8, worktree=False)
    git(src, "branch", "solo/one", "HEAD~1")
    git(src, "branch", "wt/one", "HEAD~1")
    git(src, "pack-refs", "--all")  # solo/one packed (its reflog stays); wt/one made loose below
    git(src, "update-ref", "-m", "loose again", "refs/heads/wt/one", "HEAD")
    git(src, "config", "worktree.useRelativePaths", "true")
    git(src, "worktree", "add", "-q", "wt", "wt/one")
    git(src, "config", "branch.main.remote", "origin")
    git(src, "config", "branch.wt/one.merge", "refs/heads/up")
    return fmt, src


def _reflog_bytes(repo: Path, fmt: str, name: bytes) -> bytes | None:
    if fmt == "files":
        p = repo / ".git" / "logs" / name.decode()
        return p.read_bytes() if p.is_file() else None
    out = git(repo, "reflog", "show", "--format=%H %gs", name.decode())
    return out or None


@pytest.mark.parametrize("batch", list(NESTED_BATCHES))
def test_nested_rename_crash_at_every_step(nested_base, tmp_path: Path, batch: str) -> None:
    """SIGKILLed before each step, then the next rename's recovery (``rename_journal.recover``): git refs verify
    passes, every ref is at its value before or after, each renamed ref is at its old name, its new one
    or both, at its value, with its reflog whole at a name it is at; every HEAD on a ref that exists; no
    journal or temp reflog left; every lock left is one verify reports."""
    from refscope.backend.update.rename_journal import recover

    fmt, src = nested_base
    head = git(src, "rev-parse", "HEAD").strip()
    items = NESTED_BATCHES[batch](head, b"0" * len(head))
    renames = [c for c in items if type(c) is Rename]
    oracle = copy_repo(src, tmp_path / "oracle")
    lines = b"".join(
        b"create %s %s\n" % (c.name, c.new) if c.verb == "create" else b"delete %s\n" % c.name
        for c in items
        if type(c) is not Rename
    )
    if lines:
        git(oracle, "update-ref", "--stdin", input=lines)
    for r in renames:
        git(oracle, "branch", "-m", r.old_name.decode()[11:], r.name.decode()[11:])
    steps: list[str] = []
    traced = copy_repo(src, tmp_path / "traced")
    crashpoint.arm(trace=steps)
    try:
        commit_batch(traced, items)
    finally:
        crashpoint.arm()
    assert for_each_ref(traced) == for_each_ref(oracle)
    assert heads(traced) == heads(oracle)
    assert (traced / ".git" / "config").read_bytes() == (oracle / ".git" / "config").read_bytes()
    before = {r[0]: r for r in for_each_ref(src)}
    after_all = {r[0]: r for r in for_each_ref(oracle)}
    old_logs = {r.old_name: _reflog_bytes(src, fmt, r.old_name) for r in renames}
    assert all(old_logs.values())
    configs = {(src / ".git" / "config").read_bytes(), (oracle / ".git" / "config").read_bytes()}
    for k in range(1, len(steps) + 1):
        repo = fast_copy(src, tmp_path / f"k{k}")
        status = run_armed_child(k, lambda repo=repo: commit_batch(repo, items))
        where = (k, steps[k - 1])
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (*where, status)
        journal = repo / ".git" / "logs" / "refs" / ".refscope-rename"
        if journal.exists():  # refscope verify names it until the next rename recovers
            found = verify(discover(str(repo), git_env()), crosscheck=False)
            assert any(f.file == str(journal) and f.severity == "warning" for f in found), where
        recover(discover(str(repo), git_env()))
        git(repo, "refs", "verify")
        now = {r[0]: r for r in for_each_ref(repo)}
        for name in set(before) | set(after_all) | set(now):
            assert now.get(name) in (before.get(name), after_all.get(name)), (*where, name)
        if fmt == "reftable":
            assert now in (before, after_all), where
        for r in renames:
            at = [n for n in (r.old_name, r.name) if n in now]
            assert at, (*where, r)  # never lost
            assert {now[n][1] for n in at} == {before[r.old_name][1]}, where
            old_log = old_logs[r.old_name]
            logs = {n: _reflog_bytes(repo, fmt, n) for n in at}
            if fmt == "files":
                assert any(v is not None and v.startswith(old_log) for v in logs.values()), (*where, logs)
                if at == [r.old_name]:  # not renamed: the reflog as it was (the rename's entry cut off)
                    assert logs[r.old_name] == old_log, where
            else:
                assert any(v is not None and v.endswith(old_log) for v in logs.values()), (*where, logs)
        main_head, wt_head = heads(repo)
        assert main_head in now, where
        if fmt == "files":
            assert wt_head in now, where
        assert (repo / ".git" / "config").read_bytes() in configs, where
        assert not list((repo / ".git").rglob(".refscope-*")), where
        locks, _others = leftover_files(repo)
        if locks:
            reported = {os.path.realpath(i.path) for i in stale_locks(discover(str(repo), git_env()))}
            assert {os.path.realpath(p) for p in locks} <= reported, where
