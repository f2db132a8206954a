"""``%(ahead-behind:<committish>)`` and ``%(atom:)`` against ``git for-each-ref``, byte for byte: merges,
an orphan branch (nothing in common with the base), tags of commits, blobs and trees (no count), several
bases at once, sorting by the counts, with and without a commit-graph, both ref formats; git's words for
what it refuses."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_binary, git_env, init_repo
from tests.support.history import history


def _repo(tmp_path, fmt: str):
    repo = init_repo(tmp_path / "r", fmt)
    git(repo, "config", "gc.auto", "0")
    history(repo, 30)
    git(repo, "branch", "old", "main~9")
    git(repo, "branch", "fork", "side~2")
    git(repo, "checkout", "-q", "--orphan", "orphan")
    git(repo, "commit", "-q", "--allow-empty", "-m", "orphan root")
    git(repo, "commit", "-q", "--allow-empty", "-m", "orphan tip")
    git(repo, "checkout", "-q", "main")
    git(repo, "tag", "light", "side")
    return repo


CASES = [
    ["--format=%(ahead-behind:main) %(refname)"],
    ["--format=%(ahead-behind:refs/heads/side) %(ahead-behind:orphan) %(refname)"],
    ["--format=%(refname) %(ahead-behind:t2)", "--sort=ahead-behind:t2"],
    ["--format=%(ahead-behind:HEAD)|%(*ahead-behind:old)", "--sort=-committerdate"],
    ["--format=%(ahead-behind:light) %(refname)", "refs/heads"],
    ["--format=%(refname:)|%(objectname:)|%(authoremail:)|%(contents:)|%(body:)|%(*body:)|%(symref:)"],
]


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_ahead_behind_matches_git(tmp_path, fmt, graph):
    repo = _repo(tmp_path, fmt)
    if graph:
        git(repo, "commit-graph", "write", "--reachable")
    env = git_env()
    for args in CASES:
        theirs = subprocess.run([git_binary(), "for-each-ref", *args], cwd=repo, capture_output=True, env=env)
        assert theirs.returncode == 0, theirs.stderr
        ours = refscope("list", *args, cwd=repo, env=env)
        assert (ours.returncode, ours.stdout) == (0, theirs.stdout), args


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("%(ahead-behind)", "refscope: expected format: %(ahead-behind:<committish>)"),
        ("%(ahead-behind:)", "refscope: expected format: %(ahead-behind:<committish>)"),
        ("%(ahead-behind:nosuch)", "refscope: failed to find 'nosuch'"),
        ("%(ahead-behind:tblob)", "refscope: failed to find 'tblob'"),
        ("%(committerdate:)", "refscope: unknown date format "),
    ],
)
def test_refusals_are_gits(tmp_path, arg, message):
    from tests.support.git import tree_bytes

    repo = _repo(tmp_path, "files")
    theirs = subprocess.run(
        [git_binary(), "for-each-ref", f"--format={arg}"], cwd=repo, capture_output=True, env=git_env()
    )
    assert theirs.returncode == 128
    assert theirs.stderr.decode().splitlines()[-1] == message.replace("refscope:", "fatal:")
    before = tree_bytes(repo / ".git")
    ours = refscope("list", f"--format={arg}", cwd=repo)
    assert (ours.returncode, ours.stdout, ours.stderr.decode()) == (1, b"", message + "\n")
    assert tree_bytes(repo / ".git") == before
