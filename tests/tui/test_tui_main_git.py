"""Pilot tests of the delete workflow against real git repositories (both formats, both engines).

git is the oracle: after a commit through the TUI, ``git for-each-ref`` must list exactly the refs that were
not deleted; after a refusal, nothing changed and the queue is kept.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from refscope.app.tui.screens.dialogs import ConfirmCommit
from refscope.app.tui.screens.dialogs import Message as MessageDialog
from refscope.app.tui.screens.operations import OperationScreen
from refscope.app.tui.widgets.ref_list import RefList

from tests.support.git import for_each_ref, git, tree_bytes
from tests.support.tui import make_app, make_repo, set_filter, wait_for

pytestmark = pytest.mark.anyio


def names(path: Path) -> list[bytes]:
    return [row[0] for row in for_each_ref(path)]


@contextlib.asynccontextmanager
async def _filtered(path: Path, pattern: str, width: int = 120):
    """(app, pilot) of an app over ``path`` whose list is filtered to ``pattern``."""
    app = make_app(path)
    async with app.run_test(size=(width, 40)) as pilot:
        await set_filter(pilot, app, pattern)
        yield app, pilot


@pytest.mark.parametrize("engine", ["native", "git"])
async def test_commit_through_engine(tmp_path: Path, ref_format: str, engine: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    before = names(path)
    app = make_app(path, engine=engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await set_filter(pilot, app, "refs/heads/topic/00")  # topic/000..009
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.queue) == 10)
        await set_filter(pilot, app, "v1.0")
        await pilot.press("space")
        assert len(app.queue) == 11
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = app.screen.plan
        assert (plan.count, plan.engine, plan.tags) == (11, engine, [b"refs/tags/v1.0"])
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen))
        assert app.screen.report.name == "commit"
        assert len(app.queue) == 0
        await pilot.press("escape")
        await wait_for(
            pilot, lambda: len(app.screen.query_one(RefList).view) == 0
        )  # the filter still applies
    gone = {f"refs/heads/topic/{i:03d}".encode() for i in range(10)} | {b"refs/tags/v1.0"}
    assert names(path) == [n for n in before if n not in gone]


async def test_stale_value_refusal_keeps_queue(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=5)
    async with _filtered(path, "refs/heads/topic/001") as (app, pilot):
        await pilot.press("space")
        assert list(app.queue) == [b"refs/heads/topic/001"]
        # another process moves the ref after it was queued (no watcher here: the commit must catch it)
        git(path, "commit", "-q", "--allow-empty", "-m", "second")
        git(path, "update-ref", "refs/heads/topic/001", "HEAD")
        before = tree_bytes(path / ".git")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog))
        body = str(app.screen.body)
        assert "refs/heads/topic/001" in body and "expected" in body
        assert "The queue is kept (1 entries)" in body
        assert list(app.queue) == [b"refs/heads/topic/001"]
        assert tree_bytes(path / ".git") == before
        await pilot.press("escape")
        # a refresh flags the entry stale
        await pilot.press("r")
        await wait_for(pilot, lambda: app.queue[b"refs/heads/topic/001"].stale is not None)
        assert app.queue[b"refs/heads/topic/001"].stale.startswith("now at ")


async def test_checked_out_and_head_warnings(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=3)
    git(path, "worktree", "add", "-q", "-b", "wt-branch", str(tmp_path / "wt"))
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        for name in ("refs/heads/main", "refs/heads/wt-branch", "refs/remotes/origin/HEAD"):
            await set_filter(pilot, app, name)
            await pilot.press("space")
        assert len(app.queue) == 3
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = app.screen.plan
        assert plan.head_branch == b"refs/heads/main"
        assert sorted(b for b, _ in plan.checked_out) == [b"refs/heads/main", b"refs/heads/wt-branch"]
        assert plan.symrefs == [(b"refs/remotes/origin/HEAD", b"refs/remotes/origin/main")]
        text = str(app.screen.query_one("#commit-plan").render())
        assert "HEAD's branch refs/heads/main is queued" in text
        assert "checked out in a worktree" in text
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog))
        assert "cannot delete branch" in str(app.screen.body)
        assert len(app.queue) == 3
    assert b"refs/heads/wt-branch" in names(path)


async def test_external_change_flags_queue_entry_stale_live(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=5)
    app = make_app(path, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.live == "live")
        await set_filter(pilot, app, "refs/heads/topic/002")
        await pilot.press("space")
        git(path, "commit", "-q", "--allow-empty", "-m", "second")
        git(path, "update-ref", "refs/heads/topic/002", "HEAD")
        git(path, "update-ref", "refs/heads/new-one", "HEAD")
        new_oid = git(path, "rev-parse", "HEAD").strip()
        await wait_for(pilot, lambda: app.queue[b"refs/heads/topic/002"].stale is not None)
        reflist = app.screen.query_one(RefList)
        reflist.move_to(0)
        await wait_for(pilot, lambda: reflist.current_ref().oid == new_oid)  # the row shows the new value
        await wait_for(pilot, lambda: app.snapshot.lookup(b"refs/heads/new-one") is not None)
        assert "1 stale" in app.screen.query_one("#queue").border_title


async def test_corrupt_store_shown_in_place(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=3)
    if ref_format == "files":
        target = path / ".git" / "packed-refs"
        target.write_bytes(target.read_bytes() + b"this is not a record\n")
    else:
        tables = (path / ".git" / "reftable" / "tables.list").read_text().split()
        target = path / ".git" / "reftable" / tables[-1]
        data = bytearray(target.read_bytes())
        data[30:60] = b"\xff" * 30
        target.write_bytes(bytes(data))
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        status = str(app.screen.query_one("#status").render())
        assert str(target.name) in status
        await pilot.press("down", "slash")  # still running, still responding
        assert app.screen.query_one("#filter").has_focus


async def test_storage_view_keys(tmp_path: Path, ref_format: str) -> None:
    """s, p and l open the storage views (issue 7's screens) for the ref under the cursor; escape returns."""
    path = make_repo(tmp_path / "r", ref_format, n=3)
    async with _filtered(path, "refs/heads/main") as (app, pilot):
        await pilot.press("s")
        want = "PackedScreen" if ref_format == "files" else "StackScreen"
        await wait_for(pilot, lambda: type(app.screen).__name__ == want)
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen")
        await pilot.press("l")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReflogScreen")
        assert app.screen.ref_name == b"refs/heads/main"
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen")
        await pilot.press("p")
        if ref_format == "files":
            await wait_for(pilot, lambda: type(app.screen).__name__ == "PackedScreen")
            await pilot.press("escape")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen")
        assert app.screen.query_one(RefList).current_name() == b"refs/heads/main"
        await set_filter(pilot, app, "refs/heads/topic/001")
        await pilot.press("enter")  # where it lives: packed-refs record / reftable table
        want = "PackedScreen" if ref_format == "files" else "TableScreen"
        await wait_for(pilot, lambda: type(app.screen).__name__ == want)
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen")


async def test_bench_runs_queue_on_scratch_copies(tmp_path: Path) -> None:
    """b runs the queued transaction through both engines on scratch copies; the repository is untouched."""
    from refscope.app.tui.screens.operations import BenchScreen

    path = make_repo(tmp_path / "r", "files", n=3)
    before = tree_bytes(path / ".git")
    async with _filtered(path, "refs/heads/topic/", width=160) as (app, pilot):
        await pilot.press("space", "b")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), timeout=60)
        body = str(app.screen.body)
        assert "refscope bench: delete refs/heads/topic/000" in body
        assert "native " in body and "git " in body
    assert tree_bytes(path / ".git") == before


@pytest.mark.parametrize("damaged", [False, True])
async def test_packed_refs_checked_while_the_dialog_is_open(
    tmp_path: Path, monkeypatch, damaged: bool
) -> None:
    """A native commit on a big packed-refs has the file checked while the confirmation is open (an
    operation of its own), so the commit finds it checked. A damaged file is left for the commit to refuse:
    nothing changes and the queue is kept."""
    from refscope.app.tui.screens import commit as main  # (where the constant lives)

    monkeypatch.setattr(main, "PRECHECK_MIN", 0)  # (the threshold keeps tiny files, as the demo's, out of it)
    path = make_repo(tmp_path / "r", "files", n=5)
    if damaged:  # what validate finds in a damaged file (one the reader opens and lists is hard to make)
        from refscope.backend.errors import CorruptStore
        from refscope.backend.formats.packed import PackedRefs

        def damaged_file(self) -> None:
            raise CorruptStore(self.path, "packed refname is dangerous: refs/heads/../x", 0)

        monkeypatch.setattr(PackedRefs, "validate", damaged_file)
    before = tree_bytes(path / ".git")
    async with _filtered(path, "refs/heads/topic/001") as (app, pilot):
        await pilot.press("space")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await wait_for(pilot, lambda: not any(w.group == "precheck" for w in app.workers))
        await pilot.pause()
        checked = [r.name for r in app.reports if r.name == "check packed-refs"]
        assert checked == ([] if damaged else ["check packed-refs"])
        assert damaged or app.snapshot.packed._validated
        await pilot.press("y")
        if damaged:
            await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog))
            assert "packed refname is dangerous" in str(app.screen.body) and len(app.queue) == 1
            assert tree_bytes(path / ".git") == before
        else:
            await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen))
            assert b"refs/heads/topic/001" not in names(path)
