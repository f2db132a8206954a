"""The lines that change while workers run (count, status, HEAD, detail, column titles, view titles, the
filter's progress) repaint themselves and ask for no layout of the screen, unless a line whose width
follows its text (``width: auto``) changed its width; the text already shown is not set again."""

from __future__ import annotations

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.messages import FilterProgress
from refscope.app.tui.widgets.text_line import ProgressLine, TextLine
from rich.text import Text
from textual.widget import Widget

from tests.support.memsnapshot import sample

pytestmark = pytest.mark.anyio


def make_app() -> RefscopeApp:
    return RefscopeApp(None, repo_path="/mem", snapshot=sample(), meter=FakeMeter(), watch=False)


class Refreshes:
    """Every ``refresh`` a TextLine asks for, as (id, layout)."""

    def __init__(self, monkeypatch) -> None:
        self.asked: list[tuple[str | None, bool]] = []
        real = Widget.refresh

        def refresh(widget, *regions, layout: bool = False, **kw):
            if isinstance(widget, TextLine):
                self.asked.append((widget.id, layout))
            return real(widget, *regions, layout=layout, **kw)

        monkeypatch.setattr(Widget, "refresh", refresh)

    def layouts(self) -> list[str | None]:
        return [name for name, layout in self.asked if layout]


async def test_every_line_of_the_main_screen_repaints_without_a_layout(monkeypatch) -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        seen = Refreshes(monkeypatch)
        for _ in range(3):  # (the text shown: nothing at all)
            screen.update_status()
            screen.update_count()
        assert seen.asked == []
        screen.post_message(FilterProgress(screen.generation, 0, 100))  # (the bar appears: a layout)
        await pilot.pause()
        appeared = len(seen.layouts())
        for done in range(5, 101, 5):  # then each step of the filter: a repaint of the bar, no layout
            screen.post_message(FilterProgress(screen.generation, done, 100))
            await pilot.pause()
        assert len(seen.layouts()) == appeared
        assert "filter-progress" in [name for name, _ in seen.asked]
        bar = str(screen.query_one("#filter-progress", ProgressLine).render())
        assert bar.endswith(" 100%") and len(bar) == screen.query_one("#filter-progress").content_region.width
        lines = [w for w in screen.query(TextLine) if w.id not in ("count", "filter-label")]
        assert {w.id for w in lines} >= {"status", "head-line", "list-header", "detail", "filter-progress"}
        for w in lines:  # (each one's width set by CSS: a new text of any length is a repaint)
            w.set_text(Text("x" * 7))
            w.set_text(Text("y" * 70, "bold"))
        assert len(seen.layouts()) == appeared


async def test_an_auto_width_line_asks_for_a_layout_when_its_width_changes(monkeypatch) -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        count = app.screen.query_one("#count", TextLine)
        seen = Refreshes(monkeypatch)
        count.set_text(Text("9 of 73 shown"))  # (narrower than "73 of 73 shown")
        count.set_text(Text("9 of 73 shown"))  # (shown already)
        count.set_text(Text("8 of 73 shown"))  # (as wide)
        count.set_text(Text("8 of 73 shown", "bold red"))  # (a new style: a repaint)
        count.set_text("1,113 of 73 shown")  # (wider)
        assert seen.asked == [("count", True), ("count", False), ("count", False), ("count", True)]
        await pilot.pause()
        assert str(count.render()) == "1,113 of 73 shown"


async def test_progress_line_text() -> None:
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        bar = app.screen.query_one("#filter-progress", ProgressLine)
        bar.display = True
        await pilot.pause()
        assert bar.content_region.width == 30  # (app.tcss)
        shown = []
        for done, total in ((1, 4), (9, 4), (1, 0)):  # (more than the total: full; no total: nothing)
            bar.set_progress(done, total)
            shown.append(bar.render())
        assert [(t.plain, [(s.start, s.end, str(s.style)) for s in t.spans]) for t in shown[:2]] == [
            ("━" * 25 + "  25%", [(0, 6, "bold"), (6, 25, "dim")]),
            ("━" * 25 + " 100%", [(0, 25, "bold")]),
        ]
        assert shown[2] is shown[1]
