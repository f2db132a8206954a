"""The demo repository is a real repository: ``git fsck`` passes and git lists exactly what refscope lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.demo import BIDI_NAME, C1_NAME, build_demo
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.git import for_each_ref, git


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_demo_is_valid_and_deterministic(tmp_path: Path, fmt: str) -> None:
    a = Path(build_demo(str(tmp_path / "a"), fmt=fmt))
    b = Path(build_demo(str(tmp_path / "b"), fmt=fmt))
    git(a, "fsck", "--strict", "--no-dangling")
    theirs = for_each_ref(a)
    assert len(theirs) > 2500  # "a few thousand refs"
    snap = open_store(discover(str(a))).snapshot()
    ours = []
    for r in snap:
        oid = r.oid if r.target is None else snap.resolve(r.name)
        ours.append((r.name, oid, r.target or b""))
    assert ours == [(t[0], t[1], t[3]) for t in theirs]
    names = {t[0] for t in theirs}
    assert BIDI_NAME in names and C1_NAME in names
    assert for_each_ref(b) == theirs  # same content every time
    assert snap.head().target == b"refs/heads/main"
    if fmt == "files":
        assert snap.lookup(b"refs/heads/feature/api/topic-000").location.kind == "loose"
        assert snap.packed.lookup(b"refs/heads/feature/api/topic-000") is not None
        out = git(a, "reflog", "show", "--format=%H %gs", "refs/heads/main").splitlines()
        assert [(e.new + b" " + e.message) for e in snap.reflog(b"refs/heads/main")] == out
    else:
        assert len(snap.tables) >= 5
