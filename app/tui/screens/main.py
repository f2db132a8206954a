"""The main screen: the ref list with its filter, HEAD's line, the queue, the operations panel, the status.

This module lays the screen out, holds its key map and routes: to the storage views (``make_view``), to a
ref's location, to git log, to the clipboard. Its jobs live beside it, one module each, as parts of the
one ``MainScreen`` class: what the list shows (``.listing``: the prepare worker, filtering, following
snapshots), the queue (``.marking``: deletions; ``.editing``: creates, moves, renames, undo), and the
queue's transaction (``.commit``: plan, commit, bench).

Disk work runs in thread workers; they talk back by messages (``..messages``) or ``call_from_thread``, and
whatever they raise comes back to ``show_failure`` (``..workers``), shown where the job shows its result.
"""

from __future__ import annotations

import os
import time

from refscope.backend.display import escape_name, printable
from refscope.backend.errors import RefscopeError
from refscope.backend.model import PACKED, TABLE
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import ProgressBar
from textual.worker import get_current_worker

from ..models import filtering
from ..widgets import columns
from ..widgets.filter_input import FilterInput
from ..widgets.headline import HeadLine
from ..widgets.key_footer import KeyFooter
from ..widgets.ops import OpsPanel
from ..widgets.queue import QueuePanel
from ..widgets.ref_list import RefList
from ..widgets.status import StatusLine
from ..widgets.text_line import ProgressLine, TextLine
from ..workers import Failure, failure_line, work
from .commit import COMMIT_LOCKED, COMMIT_TOTAL, QueueTransaction
from .editing import Editing
from .marking import Marking
from .operations import BenchScreen, OperationScreen

PANELS_ROWS = 9  # the queue and operations panels' height (5 below PANELS_FULL_FROM rows; z hides them)
PANELS_FULL_FROM = 32
DETAIL_DELAY = 0.2  # seconds the cursor rests before ahead/behind is walked (a walk per key is waste)


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


class ListHeader(TextLine):
    """The column titles, laid out as the list's rows are (``columns.layout`` with the list's needs)."""

    DEFAULT_CSS = "ListHeader { height: 1; color: $text-muted; text-style: bold; background: $surface; }"

    needs: columns.Needs = columns.NONE
    list_width: int = 0  # the list's content width (without its scrollbar), once known

    def on_resize(self) -> None:
        self.set_text(columns.header(self.list_width or self.size.width, needs=self.needs))

    def set_layout(self, needs: columns.Needs, width: int) -> None:
        self.needs, self.list_width = needs, width
        self.set_text(columns.header(width or self.size.width, needs=needs))


class MainScreen(Marking, Editing, QueueTransaction):
    """The first screen: every ref, one line each; its parts' keys are all bound here, in one map."""

    AUTO_FOCUS = "#refs"  # (the list has the focus from the first frame: the footer is built once)
    BINDINGS = [
        # The filter's keys are priority bindings, run by the app as each key arrives (see action_filter);
        # so are the keys that open an edit dialog (the keys behind them go to its field: ``push_holding``).
        Binding("slash", "filter", "Filter", priority=True),
        Binding("space", "toggle_mark", "Mark"),
        Binding("a", "mark_all", "Mark all"),
        Binding("u", "undo", "Undo", show=False),
        Binding("U", "unmark_all", "Unmark all", show=False),
        Binding("n", "new_branch", "New branch", show=False, priority=True),
        Binding("t", "new_tag", "New tag", show=False, priority=True),
        Binding("R", "rename", "Rename", show=False, priority=True),
        Binding("M", "move", "Move", show=False, priority=True),
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
        Binding("S", "cycle_sort", "Sort", show=False),
        Binding("d", "toggle_dates", "Dates", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False, priority=True),
        Binding("enter", "submit_filter", show=False, priority=True),
    ]

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="filter-bar"):
            yield TextLine("/", id="filter-label")
            yield FilterInput(placeholder=filtering.PLACEHOLDER, id="filter")
            yield ProgressLine(id="filter-progress")
            yield TextLine("", id="count")
        yield HeadLine(id="head-line")
        yield ListHeader(id="list-header")
        yield RefList(queue=self.app.queue, id="refs")
        yield TextLine("", id="detail")
        with Horizontal(id="commit-bar"):
            yield TextLine("", id="commit-phase")
            yield ProgressBar(total=COMMIT_TOTAL, show_eta=False, show_percentage=False, id="commit-progress")
        with Horizontal(id="panels"):
            yield QueuePanel(self.app.queue, id="queue")
            yield OpsPanel(id="ops")
        yield KeyFooter(compact=True)

    _detail_timer = None

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
        self.query_one("#detail").display = self.facts is not None
        if self.facts is not None:
            self.read_context(app.snapshot)
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

    # -- HEAD's branch, the worktrees' branches, the detail line ------------------------------------------
    def on_line_list_cursor_moved(self, message) -> None:
        if message.control is self.ref_list:
            self.update_detail(walk=False)
            if self._detail_timer is not None:
                self._detail_timer.stop()
            self._detail_timer = self.set_timer(DETAIL_DELAY, self.update_detail)

    def update_detail(self, walk: bool = True) -> None:
        """The line under the list: the cursor's ref's commit, author, dates and subject at once (what
        is read), ahead/behind HEAD's branch from a worker once the cursor rests (``walk``)."""
        facts = self.facts
        if facts is None:
            return
        from refscope.backend.refformat.tips_view import show_ident_date, target_oid

        label = self.query_one("#detail", TextLine)
        ref = self.ref_list.current_ref()
        if ref is None:
            label.set_text("")
            return
        oid = target_oid(self.ref_list.snapshot, ref)
        tip = facts.peek(oid)
        if tip is None or oid is None:
            label.set_text(Text("reading…" if oid is not None else "resolves to no object", "dim"))
            return
        mode = self.ref_list.date_mode
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{tip.kind or 'missing'} {escape_name(oid[:12])}", "bold")
        if tip.peeled and tip.peeled != oid:
            text.append(f" → {tip.peeled_kind} {escape_name(tip.peeled[:12])}")
        if tip.author is not None:
            author = escape_name(tip.author.name) + " <" + escape_name(tip.author.email) + ">"
            text.append(f" · {author} · authored {show_ident_date(tip.author, mode)}")
        if tip.committer is not None:
            text.append(f" · committed {show_ident_date(tip.committer, mode)}")
        if tip.subject is not None:
            text.append(" · " + escape_name(tip.subject))
        label.set_text(text)
        head = self.head_branch
        if walk and tip.peeled_kind == "commit" and head is not None and self.ref_list.snapshot is not None:
            self.ahead_behind(self.ref_list.snapshot, ref.name, tip.peeled, head, text)

    @work(thread=True, exclusive=True, group="detail", description="ahead/behind")
    def ahead_behind(self, snapshot, name: bytes, commit: bytes, head: bytes, text: Text) -> None:
        worker = get_current_worker()
        self.facts.stand_aside(lambda: worker.is_cancelled)  # (a sort or a filter first: the user waits)
        if worker.is_cancelled:
            return
        head_oid = snapshot.resolve(head)
        if head_oid is None:
            return
        try:
            head_commit = self.facts.resolve(snapshot, head_oid)
            counts: tuple[int, int] | str = self.facts.ahead_behind(commit, head_commit)
        except RefscopeError as err:  # a damaged history: said on the line, not a notice per cursor rest
            counts = err.brief
        self.app.call_from_thread(self._ahead_behind, name, head, counts, text)

    def _ahead_behind(self, name: bytes, head: bytes, counts: tuple[int, int] | str, text: Text) -> None:
        if self.ref_list.current_name() != name:
            return
        short = escape_name(head.removeprefix(b"refs/heads/"))
        line = text.copy()
        if isinstance(counts, str):
            line.append(f" · ahead/behind {short}: {printable(counts)}", "red")
        else:
            line.append(f" · {counts[0]} ahead, {counts[1]} behind {short}", "bold")
        self.query_one("#detail", TextLine).set_text(line)

    def on_ref_list_layout_changed(self, message: RefList.LayoutChanged) -> None:
        self.query_one(ListHeader).set_layout(message.needs, self.ref_list.scrollable_content_region.width)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While a commit runs, what would change it or start another is shown disabled (None)."""
        if action in COMMIT_LOCKED and self.app.commit_running:
            return None
        return True

    # -- operations -------------------------------------------------------------------------------------
    def on_ops_panel_selected(self, message: OpsPanel.Selected) -> None:
        self.app.push_screen(OperationScreen(message.report))

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
            snapshot, _pattern, generation, *_ = failure.args
            self._prepare_failed(generation, snapshot, line)
        elif group == "bench":  # scratch copies or git failing: the bench screen says so
            verb = "refused" if failure.expected else "failed"
            app.push_screen(BenchScreen(Text(f"bench {verb}: {line}", "bold red")))
        elif group == "refresh":
            self.app.store_failed(line, "refresh")
            self.update_status()
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
            snap = self.app.snapshot
            tables = snap.tables if snap is not None and snap.format == "reftable" else []
            table = next((t for t in tables if os.path.basename(t.path) == base), None)
            if table is None:
                self.notify(f"table {base} is no longer in the stack", severity="warning", timeout=3)
                return
            from .table import TableScreen

            self.app.push_screen(TableScreen(table, ref.name, loc.offset))
        else:
            where = escape_name(os.fsencode(loc.file))
            self.notify(f"loose ref: {where}", title="where it lives", timeout=4, markup=False)

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
                snap = self.app.snapshot
                try:
                    value = snap.resolve(ref.name) if snap is not None else None
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
