"""SVG snapshots of each storage view (TUI-VIEWS): fixed size, fake meter, watchers off, deterministic repos
(git's dates are fixed by tests.support.git; table names are renamed to fixed random parts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.screens.reflog import ReflogScreen
from refscope.app.tui.screens.stack import StackScreen
from refscope.app.tui.screens.table import TableScreen

from tests.support.git import git
from tests.support.tui import Host, fixed_table_names, open_store, stacked_repo, wait_for

SIZE = (130, 42)


@pytest.fixture
def fixed_stack(tmp_path: Path, git_bin: str) -> Path:
    repo = stacked_repo(tmp_path / "repo", big=120)
    fixed_table_names(repo)
    return repo


def _loaded(app: Host):
    async def wait(pilot) -> None:
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers))
        screen = app.screen
        if isinstance(screen, StackScreen):
            await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
        await pilot.pause()

    return wait


def test_snapshot_stack_view(fixed_stack: Path, snap_compare) -> None:
    store = open_store(fixed_stack)
    app = Host(lambda: StackScreen(store, store.snapshot(), FakeMeter(), follow=False))
    assert snap_compare(app, terminal_size=SIZE, run_before=_loaded(app))


def test_snapshot_table_view_log_block(fixed_stack: Path, snap_compare) -> None:
    store = open_store(fixed_stack)
    table = store.snapshot().tables[0]
    app = Host(lambda: TableScreen(table))

    async def run_before(pilot) -> None:
        await _loaded(app)(pilot)
        await pilot.press("down", "down")  # block 2: the first log block
        await wait_for(pilot, lambda: app.screen._shown_block == 2)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_table_view_ref_block(fixed_stack: Path, snap_compare) -> None:
    store = open_store(fixed_stack)
    table = store.snapshot().tables[0]
    app = Host(lambda: TableScreen(table))
    assert snap_compare(app, terminal_size=SIZE, run_before=_loaded(app))


def test_snapshot_reflog_view(fixed_stack: Path, snap_compare) -> None:
    git(fixed_stack, "commit", "-q", "--allow-empty", "-m", "second")
    git(fixed_stack, "update-ref", "-m", "reset: moving to HEAD~1", "refs/heads/main", "HEAD~1")
    store = open_store(fixed_stack)
    app = Host(lambda: ReflogScreen(store.snapshot(), b"refs/heads/main"))
    assert snap_compare(app, terminal_size=SIZE, run_before=_loaded(app))


def test_snapshot_packed_view(tmp_path: Path, git_bin: str, snap_compare) -> None:
    from refscope.app.tui.screens.packed import PackedScreen

    from tests.support.git import create_refs, init_repo

    repo = init_repo(tmp_path / "repo", fmt="files")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    create_refs(repo, [f"refs/heads/topic/{i:04d}" for i in range(60)])
    git(repo, "pack-refs", "--all")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "update-ref", "refs/heads/topic/0003", "HEAD")  # loose now: shadows its packed record
    store = open_store(repo)
    app = Host(lambda: PackedScreen(store.snapshot(), b"refs/heads/main", store=store, follow=False))

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.screen.index is not None and app.screen.index.peeled_count >= 0)
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
