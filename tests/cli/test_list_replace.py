"""Replace refs: git for-each-ref reads ``refs/replace/<oid>``'s object in place of ``<oid>`` for every
atom, filter and walk. refscope's object reader does not follow them, so where git would read a replaced
object refscope refuses in one line instead of answering from the originals; with
``GIT_NO_REPLACE_OBJECTS`` (or ``core.useReplaceRefs=false``) git reads the originals, and so the output
is git's again, as it is for a format that reads no object."""

from __future__ import annotations

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, run_git

CASES = [
    ["--format=%(refname) %(subject) %(objectsize)"],
    ["--format=%(refname)", "--sort=-committerdate"],
    ["--format=%(refname)", "--merged=side"],
    ["--format=%(refname)", "--points-at=main"],
    ["--format=%(refname) %(ahead-behind:side)"],
]


@pytest.fixture(params=["files", "reftable"])
def repo(request, tmp_path):
    repo = init_repo(tmp_path / "r", request.param)
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "branch", "side", "main~1")
    git(repo, "replace", git(repo, "rev-parse", "main").decode().strip(), "side")
    return repo


def test_replaced_objects_are_refused_in_one_line(repo) -> None:
    for args in CASES:
        ours = refscope("list", *args, cwd=repo)
        assert (ours.returncode, ours.stdout) == (1, b""), args
        assert ours.stderr.startswith(b"refscope: replace refs (refs/replace/*) are not supported")
        assert ours.stderr.count(b"\n") == 1


@pytest.mark.parametrize("off", [{"GIT_NO_REPLACE_OBJECTS": "1"}, "config"], ids=["env", "config"])
def test_without_replacements_the_output_is_gits(repo, off) -> None:
    env = git_env()
    if off == "config":
        git(repo, "config", "core.useReplaceRefs", "false")
    else:
        env.update(off)
    for args in CASES:
        theirs = run_git(repo, "for-each-ref", *args, env=env)
        assert theirs.returncode == 0, theirs.stderr
        ours = refscope("list", *args, cwd=repo, env=env)
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args


def test_a_format_that_reads_no_object_is_gits(repo) -> None:
    args = ["--format=%(refname) %(objectname) %(objectname:short) %(HEAD)", "--sort=-refname"]
    theirs = run_git(repo, "for-each-ref", *args)
    ours = refscope("list", *args, cwd=repo)
    assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)
