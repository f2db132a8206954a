"""Following the store live: the app's one watcher, fed to the views through messages.

There is one ``Watcher`` (``backend.watch``) per app. The refscope app runs it (``RefscopeApp.watcher``) and
publishes each new snapshot on ``snapshot_changed``; the watcher's events that bring no new snapshot (a lock
file taken or released: ``lock-appeared`` / ``lock-gone``) it hands to ``publish_event``. An app that runs no
watcher of its own (a host embedding one view, the tests' host) gets one from here, started for the first
view that follows and shared by every following view of that app. Either way the views hear of changes as
``LiveUpdate``s on the app's ``Feed`` (a Textual Signal: each callback reaches the view as a message on
its own queue, on the UI thread); nobody polls.

Screens call ``follow(screen, store, snapshot, on_change, on_locks)`` on mount and ``.stop()`` on
unmount. ``on_change(new_snapshot)`` runs on the UI thread with each newer snapshot (never an older one);
``on_locks(held, when)`` with the set of ``*.lock`` names now held in the storage directory the view shows
(``reftable/`` or the common git dir) each time it changes.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from refscope.backend.stores.seq import is_older
from refscope.backend.watch import LOCK_APPEARED, LOCK_GONE, Watcher
from textual.signal import Signal


class LiveUpdate(NamedTuple):
    """What the feed publishes: a newer snapshot (None: no new snapshot) and/or the watcher's typed
    changes (``backend.watch.Change``) that came with it."""

    snapshot: Any = None
    changes: tuple = ()


class Feed:
    """The live updates of one app: ``updates`` (a Signal of ``LiveUpdate``) fed by the app's watcher, or
    by the one this feed runs when the app has none (``join`` / ``leave`` count the views using it)."""

    def __init__(self, app: Any) -> None:
        self._app = weakref.ref(app)  # (the app keeps its feed, not the other way round)
        self.updates: Signal[LiveUpdate] = Signal(app, "live_updates")
        self.watcher: Any = None  # our own, only for an app that runs none
        self._users = 0
        self._lock = threading.Lock()  # (the watcher against the thread starting it)
        self._generation = 0  # bumped by the first join and the last leave
        signal = getattr(app, "snapshot_changed", None)  # (RefscopeApp: every snapshot it swaps in)
        if signal is not None:
            signal.subscribe(app, lambda update: self.publish(LiveUpdate(update.snapshot)), immediate=True)

    def publish(self, update: LiveUpdate) -> None:
        """On the UI thread: every following view hears of ``update`` (each through its message queue)."""
        self.updates.publish(update)

    def join(self, follower: Follower, store: Any) -> None:
        """A view follows: the app's watcher feeds it; without one, the first view starts ours."""
        self._users += 1
        if getattr(self._app(), "watcher", None) is not None or self._users > 1:
            return
        with self._lock:
            self._generation += 1
            generation = self._generation
        threading.Thread(  # the first frame never waits for the watches of a big refs/ tree
            target=self._start, args=(follower, store, generation), name="refscope-view-watch", daemon=True
        ).start()

    def leave(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        with self._lock:
            self._generation += 1  # a watcher still starting stops itself
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()

    def _start(self, follower: Follower, store: Any, generation: int) -> None:
        """(thread) Start our watcher from the first view's snapshot, unless every view has left since."""
        try:
            watcher = Watcher(store, self._on_event, snapshot=follower.snapshot).start()
        except Exception as error:
            if generation == self._generation:
                follower.failed(error)
            return
        with self._lock:
            if generation == self._generation:
                self.watcher = watcher
                return
        watcher.stop()  # every view left while it was starting

    def _on_event(self, event: Any) -> None:
        """(our watcher's thread) To the UI thread, where the feed publishes it."""
        app = self._app()
        if app is None:
            return
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            app.call_from_thread(self.publish, LiveUpdate(event.snapshot, tuple(event.changes)))


_feeds: weakref.WeakKeyDictionary[Any, Feed] = weakref.WeakKeyDictionary()


def feed_of(app: Any) -> Feed:
    """The app's one feed (made on first use, on the UI thread)."""
    feed = _feeds.get(app)
    if feed is None:
        feed = _feeds[app] = Feed(app)
    return feed


def publish_event(app: Any, event: Any) -> None:
    """The app's own watcher saw ``event``: its changes reach the views (the snapshot, if any, the app
    publishes itself once it has taken it)."""
    feed = _feeds.get(app)
    if feed is not None and event.changes:
        feed.publish(LiveUpdate(None, tuple(event.changes)))


def storage_dir(snapshot: Any) -> str:
    """The directory whose lock files a view of ``snapshot`` shows: ``reftable/`` or the common git dir."""
    if snapshot.format == "reftable":
        return os.path.join(snapshot.commondir, "reftable")
    return snapshot.commondir


class Follower:
    """One view following its app's feed: newer snapshots to ``on_change``, lock files to ``on_locks``."""

    def __init__(
        self,
        screen: Any,
        snapshot: Any,
        on_change: Callable[[Any], None],
        on_locks: Callable[[set[str], float], None] | None = None,
    ) -> None:
        self.screen = screen
        self.snapshot = snapshot
        self.on_change = on_change
        self.on_locks = on_locks
        self.feed: Feed | None = None
        self._locks: set[str] = set()
        self._dir = os.path.abspath(storage_dir(snapshot))

    def start(self, store: Any) -> Follower:
        self.feed = feed_of(self.screen.app)
        self.feed.updates.subscribe(self.screen, self._on_update)
        self.feed.join(self, store)
        return self

    def failed(self, error: Exception) -> None:
        """(any thread) No watcher could be started: the view stays as it is and its status line says why
        (``..workers``: logged, and shown on the UI thread)."""
        from .workers import Failure, report

        report(self.screen, Failure("follow", "follow the store", error))

    def stop(self) -> None:
        feed, self.feed = self.feed, None
        if feed is not None:
            feed.updates.unsubscribe(self.screen)
            feed.leave()

    def _on_update(self, update: LiveUpdate) -> None:
        if self.feed is None:
            return
        if self.on_locks is not None:
            # the watcher saw the lock files come and go (even one held for a millisecond): replay in order
            held = set(self._locks)
            for change in update.changes:
                path = change.path or ""
                if change.kind not in (LOCK_APPEARED, LOCK_GONE) or os.path.dirname(path) != self._dir:
                    continue
                name = os.path.basename(path)
                held = held | {name} if change.kind == LOCK_APPEARED else held - {name}
                if held != self._locks:
                    self._locks = held
                    self.on_locks(set(held), time.monotonic())
        snapshot = update.snapshot
        if snapshot is None or snapshot is self.snapshot or is_older(snapshot, self.snapshot):
            return  # never back in time: a slow refresh may finish after a newer one
        self.snapshot = snapshot
        self.on_change(snapshot)


def follow(
    screen: Any,
    store: Any,
    snapshot: Any,
    on_change: Callable[[Any], None],
    on_locks: Callable[[set[str], float], None] | None = None,
) -> Follower:
    """Live updates for ``screen`` (mounted) from its app's one feed; ``.stop()`` on unmount."""
    return Follower(screen, snapshot, on_change, on_locks).start(store)
