"""SVG snapshots of the main list's tip columns (issue 16): a generated repository with fixed dates,
``GIT_TEST_DATE_NOW`` fixed (relative dates), a fixed repository path in the status line, the fake meter,
watchers off.

Update with ``pytest tests/tui/test_tui_tips_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from textual.widgets import Input

from tests.support.tui import TIPS_NOW, tips_loaded, tips_repo, wait_for
from tests.support.tui import settle_snapshot as settle

SIZE = (150, 32)


@pytest.fixture
def tips(tmp_path: Path, git_bin: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(TIPS_NOW))
    return tips_repo(tmp_path / "repo", fmt="files")


def make_app(path: Path) -> RefscopeApp:
    repo = discover(str(path))
    return RefscopeApp(open_store(repo), repo=repo, repo_path="/srv/tips", meter=FakeMeter(), watch=False)


def test_tip_columns(tips: Path, snap_compare) -> None:
    app = make_app(tips)

    async def run_before(pilot) -> None:
        await tips_loaded(pilot, app)
        await pilot.press("down", "down", "down")
        await wait_for(pilot, lambda: "behind main" in str(app.screen.query_one("#detail").render()))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tip_columns_by_date_not_merged_iso(tips: Path, snap_compare) -> None:
    app = make_app(tips)

    async def run_before(pilot) -> None:
        await tips_loaded(pilot, app)
        await pilot.press("S", "S", "d")
        await wait_for(pilot, lambda: app.screen.sort == "date")
        await settle(pilot)
        await pilot.press("slash")
        app.screen.query_one("#filter", Input).value = "!merged"
        await settle(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "behind main" in str(app.screen.query_one("#detail").render()))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
