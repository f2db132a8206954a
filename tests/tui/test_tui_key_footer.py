"""The footer is rebuilt only when the keys it shows change: a bindings signal that changes none of them
(a focus move, a screen's ``refresh_bindings``) mounts nothing; one that does shows the change."""

from __future__ import annotations

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.widgets.key_footer import KeyFooter
from textual.widgets._footer import FooterKey

from tests.support.memsnapshot import sample

pytestmark = pytest.mark.anyio


async def test_footer_rebuilt_only_when_its_keys_change(monkeypatch) -> None:
    app = RefscopeApp(None, repo_path="/mem", snapshot=sample(), meter=FakeMeter(), watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(KeyFooter)
        rebuilt = []
        real = KeyFooter.recompose

        async def recompose(self):
            rebuilt.append(self)
            return await real(self)

        monkeypatch.setattr(KeyFooter, "recompose", recompose)

        def engine_key() -> FooterKey:
            return next(k for k in footer.query(FooterKey) if k.action == "switch_engine")

        assert not engine_key().has_class("-disabled")
        for _ in range(3):
            app.screen.refresh_bindings()
            await pilot.pause()
        app.screen.query_one("#head-line").focus()  # (a focus move that changes no key shown)
        await pilot.pause()
        app.screen.query_one("#refs").focus()
        await pilot.pause()
        assert rebuilt == []
        app.begin_commit()  # the engine key is shown disabled while a commit runs
        await pilot.pause()
        assert rebuilt == [footer] and engine_key().has_class("-disabled")
        app.end_commit()
        await pilot.pause()
        assert rebuilt == [footer, footer] and not engine_key().has_class("-disabled")
