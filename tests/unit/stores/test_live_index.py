"""A refreshed snapshot's row index comes from the previous one's, in work proportional to the change.

reftable: the base table's own rows are built once per table (``BaseRows``) and every snapshot sharing the
table splices its overlay in (no base block decoded again). files: a rewritten packed-refs derives its row
index, count and hidden rows from the version it replaced (``PackedRefs.follow``). Either way the rows must
be exactly git's (``for-each-ref``), and exactly those of a snapshot indexed from scratch.
"""

from __future__ import annotations

import random
from array import array
from pathlib import Path

import pytest
from refscope.backend.formats.packed import Offsets, PackedRefs
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.stores import reftable as rt
from refscope.backend.stores.reftable import rowindex as rt_rows

from tests.support.git import copy_repo, for_each_ref, git, init_repo

N = 3000


def _rows(snap) -> list[tuple]:
    return [(r.name, r.oid, r.target) for r in (snap.row(i) for i in range(len(snap)))]


def _git_rows(path: Path) -> list[tuple]:
    return [
        (name, None if target else oid, target or None) for name, oid, _peeled, target in for_each_ref(path)
    ]


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory, git_bin) -> dict:
    """One repository per format: N refs packed (files: packed-refs; reftable: one compacted table), a
    symref, an annotated tag."""
    out = {}
    for fmt in ("files", "reftable"):
        path = init_repo(tmp_path_factory.mktemp(fmt) / "r", fmt=fmt)
        head = git(path, "rev-parse", "HEAD").strip().decode()
        lines = "".join(f"create refs/heads/b/{i:05d} {head}\n" for i in range(N))
        git(path, "update-ref", "--stdin", input=lines.encode())
        git(path, "tag", "-a", "-m", "t", "v1")
        git(path, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/b/00007")
        git(path, "pack-refs", "--all")
        out[fmt] = path
    return out


def _changes(path: Path) -> None:
    """Adds, deletes (one the base symref points at), changes: each a separate git process."""
    head = git(path, "rev-parse", "HEAD").strip().decode()
    git(path, "commit", "-q", "--allow-empty", "-m", "two")
    new = git(path, "rev-parse", "HEAD").strip().decode()
    git(path, "update-ref", "refs/heads/b/01000x", head)
    git(path, "update-ref", "refs/heads/a-first", head)
    git(path, "update-ref", "refs/zz/last", head)
    git(path, "update-ref", "-d", "refs/heads/b/02000")
    git(path, "update-ref", "-d", "refs/heads/b/00007")  # origin/HEAD now dangles: not listed
    git(path, "update-ref", "refs/heads/b/00500", new)


def test_reftable_refresh_splices_overlay(base_repo, tmp_path: Path) -> None:
    path = copy_repo(base_repo["reftable"], tmp_path / "r")
    store = open_store(discover(str(path)))
    snap = store.snapshot()
    assert len(snap.tables) == 1
    before = dict(rt.INDEX_STATS)
    assert _rows(snap) == _git_rows(path)
    built = rt.INDEX_STATS["base_builds"] - before["base_builds"]
    decoded = rt.INDEX_STATS["base_blocks_decoded"]
    assert built == 1 and snap.index_method == "spliced"
    _changes(path)
    new = store.refresh(snap)
    assert new.tables[0] is snap.tables[0] and len(new.tables) > 1  # the base is shared
    assert _rows(new) == _git_rows(path)
    assert new.index_method == "spliced"
    assert rt.INDEX_STATS["base_builds"] - before["base_builds"] == 1  # not built again
    assert rt.INDEX_STATS["base_blocks_decoded"] == decoded  # no base block decoded for the index
    names = [n for n, _t, _rb, _j in new._stream(b"")]
    assert [new.name_at(i) for i in range(len(new))] == names
    # the same rows as a snapshot indexed from scratch, and as the block-by-block walk
    fresh = store.snapshot()
    assert _rows(fresh) == _rows(new)
    walked = rt.ReftableSnapshot(store, new.stack, new.worktree_stack)
    walked._build_based(walked._base())
    assert (list(walked._rows_t), list(walked._rows_b), list(walked._rows_r)) == (
        list(new._rows_t),
        list(new._rows_b),
        list(new._rows_r),
    )


def test_reftable_big_overlay_walks(base_repo, tmp_path: Path, monkeypatch) -> None:
    path = copy_repo(base_repo["reftable"], tmp_path / "r")
    store = open_store(discover(str(path)))
    snap = store.snapshot()
    len(snap)
    _changes(path)
    monkeypatch.setattr(rt_rows, "SPLICE_MAX", 2)
    new = store.refresh(snap)
    assert _rows(new) == _git_rows(path)
    assert new.index_method == "walked"


def test_files_packed_rewrite_derives_index(base_repo, tmp_path: Path) -> None:
    path = copy_repo(base_repo["files"], tmp_path / "r")
    store = open_store(discover(str(path)))
    snap = store.snapshot()
    assert _rows(snap) == _git_rows(path)
    for step in range(3):
        if step == 0:
            git(path, "update-ref", "-d", "refs/heads/b/01234")  # packed-refs rewritten without it
        elif step == 1:
            git(path, "update-ref", "refs/heads/b/00100y", "HEAD")
            git(path, "update-ref", "-d", "refs/heads/b/00002")
            git(path, "pack-refs", "--all")  # the loose one packed in the middle
        else:
            git(path, "update-ref", "-d", "refs/heads/b/02999")
            git(path, "update-ref", "-d", "refs/tags/v1")  # the last record (with its ^ line)
        new = store.refresh(snap)
        assert new.packed is not snap.packed
        assert _rows(new) == _git_rows(path)
        assert new.packed.derived
        starts = new.packed.starts()
        assert isinstance(starts, Offsets)
        scratch = PackedRefs.open(new.packed.path)
        assert list(starts) == list(scratch.starts())
        assert len(new.packed) == len(scratch) and new.packed.hidden_rows() == scratch.hidden_rows() == []
        assert list(new.prefix_range(b"refs/heads/b/001")) == list(
            store.snapshot().prefix_range(b"refs/heads/b/001")
        )
        snap = new


def test_files_not_derived_without_previous_index(base_repo, tmp_path: Path) -> None:
    """Nothing to derive from (the previous version never built its index): built afresh, same rows."""
    path = copy_repo(base_repo["files"], tmp_path / "r")
    store = open_store(discover(str(path)))
    snap = store.snapshot()
    git(path, "update-ref", "-d", "refs/heads/b/01234")
    new = store.refresh(snap)
    assert _rows(new) == _git_rows(path)
    assert not new.packed.derived


def test_offsets_splice_model() -> None:
    """Offsets.splice against a list model, spliced repeatedly (pieces of pieces, shifts, flattening)."""
    rnd = random.Random(7)
    model = list(range(100, 100 + 50 * 400, 50))
    cur = array("q", model)
    for _ in range(200):
        n = len(model)
        a = rnd.randrange(n + 1)
        b = min(n, a + rnd.randrange(4))
        lo = model[a - 1] if a else 0
        mid = sorted(rnd.sample(range(lo + 1, lo + 40), rnd.randrange(3)))
        delta = rnd.randrange(-30, 30)
        model = model[:a] + mid + [x + delta for x in model[b:]]
        cur = Offsets.splice(cur, a, b, array("q", mid), delta)
        assert len(cur) == len(model)
        assert list(cur) == model
        for i in rnd.sample(range(len(model)), min(20, len(model))):
            assert cur[i] == model[i] and cur[i - len(model)] == model[i]
    with pytest.raises(IndexError):
        cur[len(model)]
