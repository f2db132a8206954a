"""Reftable specifics (git's t0610): table locks leave tables uncompacted but the write succeeds, the new
table's update index is newest max + 1, and a damaged stack refuses the write with nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.txn import Transaction

from tests.gitutil import for_each_ref, git, init_repo, tree_bytes
from tests.test_txn_support import open_txn_store


def tables(repo: Path) -> list[str]:
    return (repo / ".git" / "reftable" / "tables.list").read_text().split()


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    git(repo, "config", "reftable.autoCompaction", "false")
    for i in range(4):
        git(repo, "update-ref", f"refs/heads/t{i}", "HEAD")
    git(repo, "config", "--unset", "reftable.autoCompaction")
    return repo


def delete(repo: Path, *names: bytes):
    txn = Transaction(open_txn_store(repo))
    for n in names:
        txn.delete(n)
    return txn.commit()


def test_locked_tables_are_left_alone(stack: Path) -> None:
    before = tables(stack)
    for name in before:
        (stack / ".git" / "reftable" / (name + ".lock")).write_bytes(b"")
    delete(stack, b"refs/heads/t1")
    after = tables(stack)
    assert after[: len(before)] == before and len(after) == len(before) + 1  # written, not compacted
    new = after[-1]
    newest_max = int(before[-1].split("-")[1], 16)
    assert new.startswith(f"0x{newest_max + 1:012x}-0x{newest_max + 1:012x}-")
    assert b"refs/heads/t1" not in [r[0] for r in for_each_ref(stack)]
    for name in before:
        (stack / ".git" / "reftable" / (name + ".lock")).unlink()
    delete(stack, b"refs/heads/t2")  # unlocked again: auto-compaction merges the stack
    assert len(tables(stack)) < len(after) + 1
    git(stack, "refs", "verify")


@pytest.mark.parametrize("damage", ["garbage-list", "truncated-table", "missing-table"])
def test_damaged_stack_refuses(stack: Path, damage: str) -> None:
    rt = stack / ".git" / "reftable"
    if damage == "garbage-list":
        (rt / "tables.list").write_bytes(b"garbage\n")
    elif damage == "truncated-table":
        newest = rt / tables(stack)[-1]
        newest.write_bytes(newest.read_bytes()[:40])
    else:
        (rt / tables(stack)[-1]).unlink()
    before = tree_bytes(stack)
    with pytest.raises(TransactionRefused):
        store = open_txn_store(stack)
        txn = Transaction(store, snapshot=None)
        txn.delete(b"refs/heads/t0")
        txn.commit()
    assert tree_bytes(stack) == before


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_empty_transaction_touches_nothing(tmp_path: Path, fmt: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt=fmt)
    before = tree_bytes(repo)
    result = Transaction(open_txn_store(repo)).commit()
    assert result.committed and result.deleted == []
    assert tree_bytes(repo) == before
