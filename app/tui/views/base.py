"""What every storage view screen shares: a title line, ``escape`` to go back, the footer, meter access."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

from refscope.backend.display import Shown, path_text
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static


def default_meter() -> Callable[[str], Any]:
    """The backend's ``measure``; a no-op stand-in only when the meter module has not landed."""
    try:
        from refscope.backend.meter import measure
    except ImportError:  # pragma: no cover - only before METER's module exists

        @contextlib.contextmanager
        def measure(name: str, children: bool = False):  # type: ignore[misc]
            class _M:
                report = None

            yield _M()

    return measure


def short_path(gitdir: str) -> Shown:
    """A git dir as ``<repo>/.git`` (or ``<name>.git`` when bare): enough to know where, stable in tests.
    Escaped: a directory name is bytes from the file system."""
    gitdir = os.path.abspath(gitdir)
    parent = os.path.dirname(gitdir)
    if os.path.basename(gitdir) == ".git":
        return path_text(os.path.join(os.path.basename(parent), ".git"))
    return path_text(os.path.basename(gitdir))


def measure_fn(meter: Any) -> Callable[..., Any]:
    """``measure(name)`` from a meter given as the backend's function or as the app's meter object
    (``.measure``/``.adopt``, e.g. TUI-MAIN's FakeMeter); the backend's when none is given."""
    if meter is None:
        return default_meter()
    return meter.measure if hasattr(meter, "measure") else meter


def adopt(meter: Any, report: Any) -> Any:
    """A report measured elsewhere (inside the engine) through the app's meter (fixed when fake)."""
    return meter.adopt(report) if hasattr(meter, "adopt") and report is not None else report


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
    """
    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, *, title: str = "", name: str | None = None, id: str | None = None) -> None:
        super().__init__(name=name, id=id)
        self._title_text = title

    def compose(self) -> ComposeResult:
        yield Static(Text(self._title_text), id="view-title")
        yield from self.compose_body()
        yield Static("", id="view-status")
        yield Footer()

    def compose_body(self) -> ComposeResult:  # pragma: no cover - abstract
        yield from ()

    def set_title(self, text: str | Text) -> None:
        self.query_one("#view-title", Static).update(text if isinstance(text, Text) else Text(text))

    def set_status(self, text: str | Text) -> None:
        self.query_one("#view-status", Static).update(text if isinstance(text, Text) else Text(text))

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

    def start_following(
        self,
        store: Any,
        snapshot: Any,
        apply: Callable[..., Any],
        follow: bool,
        on_locks: Callable[..., Any] | None = None,
    ) -> Any:
        """Live updates: from the app's ``snapshot_changed`` signal when the app runs a watcher (TUI-MAIN's
        RefscopeApp), else from our own Follower. Lock files are always looked for by our poller."""
        from .live import Follower

        if not follow or store is None:
            return None
        signal = getattr(self.app, "snapshot_changed", None)
        app_watches = signal is not None and getattr(self.app, "watcher", None) is not None
        if app_watches:
            signal.subscribe(self, lambda update: apply(update.snapshot), immediate=True)
        if not app_watches or on_locks is not None:
            follower = Follower(self, store, snapshot, apply, on_locks=on_locks, refresh=not app_watches)
            follower.start()
            return follower
        return None

    def run_on_ui(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback`` on the UI thread whether we are on it or on a watcher/worker thread."""
        if threading.get_ident() == getattr(self.app, "_thread_id", None):
            callback(*args)
        else:
            self.app.call_from_thread(callback, *args)
