"""The refscope Textual app: a thin shell holding the shared state every screen uses.

State: the store, the current immutable snapshot, the deletion queue, the engine, the meter and the
operations log. Screens subscribe to ``snapshot_changed`` (a Textual Signal) to follow live updates; the
watcher runs in its own thread and only posts messages. Everything else lives in screens and widgets.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from refscope.backend.errors import RefscopeError
from refscope.backend.stores.seq import is_older
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive
from textual.signal import Signal

from .messages import SnapshotUpdate, WatchEvent
from .meter import Meter, as_meter
from .widgets.palette import RefJumpProvider
from .widgets.queue import Queue
from .workers import work


class RefscopeApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "refscope"
    COMMANDS = App.COMMANDS | {RefJumpProvider}
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("e", "switch_engine", "Engine"),
    ]

    engine: reactive[str] = reactive("native")
    live: reactive[str] = reactive("off")

    def __init__(
        self,
        store=None,
        *,
        repo_path: str = ".",
        snapshot=None,
        meter=None,
        engine: str = "native",
        watch: bool = True,
        repo=None,
        first_open_fatal: bool = False,
    ) -> None:
        super().__init__()
        # the `refscope` command: a store whose first snapshot cannot be opened ends the app with the CLI's
        # one line (git and `refscope list` refuse it too; a screen with nothing on it helps nobody);
        # embedders and tests keep the app up with the error in place
        self.first_open_fatal = first_open_fatal
        self.store = store
        self.repo = repo if repo is not None else getattr(store, "repo", None)
        self.repo_path = repo_path
        self.snapshot = snapshot
        self.meter: Meter = as_meter(meter)
        self.queue = Queue()
        self.watch_enabled = watch and store is not None
        self.watcher = None
        self.store_error: str | None = None
        self._errors_from: dict[str, str] = {}  # source -> the store_error it set (see ``store_failed``)
        self.snapshot_changed: Signal[SnapshotUpdate] = Signal(self, "snapshot_changed")
        self.op_recorded: Signal[Any] = Signal(self, "op_recorded")
        self.reports: list = []
        self._counted: tuple[Any, int] = (None, 0)
        self._live_base = "off"  # what the watcher's events said ("live", "error"); ``live`` adds the rest
        self.crash: BaseException | None = None  # what ended the app, if anything did (see cmd_tui)
        self.set_reactive(RefscopeApp.engine, engine)
        self._held_keys: list | None = None  # keys held for a dialog that is still opening (``push_holding``)

    # -- keys that arrive while a dialog opens ---------------------------------------------------------------
    # Textual hands each key to the widget focused when the key reaches the app. A dialog opened by a key
    # is mounted, and its field focused, only later: the keys behind the one that opened it (a burst:
    # pasted, typed fast, sent by tmux) went to the list (letters lost) or to the dialog before its field
    # had focus, while the field's editing bindings ran later in the app's turn, so End and BackSpace
    # applied and the letters did not. The opening key is a priority binding (run as it arrives), the
    # keys behind it are held until the dialog says its field has focus, then handed on in order.
    def push_holding(self, screen, callback=None) -> None:
        """Push ``screen``, holding the keys that arrive until it calls ``release_keys`` (on mount, its
        field focused); a screen that never does is released a moment later all the same."""
        if self._held_keys is None:
            self._held_keys = []
        self.push_screen(screen, callback=callback)
        self.set_timer(1.0, self.release_keys)

    async def release_keys(self) -> None:
        """Hand the held keys on, in the order they came, to whatever has focus now."""
        held, self._held_keys = self._held_keys, None
        for event in held or ():
            await super().on_event(event)

    async def on_event(self, event) -> None:
        from textual import events

        if self._held_keys is not None and isinstance(event, events.Key) and not event.is_forwarded:
            self._held_keys.append(event)
            return
        await super().on_event(event)

    # -- lifecycle ----------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        from refscope.backend.lockfile import protect

        from .screens.main import MainScreen

        protect()  # commits run in workers; handlers can only be installed here, in the main thread

        if self.snapshot is None and self.store is not None:
            self.open_snapshot()
        self.push_screen(MainScreen())
        if self.watch_enabled:
            self.start_watcher()

    def open_snapshot(self) -> None:
        """Open the first snapshot (cheap by the store contract: rows decode lazily). A typed error is shown
        in place, or ends the app with ``first_open_fatal``; anything else ends it (``_handle_exception``)."""
        try:
            with self.meter.measure("open") as m:
                self.snapshot = self.store.snapshot()
        except RefscopeError as err:
            if self.first_open_fatal:
                raise
            self.store_error = str(err)
            self.live = "error"
            return
        self.record_op(m.report)

    def start_watcher(self) -> None:
        from refscope.backend.watch import Watcher

        try:
            # the watcher refreshes from the app's own snapshot: the new snapshot then shares its tables /
            # packed-refs, and with them the row index already built (a refresh re-indexes only the change)
            self.watcher = Watcher(
                self.store, lambda ev: self.post_message(WatchEvent(ev)), snapshot=self.snapshot
            )
            self.watcher.start()
        except Exception as err:  # the app keeps running without live updates
            self.live = f"error: {err}"
            return
        self._live_base = "live"
        self.live = "live"
        self.set_interval(0.1, self._tick_live)

    # -- the live state in the header ---------------------------------------------------------------------
    def _tick_live(self) -> None:
        label = self.live_label()
        if label != self.live:
            self.live = label

    def live_label(self) -> str:
        """What the header says about following the disk: "live" only when the screen shows the disk's
        current state as far as the app knows; otherwise why not (the watcher refreshing, with its phase
        and how long it has taken; a refresh or our own commit running; the list still indexing the new
        snapshot; the watcher stopped or polling)."""
        w = self.watcher
        if w is None:
            return self.live
        if w.died:
            return f"error: watcher stopped ({w.phase or w.failure})"
        if self._live_base != "live":
            return self._live_base
        now = time.monotonic()
        if w.state == "held":
            return f"behind: own commit running {now - w.state_since:.1f} s"
        if w.state == "refreshing" and now - w.state_since >= 0.1:
            return f"refreshing {now - w.state_since:.1f} s · {w.phase}"
        for worker in self.workers:
            if worker.group in ("refresh", "commit") and worker.is_running:
                return "refreshing" if worker.group == "refresh" else "behind: commit running"
        shown = self._shown_snapshot()
        if shown is not None and shown is not self.snapshot:
            return "behind: indexing the new state"
        return "live (polling)" if w.polling else "live"

    def _shown_snapshot(self):
        from .screens.main import MainScreen

        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                with contextlib.suppress(Exception):
                    return screen.ref_list.snapshot
        return None

    @contextlib.contextmanager
    def own_transaction(self):
        """Around this process's own commit: the watcher does not rescan the transaction's lock files and
        half-done states as foreign changes; ``adopt(snapshot)`` hands it the snapshot read after the
        commit, and one refresh from it on exit covers whatever else happened meanwhile."""
        w = self.watcher
        after: list = []
        if w is not None:
            w.hold()
        try:
            yield after.append
        finally:
            if w is not None:
                w.release(after[-1] if after else None)

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()

    def _handle_exception(self, error: Exception) -> None:
        """Textual's last resort for an exception nothing handled: the app exits with status 1. Keep the
        error for ``cmd_tui``, which prints it as the one line ``refscope: <file>: <what>`` once the
        terminal is restored, and log its traceback instead of having Textual print it (kept with the
        ``debug`` feature, ``TEXTUAL=debug``)."""
        from textual.worker import WorkerFailed

        from .workers import log

        cause = error.error if isinstance(error, WorkerFailed) else error
        if self.crash is None:
            self.crash = cause
            log.error("refscope crashed", exc_info=cause)
        super()._handle_exception(error)
        if "debug" not in self.features:
            self._exit_renderables.clear()

    # -- one commit at a time ----------------------------------------------------------------------------
    @property
    def commit_running(self) -> bool:
        """A commit of the queue is running: the queue, the engine and other commits wait for its result."""
        return self.queue.held

    def begin_commit(self) -> None:
        self.queue.held = True
        self.screen.refresh_bindings()

    def end_commit(self) -> None:
        """The commit's result is in: the queue may change and be re-judged again (the caller rechecks)."""
        self.queue.held = False
        self.screen.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "switch_engine" and self.commit_running:
            return None  # shown disabled: the running commit keeps its engine
        return True

    # -- shared operations ------------------------------------------------------------------------------
    def ref_count(self) -> int | None:
        """Number of refs of the current snapshot once a worker has counted it (None until then).

        Counting builds the snapshot's row index (seconds at 1M refs), so it never happens on the UI thread.
        """
        return self.known_count(self.snapshot)

    def known_count(self, snapshot) -> int | None:
        counted, n = self._counted
        return n if snapshot is not None and counted is snapshot else None

    def note_count(self, snapshot, n: int) -> None:
        self._counted = (snapshot, n)

    def record_op(self, report) -> None:
        if report is None:
            return
        self.reports.append(report)
        del self.reports[:-200]
        self.op_recorded.publish(report)

    def store_failed(self, line: str, source: str) -> None:
        """Reading the store failed in ``source`` (the watcher, a refresh): shown as the store's error
        until ``source`` reads it again (or a new snapshot is swapped in)."""
        self.store_error = self._errors_from[source] = line

    def store_read_again(self, source: str) -> bool:
        """``source`` read the store again, unchanged: the error it set no longer holds (unless another
        has replaced it since). True when the error was cleared."""
        line = self._errors_from.pop(source, None)
        if line is None or self.store_error != line:
            return False
        self.store_error = None
        return True

    def set_snapshot(self, snapshot, kind: str, diff=None, event=None) -> bool:
        """Swap in ``snapshot`` unless it is older than the current one (a slow refresh finishing after a
        quicker, later one): the screen never goes back in time. False when refused."""
        if snapshot is not None and is_older(snapshot, self.snapshot):
            return False
        if self.watcher is not None and kind != "watch":
            self.watcher.offer(snapshot)
        previous, self.snapshot = self.snapshot, snapshot
        self.store_error = None
        if snapshot is not None:
            try:
                self.queue.recheck(snapshot)
            except RefscopeError as err:
                self.store_error = str(err)
        self.snapshot_changed.publish(SnapshotUpdate(snapshot, previous, kind, diff, event))
        return True

    def on_watch_event(self, message: WatchEvent) -> None:
        from .live import publish_event

        event = message.event
        publish_event(self, event)  # its lock files to the views; its snapshot once it is taken, below
        error = getattr(event, "error", None)
        if getattr(event, "report", None) is not None:
            self.record_op(self.meter.adopt(event.report))
        if error:
            self.store_failed(str(error), "watch")
            self._live_base = "error"
            self.live = "error"
            self.snapshot_changed.publish(SnapshotUpdate(self.snapshot, self.snapshot, "error", None, event))
            return
        self._live_base = "live"
        self.live = self.live_label()
        snapshot = getattr(event, "snapshot", None)
        if snapshot is not None and snapshot is not self.snapshot:
            self.set_snapshot(snapshot, "watch", getattr(event, "diff", None), event)
            self._errors_from.pop("watch", None)
        elif self.store_read_again("watch"):
            # the store reads again, unchanged (the same snapshot): the watcher's error no longer holds
            self.snapshot_changed.publish(SnapshotUpdate(self.snapshot, self.snapshot, "watch", None, event))

    # -- actions ----------------------------------------------------------------------------------------
    @work(group="quit", description="quit")
    async def action_quit(self) -> None:
        """``q`` (and ctrl+q, the palette's Quit): at once with an empty queue; with refs queued, ask first
        (default No), since the queue lives only in this process (``w`` exports it)."""
        from rich.text import Text

        from .screens.dialogs import ConfirmQuit

        n = len(self.queue)
        if not n:
            self.exit()
            return
        if isinstance(self.screen, ConfirmQuit):  # (ctrl+q while asking: the question stands)
            return
        if self.queue.edits():
            question = Text(
                f"{n:,} edit{'s are' if n != 1 else ' is'} queued and not committed. Quit and lose the queue?"
            )
        else:
            question = Text(
                f"{n:,} ref{'s are' if n != 1 else ' is'} queued for deletion and not committed. "
                "Quit and lose the queue? (w exports it to a file first)"
            )
        if await self.push_screen_wait(ConfirmQuit("Quit refscope", question, yes="y  Quit", no="n  No")):
            self.exit()

    def action_switch_engine(self) -> None:
        if self.commit_running:  # (the palette calls this directly, past check_action)
            self.notify("a commit is running: the engine is switched once it ends", severity="warning")
            return
        self.engine = "git" if self.engine == "native" else "native"
        self.notify(f"engine: {self.engine}", timeout=2)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_view(self, name: str) -> None:
        """Open one of the storage views (packed, stack, table, reflog) if it is available."""
        from .screens import main

        screen = main.make_view(self, name)
        if screen is not None:
            self.push_screen(screen, callback=self._back_from_view)

    def _back_from_view(self, result) -> None:
        """A view dismissed with a ref name (e.g. the packed-refs record under its cursor): go to it."""
        if (
            isinstance(result, bytes)
            and self.snapshot is not None
            and self.snapshot.lookup(result) is not None
        ):
            self.jump_to(result)

    def get_system_commands(self, screen):
        from .widgets.palette import system_commands

        yield from super().get_system_commands(screen)
        yield from system_commands(self)

    # -- routing to the main screen (the palette's commands, a view's "jump back") ------------------------
    def to_main(self) -> None:
        """Close the screens above the main one (the palette's "View: main")."""
        from .screens.main import MainScreen

        while len(self.screen_stack) > 2 and not isinstance(self.screen, MainScreen):
            self.pop_screen()

    def call_on_main(self, fn) -> None:
        """``fn(main_screen)`` once the main screen is in front."""
        from .screens.main import MainScreen

        self.to_main()
        if isinstance(self.screen, MainScreen):
            fn(self.screen)

    def head_reflog(self) -> None:
        from .screens.main import MainScreen
        from .screens.reflog import ReflogScreen

        self.to_main()
        if isinstance(self.screen, MainScreen) and self.snapshot is not None:
            self.push_screen(ReflogScreen(self.snapshot, b"HEAD"))

    def main_action(self, name: str) -> None:
        """Run the main screen's ``action_<name>`` once it is in front."""
        from .screens.main import MainScreen

        self.to_main()
        if isinstance(self.screen, MainScreen):
            self.screen.run_action_by_name(name)

    def jump_to(self, name: bytes) -> None:
        from .screens.main import MainScreen

        self.to_main()
        if isinstance(self.screen, MainScreen):
            self.screen.jump_to(name)
