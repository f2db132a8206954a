"""The help screen (``?``): every key, what it does, and how filters are read."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("Browsing", ""),
    ("↑ ↓ j k", "move the cursor one row (every list: refs, packed-refs, table, reflog, stack)"),
    ("PgUp PgDn", "move the cursor one page"),
    ("Home End g G", "first / last row"),
    ("/", "filter: prefix refs/… (instant), substring, or glob * ? [ ] (background scan)"),
    ("/ (views)", "search the view's records: text (substring) or git glob; enter lands on the first match"),
    ("n N (views)", "next / previous match (packed-refs before a search: next / previous shadowed record)"),
    (
        "/ merged >90d",
        "terms on the tip, with a name pattern: merged[:REF] (default HEAD's branch), >90d / <2w; ! negates",
    ),
    ("S", "sort: name → version → committer date (newest first)"),
    ("d", "dates: relative ↔ absolute ISO"),
    ("escape", "clear the filter / leave a view"),
    ("ctrl+p", "command palette: jump to a ref, switch view, switch engine"),
    ("Queue and commit", ""),
    ("space", "mark / unmark the ref under the cursor for deletion (records the value it was seen at)"),
    ("a", "mark every ref the filter shows (asks above 1,000)"),
    (
        "n / t",
        "queue a new branch / tag at the ref under the cursor (asks its name; a branch takes a tag's commit)",
    ),
    ("R", "queue a rename of the ref under the cursor (git branch -m: its reflog goes with it)"),
    ("M", "queue a move of the ref under the cursor to a ref name or a full object name (old value kept)"),
    (
        "u",
        "undo the queue entry of the ref under the cursor (in the queue: the one under its cursor), else the last",
    ),
    ("U", "unmark everything (empty the queue)"),
    ("tab", "move focus: list → queue → operations"),
    ("x / delete (queue)", "remove the queue entry under the cursor"),
    (
        "c",
        "commit the queue, deletions and edits, as one atomic transaction (asks: y all, d leave out stale / checked-out, o allow checked-out; Enter cancels)",
    ),
    ("w", "export a queue of deletions to a file as refscope delete --stdin lines (REF OLD_OID)"),
    ("i", "load such a file into the queue (stale values flagged)"),
    ("e", "switch engine: native ↔ git"),
    ("b", "bench the queued transaction through both engines on scratch copies"),
    ("Storage views", ""),
    ("s", "the reftable stack (or packed-refs in a files repository)"),
    ("p", "the packed-refs records"),
    ("l", "the reflog of the ref under the cursor"),
    ("enter (ref list)", "where the ref lives: its packed-refs record or its reftable table"),
    ("enter (operations)", "details of the selected operation"),
    ("↑ on the first row", "HEAD's line: l its reflog, y copy, o git log, ↓ back to the list"),
    ("Copy and open", ""),
    ("y / Y", "copy the ref's name / oid (a symref's: what it resolves to) into the clipboard"),
    ("o", "git log of the ref in git's pager ($REFSCOPE_GIT or git); the app comes back when it quits"),
    ("Other", ""),
    ("z", "hide / show the queue and operations panels (the list takes their rows)"),
    ("r", "refresh the snapshot now"),
    ("?", "this help"),
    ("q", "quit (asks when refs are queued)"),
]

FILTERS = (
    "Filters: `refs/heads/fe` is a prefix (binary search, no scan); `fix` finds names containing it; "
    "`refs/tags/v1.*` and `*wip*` are globs over the whole name (a glob not starting with refs/ matches anywhere). "
    "Scans run in the background with a progress bar; typing never waits for them. "
    "Terms separated by spaces must all hold: `refs/heads/ !merged >90d` shows the branches not merged "
    "into HEAD's branch whose tip commit is older than 90 days (units s h d w m y; m is 30 days); "
    "`merged:REF` names another ref; `a` then queues exactly what is shown. "
    "Columns: the tip's committer date, author and subject; * HEAD's branch, + checked out in a worktree."
)


def help_table() -> Group:
    """Keys in a two-column table (descriptions wrap in their own column), then the notes."""
    table = Table.grid(padding=(0, 2), expand=True)
    table.add_column(width=26, no_wrap=True)
    table.add_column(ratio=1)
    for key, what in KEYS:
        if not what:
            if table.row_count:
                table.add_row(Text(""), Text(""))
            table.add_row(Text(key, "bold underline"), Text(""))
            continue
        table.add_row(Text(key, "bold"), Text(what))
    notes = Text("\n" + FILTERS + "\n", "dim")
    notes.append(
        "\nNames are shown escaped: control bytes, C1 controls and bidi overrides appear as \\xNN / \\uNNNN.",
        "dim",
    )
    return Group(table, notes)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss(None)", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(Text("refscope — keys", "bold"), id="dialog-title")
            with VerticalScroll():
                yield Static(help_table(), id="help-text")
