"""One commit at a time (issue 13, item 8), through Pilot against real git repositories.

The commit is made slow for real: the test holds the lock the transaction waits on (``packed-refs.lock`` /
``tables.list.lock``) under a long lock timeout, so the commit worker sits inside its "commit" phase until
the test lets it go. Meanwhile ``c`` ``y`` again must be refused (the binding is disabled, no second
transaction, no "File exists"), marking must be refused, and the progress bar must show the phase. Then the
commit's own result is seen on disk before its result reaches the UI (the UI loop is held while the
transaction finishes), which is exactly when a watcher snapshot used to flag every entry "STALE: gone": the
queue must not judge it, and its final state must be git's truth.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from refscope.app.tui.screens.dialogs import ConfirmCommit
from refscope.app.tui.screens.dialogs import Message as MessageDialog
from refscope.app.tui.screens.main import MainScreen
from refscope.app.tui.screens.operations import OperationScreen
from refscope.app.tui.widgets.ref_list import RefList

from tests.support.git import for_each_ref, git
from tests.support.tui import make_app, make_repo, set_filter, wait_for

pytestmark = pytest.mark.anyio
N = 120  # topic refs queued (make_repo's topic/000..)


def held_lock(path: Path, ref_format: str, timeout_ms: int = 60000) -> Path:
    """The lock the commit waits for, with git's config giving it ``timeout_ms`` to become free."""
    if ref_format == "files":
        git(path, "config", "core.packedRefsTimeout", str(timeout_ms))
        return path / ".git" / "packed-refs.lock"
    git(path, "config", "reftable.lockTimeout", str(timeout_ms))
    return path / ".git" / "reftable" / "tables.list.lock"


def locks_under(gitdir: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(gitdir) for f in files if f.endswith(".lock")]


def wait_on_disk(condition, timeout: float = 30.0) -> None:
    """Poll the disk without yielding to the app's loop (so no worker result can reach the UI meanwhile)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the disk did not reach the state in time"
        time.sleep(0.005)


def enabled(screen, key: str) -> bool:
    return screen.active_bindings[key].enabled


@pytest.mark.parametrize("engine", ["native", "git"])
async def test_second_commit_refused_while_one_runs(tmp_path: Path, ref_format: str, engine: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=N)
    queued = {f"refs/heads/topic/{i:03d}".encode() for i in range(N)}
    lock = held_lock(path, ref_format)
    app = make_app(path, engine=engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await set_filter(pilot, app, "refs/heads/topic/")
        await pilot.press("a")
        await wait_for(pilot, lambda: set(app.queue) >= queued)
        app.queue.discard_many([n for n in list(app.queue) if n not in queued])  # (topic/loose)
        main = app.screen
        assert isinstance(main, MainScreen) and enabled(main, "c") and enabled(main, "e")
        lock.write_bytes(b"")  # another writer holds it: the commit waits under its timeout
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("y")
        phase = main.query_one("#commit-phase")
        await wait_for(pilot, lambda: "commit…" in str(phase.render()), timeout=30)
        assert app.commit_running and main.query_one("#commit-bar").display
        assert f"committing {N:,} deletions ({engine}): commit…" == str(phase.render())
        assert main.query_one("#commit-progress").progress == 2  # queued, checked, now committing
        # everything that would change the running transaction or start another is shown disabled
        for key in ("c", "b", "space", "a", "e"):
            assert not enabled(main, key), key
        await pilot.press("c", "y")
        await pilot.press("space", "u")
        app.action_switch_engine()  # the command palette's entries call the actions past check_action
        app.main_action("commit")
        await pilot.pause()
        assert app.screen is main and app.engine == engine
        assert not any(w.group == "commit-dialog" for w in app.workers if w.is_running)
        assert set(app.queue) == queued
        # the transaction goes on; its result is on disk before it is on screen
        lock.unlink()
        wait_on_disk(
            lambda: not locks_under(path / ".git") and not (set(n for n, *_ in for_each_ref(path)) & queued)
        )
        app.set_snapshot(app.store.refresh(app.snapshot), "watch")  # what the watcher then delivers
        assert app.queue.stale_count() == 0, "the commit's own result judged before it arrived"
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen), timeout=30)
        assert not isinstance(app.screen, MessageDialog)
        assert [r.name for r in app.reports].count("commit") == 1  # exactly one transaction ran
        assert len(app.queue) == 0 and not app.commit_running
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        assert not main.query_one("#commit-bar").display
        for key in ("c", "b", "space", "a", "e"):
            assert enabled(main, key), key
        await set_filter(pilot, app, "")
        truth = [n for n, *_ in for_each_ref(path)]
        await wait_for(pilot, lambda: len(main.query_one(RefList).view) == len(truth))
        shown = [app.snapshot.name_at(i) for i in main.query_one(RefList).view]
        assert shown == truth and not set(truth) & queued


async def test_refused_commit_releases_and_rejudges_queue(tmp_path: Path, ref_format: str) -> None:
    """A refusal also ends the hold: an entry that really changed meanwhile is flagged once the result is in."""
    path = make_repo(tmp_path / "r", ref_format, n=3)
    lock = held_lock(path, ref_format, timeout_ms=0)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await set_filter(pilot, app, "refs/heads/topic/001")
        await pilot.press("space")
        main = app.screen
        lock.write_bytes(b"")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog), timeout=30)
        assert app.screen.title_text == "commit refused"
        assert "Unable to create" in str(app.screen.body) and "File exists" in str(app.screen.body)
        assert not app.commit_running and list(app.queue) == [b"refs/heads/topic/001"]
        lock.unlink()
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        assert enabled(main, "c") and not main.query_one("#commit-bar").display
        git(path, "update-ref", "-d", "refs/heads/topic/001")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.queue[b"refs/heads/topic/001"].stale == "gone")
