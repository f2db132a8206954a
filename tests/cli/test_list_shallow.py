"""A shallow clone: git takes the commits of ``shallow`` as parentless -- its walks (``--merged``,
``--contains``, ``%(ahead-behind:)``) stop there and ``%(parent)``/``%(numparent)`` show none -- and uses
no commit-graph. refscope read the boundary's real parents: the walks failed ("unable to parse
commit", the parent is not in the clone) and ``%(numparent)`` said 1. Against git, both ref formats, with
and without a commit-graph written in the clone."""

from __future__ import annotations

import pytest

from tests.support.cli import refscope
from tests.support.git import git, init_repo, run_git

CASES = [
    ["--merged=main"],
    ["--no-merged=main"],
    ["--contains=main"],
    ["--no-contains=b1"],
    ["--merged=b2"],
    ["--contains=b2"],
    ["--format=%(refname) %(ahead-behind:main) %(ahead-behind:b2)"],
    ["--format=%(refname) %(parent) %(numparent) %(parent:short)"],
    ["--format=%(refname)", "--sort=numparent", "--sort=-committerdate"],
]


@pytest.fixture(
    params=[("files", False), ("reftable", False), ("files", True)], ids=["files", "reftable", "graph"]
)
def shallow(request, tmp_path):
    fmt, graph = request.param
    origin = init_repo(tmp_path / "origin")
    for i in range(6):
        git(origin, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=3", "--single-branch", "--no-tags", f"--ref-format={fmt}",
        f"file://{origin}", str(clone))  # fmt: skip
    git(clone, "branch", "b1", "main~1")
    git(clone, "branch", "b2", "main~2")  # the boundary
    if graph:
        git(clone, "commit-graph", "write", "--reachable")
    assert (clone / ".git" / "shallow").exists()
    return clone


def test_shallow_clone_lists_as_git(shallow) -> None:
    for args in CASES:
        args = ["--format=%(refname)", *args] if not args[0].startswith("--format") else args
        theirs = run_git(shallow, "for-each-ref", *args)
        assert theirs.returncode == 0, theirs.stderr
        ours = refscope("list", *args, cwd=shallow)
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args
