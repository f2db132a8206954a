"""``refscope delete``: exit codes (0 committed, 1 refused with nothing changed, 2 usage), ``--stdin``,
``--json`` (DESIGN.md's shape), both engines; and the explicit reftable compaction against git's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from refscope.backend.engines.compaction import compact

from tests.support.cli import refscope, refscope_delete
from tests.support.git import copy_repo, create_refs, for_each_ref, git, git_env, init_repo, tree_bytes
from tests.support.txn import leftovers, open_txn_store, reflogs


@pytest.fixture
def cli_repo(tmp_path: Path, ref_format: str) -> Path:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    create_refs(repo, [b"refs/heads/b%d" % i for i in range(5)])
    git(repo, "tag", "-a", "-m", "t", "v1")
    if ref_format == "files":
        git(repo, "pack-refs", "--all")
    return repo


@pytest.mark.parametrize("engine", ["native", "git"])
def test_delete_json(cli_repo: Path, engine: str) -> None:
    oid = git(cli_repo, "rev-parse", "refs/heads/b1").strip()
    proc = refscope_delete(
        cli_repo, "--engine", engine, "--json", "--stdin", "refs/heads/b0", stdin=b"refs/heads/b1 %s\n" % oid
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {
        "committed",
        "engine",
        "deleted",
        "missing",
        "wall_ms",
        "cpu_ms",
        "syscalls",
        "phases",
    }
    assert out["committed"] is True and out["engine"] == engine and out["missing"] == []
    assert out["deleted"] == ["refs/heads/b0", "refs/heads/b1"]
    assert set(out["syscalls"]) == {"total", "by_name", "source"}
    assert out["syscalls"]["total"] > 0
    check = []  # the native engines' phase before the lock: checking packed-refs, reading the stack
    if engine == "native":
        check = ["check packed-refs"] if (cli_repo / ".git" / "packed-refs").exists() else ["read"]
    assert [p["name"] for p in out["phases"]][: 3 + len(check)] == ["open", "snapshot", *check, "commit"]
    names = [r[0] for r in for_each_ref(cli_repo)]
    assert b"refs/heads/b0" not in names and b"refs/heads/b1" not in names
    assert leftovers(cli_repo) == []


def test_refused_changes_nothing(cli_repo: Path) -> None:
    before = tree_bytes(cli_repo)
    wrong = "1" * 40
    proc = refscope_delete(cli_repo, "--stdin", "refs/heads/b2", stdin=f"refs/heads/b3 {wrong}\n".encode())
    assert proc.returncode == 1
    oid = git(cli_repo, "rev-parse", "refs/heads/b3").strip().decode()
    assert proc.stderr.decode().splitlines() == [
        f"refscope: {proc.stderr.decode().split(': ', 2)[1]}: cannot lock ref 'refs/heads/b3': is at {oid} but expected {wrong}"
    ]
    assert proc.stdout == b""
    assert tree_bytes(cli_repo) == before
    proc = refscope_delete(cli_repo, "--json", "refs/heads/bad..name")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["committed"] is False
    assert "refusing to update ref with bad name 'refs/heads/bad..name'" in proc.stderr.decode()
    proc = refscope_delete(cli_repo, "refs/heads/main")  # checked out
    assert proc.returncode == 1 and "cannot delete branch 'main' used by worktree at" in proc.stderr.decode()
    assert tree_bytes(cli_repo) == before


@pytest.mark.parametrize(
    "args", [[], ["--engine", "bogus"], ["--frobnicate", "refs/heads/b0"], ["--engine"], ["-C"]]
)
def test_usage_errors(cli_repo: Path, args: list[str]) -> None:
    before = tree_bytes(cli_repo)
    proc = refscope("delete", *args, cwd=cli_repo)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("usage: refscope delete")
    assert tree_bytes(cli_repo) == before


def test_stdin_usage_error(cli_repo: Path) -> None:
    proc = refscope_delete(cli_repo, "--stdin", stdin=b"refs/heads/b0 a b\n")
    assert proc.returncode == 2


# -- explicit compaction ---------------------------------------------------------------------------------
def test_explicit_compaction_matches_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in git_env().items():
        if key.startswith(("GIT_COMMITTER_", "GIT_CONFIG_")):
            monkeypatch.setenv(key, value)
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    for i in range(6):
        git(repo, "update-ref", f"refs/heads/c{i}", "HEAD")
    git(repo, "update-ref", "-d", "refs/heads/c2")
    theirs = copy_repo(repo, tmp_path / "theirs")
    ours = repo
    tables = (ours / ".git" / "reftable" / "tables.list").read_text().split()
    assert len(tables) >= 3
    report = compact(open_txn_store(ours), (0, len(tables)))
    assert report.syscalls_total > 0
    git(theirs, "pack-refs")
    ours_list = (ours / ".git" / "reftable" / "tables.list").read_text().split()
    theirs_list = (theirs / ".git" / "reftable" / "tables.list").read_text().split()
    assert len(ours_list) == len(theirs_list) == 1
    assert ours_list[0].rsplit("-", 1)[0] == theirs_list[0].rsplit("-", 1)[0]  # same update-index range
    assert (ours / ".git" / "reftable" / ours_list[0]).read_bytes() == (
        theirs / ".git" / "reftable" / theirs_list[0]
    ).read_bytes()
    assert sorted(os.listdir(ours / ".git" / "reftable")) == sorted(["tables.list", ours_list[0]])
    assert for_each_ref(ours) == for_each_ref(theirs)
    assert reflogs(ours, "reftable", tmp_path / "a") == reflogs(theirs, "reftable", tmp_path / "b")
    git(ours, "refs", "verify")


def test_geometric_compaction_of_a_segment(tmp_path: Path) -> None:
    """compact(store) with no segment follows git's geometric suggestion; tombstones stay when the
    segment does not start at the base table."""
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    create_refs(repo, [b"refs/heads/big%03d" % i for i in range(300)])
    git(repo, "pack-refs")
    for i in range(3):
        git(repo, "update-ref", "-d", f"refs/heads/big{i:03d}")
    before = for_each_ref(repo)
    compact(open_txn_store(repo))
    names = (repo / ".git" / "reftable" / "tables.list").read_text().split()
    assert len(names) == 2  # the big base table untouched, the three small ones merged
    assert for_each_ref(repo) == before
    git(repo, "refs", "verify")


@pytest.mark.parametrize("with_symref", [False, True])
def test_big_reftable_delete_reads_logs_on_the_side(tmp_path: Path, with_symref: bool) -> None:
    """From 1,000 names the CLI reads the reflog entries in a forked child while it checks the names: the
    repository ends exactly as after git's own transaction (a symref among the names, whose target's log
    the child did not read, is read in-process)."""
    from tests.support.git import copy_repo
    from tests.support.txn import git_delete, reftable_files

    repo = init_repo(tmp_path / "repo", fmt="reftable")
    oid = create_refs(repo, [b"refs/heads/n%04d" % i for i in range(1500)])
    git(repo, "update-ref", "-m", "second", "refs/heads/n0003", oid)
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/n1499")
    names = [b"refs/heads/n%04d" % i for i in range(0, 1500, 1)][:1200]
    if with_symref:
        names.append(b"refs/heads/alias")
    theirs = copy_repo(repo, tmp_path / "theirs")
    assert git_delete(theirs, [(n, None) for n in names]).returncode == 0
    proc = refscope_delete(repo, "--json", "--stdin", stdin=b"".join(n + b"\n" for n in names))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [p["name"] for p in out["phases"]][:4] == ["open", "snapshot", "read", "commit"]
    assert for_each_ref(repo) == for_each_ref(theirs)
    assert reftable_files(repo) == reftable_files(theirs)
    assert leftovers(repo) == []


def test_side_reads_reach_the_transaction(tmp_path: Path) -> None:
    """The forked child's reflog reads arrive in the transaction, equal to reading them in-process."""
    from refscope.app.cmd_delete import _SideReads
    from refscope.backend.engines.reftable import read_ahead
    from refscope.backend.txn import Transaction

    from tests.support.txn import open_txn_store

    repo = init_repo(tmp_path / "repo", fmt="reftable")
    create_refs(repo, [b"refs/heads/s%03d" % i for i in range(300)])
    other = git(repo, "commit-tree", "HEAD^{tree}", "-m", "other").strip()
    git(repo, "update-ref", "-m", "again", "refs/heads/s006", other.decode())
    names = [b"refs/heads/s%03d" % i for i in range(0, 300, 3)]
    txn = Transaction(open_txn_store(repo))
    side = _SideReads(txn, names)
    assert side.child is not None  # forked
    side.finish()
    here = read_ahead(txn.snapshot, [], None, names)
    assert txn._known.logged == frozenset(names) == here.logged
    assert txn._known.logs == here.logs and len(here.logs[b"refs/heads/s006"]) == 2
