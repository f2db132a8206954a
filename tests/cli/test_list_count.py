"""``refscope list --count`` read as git's parse-options reads an OPT_INTEGER: base 0 (``0x10``,
``010``), a sign, leading blanks, one k/m/g unit, a C int's range, then for-each-ref's refusal of a
negative count; against ``git for-each-ref`` itself, each value git takes giving its output and each it
refuses a usage error (exit 2) whose first line is git's."""

from __future__ import annotations

import pytest

from tests.support.cli import refscope
from tests.support.git import git, init_repo, run_git

VALUES = ["0", "1", "3", "+2", " 2", "-0", "0x2", "0X2", "02", "09", "1k", "1G", "2147483647", "", "x",
          "1x", "2 ", "1.5", "0x", "k", "-1", "-0x2", "3000000000", "-3000000000", "2097152k"]  # fmt: skip


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = init_repo(tmp_path_factory.mktemp("count") / "r")
    for name in ("a", "b", "c", "d"):
        git(repo, "branch", name)
    return repo


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_count_reads_as_gits(repo, value) -> None:
    args = ["--format=%(refname)", f"--count={value}", "--sort=-refname"]
    theirs = run_git(repo, "for-each-ref", *args)
    ours = refscope("list", *args, cwd=repo)
    if theirs.returncode == 0:
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)
        return
    first = theirs.stderr.decode().splitlines()[0]
    assert (theirs.returncode, first[:7]) == (129, "error: ")
    assert (ours.returncode, ours.stdout) == (2, b"")
    assert ours.stderr.decode().splitlines()[0] == "refscope: " + first[7:]
