"""The reftable stack, live: every table of tables.list, a size chart, git's compaction forecast, a change feed,
and an explicit native compaction with its cost.

Constructors (for TUI-MAIN):
    StackScreen(store, snapshot, meter=None, *, follow: bool = True)
        store: the ReftableStore (refresh, compaction, config); snapshot: its current snapshot;
        meter: the app's meter object (``.measure``/``.adopt``, e.g. FakeMeter) or ``backend.meter.measure``;
        it measures the view's own loading (status line) and adopts the compaction's OpReport.
        ``follow``: follow the app's one live feed (``live``: its watcher's snapshots and lock
        files, or the watcher started for an app that runs none).
        ``apply_snapshot(snapshot)`` accepts newer snapshots from anywhere.
    storage_screen(store, snapshot, meter=None, *, follow=True, focus_name=None) -> Screen
        what the ``s`` key should open: StackScreen for reftable, PackedScreen for a files repository.
Keys: enter opens the table under the cursor (TableScreen); c compacts with the native engine after a yes/no
dialog (the segment git's policy picks now, or the whole stack when it is already geometric) and shows the
OpReport with the before/after stack; a counts the log records of big tables (> 4 MiB, skipped by default);
r reload; escape back.
"""

from __future__ import annotations

import time
from typing import Any

from refscope.backend.display import path_text
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from ..live import follow
from ..meter import as_meter
from ..models.format import count, size
from ..models.report import report_text
from ..models.stack_rows import TableSummary, forecast, full_summary, quick_summary
from ..widgets.chart import size_chart
from ..widgets.rows import ListSource, RowsView
from ..workers import work
from .base import ViewScreen, short_path


def storage_screen(
    store: Any, snapshot: Any, meter: Any = None, *, follow: bool = True, focus_name: bytes | None = None
) -> Screen:
    """The storage view for this repository's format (the ``s`` key)."""
    if snapshot.format == "reftable":
        return StackScreen(store, snapshot, meter, follow=follow)
    from .packed import PackedScreen

    return PackedScreen(snapshot, focus_name, store=store, follow=follow)


HEADER = Text(
    f"{'#':>2} {'table':<42} {'update index':>13} {'size':>9} {'v':>1} {'block':>5} "
    f"{'refs':>9} {'tomb':>6} {'logs':>9} {'log del':>7} {'blk r/g/o/i':<11} idx obj",
    no_wrap=True,
)


def _n(value: int) -> str:
    if value == -2:
        return "a: count"  # a big table: log records are counted on demand
    return "…" if value < 0 else f"{value:,}"


def table_row(i: int, s: TableSummary, merge: tuple[int, int] | None) -> Text:
    t = Text(no_wrap=True)
    t.append(f"{i:>2} ", style="bold")
    t.append(f"{s.name:<42} ", style="dark_orange" if merge and merge[0] <= i < merge[1] else "")
    rng = (
        f"{s.min_update_index}..{s.max_update_index}"
        if s.min_update_index != s.max_update_index
        else f"{s.min_update_index}"
    )
    t.append(f"{rng:>13} ", style="cyan")
    t.append(f"{size(s.size):>9} ")
    t.append(f"{s.version:>1} {s.block_size:>5} ")
    t.append(f"{_n(s.ref_records):>9} ")
    t.append(f"{_n(s.tombstones):>6} ", style="red" if s.tombstones > 0 else "")
    t.append(f"{_n(s.log_records):>9} ")
    t.append(f"{_n(s.log_deletions) if s.log_deletions != -2 else '·':>7} ", style="dim")
    b = s.blocks
    blocks = "/".join(str(b.get(k, 0)) for k in "rgoi") if b else "…"
    t.append(f"{blocks:<11} ")
    if s.ref_records < 0:
        t.append(" …   …")
    else:
        t.append(" ✓ " if s.has_index else " · ", style="green" if s.has_index else "dim")
        t.append("  ✓" if s.has_obj else "  ·", style="green" if s.has_obj else "dim")
    return t


def _config(store: Any) -> tuple[int, bool, str | None]:
    """(reftable.geometricFactor, auto-compaction, error) through the backend's config (git's integer
    parsing, k/m/g suffixes; 0 means git's default). git always auto-compacts after a write (only its test
    variable GIT_TEST_REFTABLE_AUTOCOMPACTION turns that off). A malformed value, which makes git die, is
    shown as the error and the forecast uses git's default."""
    from refscope.backend.engines.common import auto_compaction
    from refscope.backend.errors import RefscopeError

    config = getattr(getattr(store, "repo", None), "config", None)
    try:
        auto = auto_compaction()
        factor = config.reftable_geometric_factor() if config is not None else 2
    except RefscopeError as err:
        return 2, True, str(err)
    return factor or 2, auto, None


class StackScreen(ViewScreen):
    """Every table of the stack, the size chart and forecast, the live feed, and a compaction action."""

    DEFAULT_CSS = """
    StackScreen #stack-info { height: auto; padding: 0 1; background: $boost; }
    StackScreen #stack-tables { height: auto; max-height: 45%; min-height: 4; }
    StackScreen #stack-middle { height: auto; max-height: 14; border-top: solid $primary; }
    StackScreen #stack-chart { width: 1fr; height: auto; padding: 0 1; text-wrap: nowrap; }
    StackScreen #stack-forecast { width: 1fr; height: auto; padding: 0 1; }
    StackScreen #stack-feed-box { height: 1fr; min-height: 5; border-top: solid $primary; }
    StackScreen .box-title { height: 1; padding: 0 1; color: $text-accent; text-style: bold; }
    StackScreen #stack-report { height: auto; max-height: 12; padding: 0 1; border-top: solid $warning; }
    StackScreen #stack-report.-empty { display: none; }
    """
    BINDINGS = [
        Binding("enter", "open_table", "Open table"),
        Binding("c", "compact", "Compact (native)"),
        Binding("r", "reload", "Reload"),
        Binding("a", "count_all", "Count logs", show=False),
    ]

    def __init__(self, store: Any, snapshot: Any, meter: Any = None, *, follow: bool = True) -> None:
        super().__init__(title="reftable stack")
        self.store = store
        self.snapshot = snapshot
        self.meter = as_meter(meter)
        self.measure = self.meter.measure
        self.follow = follow and store is not None
        self.summaries: list[TableSummary] = []
        self.feed: list[Text] = []
        self.feed_keys: list[int] = []
        self.factor, self.auto, self.config_error = _config(store)
        self.last_report: Any = None
        self._follower: Any = None
        self._locks_since: dict[str, float] = {}
        self._clock = time.strftime
        self._feed_base = snapshot

    def compose_body(self) -> ComposeResult:
        yield Static("", id="stack-info")
        yield RowsView(id="stack-tables")
        with Horizontal(id="stack-middle"):
            with Vertical(id="stack-chart-box"):
                yield Static("table sizes (log scale, oldest first)", classes="box-title")
                yield Static("", id="stack-chart")
            with VerticalScroll(id="stack-forecast-box"):
                yield Static("compaction forecast", classes="box-title")
                yield Static("", id="stack-forecast")
        with Vertical(id="stack-feed-box"):
            yield Static("changes", classes="box-title")
            yield RowsView(id="stack-feed")
        yield Static("", id="stack-report", classes="-empty")

    @property
    def tables_view(self) -> RowsView:
        return self.query_one("#stack-tables", RowsView)

    @property
    def tables(self) -> list[Any]:
        return list(self.snapshot.tables)

    def on_mount(self) -> None:
        self.set_title(Text(f"reftable stack — {short_path(self.snapshot.commondir)}/reftable"))
        self.summaries = [quick_summary(t) for t in self.tables]
        self._render_all()
        self.tables_view.focus()
        self.load_summaries(self.snapshot, None)
        if self.follow:
            self._follower = follow(self, self.store, self.snapshot, self.apply_snapshot, self._on_locks)

    def on_unmount(self) -> None:
        if self._follower is not None:
            self._follower.stop()

    def show_failure(self, failure: Any) -> None:
        """A compaction that did not happen also says so in a notice (the stack is as it was)."""
        super().show_failure(failure)
        if failure.group == "stack-compact":
            verb = "refused" if failure.expected else "failed"
            self.notify(f"compaction {verb}: {failure.line}", severity="error", markup=False)

    # ---- data -----------------------------------------------------------------------------------------
    def action_count_all(self) -> None:
        """Count the log records of big tables too (inflates and decodes every log block)."""
        self.set_status("counting every log record…")
        self.load_summaries(self.snapshot, None, deep=True)

    @work(thread=True, exclusive=True, group="stack-load", description="summarize tables")
    def load_summaries(self, snapshot: Any, previous: Any, deep: bool | None = None) -> None:
        with self.measure("stack view") as m:
            summaries = [full_summary(t, deep) for t in snapshot.tables]
            old = (
                {s.name: s for s in (full_summary(t) for t in previous.tables)}
                if previous is not None
                else {}
            )
        self.app.call_from_thread(
            self._loaded, snapshot, previous, summaries, old, getattr(m, "report", None)
        )

    def _loaded(
        self,
        snapshot: Any,
        previous: Any,
        summaries: list[TableSummary],
        old: dict[str, TableSummary],
        report: Any,
    ) -> None:
        if snapshot is not self.snapshot:
            return
        self.summaries = summaries
        self._render_all()
        if previous is not None:
            self._feed_changes(old, summaries)
            self._feed_base = snapshot
        if report is not None:
            self.set_status(report_text(report, "table summaries"))

    def apply_snapshot(self, snapshot: Any, paths: tuple = ()) -> None:
        """A newer snapshot (from the live feed, a reload or our compaction): re-summarize, feed what
        changed."""
        if snapshot is self.snapshot:
            return
        previous = self._feed_base  # what the feed last described: a superseded load loses no change
        self.snapshot = snapshot
        self.summaries = [quick_summary(t) for t in self.tables]
        self._render_all()
        self.load_summaries(snapshot, previous)

    def action_reload(self) -> None:
        self.reload()

    @work(thread=True, exclusive=True, group="stack-reload", description="reload")
    def reload(self) -> None:
        """``r``: re-read the store off the UI thread (a failure shows in the status line)."""
        fresh = self.store.refresh(self.snapshot)
        self.app.call_from_thread(self.apply_snapshot, fresh)

    # ---- rendering ------------------------------------------------------------------------------------
    def _render_all(self) -> None:
        tables = self.tables
        fc = forecast(tables, self.factor, self.auto, self.snapshot.hash_name)
        names = [s.name for s in self.summaries]
        rows = [table_row(i, s, fc.next) for i, s in enumerate(self.summaries)]
        self.tables_view.set_source(ListSource(rows, HEADER, keys=names))
        total = sum(t.size for t in tables)
        info = Text(no_wrap=True)
        info.append(f"{len(tables)} tables", style="bold")
        info.append(f" · {size(total)} · hash {self.snapshot.hash_name}")
        known = [s for s in self.summaries if s.ref_records >= 0]
        if len(known) == len(self.summaries):
            info.append(
                f" · {count(sum(s.ref_records for s in known))} ref records, "
                f"{count(sum(s.tombstones for s in known))} tombstones, "
                + (
                    f"{count(sum(s.log_records for s in known))} log records, "
                    f"{count(sum(max(0, s.log_deletions) for s in known))} log deletions"
                    if all(s.log_records >= 0 for s in known)
                    else "log records of big tables not counted (a)"
                )
            )
        info.append(f" · reftable.geometricFactor={self.factor}")
        if self.config_error:
            info.append(f" (config: {self.config_error})", style="red")
        self.query_one("#stack-info", Static).update(info)
        self.query_one("#stack-chart", Static).update(
            size_chart(
                names, fc.sizes, self.factor, fc.next, width=20, new_size=fc.next_size if tables else None
            )
        )
        self.query_one("#stack-forecast", Static).update(self._forecast_text(fc))

    def _forecast_text(self, fc: Any) -> Text:
        t = Text()
        n = len(fc.sizes)
        if fc.next is None:
            t.append("next write: no compaction", style="bold green")
        else:
            start, end = fc.next
            merged_old = [i for i in range(start, end) if i < n]
            if merged_old:
                t.append(f"next write merges #{merged_old[0]}..#{merged_old[-1]}", style="bold dark_orange")
                t.append(" and its own new table" if end > n else "", style="bold dark_orange")
            else:
                t.append("next write: only its new table (nothing to merge)", style="bold")
        t.append(
            f"\n(a typical small write: git update-ref of one ref, a new table of {fc.next_size} B compared; "
            "sizes are file size − footer − header + 1, as git compares them)\n",
            style="dim",
        )
        for line in fc.reasons:
            t.append(f"• {line}\n")
        if fc.now is not None:
            t.append(
                f"the stack as it is already violates the sequence: #{fc.now[0]}..#{fc.now[1] - 1}",
                style="yellow",
            )
        return t

    def _add_feed(self, line: Text) -> None:
        key = len(self.feed) + 1
        self.feed.insert(0, line)
        self.feed_keys.insert(0, key)
        feed = self.query_one("#stack-feed", RowsView)
        feed.set_source(ListSource(self.feed, keys=self.feed_keys), cursor=0)
        feed.flash([key])

    def _feed_changes(self, old: dict[str, TableSummary], new: list[TableSummary]) -> None:
        """The feed's lines for one new stack: which tables were appended, compacted (the backend's
        ``diff.plan_tables``, as the watcher classifies them) or removed."""
        from refscope.backend.diff import plan_tables

        plan = plan_tables(list(old.values()), new)
        if plan.unchanged:
            return
        now = self._clock("%H:%M:%S")
        by_output = {c.output: c for c in plan.compactions}
        covered = {name for c in plan.compactions for name in c.inputs}
        flashed = []
        for s in new:
            if s.name in old:
                continue
            c = by_output.get(s.name)
            if c is not None:
                inputs = [old[name] for name in c.inputs]
                tomb_before = sum(r.tombstones for r in inputs)
                refs_before = sum(r.ref_records for r in inputs)
                line = Text(f"{now} ⇒ compacted {len(inputs)} tables ", style="bold dark_orange")
                line.append(", ".join(r.name for r in inputs), style="dim")
                line.append(
                    f" → {s.name}: ref records {refs_before:,} → {s.ref_records:,}, "
                    f"tombstones dropped {max(0, tomb_before - s.tombstones):,}, "
                    f"{size(sum(r.size for r in inputs))} → {size(s.size)}"
                )
                top = max(r.max_update_index for r in inputs)
                if s.max_update_index > top:
                    line.append(
                        f" (with a new write, update index {top + 1}..{s.max_update_index}, merged before it was seen)",
                        style="dim",
                    )
            else:
                line = Text(f"{now} + appended {s.name}: ", style="bold green")
                line.append(
                    f"{s.ref_records:,} ref record{'s' if s.ref_records != 1 else ''}"
                    f" ({s.tombstones:,} tombstones), {s.log_records:,} log records, "
                    f"update index {s.min_update_index}..{s.max_update_index}, {size(s.size)}"
                )
            self._add_feed(line)
            flashed.append(s.name)
        new_names = {s.name for s in new}
        removed = [r for name, r in old.items() if name not in new_names and name not in covered]
        removed.sort(key=lambda r: r.min_update_index)
        for r in removed:
            self._add_feed(Text(f"{now} − removed {r.name} ({r.ref_records:,} ref records)", style="red"))
        if flashed:
            self.tables_view.flash(flashed)

    def _on_locks(self, held: set[str], when: float) -> None:
        now = self._clock("%H:%M:%S")
        for name in sorted(held - set(self._locks_since)):
            self._locks_since[name] = when
            self._add_feed(Text(f"{now} 🔒 {path_text(name)} taken: someone is writing", style="bold yellow"))
        for name in sorted(set(self._locks_since) - held):
            since = self._locks_since.pop(name)
            self._add_feed(
                Text(
                    f"{now} 🔓 {path_text(name)} released after {(when - since) * 1000:.0f} ms",
                    style="yellow",
                )
            )

    # ---- actions --------------------------------------------------------------------------------------
    def action_open_table(self) -> None:
        tables = self.tables
        row = self.tables_view.cursor
        if 0 <= row < len(tables):
            from .table import TableScreen

            self.app.push_screen(TableScreen(tables[row]))

    @work(exclusive=True, group="stack-confirm", description="compact dialog")
    async def action_compact(self) -> None:
        """Ask first (a typed yes/no dialog), then compact with the native engine in a thread worker."""
        tables = self.tables
        if len(tables) < 2:
            self.notify("nothing to compact: the stack has fewer than two tables")
            return
        fc = forecast(tables, self.factor, self.auto, self.snapshot.hash_name)
        segment = fc.now if fc.now is not None else (0, len(tables))
        start, end = segment
        why = (
            "git's policy picks these tables now"
            if fc.now is not None
            else "the stack is geometric already: this merges every table (like git pack-refs)"
        )
        question = Text(
            f"Merge tables #{start}..#{end - 1} ({end - start} tables, "
            f"{size(sum(t.size for t in tables[start:end]))}) into one, with refscope's native engine?\n{why}"
        )
        from .dialogs import Confirm

        if await self.app.push_screen_wait(Confirm("Compact the reftable stack", question, yes="Compact")):
            self.run_compaction(segment)

    @work(thread=True, exclusive=True, group="stack-compact", description="compact")
    def run_compaction(self, segment: tuple[int, int]) -> None:
        from refscope.backend.engines.compaction import compact

        before = [(t.name, t.size) for t in self.snapshot.tables]
        report = compact(self.store, segment)  # a refusal (LockBusy...) shows through show_failure
        fresh = self.store.refresh(self.snapshot)
        after = [(t.name, t.size) for t in fresh.tables]
        self.app.call_from_thread(self._compacted, segment, report, before, after, fresh)

    def _compacted(
        self, segment: tuple[int, int], report: Any, before: list, after: list, fresh: Any
    ) -> None:
        report = self.meter.adopt(report)
        self.last_report = report
        record = getattr(self.app, "record_op", None)
        if record is not None:
            record(report)
        t = report_text(report, f"native compaction of #{segment[0]}..#{segment[1] - 1}")
        t.append("\nbefore: ", style="bold")
        t.append("  ".join(f"{n} ({size(s)})" for n, s in before), style="dim")
        t.append("\nafter:  ", style="bold")
        t.append("  ".join(f"{n} ({size(s)})" for n, s in after), style="dim")
        box = self.query_one("#stack-report", Static)
        box.update(t)
        box.remove_class("-empty")
        if self._follower is not None:
            self._follower.snapshot = fresh
        self.apply_snapshot(fresh)
