"""Pilot tests of the main screen over an in-memory snapshot: filtering, marking, escaping."""

from __future__ import annotations

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.widgets.reflist import RefList

from tests.test_tui_main_support import sample

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_app(snapshot=None) -> RefscopeApp:
    return RefscopeApp(None, repo_path="/mem", snapshot=snapshot or sample(), meter=FakeMeter(), watch=False)


async def test_first_screen_and_count() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reflist = app.screen.query_one(RefList)
        assert len(reflist.view) == 73
        assert "73 of 73 shown" in str(app.screen.query_one("#count").render())
