"""The main screen: the ref list with its filter, the queue, the operations panel, the status line.

Disk work runs in thread workers (filter scans, refresh, commit, bench); they talk back by messages or
``call_from_thread``, and whatever they raise comes back to ``show_failure`` (``..workers``), shown in
place. The screen follows ``app.snapshot_changed``: new snapshots are swapped in whole, the cursor stays on
the same name, and changed rows flash.

One commit runs at a time: while it runs, what would change it (commit, bench, marking, the engine) is
disabled, a progress bar follows its phases, and the queue waits for its result before judging staleness
(the snapshots seen meanwhile show the commit's own intermediate states).
"""

from __future__ import annotations

import os
import time
from itertools import islice

from refscope.backend.display import escape_name
from refscope.backend.errors import RefscopeError
from refscope.backend.model import PACKED, TABLE, Location, Ref
from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

from ..messages import CommitProgress, FilterProgress, SnapshotUpdate
from ..widgets import columns, filtering
from ..widgets.filter_input import FilterInput
from ..widgets.headline import HeadLine
from ..widgets.ops import OpsPanel
from ..widgets.queue import Entry, QueuePanel
from ..widgets.reflist import RefList
from ..widgets.status import StatusLine
from ..workers import Failure, failure_line, work
from .dialogs import CommitPlan, Confirm, ConfirmCommit, PathPrompt
from .dialogs import Message as MessageDialog
from .operations import BenchScreen, OperationScreen

LOADED = "queue file"  # the Location kind of a loaded entry whose ref is not in the snapshot
PANELS_ROWS = 9  # the queue and operations panels' height (5 below PANELS_FULL_FROM rows; z hides them)
PANELS_FULL_FROM = 32
MARK_ALL_CONFIRM = 1000  # marking more than this many refs at once asks first
FLASH_SECONDS = 3.0
BENCH_RUNS = 3
MAX_OVERRIDES = 10_000  # changed refs laid over the old rows at once (more: wait for the swap)
PREVIEW_ROWS = 300  # rows streamed for the first screen while the snapshot is indexed
PRECHECK_MIN = 1 << 20  # packed-refs from this size are checked while the commit dialog is open
QUEUE_CHUNK = 10_000  # deletions handed to the transaction at a time (progress between chunks)
# the commit's steps as the progress bar counts them: its phases before the lock are one step
COMMIT_STEPS = {"queue": 0, "check packed-refs": 1, "read": 1, "commit": 2, "refresh": 3}
COMMIT_TOTAL = 4
# bindings that would change a running commit (its queue, its engine) or start another one
COMMIT_LOCKED = frozenset({"commit", "bench", "toggle_mark", "mark_all", "unmark_all", "load_queue"})


def make_view(app, name: str):
    """A storage view screen (owned by the views issue) for ``name``: "stack", "packed" or "reflog".

    Views follow live changes through ``app.snapshot_changed`` when the app watches; ``escape`` comes back.
    Returns None (with a notice) when the view does not apply.
    """
    snapshot = app.snapshot
    if snapshot is None:
        app.notify("no snapshot: the store could not be read", severity="error", timeout=3)
        return None
    main = app.screen if isinstance(app.screen, MainScreen) else None
    current = main.current_name() if main is not None else None
    follow = app.watch_enabled
    if name == "stack":
        from .stack import storage_screen

        return storage_screen(app.store, snapshot, app.meter, follow=follow, focus_name=current)
    if name == "packed":
        if snapshot.format != "files":
            app.notify("a reftable repository has no packed-refs: s shows its stack", timeout=3)
            return None
        from .packed import PackedScreen

        return PackedScreen(snapshot, current, store=app.store, follow=follow)
    if name == "reflog":
        if current is None:
            app.notify("no ref under the cursor", severity="warning", timeout=3)
            return None
        from .reflog import ReflogScreen

        return ReflogScreen(snapshot, current)
    app.notify(f"no view named {name}", severity="warning", timeout=3)
    return None


class ListHeader(Static):
    """The column titles, laid out as the list's rows are (``columns.layout`` with the list's needs)."""

    DEFAULT_CSS = "ListHeader { height: 1; color: $text-muted; text-style: bold; background: $surface; }"

    needs: columns.Needs = columns.NONE
    list_width: int = 0  # the list's content width (without its scrollbar), once known

    def on_resize(self) -> None:
        self.update(columns.header(self.list_width or self.size.width, needs=self.needs))

    def set_layout(self, needs: columns.Needs, width: int) -> None:
        self.needs, self.list_width = needs, width
        self.update(columns.header(width or self.size.width, needs=needs))


class MainScreen(Screen):
    BINDINGS = [
        # The filter's keys are priority bindings, run by the app as each key arrives (see action_filter).
        Binding("slash", "filter", "Filter", priority=True),
        Binding("space", "toggle_mark", "Mark"),
        Binding("a", "mark_all", "Mark all"),
        Binding("u", "unmark_all", "Unmark all", show=False),
        Binding("c", "commit", "Commit"),
        Binding("b", "bench", "Bench"),
        Binding("w", "export_queue", "Export queue", show=False),
        Binding("i", "load_queue", "Load queue", show=False),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("s", "app.view('stack')", "Stack"),
        Binding("p", "app.view('packed')", "Packed", show=False),
        Binding("l", "app.view('reflog')", "Reflog", show=False),
        Binding("enter", "open_location", "Where it lives", show=False),
        Binding("y", "copy('name')", "Copy name"),
        Binding("Y", "copy('oid')", "Copy oid", show=False),
        Binding("o", "git_log", "git log"),
        Binding("z", "toggle_panels", "Panels"),
        Binding("escape", "clear_filter", "Clear filter", show=False, priority=True),
        Binding("enter", "submit_filter", show=False, priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pattern = filtering.parse("")
        self.generation = 0
        self._flash_timer = None
        self._refresh_error: str | None = None  # what the last refresh failed with, until one succeeds
        self._committing = 0  # deletions in the running commit (the queue may hold more: left out)

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="filter-bar"):
            yield Label("/", id="filter-label")
            yield FilterInput(placeholder=filtering.PLACEHOLDER, id="filter")
            yield ProgressBar(total=100, show_eta=False, show_percentage=True, id="filter-progress")
            yield Label("", id="count")
        yield HeadLine(id="head-line")
        yield ListHeader(id="list-header")
        yield RefList(queue=self.app.queue, id="refs")
        with Horizontal(id="commit-bar"):
            yield Label("", id="commit-phase")
            yield ProgressBar(total=COMMIT_TOTAL, show_eta=False, show_percentage=False, id="commit-progress")
        with Horizontal(id="panels"):
            yield QueuePanel(self.app.queue, id="queue")
            yield OpsPanel(id="ops")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        app = self.app
        app.snapshot_changed.subscribe(self, self._on_snapshot_changed)
        app.op_recorded.subscribe(self, self.query_one(OpsPanel).add)
        for report in app.reports:
            self.query_one(OpsPanel).add(report)
        self.watch(app, "engine", lambda _: self.update_status())
        self.watch(app, "live", lambda _: self.update_status())
        self.query_one("#filter-progress").display = False
        self.query_one("#commit-bar").display = app.commit_running
        self.query_one(QueuePanel).sync()
        self.query_one(OpsPanel).border_title = f"operations · {len(app.reports)}"
        self.query_one(RefList).focus()
        if app.snapshot is not None:
            self._show_preview(app.snapshot)
        else:
            self._show_view(None, range(0))
        # index after the first paint: a CPU-bound worker would otherwise hold the GIL during it
        self.call_after_refresh(self._first_painted)

    def _first_painted(self) -> None:
        app = self.app
        app.first_paint = time.perf_counter()
        if app.snapshot is not None:
            self.prepare(app.snapshot, self.pattern, self.generation, None)

    @property
    def ref_list(self) -> RefList:
        return self.query_one(RefList)

    def is_ready(self) -> bool:
        """True when the list shows the app's newest snapshot with its row index built (counted)."""
        return self.ref_list.preview is None and self.app.ref_count() is not None

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
        total = self.app.ref_count()
        if self.ref_list.preview is not None or total is None:
            self.query_one("#count", Label).update(Text("counting…"))
            return
        shown = len(self.ref_list.view)
        kind = "" if self.pattern.kind == "all" else f" ({self.pattern.label})"
        self.query_one("#count", Label).update(Text(f"{shown:,} of {total:,} shown{kind}"))

    def _show_view(self, snapshot, view, keep: bytes | None = None) -> None:
        self.ref_list.set_view(snapshot, view, keep=keep)
        self.update_count()
        self.update_status()

    def _show_preview(self, snapshot) -> None:
        """The first screenful streamed from the snapshot (no row index) while a worker counts it."""
        try:
            refs = list(islice(snapshot.iter_from(b""), PREVIEW_ROWS))
        except RefscopeError as err:
            self.app.store_error = str(err)
            refs = []
        self.ref_list.set_preview(snapshot, refs)
        self.update_count()
        self.update_status()

    # -- preparing views: counting, prefix ranges and scans off the UI thread ----------------------------
    @work(thread=True, exclusive=True, group="prepare", description="index and filter")
    def prepare(self, snapshot, pattern, generation: int, keep: bytes | None) -> None:
        """Count ``snapshot`` (building its row index) if needed, then compute ``pattern``'s view.

        Runs in a thread so neither a 1M-ref index build nor a substring scan ever blocks the UI; a newer
        request cancels this one (exclusive) and the result of a superseded generation is dropped.
        """
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
        if pattern.kind == "all":
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
            with app.meter.measure("filter") as m:
                view = filtering.compute(snapshot, pattern, lambda: worker.is_cancelled, progress)
            reports.append(m.report)
        if view is None or worker.is_cancelled:
            return
        app.call_from_thread(self._prepared, generation, snapshot, count, view, keep, reports)

    def _prepared(self, generation: int, snapshot, count: int, view, keep, reports) -> None:
        app = self.app
        app.note_count(snapshot, count)
        for report in reports:
            app.record_op(report)
        if generation != self.generation or snapshot is not app.snapshot:
            return
        self.query_one("#filter-progress").display = False
        if keep is None and self.ref_list.preview is not None:
            keep = self.ref_list.current_name() if self.ref_list.cursor else None
        self._show_view(snapshot, view, keep=keep)

    def _prepare_failed(self, generation: int, snapshot, line: str) -> None:
        self.app.store_error = line
        if generation == self.generation and snapshot is self.app.snapshot:
            self.query_one("#filter-progress").display = False
            if self.ref_list.preview is None:
                self._show_view(snapshot, range(0))
        self.update_count()
        self.update_status()

    def on_ref_list_layout_changed(self, message: RefList.LayoutChanged) -> None:
        self.query_one(ListHeader).set_layout(message.needs, self.ref_list.scrollable_content_region.width)

    def on_filter_progress(self, message: FilterProgress) -> None:
        if message.generation == self.generation and message.total:
            bar = self.query_one("#filter-progress", ProgressBar)
            bar.display = True
            bar.update(total=message.total, progress=message.done)

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
        """A new pattern: a prefix on an indexed snapshot is two binary searches right here; anything
        else (a scan, or a snapshot still being indexed) goes to the ``prepare`` worker."""
        app = self.app
        self.pattern = filtering.parse(text)
        mode = "" if self.pattern.kind == "all" else f" {self.pattern.label}"
        self.query_one("#filter-label", Label).update(f"/{mode}")
        self.generation += 1
        if app.snapshot is None:
            return
        keep = self.ref_list.current_name()
        if self.is_ready() and self.pattern.instant:
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
            self.query_one("#count", Label).update(Text("scanning…"))
        self.prepare(app.snapshot, self.pattern, self.generation, keep)

    # -- following snapshots ----------------------------------------------------------------------------
    def _on_snapshot_changed(self, update: SnapshotUpdate) -> None:
        """A new snapshot (watcher, refresh, commit): keep showing the old one until the new one is
        counted and filtered in the worker, then swap it in with the cursor on the same name."""
        self.generation += 1
        if update.snapshot is not None:
            self.prepare(update.snapshot, self.pattern, self.generation, self.ref_list.current_name())
        else:
            self._show_view(None, range(0))
        diff = update.diff
        if diff is not None:
            changed = set(getattr(diff, "added", ()) or ()) | set(getattr(diff, "changed", ()) or ())
            self._show_changed_values(update.snapshot, getattr(diff, "changed", ()) or ())
            if changed:
                self.ref_list.set_changed(changed)
                if self._flash_timer is not None:
                    self._flash_timer.stop()
                self._flash_timer = self.set_timer(FLASH_SECONDS, lambda: self.ref_list.set_changed(set()))
        self.query_one(QueuePanel).sync()
        self.ref_list.refresh_rows()
        self.update_status()

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
        if self._refresh_error is not None and self.app.store_error == self._refresh_error:
            self.app.store_error = None  # the store reads again (an unchanged one gives the same snapshot)
            self.update_status()
        self._refresh_error = None
        if snapshot is not self.app.snapshot:
            self.app.set_snapshot(snapshot, "refresh")
        else:
            self.app.queue.recheck(snapshot)
            self.query_one(QueuePanel).sync()
            self.ref_list.refresh_rows()

    # -- marking ----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While a commit runs, what would change it or start another is shown disabled (None)."""
        if action in COMMIT_LOCKED and self.app.commit_running:
            return None
        return True

    def _commit_locked(self) -> bool:
        """True (with a notice) while a commit runs; for actions reached past ``check_action`` (palette)."""
        if self.app.commit_running:
            self.notify("a commit is running: wait for its result", severity="warning", timeout=3)
            return True
        return False

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
        if self.pattern.kind != "all" and not self._shows(name):
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
        at = filtering.index_of(ref_list.snapshot, view, name)
        return ref_list.snapshot.name_at(view[at]) == name

    # -- commit -----------------------------------------------------------------------------------------
    def commit_plan(self, entries=None) -> CommitPlan:
        """What the confirmation warns about for ``entries`` (the queue by default). Reads the worktrees and
        walks the snapshot's symrefs (``txn.dangling_symrefs``): called off the UI thread (``make_plan``)."""
        from refscope.backend.txn import dangling_symrefs

        app = self.app
        snapshot = app.snapshot
        if entries is None:
            entries = list(app.queue.values())
        queued = {e.name for e in entries}
        # A check that cannot be made fails the plan (shown by the worker, no dialog): a dialog that
        # silently lacked the checked-out or dangling warnings would be worse than none.
        head_branch = None
        head = snapshot.head() if snapshot is not None else None
        if head is not None and head.target is not None and head.target in queued:
            head_branch = head.target
        checked_out = [(b, path) for b, path in _worktree_heads(app.repo) if b in queued]
        dangling = dangling_symrefs(snapshot, queued) if snapshot is not None else []
        return CommitPlan(
            count=len(entries),
            engine=app.engine,
            stale=[e.name for e in entries if e.stale],
            checked_out=checked_out,
            head_branch=head_branch,
            symrefs=[(e.name, e.seen.target) for e in entries if e.seen.target is not None],
            tags=[e.name for e in entries if e.name.startswith(b"refs/tags/")],
            # HEAD's own dangling is the warning about HEAD's branch
            dangling=[(s, t) for s, t in dangling if s != b"HEAD"],
            stash=b"refs/stash" in queued,
            notes=[e.name for e in entries if e.name.startswith(b"refs/notes/")],
            head_itself=b"HEAD" in queued,
            format=getattr(snapshot, "format", "files"),
        )

    @work(thread=True, exclusive=True, group="commit-plan", description="check the queue")
    def make_plan(self, entries) -> CommitPlan:
        return self.commit_plan(entries)

    @work(exclusive=True, group="commit-dialog", description="commit dialog")
    async def action_commit(self) -> None:
        app = self.app
        if self._commit_locked():
            return
        if not app.queue:
            self.notify("the queue is empty: space marks a ref", severity="warning", timeout=3)
            return
        if app.store is None:
            self.notify("no store to commit to", severity="error")
            return
        packed = getattr(app.snapshot, "packed", None)
        if app.engine == "native" and packed is not None and packed.size >= PRECHECK_MIN:
            self.precheck(packed)
        plan = await self.make_plan(list(app.queue.values())).wait()
        if plan is None:  # (its failure is shown)
            return
        choice = await app.push_screen_wait(ConfirmCommit(plan))
        if choice is None:
            return
        if self._commit_locked():  # (another dialog's commit started first)
            return
        entries = [e for e in app.queue.values() if e.name not in choice.left_out]
        if not entries:
            self.notify("nothing left to commit", severity="warning", timeout=3)
            return
        app.begin_commit()
        self._committing = len(entries)
        self._commit_progress("queue", 0)
        self.commit(entries, app.engine, app.snapshot, choice.allow_checked_out)

    @work(thread=True, exclusive=True, group="precheck", description="check packed-refs")
    def precheck(self, packed) -> None:
        """Check the packed-refs a native commit rewrites while the user reads the confirmation: ~0.65 s for
        a million records here, which the commit then finds done (a file that changed meanwhile it checks
        itself). A damaged file is left for the commit to refuse, with its message."""
        app = self.app
        try:
            with app.meter.measure("check packed-refs") as m:
                packed.validate()
        except RefscopeError:
            return
        app.call_from_thread(app.record_op, m.report)

    @work(thread=True, exclusive=True, group="commit", description="commit")
    def commit(self, entries, engine: str, snapshot, allow_checked_out: bool = False) -> None:
        """The queue (or the part of it the user chose) as one transaction. Started by ``action_commit``
        with the queue held; whatever happens, the result (or the refusal, or the failure) arrives on the UI
        thread, which ends the hold. Meanwhile the watcher does not rescan the transaction's own locks
        (``own_transaction``). Checked-out branches are deleted only when the user allowed it."""
        from refscope.backend.txn import Transaction

        app = self.app
        with app.own_transaction() as adopt:
            txn = Transaction(
                app.store,
                engine=engine,
                no_deref=True,
                allow_checked_out=allow_checked_out,
                snapshot=snapshot,
            )
            n = len(entries)
            for start in range(0, n, QUEUE_CHUNK):  # (200k names take seconds to check: show them going)
                chunk = entries[start : start + QUEUE_CHUNK]
                txn.delete_many([(entry.name, entry.old_oid) for entry in chunk])
                self.post_message(CommitProgress("queue", (start + len(chunk)) / n))
            result = txn.commit(on_phase=lambda phase: self.post_message(CommitProgress(phase, 0)))
            self.post_message(CommitProgress("refresh", 0))
            try:
                fresh = app.store.refresh(app.snapshot)
            except RefscopeError as err:  # committed all the same: the result says so, the status says this
                fresh = None
                app.call_from_thread(self._store_failed, failure_line(err))
            adopt(fresh)
        app.call_from_thread(self._committed, result, fresh)

    def on_commit_progress(self, message: CommitProgress) -> None:
        if self.app.commit_running:
            self._commit_progress(message.phase, message.done)

    def _commit_progress(self, phase: str, done: float) -> None:
        bar = self.query_one("#commit-bar")
        bar.display = True
        step = COMMIT_STEPS.get(phase, 0)
        self.query_one("#commit-progress", ProgressBar).update(progress=step + done)
        n = self._committing
        self.query_one("#commit-phase", Label).update(
            Text(f"committing {n:,} deletion{'s' if n != 1 else ''} ({self.app.engine}): {phase}…")
        )

    def _commit_ended(self, snapshot=None) -> None:
        """The commit's result (or refusal, or failure) is in: release the queue and judge it against the
        newest snapshot (``snapshot``, read once the commit returned, when it is new)."""
        app = self.app
        app.end_commit()
        self.query_one("#commit-bar").display = False
        if snapshot is not None and snapshot is not app.snapshot:
            app.set_snapshot(snapshot, "commit")  # (which rechecks the queue)
        elif app.snapshot is not None:
            try:
                app.queue.recheck(app.snapshot)
            except RefscopeError as err:
                app.store_error = failure_line(err)
        self.query_one(QueuePanel).sync()
        self.ref_list.refresh_rows()
        self.update_status()

    def _commit_refused(self, err: Exception) -> None:
        """A refusal (a typed error before anything was written): its line, and the queue as it was."""
        self._commit_ended()
        body = Text()
        body.append(failure_line(err), "bold")
        body.append(f"\n\nNothing was changed. The queue is kept ({len(self.app.queue):,} entries).", "dim")
        self.app.push_screen(MessageDialog("commit refused", body, error=True))

    def _commit_failed(self, line: str) -> None:
        """A commit that raised something other than a refusal (a full disk, a bug): what happened, and
        the disk re-read, so that the list and the queue show what the commit did or did not do."""
        self._commit_ended()
        body = Text()
        body.append(line, "bold")
        body.append(
            "\n\nThe commit did not finish. The list and the queue are re-read from the disk "
            f"({len(self.app.queue):,} entries queued).",
            "dim",
        )
        self.app.push_screen(MessageDialog("commit failed", body, error=True))
        self.action_refresh()

    def _committed(self, result, snapshot) -> None:
        app = self.app
        report = app.meter.adopt(result.report)
        app.record_op(report)
        if result.committed:
            app.queue.discard_many(result.deleted)
        self._commit_ended(snapshot)
        header = Text(
            f"{'committed' if result.committed else 'not committed'}: {len(result.deleted):,} ref(s) deleted "
            f"with the {result.engine} engine\n",
            "bold green" if result.committed else "bold red",
        )
        phases = [app.meter.adopt(p) for p in result.phases]
        app.push_screen(OperationScreen(report, title="commit result", header=header, phases=phases))

    # -- the queue as a file: ``refscope delete --stdin`` lines ------------------------------------------
    def action_export_queue(self) -> None:
        """Write the queue as ``REF OLD_OID`` lines (``REF`` alone for a symref), raw bytes, in queue order:
        what ``refscope delete --no-deref --stdin`` (the TUI's kind of transaction) commits."""
        from refscope.backend.queuefile import DEFAULT_NAME, write_file

        app = self.app
        if not app.queue:
            self.notify("the queue is empty: nothing to export", severity="warning", timeout=3)
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
                Text(f"wrote {n:,} line{'s' if n != 1 else ''} to {path}: {how} < {path} commits them"),
                title="queue exported",
                timeout=5,
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
                Text(
                    f"loaded {len(entries):,} line(s) from {path}: {added:,} newly queued"
                    + (f", {stale:,} stale" if stale else "")
                ),
                title="queue loaded",
                timeout=5,
            )

        prompt = f"Load delete --stdin lines (REF [OLD_OID]) into the queue from (relative to {os.getcwd()}):"
        app.push_screen(PathPrompt("Load a queue file", prompt, DEFAULT_NAME, job), callback=done)

    # -- operations -------------------------------------------------------------------------------------
    def on_ops_panel_selected(self, message: OpsPanel.Selected) -> None:
        self.app.push_screen(OperationScreen(message.report))

    def action_bench(self) -> None:
        app = self.app
        if self._commit_locked():
            return
        if not app.queue:
            self.notify(
                "the queue is empty: bench runs the queued transaction", severity="warning", timeout=3
            )
            return
        if app.repo is None:
            self.notify("no repository to bench", severity="error")
            return
        self.notify("bench: running both engines on scratch copies…", timeout=3)
        self.bench([(e.name, e.old_oid) for e in app.queue.values() if e.seen.target is None])

    @work(thread=True, exclusive=True, group="bench", description="bench")
    def bench(self, deletions: list[tuple[bytes, bytes | None]]) -> None:
        """``refscope bench`` for the queue: never touches the repository (scratch copies only)."""
        from refscope.backend import bench
        from refscope.backend.engines.git import git_binary

        app = self.app
        result = bench.run_bench(app.repo, deletions, [git_binary()], runs=BENCH_RUNS, count_refs=False)
        body = Text(bench.format_table(result), no_wrap=True)
        app.call_from_thread(app.push_screen, BenchScreen(body))

    # -- failures of the workers above (``..workers``): shown where the job shows its result -----------
    def show_failure(self, failure: Failure) -> None:
        """An error that names no file of its own is about the repository (as a refusal of the whole
        transaction is: ``Transaction._where``)."""
        app = self.app
        line = failure_line(failure.error, app.repo.gitdir if app.repo is not None else app.repo_path)
        group = failure.group
        if group == "commit":
            if failure.expected:
                self._commit_refused(failure.error)
            else:
                self._commit_failed(line)
        elif group == "prepare":
            snapshot, _pattern, generation, _keep = failure.args
            self._prepare_failed(generation, snapshot, line)
        elif group == "bench":  # scratch copies or git failing: the bench screen says so
            verb = "refused" if failure.expected else "failed"
            app.push_screen(BenchScreen(Text(f"bench {verb}: {line}", "bold red")))
        elif group == "refresh":
            self._refresh_error = line
            self._store_failed(line)
        else:  # marking, the dialogs, the check of packed-refs: the status line and a notice
            self._store_failed(line)
            self.notify(line, title=f"{failure.what} failed", severity="error", markup=False)

    def action_open_location(self) -> None:
        """enter on a ref: its packed-refs record, or the reftable table holding it (the storage views)."""
        ref = self.ref_list.current_ref()
        if ref is None:
            return
        loc = ref.location
        if loc.kind == PACKED:
            self.app.action_view("packed")
        elif loc.kind == TABLE:
            base = os.path.basename(loc.file)
            tables = getattr(self.app.snapshot, "tables", None) or []
            table = next((t for t in tables if os.path.basename(getattr(t, "path", "")) == base), None)
            if table is None:
                self.notify(f"table {base} is no longer in the stack", severity="warning", timeout=3)
                return
            from .table import TableScreen

            self.app.push_screen(TableScreen(table, ref.name, loc.offset))
        else:
            where = escape_name(os.fsencode(loc.file))
            self.notify(Text(f"loose ref: {where}"), title="where it lives", timeout=4)

    # -- HEAD, copy, git log, panels ---------------------------------------------------------------------
    def current_name(self) -> bytes | None:
        """The ref the keys act on: HEAD when its line has the focus, else the one under the cursor."""
        if isinstance(self.focused, HeadLine):
            return HeadLine.name_bytes
        return self.ref_list.current_name()

    def _current_ref(self):
        if isinstance(self.focused, HeadLine):
            try:
                return self.app.snapshot.head() if self.app.snapshot is not None else None
            except RefscopeError:
                return None
        return self.ref_list.current_ref()

    def action_focus_head(self) -> None:
        self.set_focus(self.query_one(HeadLine))

    def action_focus_list(self) -> None:
        self.set_focus(self.ref_list)

    def on_ref_list_above_top(self, message: RefList.AboveTop) -> None:
        self.action_focus_head()

    def action_copy(self, what: str) -> None:
        """``y`` the name, ``Y`` the oid (a symref's: what it resolves to) into the clipboard (OSC 52)."""
        from refscope.backend.display import clipboard_text

        ref = self._current_ref()
        if ref is None:
            self.notify("no ref under the cursor", severity="warning", timeout=2)
            return
        if what == "name":
            value = ref.name
        else:
            value = ref.oid
            if value is None and ref.target is not None:
                resolve = getattr(self.app.snapshot, "resolve", None)
                try:
                    value = resolve(ref.name) if resolve is not None else None
                except RefscopeError:
                    value = None
            if value is None:
                self.notify(
                    f"{escape_name(ref.name)} resolves to no object", severity="warning", markup=False
                )
                return
        text, exact = clipboard_text(value)
        self.app.copy_to_clipboard(text)
        note = "" if exact else " (not UTF-8: its escaped form)"
        self.notify(f"copied {what}: {text}{note}", timeout=2, markup=False)

    def git_log_command(self) -> list[bytes] | None:
        """The command ``o`` runs for the ref under the cursor (or HEAD), None without one."""
        from ..gitlog import git_log_command

        name = self.current_name()
        if name is None or self.app.repo is None:
            return None
        return git_log_command(self.app.repo, name)

    def action_git_log(self) -> None:
        """``o``: ``git log`` of the ref with the app suspended and git's pager in front (as lazygit and tig
        hand over the terminal); back in the app when the pager quits."""
        import subprocess

        from textual.app import SuspendNotSupported

        cmd = self.git_log_command()
        if cmd is None:
            self.notify("no ref under the cursor", severity="warning", timeout=2)
            return
        try:
            with self.app.suspend():
                result = subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify("this terminal cannot hand itself to git log", severity="warning", timeout=3)
            return
        except OSError as err:
            self.notify(f"git log: {err.strerror}", severity="error", markup=False)
            return
        if result.returncode not in (0, 141):  # (141: the pager quit before git finished: SIGPIPE)
            self.notify(f"git log exited with status {result.returncode}", severity="warning", timeout=3)
        self.ref_list.refresh_rows()

    def action_toggle_panels(self) -> None:
        """``z``: hide or show the queue and operations panels; the list takes their rows."""
        panels = self.query_one("#panels")
        panels.display = not panels.display

    def on_resize(self, event) -> None:
        """A short terminal gives the panels fewer rows (their titles still say how many entries)."""
        self.query_one("#panels").styles.height = PANELS_ROWS if event.size.height >= PANELS_FULL_FROM else 5

    def run_action_by_name(self, name: str) -> None:
        getattr(self, f"action_{name}")()


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


def _worktree_heads(repo) -> list[tuple[bytes, str]]:
    """(branch, working tree path) for every worktree with a branch checked out ([] without a repo)."""
    if repo is None:
        return []
    from refscope.backend.txn import checked_out_worktrees

    return checked_out_worktrees(repo)
