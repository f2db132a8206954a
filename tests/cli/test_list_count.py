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


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_count_without_sort_streams_gits_first_refs(tmp_path, fmt) -> None:
    """Without ``--sort`` git prints refs as it finds them and stops at the count; refscope's streamed
    first refs (``command._first_refs``) are git's over symrefs, peeled tags, loose over packed and
    patterns. (That the rest is not read is the next test's.)"""
    repo = init_repo(tmp_path / "r", fmt)
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    for i in range(40):
        git(repo, "branch", f"b{i:02d}", "main~1" if i % 3 else "main")
    git(repo, "tag", "-a", "-m", "t", "v1", "main~1")
    git(repo, "symbolic-ref", "refs/heads/a-sym", "refs/heads/b07")
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/heads/b03", "main")  # (files: loose over packed)
    formats = ["--format=%(refname) %(objectname) %(symref) %(*objectname)", "--format=%(refname:short)"]
    for args in (["--count=3"], ["--count=7"], ["--count=100"], ["--count=2", "refs/tags/"],
                 ["--count=4", "refs/heads/b0*", "refs/heads/a-"], ["--count=1", "refs/nothing/"]):  # fmt: skip
        for f in ("", *formats):
            argv = [*args, f] if f else args
            theirs = run_git(repo, "for-each-ref", *argv)
            ours = refscope("list", *argv, cwd=repo)
            assert theirs.returncode == 0, theirs.stderr
            assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), argv


def test_count_stops_before_what_git_never_reads(tmp_path) -> None:
    """A dangerous name further on in packed-refs fails git's whole listing, not its first refs: with
    ``--count`` short of it both print the same refs; reaching it, both fail (git after printing the
    refs before it)."""
    repo = init_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "main").strip()
    (repo / ".git/refs/heads/main").unlink()
    names = [b"refs/heads/a", b"refs/heads/b", b"refs/heads/c", b"refs/heads/zz/../../x"]
    body = b"".join(head + b" " + n + b"\n" for n in names)
    (repo / ".git/packed-refs").write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n" + body)
    for count in (1, 3):
        argv = [f"--count={count}", "--format=%(refname)"]
        theirs = run_git(repo, "for-each-ref", *argv)
        ours = refscope("list", *argv, cwd=repo)
        assert theirs.returncode == 0 and theirs.stdout == b"".join(n + b"\n" for n in names[:count])
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), argv
    theirs = run_git(repo, "for-each-ref", "--count=4")
    ours = refscope("list", "--count=4", cwd=repo)
    assert theirs.returncode and ours.returncode == 1
    why = theirs.stderr.decode().strip().removeprefix("fatal: ")
    assert ours.stderr.decode().strip() == f"refscope: {repo / '.git/packed-refs'}: {why} (at byte 208)"
