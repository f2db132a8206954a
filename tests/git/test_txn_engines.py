"""Differential tests: each engine against plain ``git update-ref --stdin`` on copies of one repository.

Random batches over generated repositories (files and reftable, SHA-1 and SHA-256; packed-only, loose-only and
loose-over-packed refs, annotated tags, reflogs, a symref, HEAD's branch, a linked worktree) must leave the same
``for-each-ref`` output and the same reflogs as git, pass ``git refs verify`` and ``git fsck``, and leave no
lock, ``.new`` or temp file. Refusals must carry git's own message and change no byte.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from refscope.backend.errors import StaleValue, TransactionRefused
from refscope.backend.formats.reftable import merged
from refscope.backend.txn import Transaction

from tests.support.git import copy_repo, for_each_ref, git, tree_bytes, use_git_identity
from tests.support.txn import (
    build_repo,
    check_clean,
    files_layout,
    git_delete,
    leftovers,
    open_txn_store,
    reflogs,
    reftable_files,
    state,
)

CASES = [("files", "sha1"), ("files", "sha256"), ("reftable", "sha1"), ("reftable", "sha256")]


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native engines write reflog entries with the same identity and date git gets."""
    use_git_identity(monkeypatch)


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{h}" for f, h in CASES])
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Path]:
    fmt, hash_name = request.param
    root = tmp_path_factory.mktemp(f"{fmt}-{hash_name}")
    return fmt, hash_name, build_repo(root / "repo", fmt, hash_name)


def random_batch(rng: random.Random, repo: Path) -> list[tuple[bytes, bytes | None]]:
    refs = [r for r in for_each_ref(repo) if not r[3]]
    pick = rng.sample(refs, rng.randint(1, 9))
    names = {r[0] for r in pick}
    items = [(name, oid if rng.random() < 0.5 else None) for name, oid, _p, _t in pick]
    if rng.random() < 0.5:
        items.append((b"refs/heads/does-not-exist-%d" % rng.randint(0, 99), None))
    if rng.random() < 0.5 and b"refs/heads/p01" not in names:
        items.append((b"refs/heads/sym", None))  # deletes through the symref: p01 goes, sym logs it
    if rng.random() < 0.4 and b"refs/heads/main" not in names:
        items.append((b"refs/heads/main", None))  # HEAD's branch: HEAD's reflog gets an entry
    rng.shuffle(items)
    return items


def run_native(repo: Path, items, engine: str = "native", no_deref: bool = False):
    store = open_txn_store(repo)
    txn = Transaction(store, engine, no_deref=no_deref, allow_checked_out=True)
    for name, old in items:
        txn.delete(name, old)
    return txn.commit()


def assert_same(fmt: str, ours: Path, theirs: Path, scratch: Path) -> None:
    assert state(ours) == state(theirs)
    if fmt == "reftable":  # the very same tables, byte for byte (auto-compaction included)
        assert reftable_files(ours) == reftable_files(theirs)
    else:  # the same packed-refs bytes, the same loose files, reflogs and directories
        assert files_layout(ours) == files_layout(theirs)
    assert reflogs(ours, fmt, scratch / "a") == reflogs(theirs, fmt, scratch / "b")
    assert leftovers(ours) == []
    check_clean(ours, theirs)


@pytest.mark.parametrize(("engine", "seed"), [("native", 1), ("native", 2), ("native", 3), ("git", 4)])
def test_random_batches_match_git(base, engine: str, seed: int, tmp_path: Path, monkeypatch) -> None:
    fmt, hash_name, src = base
    if seed == 3:  # the batched (key-only scan) lookups of the reftable engine, not the per-name seeks
        monkeypatch.setattr(merged, "SEEK_LIMIT", 0)
    rng = random.Random(f"{fmt}{hash_name}{seed}")
    items = random_batch(rng, src)
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    proc = git_delete(theirs, items)
    assert proc.returncode == 0, proc.stderr
    result = run_native(ours, items, engine)
    assert result.committed
    assert result.report.syscalls_total > 0
    assert_same(fmt, ours, theirs, tmp_path)
    if engine == "native":
        gone = {n for n, _o in items}
        assert set(result.deleted) <= gone | {b"refs/heads/p01"}


@pytest.mark.parametrize("seek_limit", [64, 0])
def test_all_refs_of_a_kind(base, tmp_path: Path, seek_limit: int, monkeypatch) -> None:
    """Every packed ref, every loose one and every tag in one transaction (files: many splices)."""
    fmt, _hash, src = base
    monkeypatch.setattr(merged, "SEEK_LIMIT", seek_limit)
    refs = [r for r in for_each_ref(src) if not r[3] and r[0] != b"refs/heads/wt-branch"]
    items = [(name, oid) for name, oid, _p, _t in refs]
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    assert git_delete(theirs, items).returncode == 0
    run_native(ours, items)
    assert_same(fmt, ours, theirs, tmp_path)
    assert [r[0] for r in for_each_ref(ours)] == [b"refs/heads/wt-branch"]


def test_from_linked_worktree(base, tmp_path: Path) -> None:
    """Per-worktree refs live in the worktree's git dir (files) or stack (reftable)."""
    fmt, _hash, src = base
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    items = [(b"refs/bisect/bad", None), (b"refs/heads/l03", None), (b"refs/heads/p04", None)]
    assert git_delete(theirs / "wt", items).returncode == 0
    run_native(ours / "wt", items)
    assert_same(fmt, ours, theirs, tmp_path)


def test_no_deref_deletes_the_symref_itself(base, tmp_path: Path) -> None:
    fmt, _hash, src = base
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    items = [(b"refs/heads/sym", None), (b"refs/heads/p05", None)]
    assert git_delete(theirs, items, no_deref=True).returncode == 0
    run_native(ours, items, no_deref=True)
    assert_same(fmt, ours, theirs, tmp_path)


@pytest.mark.parametrize("kind", ["stale", "missing", "stale-through-symref"])
def test_refusal_matches_git_and_changes_nothing(base, kind: str, tmp_path: Path) -> None:
    fmt, hash_name, src = base
    refs = {r[0]: r[1] for r in for_each_ref(src)}
    wrong = b"1" * (40 if hash_name == "sha1" else 64)
    items = [(b"refs/heads/l01", refs[b"refs/heads/l01"]), (b"refs/tags/v1", None)]
    if kind == "stale":
        items.append((b"refs/heads/p03", wrong))  # p03 is loose over packed
    elif kind == "missing":
        items.append((b"refs/heads/nope", wrong))
    else:
        items.append((b"refs/heads/sym", wrong))
    ours = copy_repo(src, tmp_path / "ours")
    before = tree_bytes(ours)
    proc = git_delete(copy_repo(src, tmp_path / "theirs"), items)
    assert proc.returncode != 0
    git_message = proc.stderr.decode().splitlines()[0].removeprefix("fatal: ")
    with pytest.raises(StaleValue) as info:
        run_native(ours, items)
    assert info.value.what == git_message
    assert tree_bytes(ours) == before
    # the git engine maps git's refusal to the same typed error and text
    with pytest.raises(StaleValue) as info:
        run_native(ours, items, engine="git")
    assert info.value.what == git_message
    assert tree_bytes(ours) == before


def test_validation_is_immediate(base, tmp_path: Path) -> None:
    from refscope.backend.errors import InvalidRefName

    fmt, _hash, src = base
    ours = copy_repo(src, tmp_path / "ours")
    txn = Transaction(open_txn_store(ours))
    with pytest.raises(InvalidRefName, match="refusing to update ref with bad name 'refs/heads/a..b'"):
        txn.delete(b"refs/heads/a..b")
    txn.delete(b"refs/heads/p02")
    with pytest.raises(TransactionRefused, match="multiple updates for ref 'refs/heads/p02' not allowed"):
        txn.delete(b"refs/heads/p02")
    # a branch checked out in any worktree is protected unless explicitly allowed
    with pytest.raises(TransactionRefused, match="cannot delete branch 'main' used by worktree at"):
        txn.delete(b"refs/heads/main")
    with pytest.raises(TransactionRefused, match="cannot delete branch 'wt-branch' used by worktree at"):
        txn.delete(b"refs/heads/wt-branch")
    with pytest.raises(TransactionRefused, match="cannot delete branch 'main'"):
        txn.delete(b"HEAD")
    with pytest.raises(TransactionRefused, match="zero <old-oid>"):
        txn.delete(b"refs/heads/p03", b"0" * (40 if _hash == "sha1" else 64))
    assert [d.name for d in txn.deletions] == [b"refs/heads/p02"]


def test_git_rejects_nothing_we_accept_on_empty_batch(base, tmp_path: Path) -> None:
    """Deleting only missing refs is a no-op for both: nothing written, nothing left behind."""
    fmt, _hash, src = base
    ours = copy_repo(src, tmp_path / "ours")
    before = tree_bytes(ours)
    result = run_native(ours, [(b"refs/heads/none-1", None), (b"refs/heads/none/2", None)])
    assert result.deleted == []
    assert tree_bytes(ours) == before
    git(ours, "refs", "verify")


def test_delete_through_head(base, tmp_path: Path) -> None:
    """``delete HEAD`` deletes HEAD's branch; HEAD keeps pointing at it and logs the deletion."""
    fmt, _hash, src = base
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    items = [(b"HEAD", None), (b"refs/heads/p06", None)]
    assert git_delete(theirs, items).returncode == 0
    result = run_native(ours, items)
    assert sorted(result.deleted) == [b"refs/heads/main", b"refs/heads/p06"]
    assert_same(fmt, ours, theirs, tmp_path)
