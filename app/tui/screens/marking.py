"""Marking refs for deletion from the main screen: one, every shown one, none; the queue as a file.

(Creates, moves and renames are queued by ``.editing``; a ref one of them touches is not marked.)

The queue itself lives in the app (``widgets.queue.Queue``: a dict of names, judged stale against each new
snapshot); marks are drawn by the ref list from it, so toggling one repaints one line. A queue file holds
``refscope delete --stdin`` lines (``backend.queuefile``): what the TUI would commit, for the CLI.
"""

from __future__ import annotations

import os

from refscope.backend.display import line, printable
from refscope.backend.errors import RefscopeError
from refscope.backend.model import Location, Ref
from rich.text import Text

from ..widgets.headline import HeadLine
from ..widgets.queue import Entry, QueuePanel
from ..workers import failure_line, work
from .dialogs import Confirm, PathPrompt
from .listing import RefListing

LOADED = "queue file"  # the Location kind of a loaded entry whose ref is not in the snapshot
MARK_ALL_CONFIRM = 1000  # marking more than this many refs at once asks first


class Marking(RefListing):
    """The main screen's part that fills and empties the queue."""

    def action_toggle_mark(self) -> None:
        if self._commit_locked():
            return
        if isinstance(self.focused, HeadLine):
            self.notify(
                "HEAD is not a ref to queue: mark a branch in the list", severity="warning", timeout=3
            )
            return
        ref = self.ref_list.current_ref()
        if ref is None:
            return
        other = self.app.queue.claimed(ref.name)
        if other is not None and other.kind != "delete":  # space marks deletions; u undoes an edit
            self.notify(
                line(ref.name, f" is queued already ({other.kind}): u undoes that entry"),
                severity="warning",
                timeout=3,
                markup=False,
            )
            return
        self.app.queue.toggle(ref)
        self.ref_list.refresh_name(ref.name)
        self.query_one(QueuePanel).sync()
        self.ref_list.move_to(self.ref_list.cursor + 1)

    @work(exclusive=True, group="mark", description="mark all shown")
    async def action_mark_all(self) -> None:
        if self._commit_locked():
            return
        if not self.is_ready():
            self.notify("still indexing: try again in a moment", severity="warning", timeout=2)
            return
        view, snapshot = self.ref_list.view, self.app.snapshot
        n = len(view)
        if not n:
            return
        if n > MARK_ALL_CONFIRM:
            question = Text(f"Mark all {n:,} refs the filter shows?")
            if not await self.app.push_screen_wait(Confirm("Mark all shown", question, yes=f"Mark {n:,}")):
                return
        await self.mark_rows(snapshot, view).wait()

    @work(thread=True, exclusive=True, group="mark-rows", description="mark rows")
    def mark_rows(self, snapshot, view) -> None:
        with self.app.meter.measure("mark") as m:
            refs = [snapshot.row(i) for i in view]
        self.app.call_from_thread(self._marked, refs, m.report)

    def _marked(self, refs, report) -> None:
        if self.app.commit_running:  # a commit started while the rows were read: it keeps its queue
            self.notify("a commit is running: nothing marked", severity="warning", timeout=3)
            return
        added = self.app.queue.add_many(refs)
        self.app.record_op(report)
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()
        self.notify(f"queued {added:,} ref(s); {len(self.app.queue):,} in the queue", timeout=3)

    def action_unmark_all(self) -> None:
        if self._commit_locked():
            return
        self.app.queue.discard_many(list(self.app.queue))
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()

    def on_queue_panel_removed(self, message: QueuePanel.Removed) -> None:
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()

    # -- the queue as a file: ``refscope delete --stdin`` lines ------------------------------------------
    def action_export_queue(self) -> None:
        """Write the queue as ``REF OLD_OID`` lines (``REF`` alone for a symref), raw bytes, in queue order:
        what ``refscope delete --no-deref --stdin`` (the TUI's kind of transaction) commits."""
        from refscope.backend.queuefile import DEFAULT_NAME, write_file

        app = self.app
        if not app.queue:
            self.notify("the queue is empty: nothing to export", severity="warning", timeout=3)
            return
        if app.queue.edits():
            self.notify(
                "w writes delete --stdin lines: this queue also creates, moves or renames",
                severity="warning",
                timeout=4,
            )
            return
        pairs = [(e.name, e.old_oid) for e in app.queue.values()]
        symrefs = sum(1 for _n, old in pairs if old is None)

        def job(path: str) -> str:
            write_file(path, pairs)
            return path

        def done(path) -> None:
            if path is None:
                return
            n = len(pairs)
            how = "refscope delete --no-deref --stdin" if symrefs else "refscope delete --stdin"
            self.notify(
                printable(f"wrote {n:,} line{'s' if n != 1 else ''} to {path}: {how} < {path} commits them"),
                title="queue exported",
                timeout=5,
                markup=False,
            )

        n = len(pairs)
        prompt = (
            f"Write the {n:,} queued deletion{'s' if n != 1 else ''} as delete --stdin lines to "
            f"(relative to {os.getcwd()}):"
        )
        app.push_screen(PathPrompt("Export the queue", prompt, DEFAULT_NAME, job), callback=done)

    def action_load_queue(self) -> None:
        """Add the deletions of a ``delete --stdin`` file to the queue: names and oids checked as git
        checks them (the first bad line refuses the file, shown in place), each entry judged against the
        current snapshot as marked ones are (a ref that moved or is gone is flagged stale)."""
        from refscope.backend.queuefile import DEFAULT_NAME, read_file

        app = self.app
        if self._commit_locked():
            return
        snapshot = app.snapshot
        if snapshot is None:
            self.notify("no snapshot: the store could not be read", severity="error", timeout=3)
            return

        def job(path: str):
            pairs = read_file(path, snapshot.hash_name)
            return path, loaded_entries(snapshot, pairs, path)

        def done(result) -> None:
            if result is None:
                return
            path, entries = result
            if app.commit_running:  # (a commit started while the file was read: it keeps its queue)
                self.notify("a commit is running: nothing loaded", severity="warning", timeout=3)
                return
            added = app.queue.add_entries(entries)
            try:
                app.queue.recheck(app.snapshot)
            except RefscopeError as err:
                app.store_error = failure_line(err)
            self.ref_list.refresh_rows()
            self.query_one(QueuePanel).sync()
            stale = sum(1 for e in entries if app.queue.get(e.name, e).stale)
            self.notify(
                printable(
                    f"loaded {len(entries):,} line(s) from {path}: {added:,} newly queued"
                    + (f", {stale:,} stale" if stale else "")
                ),
                title="queue loaded",
                timeout=5,
                markup=False,
            )

        prompt = f"Load delete --stdin lines (REF [OLD_OID]) into the queue from (relative to {os.getcwd()}):"
        app.push_screen(PathPrompt("Load a queue file", prompt, DEFAULT_NAME, job), callback=done)


def loaded_entries(snapshot, pairs, path: str) -> list[Entry]:
    """Queue entries for the (name, old oid) pairs of a queue file, as if marked in ``snapshot``: the ref
    as it is now when the line gives no old value; otherwise the value the line expects, which the
    queue's ``recheck`` then flags stale when the ref is no longer there (or moved)."""
    out = []
    for name, old in pairs:
        now = snapshot.head() if name == b"HEAD" else snapshot.lookup(name)
        if now is not None and (old is None or (now.target is None and now.oid == old)):
            seen = now
        else:
            where = now.location if now is not None else Location(LOADED, path)
            seen = Ref(name, old, None, None, where)
        out.append(Entry(name, seen))
    return out
