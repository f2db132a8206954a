"""What the main screen's ref list shows: the view of a snapshot, prepared off the UI thread.

Counting a snapshot (building its row index: seconds at 1M refs) and scanning it for a filter run in the
``prepare`` thread worker; a prefix filter on an indexed snapshot is two binary searches on the UI thread.
New snapshots (the watcher, a refresh, a commit) keep the old rows shown until the worker has counted and
filtered the new one, which is then swapped in whole with the cursor on the same name; changed values are
laid over the old rows at once (``overrides``), and changed rows flash.
"""

from __future__ import annotations

import contextlib
import gc
import time
from array import array
from itertools import islice

from refscope.backend.display import escape_name, printable
from refscope.backend.errors import BadFilter, RefscopeError
from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.widgets import Input
from textual.worker import get_current_worker

from ..messages import FilterProgress, SnapshotUpdate
from ..models import filtering
from ..widgets.headline import HeadLine
from ..widgets.queue import QueuePanel
from ..widgets.status import StatusLine
from ..widgets.text_line import ProgressLine, TextLine
from ..workers import work
from .tips import TipColumns

SORTS = ("name", "version", "date")  # what ``S`` cycles through
FLASH_SECONDS = 3.0
MAX_OVERRIDES = 10_000  # changed refs laid over the old rows at once (more: wait for the swap)
PREVIEW_ROWS = 300  # rows streamed for the first screen while the snapshot is indexed


_frozen = False


def freeze_once() -> None:
    """Move what the process holds once the first view is up out of the cycle collector's reach: the
    scans and sorts make objects by the million, and each full collection walked the app's every object
    again, a stop of the UI. Once: frozen objects are never collected, later ones stay collectable."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


class RefListing(TipColumns):
    """The main screen's part that decides what the ref list shows (``MainScreen`` composes the widgets)."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = filtering.parse("")
        self.generation = 0
        self._flash_timer = None
        self.sort = "name"
        self.head_branch: bytes | None = None  # the branch HEAD points at (merged's default, ahead/behind)
        self.filter_error: str | None = None  # the typed filter's refusal (the list kept its rows)

    def is_ready(self) -> bool:
        """True when the list shows the app's newest snapshot with its row index built (counted)."""
        return self.ref_list.preview is None and self.app.ref_count() is not None

    def _commit_locked(self) -> bool:
        """True (with a notice) while a commit runs; for actions reached past ``check_action`` (palette)."""
        if self.app.commit_running:
            self.notify("a commit is running: wait for its result", severity="warning", timeout=3)
            return True
        return False

    # -- status and counts ------------------------------------------------------------------------------
    def update_status(self) -> None:
        app = self.app
        self.query_one(HeadLine).show(app.snapshot)
        self.query_one(StatusLine).show(
            repo=app.repo_path,
            snapshot=app.snapshot,
            count=app.ref_count(),
            engine=app.engine,
            live=app.live,
            error=app.store_error,
        )

    def update_count(self) -> None:
        if self.filter_error is not None:
            self.query_one("#count", TextLine).set_text(Text(self.filter_error, "bold red"))
            return
        total = self.app.ref_count()
        if self.ref_list.preview is not None or total is None:
            self.query_one("#count", TextLine).set_text(Text("counting…"))
            return
        shown = len(self.ref_list.view)
        kind = "" if not self.pattern.filtered else f" ({self.pattern.label})"
        extra = "" if self.sort == "name" else f" · by {self.sort}"
        scan = self.tips_scanned
        if scan is not None and scan[0] < scan[1]:
            extra += f" · tips {100 * scan[0] // max(1, scan[1])}%"
        self.query_one("#count", TextLine).set_text(Text(f"{shown:,} of {total:,} shown{kind}{extra}"))

    def _show_view(self, snapshot, view, keep: bytes | None = None, at: int | None = None) -> None:
        self.ref_list.facts = self.facts
        self.ref_list.by_name = self.sort == "name"
        self.ref_list.set_view(snapshot, view, keep=keep, at=at)
        self.update_count()
        self.update_status()

    def _show_preview(self, snapshot) -> None:
        """The first screenful streamed from the snapshot (no row index) while a worker counts it."""
        try:
            refs = list(islice(snapshot.iter_from(b""), PREVIEW_ROWS))
        except RefscopeError as err:
            self.app.store_error = str(err)
            refs = []
        self.ref_list.facts = self.facts
        self.ref_list.set_preview(snapshot, refs)
        self.update_count()
        self.update_status()

    # -- preparing views: counting, prefix ranges and scans off the UI thread ----------------------------
    @work(thread=True, exclusive=True, group="prepare", description="index and filter")
    def prepare(self, snapshot, pattern, generation: int, keep: bytes | None, sort: str = "name") -> None:
        """Count ``snapshot`` (building its row index) if needed, then compute ``pattern``'s view.

        Runs in a thread so neither a 1M-ref index build nor a substring scan ever blocks the UI; a newer
        request cancels this one (exclusive) and the result of a superseded generation is dropped. The
        background tip scan stands aside meanwhile (``TipFacts.first``): this is what the user waits for.
        """
        facts = self.facts
        with facts.first() if facts is not None else contextlib.nullcontext():
            self._prepare(snapshot, pattern, generation, keep, sort)

    def _prepare(self, snapshot, pattern, generation: int, keep: bytes | None, sort: str) -> None:
        app = self.app
        worker = get_current_worker()
        reports = []
        count = app.known_count(snapshot)
        if count is None:
            with app.meter.measure("index") as m:
                count = len(snapshot)
            reports.append(m.report)
        if worker.is_cancelled:
            return
        if count:
            snapshot.name_at(count - 1)  # the row index, built here: the list's first row() would on the UI
        if not pattern.filtered:
            view = range(count)
        else:
            last = [0.0]

            def progress(done: int, total: int) -> None:
                now = time.monotonic()
                if now - last[0] > 0.05:
                    last[0] = now
                    self.post_message(FilterProgress(generation, done, total))

            if pattern.kind != "prefix":
                self.post_message(FilterProgress(generation, 0, 1))
            try:
                test = self._tester(snapshot, pattern) if pattern.conditions else None
                with app.meter.measure("filter") as m:
                    view = filtering.compute(snapshot, pattern, lambda: worker.is_cancelled, progress, test)
            except BadFilter as err:  # the filter's fault or its objects' damage: on its line, rows stay
                app.call_from_thread(self._filter_failed, generation, str(err))
                return
            reports.append(m.report)
        if view is None or worker.is_cancelled:
            return
        if sort != "name" and len(view) and (sort == "version" or self.facts is not None):
            from refscope.backend.refformat.tips_view import version_order

            self.post_message(FilterProgress(generation, 0, 1))
            with app.meter.measure("sort") as m:
                if self.facts is None:  # (no repository: no objects, and no config's prerelease suffixes)
                    got = version_order(snapshot, view, lambda: worker.is_cancelled)
                else:
                    got = self.facts.order(snapshot, view, sort, lambda: worker.is_cancelled)
            reports.append(m.report)
            if self.facts is not None and self.facts.child_failed is not None:
                app.call_from_thread(self._child_failed)
            if got is None or worker.is_cancelled:
                return
            view = got if isinstance(got, array) else array("I", got)
        at = None
        if keep is not None and sort != "name":  # (the cursor's row found here, not on the UI thread)
            at = filtering.find_row(snapshot, view, keep)
        app.call_from_thread(self._prepared, generation, snapshot, count, view, keep, reports, at)

    def _tester(self, snapshot, pattern):
        """The backend's test of ``pattern``'s conditions (merged, age); in the worker (it may walk)."""
        from refscope.backend.refformat.tip_filters import tester

        if self.facts is None:
            raise RefscopeError(None, "merged and age filters need the repository's objects")
        head = self.head_branch or b"HEAD"
        return tester(self.facts, snapshot, pattern.conditions, head)

    def _prepared(self, generation: int, snapshot, count: int, view, keep, reports, at=None) -> None:
        app = self.app
        app.note_count(snapshot, count)
        for report in reports:
            app.record_op(report)
        if generation != self.generation or snapshot is not app.snapshot:
            return
        self.query_one("#filter-progress").display = False
        if keep is None and self.ref_list.preview is not None:
            keep = self.ref_list.current_name() if self.ref_list.cursor else None
        self._show_view(snapshot, view, keep=keep, at=at)
        if self.facts is not None and self.tips_scanned is None:
            self.tips_scanned = (0, count)
            freeze_once()
            self.scan_tips(snapshot)

    def _filter_failed(self, generation: int, line: str) -> None:
        if generation != self.generation:
            return
        self.filter_error = printable(line)
        self.query_one("#filter-progress").display = False
        self.update_count()

    def _prepare_failed(self, generation: int, snapshot, line: str) -> None:
        self.app.store_error = line
        if generation == self.generation and snapshot is self.app.snapshot:
            self.query_one("#filter-progress").display = False
            if self.ref_list.preview is None:
                self._show_view(snapshot, range(0))
        self.update_count()
        self.update_status()

    def on_filter_progress(self, message: FilterProgress) -> None:
        if message.generation == self.generation and message.total:
            bar = self.query_one("#filter-progress", ProgressLine)
            bar.display = True
            bar.set_progress(message.done, message.total)

    # -- filtering --------------------------------------------------------------------------------------
    # A burst of keys (typed fast, pasted, sent by tmux) reaches the app before the widget that had focus
    # handles the first of them: a plain binding runs in that widget's turn, after the app has already
    # handed it the keys behind, so ``/refs`` ran ``r`` and ``s`` as list bindings and keys after Enter
    # still typed into the filter. The app runs priority bindings as each key arrives, and focus moves at
    # once (``set_focus``; ``Widget.focus`` queues the move behind the waiting keys), so every key lands
    # where the one before it sent the focus.
    def action_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        if self.focused is inp:  # (``has_focus`` is set later, when the widget handles its Focus event)
            raise SkipAction()  # a "/" inside the pattern
        self.set_focus(inp)

    def action_submit_filter(self) -> None:
        if self.focused is not self.query_one("#filter", Input):
            raise SkipAction()  # Enter on the list opens the ref's location
        self.set_focus(self.ref_list)

    def action_clear_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        if inp.value:
            inp.value = ""
        self.set_focus(self.ref_list)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    def apply_filter(self, text: str) -> None:
        """A new pattern: a prefix on an indexed snapshot is two binary searches here, the rest a worker's."""
        app = self.app
        self.pattern = filtering.parse(text)
        mode = self.pattern.mode
        self.query_one("#filter-label", TextLine).set_text(f"/ {mode}" if mode else "/")
        self.filter_error = None
        self.generation += 1
        if app.snapshot is None:
            return
        keep = self.ref_list.current_name()
        if self.is_ready() and self.pattern.instant and self.sort == "name":
            self.workers.cancel_group(self, "prepare")
            self.query_one("#filter-progress").display = False
            try:
                with app.meter.measure("filter") as m:
                    view = filtering.compute(app.snapshot, self.pattern)
            except RefscopeError as err:
                app.store_error = str(err)
                view = range(0)
            else:
                if self.pattern.kind == "prefix":
                    app.record_op(m.report)
            self._show_view(app.snapshot, view, keep=keep)
            return
        if self.ref_list.preview is None:
            self.query_one("#count", TextLine).set_text(Text("scanning…"))
        self.prepare(app.snapshot, self.pattern, self.generation, keep, self.sort)

    # -- sorting -------------------------------------------------------------------------------------------
    def action_cycle_sort(self) -> None:
        """``S``: name → version → committer date (newest first) → name; sorted in the prepare worker."""
        sorts = SORTS if self.facts is not None else SORTS[:2]  # (no objects: no dates)
        self.sort = sorts[(sorts.index(self.sort) + 1) % len(sorts)]
        self.apply_filter(self.query_one("#filter", Input).value)

    @work(thread=True, exclusive=True, group="context", description="read HEAD and the worktrees")
    def read_context(self, snapshot) -> None:
        """The branch HEAD points at and the branches checked out in any worktree (their marks)."""
        from refscope.backend.refformat.context import context

        if snapshot is None:
            return
        ctx = context(self.app.repo, snapshot)
        self.app.call_from_thread(self._context_read, ctx.head, set(ctx.worktrees))

    def _context_read(self, head: bytes | None, checked_out: set[bytes]) -> None:
        self.head_branch = head
        marks = {b: "+" for b in checked_out}
        if head is not None and head != b"HEAD":
            marks[head] = "*"
        self.ref_list.branch_marks = marks
        self.ref_list.refresh_rows()
        self.update_detail()

    def jump_to(self, name: bytes) -> None:
        """Put the visible cursor on ``name`` (a "lookup" operation). The filter stays when it shows
        ``name``; one that hides it is cleared, and the notice says so."""
        app = self.app
        if not self.is_ready():
            self.notify("still indexing: try again in a moment", severity="warning", timeout=2)
            return
        with app.meter.measure("lookup") as m:
            found = app.snapshot.lookup(name) if app.snapshot is not None else None
        app.record_op(m.report)
        if found is None:
            self.notify(f"no ref {escape_name(name)}", severity="warning", markup=False)
            return
        ref_list = self.ref_list
        if self.pattern.filtered and not self._shows(name):
            hidden_by = self.pattern.text
            self.query_one("#filter", Input).value = ""
            self.apply_filter("")
            self.notify(
                f"filter {hidden_by!r} cleared: it hides {escape_name(name)}", timeout=4, markup=False
            )
        self._show_view(app.snapshot, ref_list.view, keep=name)
        self.set_focus(ref_list)

    def _shows(self, name: bytes) -> bool:
        """True when the list's current view (the applied filter) has a row for ``name``."""
        ref_list = self.ref_list
        view = ref_list.view
        if ref_list.preview is not None or not len(view):
            return False
        at = filtering.index_of(ref_list.snapshot, view, name, ref_list.by_name)
        return ref_list.snapshot.name_at(view[at]) == name

    # -- following snapshots ----------------------------------------------------------------------------
    def _on_snapshot_changed(self, update: SnapshotUpdate) -> None:
        """A new snapshot (watcher, refresh, commit): keep showing the old one until the new one is
        counted and filtered in the worker, then swap it in with the cursor on the same name."""
        self.generation += 1
        if update.snapshot is not None:
            self.prepare(
                update.snapshot, self.pattern, self.generation, self.ref_list.current_name(), self.sort
            )
        else:
            self._show_view(None, range(0))
        diff = update.diff
        if diff is not None:
            changed = {*diff.added, *diff.changed}
            self._show_changed_values(update.snapshot, diff.changed)
            if changed:
                self.ref_list.set_changed(changed)
                if self._flash_timer is not None:
                    self._flash_timer.stop()
                self._flash_timer = self.set_timer(FLASH_SECONDS, lambda: self.ref_list.set_changed(set()))
        self.query_one(QueuePanel).sync()
        self.ref_list.refresh_rows()
        self.update_status()
        if self.facts is not None and update.snapshot is not None:
            self.tips_scanned = None  # the new snapshot's refs get their scan (read tips are cached)
            self.read_context(update.snapshot)

    def _show_changed_values(self, snapshot, names) -> None:
        """Values that changed show at once: looked up by name in the new snapshot (no row index needed)
        and laid over the rows still shown from the previous one until the worker swaps the new one in."""
        if snapshot is None or not names or len(names) > MAX_OVERRIDES:
            return
        overrides = {}
        try:
            for name in names:
                ref = snapshot.lookup(name)
                if ref is not None:
                    overrides[name] = ref
        except RefscopeError:
            return
        self.ref_list.overrides.update(overrides)

    def action_refresh(self) -> None:
        if self.app.store is not None:
            self.refresh_store()

    @work(thread=True, exclusive=True, group="refresh", description="refresh")
    def refresh_store(self) -> None:
        app = self.app
        with app.meter.measure("refresh") as m:
            snapshot = app.store.refresh(app.snapshot) if app.snapshot is not None else app.store.snapshot()
        app.call_from_thread(self._refreshed, snapshot, m.report)

    def _store_failed(self, line: str) -> None:
        self.app.store_error = line
        self.update_status()

    def _refreshed(self, snapshot, report) -> None:
        self.app.record_op(report)
        if self.app.store_read_again("refresh"):  # (an unchanged store gives the same snapshot)
            self.update_status()
        if snapshot is not self.app.snapshot:
            self.app.set_snapshot(snapshot, "refresh")
        else:
            self.app.queue.recheck(snapshot)
            self.query_one(QueuePanel).sync()
            self.ref_list.refresh_rows()
