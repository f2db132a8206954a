"""``%(objectname:short)`` against git where the shortest unique prefix is decided by objects beside the
tip: a loose object that shares the tip's first digits, in the loose directory other tips share too (one
run lists each directory once, as git's loose cache does, and every tip still sees every object in it),
with the tips loose or packed.
"""

from __future__ import annotations

import hashlib
from itertools import count

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, run_git


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob_like(prefix: str, tag: bytes) -> bytes:
    """Content of a blob whose id starts with ``prefix`` (found by trying: ~16^len tries)."""
    for n in count():
        data = b"%s %d\n" % (tag, n)
        if _blob_id(data).startswith(prefix):
            return data
    raise AssertionError("unreachable")


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_short_names_see_every_loose_neighbour(tmp_path, fmt, packed) -> None:
    repo = init_repo(tmp_path / "r", fmt)
    first = b"tip\n"
    oid = _blob_id(first)
    tips = [first, _blob_like(oid[:2], b"same dir"), _blob_like(oid[:3], b"closer")]
    for i, data in enumerate(tips):
        got = git(repo, "hash-object", "-w", "--stdin", input=data).decode().strip()
        git(repo, "update-ref", f"refs/tags/t{i}", got)
    if packed:
        git(repo, "repack", "-adq")
    for data in (_blob_like(oid[:5], b"twin"), _blob_like(_blob_id(tips[1])[:4], b"twin of 1")):
        git(repo, "hash-object", "-w", "--stdin", input=data)  # loose, and no ref names it
    for args in (
        ["--format=%(objectname:short=4) %(refname)"],
        ["--format=%(objectname:short) %(objectname:short=3) %(refname)", "--sort=-refname"],
    ):
        theirs = run_git(repo, "for-each-ref", *args, env=git_env())
        assert theirs.returncode == 0
        ours = refscope("list", *args, cwd=repo)
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)
    lengths = [len(line.split()[0]) for line in theirs.stdout.splitlines()]
    assert lengths[-1] >= 6  # t0 (last, sorted down): its loose twin shares five digits
