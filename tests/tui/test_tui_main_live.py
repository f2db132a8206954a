"""Pilot: refs another process adds or removes appear in / vanish from the main list (watcher on).

Both formats; the removals include a ref of the big base (files: git rewrites packed-refs without it;
reftable: a tombstone table over the base). After each change the list must show exactly what git lists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.widgets.ref_list import RefList

from tests.support.git import for_each_ref, git
from tests.support.tui import make_app, make_repo, wait_for

pytestmark = pytest.mark.anyio


def shown(reflist: RefList) -> list[bytes]:
    """Every name the list shows now (its snapshot and view; not a preview)."""
    return [reflist.snapshot.name_at(i) for i in reflist.view]


def listed(reflist: RefList, name: bytes) -> bool:
    snap = reflist.snapshot
    if snap is None or reflist.preview is not None:
        return False
    rows = snap.prefix_range(name)
    return bool(len(rows)) and rows.start in reflist.view and snap.name_at(rows.start) == name


async def test_external_add_and_remove_show_in_list(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=60)
    if ref_format == "reftable":
        git(path, "pack-refs", "--all")  # one base table: later writes are small tables over it
    app = make_app(path, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        reflist = screen.query_one(RefList)
        await wait_for(pilot, lambda: app.live == "live" and screen.is_ready())
        head = git(path, "rev-parse", "HEAD").strip().decode()

        git(path, "update-ref", "refs/heads/topic/030x", head)  # files: a loose ref; reftable: a table
        await wait_for(pilot, lambda: listed(reflist, b"refs/heads/topic/030x"))
        git(path, "update-ref", "-d", "refs/heads/topic/030x")
        await wait_for(pilot, lambda: not listed(reflist, b"refs/heads/topic/030x"))
        git(path, "update-ref", "-d", "refs/heads/topic/017")  # files: packed-refs rewritten
        await wait_for(pilot, lambda: not listed(reflist, b"refs/heads/topic/017"))
        await wait_for(pilot, lambda: screen.is_ready())
        assert shown(reflist) == [row[0] for row in for_each_ref(path)]
        if ref_format == "files":
            assert reflist.snapshot.packed.derived  # the rewritten file's index came from the old one's
        else:
            assert reflist.snapshot.index_method == "spliced"
