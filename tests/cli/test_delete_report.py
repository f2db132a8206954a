"""``refscope delete`` says what it did not find (git deletes a missing ref silently) and, for a short name
git refuses, which full name was meant; both engines, both formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import refscope_delete
from tests.support.git import create_refs, for_each_ref, git, init_repo, tree_bytes


@pytest.fixture
def repo5(tmp_path: Path, ref_format: str) -> Path:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    create_refs(repo, [b"refs/heads/b%d" % i for i in range(5)])
    git(repo, "tag", "v1")
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/b4")
    if ref_format == "files":
        git(repo, "pack-refs", "--all")
    return repo


@pytest.mark.parametrize("engine", ["native", "git"])
def test_missing_refs_are_reported(repo5: Path, engine: str) -> None:
    proc = refscope_delete(repo5, "--engine", engine, "refs/heads/b0", "refs/heads/nope", "refs/heads/alias")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert lines[0].startswith(f"refscope delete: 2 deleted, 1 not found ({engine}); commit ")
    assert lines[1:] == ["refscope delete: not found: refs/heads/nope"]  # alias deleted b4: not missing
    names = {r[0] for r in for_each_ref(repo5)}
    assert b"refs/heads/b0" not in names and b"refs/heads/b4" not in names
    proc = refscope_delete(
        repo5,
        "--engine",
        engine,
        "--json",
        "refs/heads/b1",
        "refs/heads/gone",
        b"refs/x\xff".decode("utf-8", "surrogateescape"),
    )
    out = json.loads(proc.stdout)
    assert out["deleted"] == ["refs/heads/b1"]
    assert out["missing"] == ["refs/heads/gone", "refs/x\ufffd"]
    assert out["missing_b64"] == [None, "cmVmcy94/w=="]


def test_many_missing_are_counted_not_all_listed(repo5: Path) -> None:
    stdin = b"".join(b"refs/heads/none%02d\n" % i for i in range(25))
    proc = refscope_delete(repo5, "--stdin", stdin=stdin)
    assert proc.returncode == 0
    lines = proc.stderr.decode().splitlines()
    assert lines[0].startswith("refscope delete: 0 deleted, 25 not found (native)")
    assert lines[1:11] == [f"refscope delete: not found: refs/heads/none{i:02d}" for i in range(10)]
    assert lines[11:] == ["refscope delete: ... and 15 more not found"]


@pytest.mark.parametrize(
    ("short", "meant"), [("b2", "refs/heads/b2"), ("v1", "refs/tags/v1"), ("heads/b3", "refs/heads/b3")]
)
def test_short_name_suggests_the_full_one(repo5: Path, short: str, meant: str) -> None:
    before = tree_bytes(repo5 / ".git")
    proc = refscope_delete(repo5, short)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode() == (
        f"refscope: {repo5 / '.git'}: refusing to update ref with bad name '{short}'; did you mean '{meant}'?\n"
    )
    assert tree_bytes(repo5 / ".git") == before


def test_short_name_without_a_match_gets_git_s_line(repo5: Path) -> None:
    proc = refscope_delete(repo5, "nothing")
    assert proc.returncode == 1
    assert (
        proc.stderr.decode()
        == f"refscope: {repo5 / '.git'}: refusing to update ref with bad name 'nothing'\n"
    )
