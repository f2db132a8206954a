"""What every storage view screen shares: a title line, ``escape`` to go back, ``/`` to search the rows of
the focused list (n / N: next / previous match), the footer. Screens measure through ``..meter``."""

from __future__ import annotations

import os
from bisect import bisect_left
from typing import Any

from refscope.backend.display import Shown, path_text
from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from ..widgets.filter_input import FilterInput
from ..widgets.key_footer import KeyFooter
from ..widgets.rows import RowsView
from ..widgets.text_line import TextLine


def short_path(gitdir: str) -> Shown:
    """A git dir as ``<repo>/.git`` (or ``<name>.git`` when bare): enough to know where, stable in tests.
    Escaped: a directory name is bytes from the file system."""
    gitdir = os.path.abspath(gitdir)
    parent = os.path.dirname(gitdir)
    if os.path.basename(gitdir) == ".git":
        return path_text(os.path.join(os.path.basename(parent), ".git"))
    return path_text(os.path.basename(gitdir))


class ViewScreen(Screen):
    """Base of the storage views. Subclasses implement ``compose_body``."""

    DEFAULT_CSS = """
    ViewScreen > #view-title {
        height: 1;
        background: $primary-background;
        color: $text;
        text-style: bold;
        padding: 0 1;
    }
    ViewScreen > #view-status {
        height: 1;
        background: $panel;
        color: $text-muted;
        padding: 0 1;
    }
    ViewScreen > #view-search {
        display: none;
        height: 1;
        border: none;
        padding: 0 1;
    }
    ViewScreen > #view-search.-active { display: block; }
    """
    # ``/``, and enter/escape while the search field has focus, are priority bindings: the app runs them as
    # each key arrives and focus moves at once (``set_focus``), so a burst such as ``/topic<enter>n`` types
    # ``topic`` into the field and sends ``n`` to the list (the main screen's filter works the same way).
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash", "search", "Search", priority=True),
        Binding("enter", "submit_search", show=False, priority=True),
        Binding("escape", "cancel_search", show=False, priority=True),
    ]

    def __init__(self, *, title: str = "", name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._title_text = title
        self._search_target: RowsView | None = None

    def compose(self) -> ComposeResult:
        yield TextLine(Text(self._title_text), id="view-title")
        yield from self.compose_body()
        yield FilterInput(
            placeholder="search: text (substring) · * ? [ git glob · ! negates", id="view-search"
        )
        yield TextLine("", id="view-status")
        yield KeyFooter()

    # ---- search ---------------------------------------------------------------------------------------
    @property
    def search_input(self) -> FilterInput:
        return self.query_one("#view-search", FilterInput)

    def search_view(self) -> RowsView | None:
        """The list ``/`` searches: the focused one, else the first list of the screen."""
        if isinstance(self.focused, RowsView):
            return self.focused
        return next(iter(self.query(RowsView)), None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """enter and escape are the search field's only while it has focus; otherwise they are not even
        listed, so the footer shows the screen's own (escape: Back, enter: Open…)."""
        if action in ("submit_search", "cancel_search"):
            return self.focused is self.search_input
        return super().check_action(action, parameters)

    def action_search(self) -> None:
        field = self.search_input
        if self.focused is field:
            raise SkipAction()  # a "/" inside the pattern
        target = self.search_view()
        if target is None:
            raise SkipAction()
        self._search_target = target
        field.add_class("-active")
        if target.search is not None:
            field.value = target.search.text
        self.set_focus(field)

    def action_submit_search(self) -> None:
        field = self.search_input
        if self.focused is not field:
            raise SkipAction()  # enter on a list is the screen's
        target = self._search_target
        field.remove_class("-active")
        if target is None:
            return
        self.set_focus(target)
        if target.start_search(field.value) is not None:
            self.set_status(Text(f"searching for {field.value}…"))
        self.refresh_bindings()  # n/N are the search's now (or the screen's again)

    def action_cancel_search(self) -> None:
        field = self.search_input
        if self.focused is not field:
            raise SkipAction()  # escape on a list goes back
        field.remove_class("-active")
        if self._search_target is not None:
            self.set_focus(self._search_target)

    def on_rows_view_searched(self, message: RowsView.Searched) -> None:
        search = message.search
        shown = Text(search.text)  # what was typed, shown as text (never markup)
        total = f"{len(search.matches):,}" + ("" if search.done else "+")
        status = Text("search ")
        status.append_text(shown)
        if message.row is None:
            status.append(": no match" if search.done else ": searching…")
        else:
            k = bisect_left(search.matches, message.row) + 1
            status.append(f": match {k:,} of {total} (row {message.row:,}) · n/N next/previous")
            if message.wrapped:
                status.append(" · wrapped")
        self.set_status(status)

    def compose_body(self) -> ComposeResult:  # pragma: no cover - abstract
        yield from ()

    def set_title(self, text: str | Text) -> None:
        self.query_one("#view-title", TextLine).set_text(text if isinstance(text, Text) else Text(text))

    def set_status(self, text: str | Text) -> None:
        self.query_one("#view-status", TextLine).set_text(text if isinstance(text, Text) else Text(text))

    def show_failure(self, failure: Any) -> None:
        """A job of this view raised (``..workers``): the status line says what, in place of the progress
        it showed ("indexing records…"); the view keeps what it had and keeps answering keys."""
        from ..workers import failure_line

        self.set_status(Text(f"{failure.what} failed: {failure_line(failure.error)}", style="bold red"))

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.dismiss(None)
        else:
            self.app.exit()
