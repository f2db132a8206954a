"""``refscope update``: the whole command, as a script uses it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.update import copy_repo, for_each_ref, git, git_binary, git_env, init_repo, leftovers

ROOT = Path(__file__).resolve().parents[1]


def refscope(repo: Path, *args: str, input: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refscope.app", "-C", str(repo), "update", *args],
        input=input,
        capture_output=True,
        env=git_env(),
    )


@pytest.fixture(params=["files", "reftable"])
def repo(request, tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "r", fmt=request.param)
    git(r, "branch", "topic")
    return r


@pytest.mark.parametrize("engine", ["native", "git"])
def test_json_report(repo: Path, engine: str) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    data = b"create refs/heads/a %s\nupdate refs/heads/topic %s %s\ndelete refs/heads/none\n" % (
        head,
        head,
        head,
    )
    proc = refscope(repo, "--engine", engine, "--json", "-m", "by cli", input=data)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["committed"] is True and out["engine"] == engine
    assert {"wall_ms", "cpu_ms", "syscalls", "phases"} <= set(out)
    assert out["syscalls"]["total"] > 0
    assert {"name": "refs/heads/a", "old": None, "new": head.decode()} in out["updates"]
    assert [r[0] for r in for_each_ref(repo)] == [b"refs/heads/a", b"refs/heads/main", b"refs/heads/topic"]
    assert git(repo, "reflog", "show", "--format=%gs", "refs/heads/a") == b"by cli\n"
    assert leftovers(repo) == []


def test_acks_and_nul_form(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    data = b"start\0create refs/heads/z\0%s\0prepare\0commit\0" % head
    other = copy_repo(repo, repo.parent / "g")
    proc = refscope(repo, "-z", "--stdin", input=data)
    assert proc.returncode == 0, proc.stderr
    theirs = subprocess.run(
        [git_binary(), "update-ref", "--stdin", "-z"],
        cwd=other,
        input=data,
        capture_output=True,
        env=git_env(),
    )
    assert theirs.returncode == 0
    assert proc.stdout == theirs.stdout == b"start: ok\nprepare: ok\ncommit: ok\n"
    assert b"refs/heads/z" in [r[0] for r in for_each_ref(repo)]


def test_refusal_is_one_line_and_changes_nothing(repo: Path) -> None:
    from tests.support.update import fingerprint

    head = git(repo, "rev-parse", "HEAD").strip()
    before = fingerprint(repo / ".git")
    proc = refscope(repo, input=b"create refs/heads/ok %s\ncreate refs/heads/topic %s\n" % (head, head))
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("cannot lock ref 'refs/heads/topic': reference already exists")
    assert fingerprint(repo / ".git") == before
    proc = refscope(repo, input=b"frobnicate\n")
    assert proc.returncode == 1 and proc.stderr.decode().strip().endswith("unknown command: frobnicate")


def test_checked_out_branch_is_protected(repo: Path) -> None:
    proc = refscope(repo, input=b"delete refs/heads/main\n")
    assert proc.returncode == 1
    assert "cannot delete branch 'main' used by worktree at" in proc.stderr.decode()
    proc = refscope(repo, "--allow-checked-out", input=b"delete refs/heads/main\n")
    assert proc.returncode == 0, proc.stderr


def test_usage(repo: Path) -> None:
    assert refscope(repo, "--bogus").returncode == 2
    proc = refscope(repo, "-m", "", input=b"")
    assert proc.returncode == 2 and b"Refusing to perform update with empty message." in proc.stderr
