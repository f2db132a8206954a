"""Following the store live: the WATCH engineer's ``Watcher`` when present, a cheap poll otherwise.

Screens call ``Follower(screen, store, snapshot, on_change).start()`` on mount and ``.stop()`` on unmount.
``on_change(new_snapshot, paths)`` runs on the UI thread with each new snapshot (``paths`` are the changed
files the watcher saw, or () when polling). Lock files are reported separately through ``on_locks(held)``:
the set of ``*.lock`` names present in the watched storage directories right now.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any


def lock_names(snapshot: Any) -> set[str]:
    """``*.lock`` files in the storage directories (someone is writing right now)."""
    out: set[str] = set()
    dirs = (
        [os.path.join(snapshot.commondir, "reftable")]
        if snapshot.format == "reftable"
        else [snapshot.commondir]
    )
    for d in dirs:
        try:
            with os.scandir(d) as it:
                out.update(e.name for e in it if e.name.endswith(".lock"))
        except OSError:
            pass
    return out


class Follower:
    """Delivers new snapshots of ``store`` to a screen on its UI thread."""

    def __init__(
        self,
        screen: Any,
        store: Any,
        snapshot: Any,
        on_change: Callable[[Any, tuple], None],
        on_locks: Callable[[set[str], float], None] | None = None,
        interval: float = 0.05,
        refresh: bool = True,
    ) -> None:
        self.screen = screen
        self.store = store
        self.snapshot = snapshot
        self.on_change = on_change
        self.on_locks = on_locks
        self.interval = interval
        self.refresh = refresh  # False: the app delivers snapshots; we only look for lock files
        self._watcher: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._locks: set[str] = set()
        self._latest = snapshot  # the poller's own newest (the UI's may lag behind by a frame)

    def start(self) -> None:
        if not self.refresh:
            self._thread = threading.Thread(target=self._poll, name="refscope-view-locks", daemon=True)
            self._thread.start()
            return
        try:
            from refscope.backend.watch import Watcher
        except ImportError:
            Watcher = None  # noqa: N806
        if Watcher is not None:
            try:
                self._watcher = Watcher(self.store, self._on_event, snapshot=self.snapshot)
                self._watcher.start()
            except Exception:  # a watcher that cannot start must not take the view down: poll instead
                self._watcher = None
        self._thread = threading.Thread(target=self._poll, name="refscope-view-follow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def _deliver(self, snapshot: Any, paths: tuple) -> None:
        if self._stop.is_set():
            return
        with contextlib.suppress(RuntimeError):  # app shutting down
            self.screen.run_on_ui(self._apply, snapshot, paths)

    def _apply(self, snapshot: Any, paths: tuple) -> None:
        from refscope.backend.stores.seq import is_older

        if self._stop.is_set() or snapshot is self.snapshot or is_older(snapshot, self.snapshot):
            return  # never back in time: a slow refresh may finish after a newer one
        self.snapshot = snapshot
        self.on_change(snapshot, paths)

    def _on_event(self, event: Any) -> None:
        snapshot = getattr(event, "snapshot", None)
        paths = tuple(getattr(event, "paths", ()) or ())
        if self.on_locks is not None:
            # the watcher saw the lock files come and go (even one held for a millisecond): replay in order
            for change in getattr(event, "changes", ()) or ():
                kind = getattr(change, "kind", "")
                name = os.path.basename(getattr(change, "path", "") or "")
                if kind == "lock-appeared" and name:
                    self._set_locks(self._locks | {name})
                elif kind == "lock-gone" and name:
                    self._set_locks(self._locks - {name})
        if snapshot is not None:
            self._deliver(snapshot, paths)

    def _set_locks(self, held: set[str]) -> None:
        if held == self._locks:
            return
        self._locks = held
        if self.on_locks is not None:
            with contextlib.suppress(RuntimeError):
                self.screen.run_on_ui(self.on_locks, set(held), time.monotonic())

    def _check_locks(self) -> None:
        self._set_locks(lock_names(self.snapshot))

    def _poll(self) -> None:
        """Lock files appear and vanish within milliseconds: look often (a directory listing is cheap).
        Without a watcher, also refresh the snapshot (``refresh`` returns the same object when unchanged).
        A failure once may be a table compacted away between two reads (the next round reads the new
        stack); the same failure twice in a row is shown on the screen (``..workers``), once."""
        from refscope.backend.stores.seq import is_older

        from .workers import Failure, failure_line, report

        last: str | None = None
        shown = False
        while not self._stop.wait(self.interval):
            try:
                if self.on_locks is not None:
                    self._check_locks()
                if self.refresh and self._watcher is None:
                    new = self.store.refresh(self._latest)
                    if new is not self._latest and not is_older(new, self._latest):
                        self._latest = new
                        self._deliver(new, ())
            except Exception as error:
                line = failure_line(error)
                if line == last and not shown and not self._stop.is_set():
                    shown = True
                    report(self.screen, Failure("follow", "follow the store", error))
                last = line
                continue
            last, shown = None, False
