"""The main screen: the ref list with its filter, the queue, the operations panel, the status line.

Disk work runs in thread workers (filter scans, refresh, commit, bench); they talk back by messages or
``call_from_thread``. The screen follows ``app.snapshot_changed``: new snapshots are swapped in whole, the
cursor stays on the same name, and changed rows flash.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from refscope.backend.display import escape_name
from refscope.backend.errors import RefscopeError
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

from ..widgets import columns, filtering
from ..widgets.ops import OpsPanel
from ..widgets.queue import QueuePanel
from ..widgets.reflist import RefList
from ..widgets.status import StatusLine
from .dialogs import CommitPlan, Confirm, ConfirmCommit
from .dialogs import Message as MessageDialog
from .operations import BenchScreen, OperationScreen

MARK_ALL_CONFIRM = 1000  # marking more than this many refs at once asks first
FLASH_SECONDS = 3.0
BENCH_RUNS = 3


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
    current = main.ref_list.current_name() if main is not None else None
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
    DEFAULT_CSS = "ListHeader { height: 1; color: $text-muted; text-style: bold; background: $surface; }"

    def on_resize(self) -> None:
        self.update(columns.header(self.size.width))


class MainScreen(Screen):
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("space", "toggle_mark", "Mark"),
        Binding("a", "mark_all", "Mark shown"),
        Binding("u", "unmark_all", "Unmark all", show=False),
        Binding("c", "commit", "Commit"),
        Binding("b", "bench", "Bench"),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("s", "app.view('stack')", "Stack"),
        Binding("p", "app.view('packed')", "Packed", show=False),
        Binding("l", "app.view('reflog')", "Reflog", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    @dataclass
    class FilterProgress(Message):
        generation: int
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, MainScreen.FilterProgress)

    def __init__(self) -> None:
        super().__init__()
        self.pattern = filtering.parse("")
        self.generation = 0
        self._flash_timer = None

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="filter-bar"):
            yield Label("/", id="filter-label")
            yield Input(placeholder="filter: refs/heads/… (prefix), text (substring), or a glob", id="filter")
            yield ProgressBar(total=100, show_eta=False, show_percentage=True, id="filter-progress")
            yield Label("", id="count")
        yield ListHeader(id="list-header")
        yield RefList(queue=self.app.queue, id="refs")
        with Horizontal(id="panels"):
            yield QueuePanel(self.app.queue, id="queue")
            yield OpsPanel(id="ops")
        yield Footer()

    def on_mount(self) -> None:
        app = self.app
        app.snapshot_changed.subscribe(self, self._on_snapshot_changed)
        app.op_recorded.subscribe(self, self.query_one(OpsPanel).add)
        for report in app.reports:
            self.query_one(OpsPanel).add(report)
        self.watch(app, "engine", lambda _: self.update_status())
        self.watch(app, "live", lambda _: self.update_status())
        self.query_one("#filter-progress").display = False
        self.query_one(QueuePanel).sync()
        self.query_one(QueuePanel).border_title = "queue · 0"
        self.query_one(OpsPanel).border_title = f"operations · {len(app.reports)}"
        self._show_view(self._compute_quick(app.snapshot) if app.snapshot is not None else range(0))
        self.query_one(RefList).focus()

    @property
    def ref_list(self) -> RefList:
        return self.query_one(RefList)

    # -- status and counts ------------------------------------------------------------------------------
    def update_status(self) -> None:
        app = self.app
        count = app.ref_count()
        self.query_one(StatusLine).show(
            repo=app.repo_path,
            snapshot=app.snapshot,
            count=count,
            engine=app.engine,
            live=app.live,
            error=app.store_error,
        )

    def update_count(self) -> None:
        total = self.app.ref_count() or 0
        shown = len(self.ref_list.view)
        kind = "" if self.pattern.kind == "all" else f" ({self.pattern.kind})"
        self.query_one("#count", Label).update(Text(f"{shown:,} of {total:,} shown{kind}"))

    def _show_view(self, view, keep: bytes | None = None) -> None:
        self.ref_list.set_view(self.app.snapshot, view, keep=keep)
        self.update_count()
        self.update_status()

    # -- filtering --------------------------------------------------------------------------------------
    def _compute_quick(self, snapshot):
        """The view when it needs no scan (all / prefix), else None. Measured as a "filter" operation."""
        if snapshot is None or self.pattern.kind not in ("all", "prefix"):
            return None
        try:
            if self.pattern.kind == "all":
                if snapshot is self.app.snapshot:
                    return range(self.app.ref_count() or 0)
                return range(len(snapshot))
            with self.app.meter.measure("filter") as m:
                view = filtering.compute(snapshot, self.pattern)
            self.app.record_op(m.report)
            return view
        except RefscopeError as err:
            self.app.store_error = str(err)
            return range(0)

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        if inp.value:
            inp.value = ""
        self.ref_list.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.apply_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.ref_list.focus()

    def apply_filter(self, text: str) -> None:
        self.pattern = filtering.parse(text)
        self.generation += 1
        keep = self.ref_list.current_name()
        self.workers.cancel_group(self, "filter")
        view = self._compute_quick(self.app.snapshot)
        if view is not None:
            self.query_one("#filter-progress").display = False
            self._show_view(view, keep=keep)
        elif self.app.snapshot is not None:
            self.query_one("#filter-progress", ProgressBar).update(total=100, progress=0)
            self.query_one("#filter-progress").display = True
            self.query_one("#count", Label).update(Text("scanning…"))
            self.scan(self.app.snapshot, self.pattern, self.generation, keep)

    @work(thread=True, exclusive=True, group="filter", exit_on_error=False, description="filter scan")
    def scan(self, snapshot, pattern, generation: int, keep: bytes | None) -> None:
        worker = get_current_worker()
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.05:
                last[0] = now
                self.post_message(self.FilterProgress(generation, done, total))

        try:
            with self.app.meter.measure("filter") as m:
                view = filtering.compute(snapshot, pattern, lambda: worker.is_cancelled, progress)
        except RefscopeError as err:
            self.app.call_from_thread(self._scan_failed, generation, err)
            return
        if view is None or worker.is_cancelled:
            return
        self.app.call_from_thread(self._scan_done, generation, snapshot, view, keep, m.report)

    def on_main_screen_filter_progress(self, message: FilterProgress) -> None:
        if message.generation == self.generation and message.total:
            self.query_one("#filter-progress", ProgressBar).update(total=message.total, progress=message.done)

    def _scan_done(self, generation: int, snapshot, view, keep, report) -> None:
        self.app.record_op(report)
        if generation != self.generation or snapshot is not self.app.snapshot:
            return
        self.query_one("#filter-progress").display = False
        self._show_view(view, keep=keep)

    def _scan_failed(self, generation: int, err: Exception) -> None:
        if generation == self.generation:
            self.query_one("#filter-progress").display = False
            self.app.store_error = str(err)
            self._show_view(range(0))

    # -- following snapshots ----------------------------------------------------------------------------
    def _on_snapshot_changed(self, update) -> None:
        keep = self.ref_list.current_name()
        view = self._compute_quick(update.snapshot)
        if view is None and update.snapshot is not None:
            self.generation += 1
            self.scan(update.snapshot, self.pattern, self.generation, keep)
            self.ref_list.snapshot = update.snapshot
            self.ref_list.refresh_rows()
        else:
            self._show_view(view if view is not None else range(0), keep=keep)
        diff = update.diff
        if diff is not None:
            changed = set(getattr(diff, "added", ()) or ()) | set(getattr(diff, "changed", ()) or ())
            if changed:
                self.ref_list.set_changed(changed)
                if self._flash_timer is not None:
                    self._flash_timer.stop()
                self._flash_timer = self.set_timer(FLASH_SECONDS, lambda: self.ref_list.set_changed(set()))
        self.query_one(QueuePanel).sync()
        self.update_status()

    def action_refresh(self) -> None:
        if self.app.store is not None:
            self.refresh_store()

    @work(thread=True, exclusive=True, group="refresh", exit_on_error=False, description="refresh")
    def refresh_store(self) -> None:
        app = self.app
        try:
            with app.meter.measure("refresh") as m:
                snapshot = (
                    app.store.refresh(app.snapshot) if app.snapshot is not None else app.store.snapshot()
                )
        except RefscopeError as err:
            app.call_from_thread(self._store_failed, err)
            return
        app.call_from_thread(self._refreshed, snapshot, m.report)

    def _store_failed(self, err: Exception) -> None:
        self.app.store_error = str(err)
        self.update_status()

    def _refreshed(self, snapshot, report) -> None:
        self.app.record_op(report)
        if snapshot is not self.app.snapshot:
            self.app.set_snapshot(snapshot, "refresh")
        else:
            self.app.queue.recheck(snapshot)
            self.query_one(QueuePanel).sync()

    # -- marking ----------------------------------------------------------------------------------------
    def action_toggle_mark(self) -> None:
        ref = self.ref_list.current_ref()
        if ref is None:
            return
        self.app.queue.toggle(ref)
        self.ref_list.refresh_name(ref.name)
        self.query_one(QueuePanel).sync()
        self.ref_list.go_to(self.ref_list.cursor + 1, center=False)

    @work(exclusive=True, group="mark")
    async def action_mark_all(self) -> None:
        view, snapshot = self.ref_list.view, self.app.snapshot
        n = len(view)
        if not n:
            return
        if n > MARK_ALL_CONFIRM:
            question = Text(f"Mark all {n:,} refs the filter shows?")
            if not await self.app.push_screen_wait(Confirm("Mark all shown", question, yes=f"Mark {n:,}")):
                return
        await self.mark_rows(snapshot, view).wait()

    @work(thread=True, exclusive=True, group="mark-rows", exit_on_error=False)
    def mark_rows(self, snapshot, view) -> None:
        with self.app.meter.measure("mark") as m:
            refs = [snapshot.row(i) for i in view]
        self.app.call_from_thread(self._marked, refs, m.report)

    def _marked(self, refs, report) -> None:
        added = self.app.queue.add_many(refs)
        self.app.record_op(report)
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()
        self.notify(f"queued {added:,} ref(s); {len(self.app.queue):,} in the queue", timeout=3)

    def action_unmark_all(self) -> None:
        self.app.queue.discard_many(list(self.app.queue))
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()

    def on_queue_panel_removed(self, message: QueuePanel.Removed) -> None:
        self.ref_list.refresh_rows()
        self.query_one(QueuePanel).sync()

    def jump_to(self, name: bytes) -> None:
        """Clear a filter that hides ``name`` and put the cursor on it (a "lookup" operation)."""
        app = self.app
        with app.meter.measure("lookup") as m:
            found = app.snapshot.lookup(name) if app.snapshot is not None else None
        app.record_op(m.report)
        if found is None:
            self.notify(f"no ref {escape_name(name)}", severity="warning", markup=False)
            return
        if self.pattern.kind != "all":
            self.query_one("#filter", Input).value = ""
            self.apply_filter("")
        self._show_view(self.ref_list.view, keep=name)
        self.ref_list.focus()

    # -- commit -----------------------------------------------------------------------------------------
    def commit_plan(self) -> CommitPlan:
        app = self.app
        entries = list(app.queue.values())
        head_branch = None
        try:
            head = app.snapshot.head() if app.snapshot is not None else None
        except RefscopeError:
            head = None
        if head is not None and head.target is not None and head.target in app.queue:
            head_branch = head.target
        checked_out = []
        for gitdir, target in _worktree_heads(app.repo):
            if target is not None and target in app.queue:
                checked_out.append((target, gitdir))
        return CommitPlan(
            count=len(entries),
            engine=app.engine,
            stale=[e.name for e in entries if e.stale],
            checked_out=checked_out,
            head_branch=head_branch,
            symrefs=[(e.name, e.seen.target) for e in entries if e.seen.target is not None],
            tags=[e.name for e in entries if e.name.startswith(b"refs/tags/")],
        )

    @work(exclusive=True, group="commit-dialog")
    async def action_commit(self) -> None:
        app = self.app
        if not app.queue:
            self.notify("the queue is empty: space marks a ref", severity="warning", timeout=3)
            return
        if app.store is None:
            self.notify("no store to commit to", severity="error")
            return
        if not await app.push_screen_wait(ConfirmCommit(self.commit_plan())):
            return
        self.notify(f"committing {len(app.queue):,} deletion(s) with the {app.engine} engine…", timeout=2)
        self.commit(list(app.queue.values()), app.engine, app.snapshot)

    @work(thread=True, exclusive=True, group="commit", exit_on_error=False, description="commit")
    def commit(self, entries, engine: str, snapshot) -> None:
        app = self.app
        try:
            from refscope.backend.txn import Transaction

            txn = Transaction(app.store, engine=engine, no_deref=True, snapshot=snapshot)
            for entry in entries:
                txn.delete(entry.name, entry.old_oid)
            result = txn.commit()
        except RefscopeError as err:
            app.call_from_thread(self._commit_refused, err)
            return
        except ImportError:
            app.call_from_thread(
                self._commit_refused, RefscopeError(None, "transactions are not available yet")
            )
            return
        try:
            snapshot = app.store.refresh(app.snapshot)
        except RefscopeError:
            snapshot = None
        app.call_from_thread(self._committed, result, snapshot)

    def _commit_refused(self, err: Exception) -> None:
        body = Text()
        body.append(escape_name(str(err).encode("utf-8", "surrogateescape")), "bold")
        body.append(f"\n\nNothing was changed. The queue is kept ({len(self.app.queue):,} entries).", "dim")
        self.app.push_screen(MessageDialog("commit refused", body, error=True))

    def _committed(self, result, snapshot) -> None:
        app = self.app
        report = app.meter.adopt(result.report)
        app.record_op(report)
        if result.committed:
            app.queue.discard_many(result.deleted)
        if snapshot is not None and snapshot is not app.snapshot:
            app.set_snapshot(snapshot, "commit")
        self.query_one(QueuePanel).sync()
        self.ref_list.refresh_rows()
        header = Text(
            f"{'committed' if result.committed else 'not committed'}: {len(result.deleted):,} ref(s) deleted "
            f"with the {result.engine} engine\n",
            "bold green" if result.committed else "bold red",
        )
        phases = [app.meter.adopt(p) for p in result.phases]
        app.push_screen(OperationScreen(report, title="commit result", header=header, phases=phases))

    # -- operations -------------------------------------------------------------------------------------
    def on_ops_panel_selected(self, message: OpsPanel.Selected) -> None:
        self.app.push_screen(OperationScreen(message.report))

    def action_bench(self) -> None:
        app = self.app
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

    @work(thread=True, exclusive=True, group="bench", exit_on_error=False, description="bench")
    def bench(self, deletions: list[tuple[bytes, bytes | None]]) -> None:
        """``refscope bench`` for the queue: never touches the repository (scratch copies only)."""
        app = self.app
        try:
            from refscope.backend import bench
            from refscope.backend.engines.git import git_binary

            result = bench.run_bench(app.repo, deletions, [git_binary()], runs=BENCH_RUNS, count_refs=False)
            body = Text(bench.format_table(result), no_wrap=True)
        except RefscopeError as err:
            body = Text(f"bench refused: {err}", "bold red")
        except Exception as err:  # scratch copy or git failure: shown, never a crash
            body = Text(f"bench failed: {type(err).__name__}: {err}", "bold red")
        app.call_from_thread(app.push_screen, BenchScreen(body))

    def run_action_by_name(self, name: str) -> None:
        getattr(self, f"action_{name}")()


def _worktree_heads(repo):
    """(gitdir, branch name bytes or None) for every worktree, or [] when unknown."""
    if repo is None:
        return []
    try:
        from refscope.backend.repo import list_worktrees

        heads = list_worktrees(repo)
    except Exception:
        return []
    out = []
    for gitdir, target in heads:
        if isinstance(target, str):
            target = target.encode("utf-8", "surrogateescape")
        out.append((gitdir, target))
    return out
