"""The command palette: jump to a ref by name (prefix search on the snapshot, no scan), and the app's commands."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from refscope.backend.display import escape_name
from rich.text import Text
from textual.app import SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from ..app import RefscopeApp

MAX_HITS = 20
_ROOTS = (b"refs/heads/", b"refs/tags/", b"refs/remotes/", b"refs/")


class RefJumpProvider(Provider):
    """Typing ``feat`` offers refs/heads/feat…, refs/tags/feat…, …; typing ``refs/…`` is a plain prefix."""

    async def discover(self) -> Hits:
        yield DiscoveryHit("Jump to ref…", lambda: None, help="type a ref name (prefix) to jump to it")

    async def search(self, query: str) -> Hits:
        snapshot = getattr(self.app, "snapshot", None)
        query = query.strip()
        if snapshot is None or not query or self.app.ref_count() is None:
            return  # not indexed yet: prefix searches would build the row index on the UI thread
        raw = query.encode("utf-8", "surrogateescape")
        prefixes = [raw] if raw.startswith(b"refs/") else [root + raw for root in _ROOTS]
        seen = 0
        for prefix in prefixes:
            try:
                rows = snapshot.prefix_range(prefix)
            except Exception:
                return
            for i in rows[: MAX_HITS - seen]:
                name = snapshot.name_at(i)
                display = Text("jump: ")
                display.append(escape_name(name), "bold")
                yield Hit(1.0 - seen / 100, display, partial(self.app.jump_to, name), help=f"row {i:,}")
                seen += 1
            if seen >= MAX_HITS:
                return


def system_commands(app: RefscopeApp) -> Iterator[SystemCommand]:
    """The app's own entries of the command palette (beside Textual's: theme, keys, quit...)."""
    other = "git" if app.engine == "native" else "native"
    yield SystemCommand(
        f"Engine: switch to {other}", "Commit through the other engine", app.action_switch_engine
    )
    yield SystemCommand("View: main", "The ref list, queue and operations", app.to_main)
    for name, help_text in (
        ("stack", "The reftable stack (or packed-refs in a files repository)"),
        ("packed", "The packed-refs records"),
        ("reflog", "The reflog of the ref under the cursor"),
    ):
        yield SystemCommand(f"View: {name}", help_text, lambda n=name: app.action_view(n))
    yield SystemCommand("Filter refs", "Focus the filter", lambda: app.main_action("filter"))
    for title, help_text, action in (
        ("Edit: new branch", "Queue a branch at the ref under the cursor (n)", "new_branch"),
        ("Edit: new tag", "Queue a lightweight tag at the ref under the cursor (t)", "new_tag"),
        ("Edit: rename ref", "Queue a rename of the ref under the cursor, its reflog kept (R)", "rename"),
        ("Edit: move ref", "Queue a move of the ref under the cursor to another commit (M)", "move"),
        ("Queue: undo", "Take back the queued entry under the cursor, else the last one (u)", "undo"),
        ("Queue: clear", "Take back every queued entry (U)", "unmark_all"),
        ("Sort: next order", "Sort by name, version or committer date (S)", "cycle_sort"),
        ("Dates: relative / ISO", "Show the tip dates relative or absolute (d)", "toggle_dates"),
    ):
        yield SystemCommand(title, help_text, lambda a=action: app.main_action(a))
    yield SystemCommand(
        "Commit queue",
        "Commit every queued edit and deletion in one transaction",
        lambda: app.main_action("commit"),
    )
    yield SystemCommand(
        "Bench queue",
        "Run the queued transaction through both engines",
        lambda: app.main_action("bench"),
    )
    yield SystemCommand("Refresh", "Re-read the ref storage now", lambda: app.main_action("refresh"))
    yield SystemCommand(
        "Queue: export to a file",
        "Write the queue as refscope delete --stdin lines (REF OLD_OID)",
        lambda: app.main_action("export_queue"),
    )
    yield SystemCommand(
        "Queue: load from a file",
        "Add the refs of a refscope delete --stdin file to the queue",
        lambda: app.main_action("load_queue"),
    )
    yield SystemCommand(
        "Reflog of HEAD", "HEAD's reflog (git keeps it apart from refs/)", lambda: app.head_reflog()
    )
    for label, what in (("name", "name"), ("oid", "oid")):
        yield SystemCommand(
            f"Copy ref {label}",
            f"The {label} of the ref under the cursor, into the clipboard (y / Y)",
            lambda w=what: app.call_on_main(lambda s: s.action_copy(w)),
        )
    yield SystemCommand(
        "Open in git log",
        "git log of the ref under the cursor, in git's pager (o)",
        lambda: app.call_on_main(lambda s: s.action_git_log()),
    )
    yield SystemCommand(
        "Toggle panels",
        "Hide or show the queue and operations panels (z)",
        lambda: app.call_on_main(lambda s: s.action_toggle_panels()),
    )
