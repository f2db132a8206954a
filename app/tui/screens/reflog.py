"""The reflog of one ref, newest first: old -> new oid, who, when, message.

Constructor (for TUI-MAIN):
    ReflogScreen(snapshot, name: bytes, *, title: str | None = None)
        snapshot: any store snapshot (files or reftable); entries come from ``snapshot.reflog(name)``
        (``logs/<name>`` or the stack's log records, newest first as ``git reflog`` lists them).
Keys: escape back; up/down/pgup/pgdn/home/end move.
"""

from __future__ import annotations

from typing import Any

from refscope.backend.display import line
from rich.text import Text
from textual.app import ComposeResult

from ..models.format import bytes_text, field, git_date, hexstr, name_text
from ..widgets.rows import ListSource, RowsView
from ..workers import work
from .base import ViewScreen

OID_W = 12


def reflog_source(entries: list[Any]) -> ListSource:
    """Rows for a reflog: ``@{n}``, old -> new (abbreviated), who, when, message."""
    header = Text(f"{'#':<7} {'old':<{OID_W}}   {'new':<{OID_W}}  {'who':<36} {'when':<31} message")
    rows = []
    for i, e in enumerate(entries):
        who = line(bytes_text(e.name, 60), " <", bytes_text(e.email, 60), ">")
        t = Text(no_wrap=True)
        t.append(f"@{{{i}}}".ljust(7) + " ", style="bold")
        field(t, hexstr(e.old, OID_W), style="red" if set(e.old) == {48} else "")
        t.append(" → ", style="dim")
        field(t, hexstr(e.new, OID_W), style="red" if set(e.new) == {48} else "green")
        t.append("  ")
        field(t, line(who.ljust(36), " "))
        t.append(f"{git_date(e.time, e.tz):<31} ", style="cyan")
        field(t, bytes_text(e.message.rstrip(b"\n"), 200))
        rows.append(t)
    return ListSource(rows, header)


class ReflogScreen(ViewScreen):
    """One ref's reflog."""

    def __init__(self, snapshot: Any, name: bytes, *, title: str | None = None) -> None:
        super().__init__(title=title or "")
        self.snapshot = snapshot
        self.ref_name = name
        self.entries: list[Any] = []
        self.loaded = False

    def compose_body(self) -> ComposeResult:
        yield RowsView(id="reflog-rows")

    def on_mount(self) -> None:
        title = Text("Reflog of ")
        title.append_text(name_text(self.ref_name, "bold"))
        self.set_title(Text(self._title_text) if self._title_text else title)
        self.set_status("reading the reflog…")
        self.query_one("#reflog-rows", RowsView).focus()
        self.load()

    @work(thread=True, exclusive=True, group="reflog", description="read reflog")
    def load(self) -> None:
        entries = list(self.snapshot.reflog(self.ref_name))
        self.app.call_from_thread(self._show, entries)

    def _show(self, entries: list[Any]) -> None:
        self.entries = entries
        where = "logs/" if self.snapshot.format == "files" else "log records of the stack"
        n = len(entries)
        source = reflog_source(entries)
        if not n:  # say so in the view itself, not an empty table under a header
            message = Text("no reflog for ", style="bold")
            message.append_text(name_text(self.ref_name, "bold"))
            message.append(
                f" (nothing under {where}: git writes a reflog for branches, remote-tracking refs and"
                " HEAD when core.logAllRefUpdates is on)",
                style="dim",
            )
            source = ListSource([message], source.header)
        self.query_one("#reflog-rows", RowsView).set_source(source, cursor=0)
        if n:
            self.set_status(f"{n} entr{'y' if n == 1 else 'ies'} from {where}, newest first")
        else:
            status = Text("no reflog for ")
            status.append_text(name_text(self.ref_name))
            self.set_status(status)
        self.loaded = True
