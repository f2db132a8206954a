"""``Abbreviator`` against ``git rev-parse --short``: one id at a time, a column of many (each table in hex,
bisected) and a few (each table searched per id), over two packs, a multi-pack-index over them, and
loose objects, with lengths from 4 (where neighbours share prefixes) to git's automatic one."""

from __future__ import annotations

import os

import pytest

from backend.objects import abbrev
from backend.objects.odb import Odb
from tests.support.git import git, init_repo


def _blobs(repo, start: int, n: int) -> None:
    data = b"".join(
        b"blob\nmark :%d\ndata %d\n%s\n" % (i, len(b"b%d" % i), b"b%d" % i) for i in range(start, start + n)
    )
    git(repo, "fast-import", "--quiet", input=data)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = init_repo(tmp_path_factory.mktemp("abbrev") / "r")
    _blobs(repo, 1, 3000)  # one pack
    _blobs(repo, 3001, 1500)  # another
    git(repo, "multi-pack-index", "write")
    for i in range(300):
        git(repo, "hash-object", "-w", "--stdin", input=b"loose %d\n" % i)
    return repo


def _ids(repo) -> list[bytes]:
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return out.split()


def _git_short(repo, ids: list[bytes], n: int | None) -> list[bytes]:
    """git's short names of ``ids`` (a ref at each: for-each-ref abbreviates as rev-parse does)."""
    git(repo, "update-ref", "--stdin", input=b"".join(b"create refs/o/%s %s\n" % (i, i) for i in ids))
    fmt = "%(objectname:short)" if n is None else f"%(objectname:short={n})"
    try:
        got = dict(
            line.split() for line in git(repo, "for-each-ref", f"--format=%(objectname) {fmt}").splitlines()
        )
    finally:
        git(repo, "update-ref", "--stdin", input=b"".join(b"delete refs/o/%s\n" % i for i in ids))
    return [got[i] for i in ids]


@pytest.mark.parametrize("n", [4, 5, None])
def test_short_ids_are_gits(repo, n, monkeypatch) -> None:
    ids = _ids(repo)
    assert len(ids) > 4700
    want = _git_short(repo, ids, n)
    odb = Odb(os.path.join(repo, ".git", "objects"), "sha1", {})
    length = -1 if n is None else n
    ab = odb.abbreviator()
    assert ab.many(ids, length) == want  # every table in hex
    assert [ab(i, length) for i in ids[:500]] == want[:500]
    few = ids[::700]
    assert len(few) * abbrev.BULK_SHARE < 3000  # the big tables searched per id
    assert ab.many(few, length) == want[::700]
    if n == 4:
        assert max(map(len, want)) > 5  # neighbours that lengthen the prefix are there
