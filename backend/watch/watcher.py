"""The watcher: notify sources feed one queue; a coordinator thread batches, refreshes and delivers.

The package's docstring has the API and why it has this shape. Here: the lifecycle (``start``/``stop``
within 100 ms), the consumer's side (``offer``, ``hold``/``release`` around its own commits), the
notify sources' restarts and the fallback to polling, and the coordinator's loop: group a burst (quiet
for ``debounce_ms``, at most ``max_batch_ms``), refresh once, classify, deliver one ``Event``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator

from ..diff import EMPTY, Diff
from ..meter import measure
from ..repo import worktree_gitdirs
from ..stores.seq import is_older
from .classify import classify_files, classify_reftable
from .events import (
    ERROR,
    HEAD_MOVED,
    RANK,
    RECOVERED,
    TABLES_LIST_REWRITTEN,
    WATCHER_POLLING,
    WATCHER_RESTARTED,
    Change,
    Event,
    lock_changes,
)
from .heads import head_value, touched_gitdirs
from .paths import current_locks, is_store_lock, is_structural, relevant_paths, watch_dirs
from .sources import NotifySource, PollSource

_RETRY_MS = (100, 200, 400, 800, 1000)  # after an error, refresh again even without events
# a failing notify source is restarted this often per _RESTART_WINDOW_S, then polling takes over
_RESTARTS = 1
_RESTART_WINDOW_S = 60.0
_STORM = 10_000  # a batch naming more paths than this may have overflowed inotify's queue: look again once

_STOP = object()


# --- the watcher -----------------------------------------------------------------------------------------


class Watcher:
    """``Watcher(store, on_event).start()`` ... ``.stop()``: calls ``on_event(Event)`` from its own thread.

    ``debounce_ms``: a burst is delivered once file events have been quiet that long (never later than
    ``max_batch_ms`` after its first event, so a storm still produces regular events). ``snapshot``: start
    from this snapshot instead of a fresh one. ``.snapshot`` is always the newest good snapshot.
    """

    def __init__(
        self,
        store,
        on_event: Callable[[Event], object],
        debounce_ms: int = 20,
        max_batch_ms: int = 250,
        snapshot=None,
    ) -> None:
        self.store = store
        self.on_event = on_event
        self.debounce_ms = debounce_ms
        self.max_batch_ms = max_batch_ms
        repo = store.repo
        self.repo = repo
        self.gitdir = os.path.abspath(repo.gitdir)
        self.commondir = os.path.abspath(repo.commondir)
        self.format = store.format
        self.snapshot = snapshot
        self.callback_error: BaseException | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._sources: list[NotifySource | PollSource] = []
        self._dirs: tuple = ((), ())
        self._stopping = threading.Event()
        self._delivering = threading.RLock()  # stop() waits (briefly) for a delivery in progress
        self._thread: threading.Thread | None = None
        self._seq = 0
        self._heads: dict[str, bytes | None] = {}
        self._locks: set[str] = set()
        self._failed: Exception | None = None
        self._initial_error: Exception | None = None
        self._retry = 0
        # for waiting until quiet (tests, benchmarks): when raw events were last seen / handled, and whether
        # a batch is being collected or processed right now
        self.activity = time.monotonic()
        self.busy = False
        # what the watcher is doing, for a status line: "idle", "refreshing" (``phase`` says how far,
        # since ``state_since``), "held" (its own process commits: see ``hold``), "stopped"
        self.state = "idle"
        self.phase = ""
        self.state_since = time.monotonic()
        self.polling: str | None = None  # why file events were given up for polling, once they were
        self.failure: BaseException | None = None  # what stopped the coordinator, if anything did
        self._swap = threading.Lock()  # self.snapshot: the coordinator's result against ``offer``
        self._held = 0
        self._deferred: set[str] = set()
        self._source_failures: list[float] = []
        self._pending: list[Change] = []  # watcher-restarted / -polling, delivered with the next refresh

    # -- lifecycle --

    def start(self) -> Watcher:
        """Start watching. File watches exist when this returns; a change made after it is never missed.

        A store that cannot be read right now does not prevent watching: the first event is then an error
        event (with ``snapshot`` None), and the first good state a ``recovered`` event with the snapshot and
        an empty diff (there is no earlier snapshot to compare with).
        """
        initial_error = None
        if self.snapshot is None:
            try:
                self.snapshot = self.store.snapshot()
            except Exception as err:
                initial_error = err
        self._remember(self.snapshot, set())
        self._rebuild_sources()
        self._thread = threading.Thread(target=self._run, name="refscope-watch", daemon=True)
        self._thread.start()
        # anything that happened between the snapshot and the watches: picked up by a first refresh
        self._initial_error = initial_error
        self._queue.put((time.monotonic(), set()))
        return self

    def stop(self, timeout: float = 0.09) -> None:
        """Stop within ~100 ms. No event is delivered after this returns."""
        self._stopping.set()
        for src in self._sources:
            src.stop()
        self._queue.put(_STOP)
        deadline = time.monotonic() + timeout
        for src in self._sources:
            src.thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, deadline - time.monotonic()))
        # a delivery that passed its stopping check before we set it: let it finish (bounded)
        if self._delivering.acquire(timeout=max(0.001, deadline - time.monotonic())):
            self._delivering.release()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping.is_set()

    @property
    def died(self) -> bool:
        """The coordinator has ended: a bug stopped it (``failure`` says why) or ``stop`` did; no event
        comes any more."""
        return self.failure is not None or (self._thread is not None and not self._thread.is_alive())

    # -- the consumer's side --

    def offer(self, snapshot) -> bool:
        """A snapshot the consumer read itself (a manual refresh, after its own commit): when it is not
        older than the watcher's, the next refresh starts from it, so the next event's diff is against
        what the consumer shows, and a refresh running now that finishes later with an older state is
        discarded (and redone). True when taken."""
        with self._swap:
            if snapshot is None or snapshot is self.snapshot or is_older(snapshot, self.snapshot):
                return False
            self.snapshot = snapshot
            return True

    def hold(self) -> None:
        """This process is about to commit: file events from now on (its own lock files and the
        intermediate states of its transaction) are collected but not refreshed until ``release``."""
        with self._swap:
            self._held += 1
            self._set_state("held")

    def release(self, snapshot=None) -> None:
        """The commit ended: ``offer(snapshot)`` (what the committer read afterwards, if anything), then
        one refresh covering every event collected while held."""
        if snapshot is not None:
            self.offer(snapshot)
        with self._swap:
            self._held = max(0, self._held - 1)
            if self._held:
                return
            self._set_state("idle")
        self._queue.put((time.monotonic(), set()))

    def _set_state(self, state: str, phase: str = "") -> None:
        if state != self.state:
            self.state_since = time.monotonic()
        self.state = state
        self.phase = phase

    # -- sources --

    def _rebuild_sources(self) -> None:
        """(Re)create notify sources for the directories that exist now; new ones first, so no gap.
        Once notify sources cannot be made (watchfiles refuses a path that is not UTF-8) or keep failing,
        one polling source replaces them for good (``polling`` says why)."""
        if self.polling is None:
            try:
                self._rebuild_notify()
                return
            except Exception as err:
                self._start_polling(f"file events unavailable ({type(err).__name__}: {err})")
                return
        if not self._sources:
            self._start_polling(self.polling)

    def _start_polling(self, why: str) -> None:
        new = [PollSource(self.commondir, self._queue)]
        first = self.polling is None
        self.polling = why
        old, self._sources = self._sources, new
        self._dirs = ((self.commondir,), ())
        for src in old:
            src.stop()
        if first:
            self._pending.append(Change(WATCHER_POLLING, self.commondir, None, why))

    def _source_failed(self, err: Exception) -> None:
        """A notify source's thread died: restart the sources (the changes meanwhile are caught by the
        refresh that follows); when that keeps happening, poll instead."""
        now = time.monotonic()
        self._source_failures = [t for t in self._source_failures if now - t < _RESTART_WINDOW_S]
        self._source_failures.append(now)
        what = f"{type(err).__name__}: {err}"
        if self.polling is not None:
            return
        if len(self._source_failures) > _RESTARTS:
            self._start_polling(f"file events failed again ({what})")
            return
        self._pending.append(Change(WATCHER_RESTARTED, self.commondir, None, what))
        self._rebuild_sources()

    def _rebuild_notify(self) -> None:
        for _ in range(3):
            nonrec, rec = watch_dirs(self.commondir)
            try:
                new = [NotifySource(nonrec, False, self._queue)]
                if rec:
                    new.append(NotifySource(rec, True, self._queue))
                break
            except FileNotFoundError:  # a directory vanished while listing: list again
                continue
        else:  # pragma: no cover - directories keep vanishing
            new = [NotifySource([self.commondir], False, self._queue)]
            nonrec, rec = [self.commondir], []
        old, self._sources = self._sources, new
        self._dirs = (tuple(nonrec), tuple(rec))
        for src in old:
            src.stop()

    # -- coordinator --

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as err:  # a bug must not leave a deaf watcher that looks alive
            self.failure = err
            self._set_state("stopped", f"{type(err).__name__}: {err}")
            change = Change(ERROR, "", None, err)
            with contextlib.suppress(BaseException):
                self._deliver(Event(ERROR, (), self.snapshot, EMPTY, None, (change,), err), time.monotonic())

    def _loop(self) -> None:
        if self._initial_error is not None:
            err, self._failed = self._initial_error, self._initial_error
            change = Change(ERROR, getattr(err, "file", None) or "", None, err)
            self._deliver(Event(ERROR, (), None, EMPTY, None, (change,), err), time.monotonic())
        q = self._queue
        debounce = self.debounce_ms / 1000
        max_batch = self.max_batch_ms / 1000
        while not self._stopping.is_set():
            timeout = None
            if self._failed is not None:
                timeout = _RETRY_MS[min(self._retry, len(_RETRY_MS) - 1)] / 1000
            try:
                item = q.get(timeout=timeout)
            except queue.Empty:
                self._retry += 1
                if not self._held:
                    self._process(set(), time.monotonic())
                continue
            if item is _STOP:
                return
            self.busy = True
            first = last = self.activity = time.monotonic()
            raw: set = set()
            failed: list[Exception] = []
            while True:
                if isinstance(item[1], Exception):
                    failed.append(item[1])
                else:
                    raw |= item[1]
                    last = item[0]
                wait = min(debounce - (time.monotonic() - last), max_batch - (time.monotonic() - first))
                if wait <= 0:
                    break
                try:
                    item = q.get(timeout=wait)
                except queue.Empty:
                    break
                if item is _STOP:
                    return
            commondir = self.commondir
            paths = relevant_paths(commondir, raw)
            for err in failed[:1]:
                self._source_failed(err)
            try:
                if self._held:  # our own commit: its lock files and half-done states are not foreign changes
                    self._deferred |= paths
                    continue
                if self._deferred:
                    paths |= self._deferred
                    self._deferred = set()
                if not paths and raw and not failed and not self._pending:
                    continue  # only irrelevant files (index, logs, objects...)
                if len(raw) > _STORM:  # inotify's queue may have overflowed: one more look once quiet
                    q.put((time.monotonic(), set()))
                structural = bool(failed) or any(is_structural(commondir, p) for p in paths)
                if structural and self._dirs != tuple(map(tuple, watch_dirs(commondir))):
                    self._rebuild_sources()
                if paths and not failed and not self._pending and all(p.endswith(".lock") for p in paths):
                    self._process_locks(paths, last)  # a lock file changes no ref: no refresh
                else:
                    self._process(paths, last)
            finally:
                self.activity = time.monotonic()
                self.busy = False

    def _process_locks(self, paths: set[str], last_event: float) -> None:
        """A batch that only created or removed lock files: storage-level locks come and go as changes;
        loose-ref locks (``refs/**.lock``, up to one per ref of a huge transaction) are not tracked."""
        locks = self._held_locks(paths)
        changes = lock_changes(self._locks, locks)
        self._locks = locks
        if changes and not self._stopping.is_set():
            snap = self.snapshot
            self._deliver(
                Event(changes[0].kind, tuple(sorted(paths)), snap, EMPTY, None, tuple(changes)), last_event
            )

    def _process(self, paths: set[str], last_event: float) -> None:
        try:
            self._refresh(paths, last_event)
        finally:
            with self._swap:
                if self.state == "refreshing":
                    self._set_state("idle")

    def _refresh(self, paths: set[str], last_event: float) -> None:
        with self._swap:
            prev = self.snapshot
        err: Exception | None = None
        with self._swap:
            if not self._held:
                self._set_state("refreshing", "reading the store")
        with measure("watch refresh") as m:
            try:
                if prev is None:  # never read successfully: no baseline to diff against
                    new = self.store.snapshot()
                    result = ([], EMPTY, self._observe(new, paths, initial=True))
                else:
                    # (the files store re-reads racily clean files itself: a rewrite keeping inode,
                    # size and mtime is never served stale, so no second look at the touched files)
                    new = self.store.refresh(prev)
                    self.phase = "comparing with the previous state"
                    result = self._classify(prev, new, paths)
            except Exception as exc:  # a corrupt or half-written store must not kill the watcher
                err = exc
        if self._stopping.is_set():
            return
        with self._swap:
            if self.snapshot is not prev:  # the consumer offered a newer snapshot meanwhile: this diff is
                # against what it no longer shows (and may be older than it): redo from the offered one
                self._queue.put((time.monotonic(), {(2, p) for p in paths}))
                return
        if err is not None:
            first = self._failed is None or str(self._failed) != str(err)
            self._failed = err
            if first:
                change = Change(ERROR, getattr(err, "file", None) or "", None, err)
                self._deliver(
                    Event(ERROR, tuple(sorted(paths)), prev, EMPTY, m.report, (change,), err), last_event
                )
            return
        changes, d, state = result
        with self._swap:  # (checked again: an offer may have come since)
            stale = self.snapshot is not prev and is_older(new, self.snapshot)
            if not stale:
                self.snapshot = new
        if stale:
            self._queue.put((time.monotonic(), {(2, p) for p in paths}))
            return
        if self._failed is not None:
            changes = [Change(RECOVERED), *changes]
            self._failed = None
        if self._pending:
            changes = [*self._pending, *changes]
            self._pending = []
        self._retry = 0
        self._commit_state(state)
        if not changes and not d:
            return
        changes.sort(key=lambda c: (RANK[c.kind], c.path))
        kind = changes[0].kind if changes else TABLES_LIST_REWRITTEN
        self._deliver(Event(kind, tuple(sorted(paths)), new, d, m.report, tuple(changes)), last_event)

    def _deliver(self, event: Event, last_event: float) -> None:
        with self._delivering:
            if self._stopping.is_set():
                return
            self._seq += 1
            event = event._replace(seq=self._seq, latency_ms=(time.monotonic() - last_event) * 1000)
            try:
                self.on_event(event)
            except BaseException as exc:  # the consumer's bug must not kill the watcher
                self.callback_error = exc

    # -- state & classification --

    def _remember(self, snap, paths: set[str]) -> None:
        state = self._observe(snap, paths, initial=True)
        self._commit_state(state)

    def _commit_state(self, state: dict) -> None:
        self._heads.update(state["heads"])
        self._locks = state["locks"]

    def _observe(self, snap, paths: set[str], initial: bool = False) -> dict:
        """The watcher's own view of the state beside the snapshot: HEADs and held locks."""
        commondir = self.commondir
        if initial:
            gitdirs = [commondir, *worktree_gitdirs(commondir)]
        else:
            own_stack = self.snapshot is not None
            gitdirs = touched_gitdirs(commondir, self.gitdir, self.format, self._heads, paths, own_stack)
        heads = {gd: head_value(self.repo, self.format, gd, self.gitdir, snap) for gd in gitdirs}
        locks = current_locks(commondir) if initial else self._held_locks(paths)
        return {"heads": heads, "locks": locks}

    def _held_locks(self, paths: set[str]) -> set[str]:
        """The storage locks held after a batch that named ``paths``: those held before, with every
        storage lock the batch named looked at again (loose-ref locks under ``refs/`` are not tracked)."""
        locks = set(self._locks)
        for p in paths:
            if p.endswith(".lock") and is_store_lock(self.commondir, p):
                if os.path.lexists(p):
                    locks.add(p)
                else:
                    locks.discard(p)
        return locks

    def _set_phase(self, phase: str) -> None:
        self.phase = phase

    def _classify(self, prev, new, paths: set[str]) -> tuple[list[Change], Diff, dict]:
        state = self._observe(new, paths)
        changes: list[Change] = []
        if self.format == "reftable":
            d = classify_reftable(prev, new, paths, changes, self._set_phase)
        else:
            d = classify_files(prev, new, paths, changes, self.gitdir, self.commondir, self._set_phase)
        for gd, value in state["heads"].items():
            old = self._heads.get(gd)
            if old != value:
                changes.append(Change(HEAD_MOVED, gd, None, (old, value)))
        changes += lock_changes(self._locks, state["locks"])
        return changes, d, state


# --- iterator API --------------------------------------------------------------------------------------


def iter_events(
    store,
    stop_event: threading.Event | None = None,
    debounce_ms: int = 20,
    max_batch_ms: int = 250,
    poll_s: float = 0.05,
) -> Iterator[Event]:
    """Events as an iterator, for a thread (or a Textual thread worker): ends when ``stop_event`` is set or
    the generator is closed; the watcher is stopped either way."""
    q: queue.SimpleQueue = queue.SimpleQueue()
    w = Watcher(store, q.put, debounce_ms=debounce_ms, max_batch_ms=max_batch_ms).start()
    try:
        while stop_event is None or not stop_event.is_set():
            try:
                yield q.get(timeout=poll_s)
            except queue.Empty:
                continue
    finally:
        w.stop()
