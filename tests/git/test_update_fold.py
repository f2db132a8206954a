"""A big reftable transaction folded with the whole stack: the merged table written in place of the stack.

When git's geometric auto-compaction would merge the transaction's new table at once with every table
below it (a big batch on a small stack: the seed's 50k creates into a fresh repository), the native engine
writes the merged table itself and swaps ``tables.list`` from the old tables to it in one rename. Checked
against plain ``git update-ref --stdin`` (which writes its table, then compacts): the very same table bytes,
refs and reflogs, ``git refs verify`` clean, nothing left behind; with auto-compaction off, or a table of
the stack locked by a compaction in flight, the engine writes its own table on top as git does; SIGKILLed
at every step, the stack is all old or all new and every lock left is reported.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from refscope.backend.engines import crashpoint
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.repo import discover
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction
from refscope.backend.verify import stale_locks

from tests.support.git import git_noauto
from tests.support.update import (
    copy_repo,
    fast_copy,
    for_each_ref,
    git,
    git_env,
    init_repo,
    leftover_files,
    leftovers,
    open_txn_store,
    reflogs,
    reftable_files,
    run_armed_child,
    use_git_identity,
)


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def small_stack(path: Path, hash_name: str) -> Path:
    """A reftable repository whose stack is a few small tables (auto-compaction off while it is built):
    branches with reflogs, an annotated tag, a symref, and a deletion table (tombstones, log deletions)."""
    init_repo(path, fmt="reftable", hash_name=hash_name)
    head = git(path, "rev-parse", "HEAD").strip()
    for i in range(3):
        git_noauto(path, "update-ref", "-m", f"step {i}", "refs/heads/doomed", head)
    git_noauto(path, "update-ref", "refs/heads/keep", head)
    git_noauto(path, "tag", "-a", "-m", "t", "v1")
    git_noauto(path, "symbolic-ref", "refs/heads/sym", "refs/heads/keep")
    git_noauto(path, "update-ref", "refs/heads/gone", head)
    git_noauto(path, "update-ref", "-d", "refs/heads/gone")
    return path


def big_batch(repo: Path, n: int) -> bytes:
    head = git(repo, "rev-parse", "HEAD").strip()
    tag = git(repo, "rev-parse", "refs/tags/v1").strip()
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"fold\n").strip()
    lines = [b"create refs/heads/b/%05d %s" % (i, head) for i in range(n)]  # reflogs
    lines += [b"create refs/tags/t-%d %s" % (i, blob) for i in range(n)]  # no reflogs
    lines += [
        b"create refs/tags/annotated %s" % tag,  # peeled
        b"delete refs/heads/doomed",  # tombstone and log deletions: dropped by the fold
        b"update HEAD %s" % head,  # HEAD's branch: HEAD's own log entry
        b"symref-create refs/heads/s2 refs/heads/keep",
        b"update refs/heads/sym %s" % head,  # through the symref
    ]
    return b"\n".join(lines) + b"\n"


def commit(repo: Path, data: bytes):
    store = open_txn_store(repo)
    txn = UpdateTransaction(store, allow_checked_out=True, snapshot=store.snapshot())
    parsed = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
    txn.queue(parsed.batches[0].commands)
    return txn.commit()


def table_names(repo: Path) -> list[str]:
    return (repo / ".git" / "reftable" / "tables.list").read_text().split()


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
def test_fold_writes_what_git_compacts_to(hash_name: str, tmp_path: Path) -> None:
    src = small_stack(tmp_path / "src", hash_name)
    before = table_names(src)
    assert len(before) >= 5
    data = big_batch(src, 600)
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    res = commit(ours, data)
    git(theirs, "update-ref", "--stdin", input=data)
    assert len(table_names(theirs)) == 1  # git compacted the whole stack right after its write
    assert not [p for p in res.phases if p.name == "auto-compaction"]  # folded: nothing left to compact
    assert reftable_files(ours) == reftable_files(theirs)
    assert for_each_ref(ours) == for_each_ref(theirs)
    assert reflogs(ours, "reftable", tmp_path / "m1") == reflogs(theirs, "reftable", tmp_path / "m2")
    git(ours, "refs", "verify")
    assert leftovers(ours) == []
    assert sorted(os.listdir(ours / ".git" / "reftable")) == sorted(["tables.list", *table_names(ours)])


def test_small_batch_on_a_big_table_is_not_folded(tmp_path: Path) -> None:
    src = init_repo(tmp_path / "src", fmt="reftable")
    head = git(src, "rev-parse", "HEAD").strip()
    git(
        src,
        "update-ref",
        "--stdin",
        input=b"".join(b"create refs/heads/x%04d %s\n" % (i, head) for i in range(800)),
    )
    git(src, "pack-refs")
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    data = b"create refs/heads/new %s\n" % head
    commit(ours, data)
    git(theirs, "update-ref", "--stdin", input=data)
    assert len(table_names(ours)) == 2
    assert reftable_files(ours) == reftable_files(theirs)


def test_no_fold_without_auto_compaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = small_stack(tmp_path / "src", "sha1")
    data = big_batch(src, 200)
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    monkeypatch.setenv("GIT_TEST_REFTABLE_AUTOCOMPACTION", "false")
    commit(ours, data)
    git_noauto(theirs, "update-ref", "--stdin", input=data)
    assert table_names(ours)[:-1] == table_names(src)
    assert reftable_files(ours) == reftable_files(theirs)


def test_locked_table_means_own_table_on_top(tmp_path: Path) -> None:
    """A table of the stack locked (a compaction in flight): git writes its table and its best-effort
    compaction merges only what it can lock; so does the engine, leaving the other's lock alone."""
    src = small_stack(tmp_path / "src", "sha1")
    data = big_batch(src, 200)
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    locked = table_names(src)[1] + ".lock"
    for repo in (ours, theirs):
        (repo / ".git" / "reftable" / locked).write_bytes(b"")
    res = commit(ours, data)
    git(theirs, "update-ref", "--stdin", input=data)
    assert reftable_files(ours) == reftable_files(theirs)
    assert table_names(ours)[:2] == table_names(src)[:2]
    assert [p for p in res.phases if p.name == "auto-compaction"]
    assert (ours / ".git" / "reftable" / locked).exists()
    assert for_each_ref(ours) == for_each_ref(theirs)


def test_fold_killed_at_every_step(tmp_path: Path) -> None:
    src = small_stack(tmp_path / "src", "sha1")
    data = big_batch(src, 150)
    oracle = copy_repo(src, tmp_path / "oracle")
    git(oracle, "update-ref", "--stdin", input=data)
    steps: list[str] = []
    traced = copy_repo(src, tmp_path / "traced")
    crashpoint.arm(trace=steps)
    try:
        commit(traced, data)
    finally:
        crashpoint.arm()
    assert reftable_files(traced) == reftable_files(oracle)
    assert any("compaction: lock" in s for s in steps), steps
    before, after = for_each_ref(src), for_each_ref(oracle)
    for k in range(1, len(steps) + 1):
        repo = fast_copy(src, tmp_path / f"k{k}")
        status = run_armed_child(k, lambda repo=repo: commit(repo, data))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, steps[k - 1], status)
        git(repo, "refs", "verify")
        assert for_each_ref(repo) in (before, after), (k, steps[k - 1])
        locks, _others = leftover_files(repo)
        if locks:
            reported = {os.path.realpath(i.path) for i in stale_locks(discover(str(repo), git_env()))}
            assert {os.path.realpath(p) for p in locks} <= reported, (k, steps[k - 1])
