"""Reftable specifics (git's t0610): table locks leave tables uncompacted but the write succeeds, the new
table's update index is newest max + 1, and a damaged stack refuses the write with nothing changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from refscope.backend.errors import InvalidRefName, TransactionRefused
from refscope.backend.txn import Transaction

from tests.support.git import create_refs, for_each_ref, git, git_binary, git_env, init_repo, tree_bytes
from tests.support.txn import open_txn_store


def tables(repo: Path) -> list[str]:
    return (repo / ".git" / "reftable" / "tables.list").read_text().split()


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    for i in range(4):
        git(repo, "update-ref", f"refs/heads/t{i}", "HEAD")
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

    def refs_state() -> dict:  # git's detached auto-maintenance may still be busy under objects/
        return {k: v for k, v in tree_bytes(repo).items() if not k.startswith(".git/objects/")}

    before = refs_state()
    result = Transaction(open_txn_store(repo)).commit()
    assert result.committed and result.deleted == []
    assert refs_state() == before


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """200 branches (more than one batched read) and a symref to the checked-out branch among them."""
    repo = init_repo(tmp_path / "many", fmt="reftable")
    create_refs(repo, [b"refs/heads/m%03d" % i for i in range(200)])
    git(repo, "symbolic-ref", "refs/heads/m100x", git(repo, "symbolic-ref", "HEAD").strip().decode())
    return repo


def test_delete_many_refuses_like_delete(many: Path) -> None:
    """The batched guard read (one pass) refuses the same name with the same words as one-by-one deletes."""
    names = [b"refs/heads/m%03d" % i for i in range(150)] + [b"refs/heads/m100x", b"refs/heads/zz"]
    errors = []
    for batched in (False, True):
        txn = Transaction(open_txn_store(many))
        with pytest.raises(TransactionRefused) as info:
            if batched:
                txn.delete_many([(n, None) for n in names])
            else:
                for n in names:
                    txn.delete(n)
        errors.append(info.value.what)
        assert len(txn.deletions) == 150
    assert errors[0] == errors[1] and "cannot delete branch" in errors[0]


def test_delete_many_reuses_records_and_checks_old_values(many: Path) -> None:
    """Records read before the lock are reused when the stack is unchanged; stale values still refuse and a
    stack changed meanwhile is read again under the lock."""
    oid = git(many, "rev-parse", "HEAD").strip()
    names = [b"refs/heads/m%03d" % i for i in range(0, 200, 2)]
    txn = Transaction(open_txn_store(many))
    txn.delete_many([(n, b"1" * 40 if n == names[-1] else oid) for n in names])
    before = tree_bytes(many)
    with pytest.raises(TransactionRefused, match="but expected 1111"):
        txn.commit()
    assert tree_bytes(many) == before
    txn = Transaction(open_txn_store(many))
    txn.delete_many([(n, oid) for n in names])
    git(many, "update-ref", "-d", "refs/heads/m010")  # a new table after the snapshot: read again
    with pytest.raises(TransactionRefused, match="m010"):
        txn.commit()
    txn = Transaction(open_txn_store(many))
    txn.delete_many([(n, oid) for n in names if n != b"refs/heads/m010"])
    assert txn.commit().deleted == [n for n in names if n != b"refs/heads/m010"]
    left = {r[0] for r in for_each_ref(many)}
    assert not left & set(names) and b"refs/heads/m001" in left


@pytest.mark.parametrize("pick", ["range", "spread"])
def test_batched_reads_write_gits_table(many: Path, tmp_path: Path, pick: str) -> None:
    """More names than the per-name seek limit: the sorted passes (ref index and log index seeks, restart
    intervals skipped) find the same records as git, so the new table is git's byte for byte."""
    from refscope.backend.formats.reftable.table import Table

    from tests.support.git import copy_repo
    from tests.support.txn import git_delete, reftable_files

    for i in range(0, 200, 3):  # a second reflog entry for a third of them, in a newer table
        git(many, "update-ref", "-m", "again", f"refs/heads/m{i:03d}", "HEAD")
    git(many, "pack-refs", "--all")
    t = Table.open(str(many / ".git" / "reftable" / tables(many)[-1]))
    assert t.footer.log_index_position > 0  # the log index seek runs
    names = [b"refs/heads/m%03d" % i for i in (range(40, 140) if pick == "range" else range(1, 200, 2))]
    items = [(n, None) for n in names]
    ours = copy_repo(many, tmp_path / "ours")
    theirs = copy_repo(many, tmp_path / "theirs")
    assert git_delete(theirs, items).returncode == 0
    txn = Transaction(open_txn_store(ours))
    txn.delete_many(items)
    assert txn.commit().deleted == names
    assert reftable_files(ours) == reftable_files(theirs)


def test_delete_many_refuses_a_bad_name_like_delete(many: Path) -> None:
    """Names are checked for the whole batch at once; a bad one still fails as the one-by-one loop fails:
    same words, at the same item (every earlier deletion queued, nothing after it)."""
    names = [b"refs/heads/m%03d" % i for i in range(120)]
    for bad in (b"refs/heads/a..b", b"refs/heads/x.lock", b"refs/heads/\x01", b"refs//heads/y", b"HEAD~"):
        items = [(n, None) for n in names[:70]] + [(bad, None)] + [(n, None) for n in names[70:]]
        results = []
        for batched in (False, True):
            txn = Transaction(open_txn_store(many))
            with pytest.raises(InvalidRefName) as info:
                if batched:
                    txn.delete_many(items)
                else:
                    for n, o in items:
                        txn.delete(n, o)
            results.append((info.value.what, len(txn.deletions)))
        assert results[0] == results[1] == (f"refusing to update ref with bad name '{bad.decode()}'", 70), bad


def _count_log_scans(monkeypatch) -> list[int]:
    """Calls of StackWriter.log_indexes (the reflog scan), recorded as 1 inside the commit's lock, 0 before it."""
    from refscope.backend.engines import stack_io

    calls: list[int] = []
    orig = stack_io.StackWriter.log_indexes

    def counted(self, names):
        calls.append(1 if self.lock_fd >= 0 else 0)
        return orig(self, names)

    monkeypatch.setattr(stack_io.StackWriter, "log_indexes", counted)
    return calls


@pytest.mark.parametrize("batched", [False, True])
def test_reads_happen_before_the_lock(many: Path, tmp_path: Path, monkeypatch, batched: bool) -> None:
    """The records and the reflog entries are read in a phase of their own before tables.list is locked;
    under the lock, an unchanged stack is not scanned again, and the new table is still git's."""
    from tests.support.git import copy_repo
    from tests.support.txn import git_delete, reftable_files

    names = [b"refs/heads/m%03d" % i for i in range(0, 200, 2)]
    ours = copy_repo(many, tmp_path / "ours")
    theirs = copy_repo(many, tmp_path / "theirs")
    assert git_delete(theirs, [(n, None) for n in names]).returncode == 0
    calls = _count_log_scans(monkeypatch)
    txn = Transaction(open_txn_store(ours), allow_checked_out=True)
    if batched:
        txn.delete_many([(n, None) for n in names])
    else:
        for n in names:
            txn.delete(n)
    res = txn.commit()
    assert calls == [0]
    assert [p.name for p in res.phases] == ["snapshot", "read", "commit", "auto-compaction"]
    assert reftable_files(ours) == reftable_files(theirs)  # auto-compacted as git's too


def test_stack_changed_after_the_reads_is_read_again(many: Path, tmp_path: Path, monkeypatch) -> None:
    """Another writer adds a table (a new reflog entry of a ref being deleted) between the read phase and
    the lock: the commit reads the stack again under the lock, and every entry of the reflog goes, as when
    git deletes after that writer."""
    from refscope.backend.engines import reftable as engine

    from tests.support.git import copy_repo
    from tests.support.txn import git_delete, reftable_files

    names = [b"refs/heads/m%03d" % i for i in range(0, 200, 2)]
    other = git(many, "commit-tree", "HEAD^{tree}", "-m", "other").strip().decode()
    theirs = copy_repo(many, tmp_path / "theirs")
    git(theirs, "update-ref", "-m", "meanwhile", "refs/heads/m010", other)
    assert git_delete(theirs, [(n, None) for n in names]).returncode == 0
    calls = _count_log_scans(monkeypatch)
    orig = engine.read_ahead

    def then_git_writes(*args, **kwargs):
        got = orig(*args, **kwargs)
        if len(args) > 3:  # after the log read
            git(many, "update-ref", "-m", "meanwhile", "refs/heads/m010", other)
        return got

    monkeypatch.setattr(engine, "read_ahead", then_git_writes)
    txn = Transaction(open_txn_store(many), allow_checked_out=True)
    for n in names:
        txn.delete(n)
    txn.commit()
    assert calls == [0, 1]
    assert for_each_ref(many) == for_each_ref(theirs)
    assert reftable_files(many) == reftable_files(theirs)  # m010's two reflog entries both deleted
    assert (
        subprocess.run(
            [git_binary(), "reflog", "exists", "refs/heads/m010"], cwd=many, env=git_env()
        ).returncode
        == 1
    )


@pytest.mark.parametrize("auto", [None, "false"])
def test_auto_compaction_follows_gits_switch(
    stack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, auto: str | None
) -> None:
    """git auto-compacts after every write (it has no config key for that); only its test variable
    GIT_TEST_REFTABLE_AUTOCOMPACTION turns it off, for refscope's engine as for git."""
    from tests.support.git import copy_repo
    from tests.support.txn import reftable_files

    env = {**git_env(), **({"GIT_TEST_REFTABLE_AUTOCOMPACTION": auto} if auto else {})}
    for i in range(3):  # tables git leaves uncompacted (with the switch off) or folds together
        subprocess.run(
            [git_binary(), "update-ref", f"refs/heads/u{i}", "HEAD"], cwd=stack, env=env, check=True
        )
    theirs = copy_repo(stack, tmp_path / "theirs")
    subprocess.run([git_binary(), "update-ref", "-d", "refs/heads/t1"], cwd=theirs, env=env, check=True)
    if auto:
        monkeypatch.setenv("GIT_TEST_REFTABLE_AUTOCOMPACTION", auto)
    txn = Transaction(open_txn_store(stack))
    txn.delete(b"refs/heads/t1")
    res = txn.commit()
    assert ("auto-compaction" in [p.name for p in res.phases]) == (auto is None)
    assert [n for n, _b in reftable_files(stack)] == [n for n, _b in reftable_files(theirs)]
    if auto:
        assert len(tables(stack)) > 1  # nothing folded, on either side
