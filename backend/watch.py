"""Watch a ref store live: file events -> debounced batches -> refresh -> typed change events with a diff.

API::

    w = Watcher(store, on_event, debounce_ms=20, max_batch_ms=250, snapshot=None).start()  # or `with Watcher(..)`
    w.snapshot        # the newest good snapshot (immutable; swap it in the view)
    w.stop()          # < 100 ms; no on_event call after it returns
    for ev in iter_events(store, stop_event=stop): ...     # the same, as an iterator for a thread worker

``on_event(Event)`` runs on the watcher's thread. ``Event``: ``kind`` (its most significant change),
``changes`` (typed ``Change`` list: packed-refs-rewritten, loose-created/-changed/-deleted, tables-appended,
tables-compacted (``diff.Compaction``: inputs -> output, ``pure`` when no ref changed), tables-list-rewritten,
head-moved (any worktree), lock-appeared/-gone, error, recovered, watcher-restarted, watcher-polling),
``snapshot`` (refreshed), ``diff``
(``diff.Diff``: added/removed/changed names since the previous event), ``report`` (OpReport of refresh + diff),
``paths``, ``error``, ``seq``, ``latency_ms``.

Why this shape:

- git replaces ``packed-refs`` and ``tables.list`` by renaming a lock over them, so files are never watched
  themselves, only the directories git writes through: the common git dir non-recursively (``packed-refs``,
  ``HEAD``), ``refs/`` recursively (loose refs), ``reftable/``, and every worktree's git dir under
  ``worktrees/`` (its ``HEAD``, ``refs/``, ``reftable/``). watchfiles' ``DefaultFilter`` drops every path with
  a ``.git`` component; refscope uses its own filter (``relevant``).
- Raw file events are only *triggers and hints*. Inotify coalesces, a new directory's watch is added after
  its first files may already exist, and ext4 reuses a freed inode at once. So what happened is decided by
  comparing states: the previous snapshot and the refreshed one (table names, ``Snapshot.files()``
  identities, packed-refs bytes), plus the paths the events named (locks, touched loose refs).
- Two notify sources (one non-recursive, one recursive) feed one queue; a coordinator thread groups a burst
  (quiet for ``debounce_ms``, at most ``max_batch_ms``), then refreshes once: ``store.refresh(prev)`` reuses
  every unchanged table/file, and ``diff.py`` computes the ref-level difference from the changed parts only.
- One Event per batch. Transient locks (taken and released within the batch) and batches that changed
  nothing are not delivered: an event means the ref storage is different from the last event's.
- A store that cannot be read (corrupt table, half-written state) yields an ``error`` event carrying the last
  good snapshot; the watcher keeps watching and retries on a timer too, and the first good refresh afterwards
  carries a ``recovered`` change and the diff against the last good snapshot.
- ``stop()`` returns within 100 ms: notify sources poll the stop event every ``_STEP_MS``; a refresh still
  running in the background finishes and is discarded.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from . import diff as _diff
from .diff import EMPTY, Diff
from .meter import OpReport, measure
from .stores.seq import is_older

# Change kinds (strings, so JSON and tests read them as they are).
PACKED_REWRITTEN = "packed-refs-rewritten"
LOOSE_CREATED = "loose-created"
LOOSE_CHANGED = "loose-changed"
LOOSE_DELETED = "loose-deleted"
TABLES_APPENDED = "tables-appended"
TABLES_COMPACTED = "tables-compacted"
TABLES_LIST_REWRITTEN = "tables-list-rewritten"
HEAD_MOVED = "head-moved"
LOCK_APPEARED = "lock-appeared"
LOCK_GONE = "lock-gone"
ERROR = "error"
RECOVERED = "recovered"
WATCHER_RESTARTED = "watcher-restarted"  # a notify source failed; new ones replace it (detail: the error)
WATCHER_POLLING = "watcher-polling"  # file events cannot be had (again): polling stats instead (detail: why)

# An event's kind is its most significant change's kind, in this order.
_ORDER = (
    ERROR,
    WATCHER_POLLING,
    WATCHER_RESTARTED,
    RECOVERED,
    TABLES_LIST_REWRITTEN,
    TABLES_APPENDED,
    TABLES_COMPACTED,
    PACKED_REWRITTEN,
    LOOSE_CREATED,
    LOOSE_CHANGED,
    LOOSE_DELETED,
    HEAD_MOVED,
    LOCK_APPEARED,
    LOCK_GONE,
)
_RANK = {k: i for i, k in enumerate(_ORDER)}

_STEP_MS = 10  # notify sources: quiet window before handing a raw batch over, and stop-event poll period
_RETRY_MS = (100, 200, 400, 800, 1000)  # after an error, refresh again even without events
_RESTARTS = (
    1  # a failing notify source is restarted this often per _RESTART_WINDOW_S, then polling takes over
)
_RESTART_WINDOW_S = 60.0
_POLL_MS = 50  # the polling source's period (stretched to 5x its own scan time on huge trees)
_STORM = 10_000  # a batch naming more paths than this may have overflowed inotify's queue: look again once


class Change(NamedTuple):
    """One typed change inside a batch.

    ``path``: the file (or worktree git dir for HEAD) it is about. ``name``: the ref for loose changes.
    ``detail``: tables-appended -> tuple of new table names (empty when git compacted the new table away
    before the watcher saw it: the writes are in a compaction's output, ``Compaction.pure`` False);
    tables-compacted -> ``diff.Compaction``;
    head-moved -> (old, new) where each is ``b"ref: <target>"``, an oid, or None; error -> the error.
    """

    kind: str
    path: str = ""
    name: bytes | None = None
    detail: object = None


class Event(NamedTuple):
    """What one debounced batch of file events amounted to.

    ``snapshot``: the refreshed snapshot (the last good one for an error event). ``diff``: refs added,
    removed, changed since the previous event's snapshot. ``report``: the OpReport of refresh + diff.
    ``paths``: the relevant paths the file events named. ``latency_ms``: from the batch's last file event
    to delivery.
    """

    kind: str
    paths: tuple[str, ...]
    snapshot: object
    diff: Diff
    report: OpReport | None
    changes: tuple[Change, ...]
    error: Exception | None = None
    seq: int = 0
    latency_ms: float = 0.0

    def to_json(self) -> dict:
        """The fields for JSON; names and values stay bytes (``display.to_json`` encodes them)."""

        def dec(b: bytes | None) -> bytes | None:
            return b

        changes = []
        for c in self.changes:
            item: dict = {"kind": c.kind, "path": c.path}
            if c.name is not None:
                item["name"] = dec(c.name)
            d = c.detail
            if isinstance(d, _diff.Compaction):
                item.update(inputs=list(d.inputs), output=d.output, pure=d.pure)
            elif c.kind == TABLES_APPENDED:
                item["tables"] = list(d or ())
            elif c.kind == HEAD_MOVED and d:
                item.update(old=dec(d[0]), new=dec(d[1]))
            elif c.kind in (ERROR, WATCHER_RESTARTED, WATCHER_POLLING) and d is not None:
                item["error"] = str(d)
            changes.append(item)
        out = {"seq": self.seq, "kind": self.kind, "changes": changes, **self.diff.to_json()}
        if self.report is not None:
            out["report"] = self.report.to_json()
        if self.error is not None:
            out["error"] = str(self.error)
        out["latency_ms"] = round(self.latency_ms, 3)
        return out


# --- which paths matter --------------------------------------------------------------------------------


def watch_dirs(commondir: str) -> tuple[list[str], list[str]]:
    """(non-recursive dirs, recursive dirs) to watch for one repository, all existing right now."""
    nonrec = [commondir]
    rec: list[str] = []
    refs = os.path.join(commondir, "refs")
    if os.path.isdir(refs):
        rec.append(refs)
    rt = os.path.join(commondir, "reftable")
    if os.path.isdir(rt):
        nonrec.append(rt)
    wt = os.path.join(commondir, "worktrees")
    if os.path.isdir(wt):
        nonrec.append(wt)
        try:
            names = sorted(os.listdir(wt))
        except OSError:
            names = []
        for name in names:
            gd = os.path.join(wt, name)
            if not os.path.isdir(gd):
                continue
            nonrec.append(gd)
            if os.path.isdir(os.path.join(gd, "refs")):
                rec.append(os.path.join(gd, "refs"))
            if os.path.isdir(os.path.join(gd, "reftable")):
                nonrec.append(os.path.join(gd, "reftable"))
    return nonrec, rec


def relevant(commondir: str, path: str) -> bool:
    """The filter: does a file event at ``path`` concern ref storage? (Never drops ``.git`` paths.)"""
    prefix = commondir.rstrip("/") + "/"
    if not path.startswith(prefix):
        return False
    rel = path[len(prefix) :]
    if rel in ("packed-refs", "packed-refs.lock", "HEAD", "HEAD.lock", "refs", "reftable", "worktrees"):
        return True
    if rel.startswith(("refs/", "reftable/")):
        return True
    if rel.startswith("worktrees/"):
        parts = rel.split("/")
        if len(parts) == 2:
            return True  # a worktree came or went
        return parts[2] in ("HEAD", "HEAD.lock", "refs", "reftable")
    return False


def _is_structural(commondir: str, path: str) -> bool:
    """Does this path's appearance/disappearance change the set of directories to watch?"""
    rel = path[len(commondir.rstrip("/")) + 1 :]
    parts = rel.split("/")
    if rel in ("refs", "reftable", "worktrees"):
        return True
    return parts[0] == "worktrees" and (
        len(parts) == 2 or (len(parts) == 3 and parts[2] in ("refs", "reftable"))
    )


# --- raw file-event sources ----------------------------------------------------------------------------


class _Source:
    """One watchfiles RustNotify (its inotify watches exist once the constructor returns) and the thread
    that hands its raw batches to the coordinator's queue."""

    def __init__(self, paths: list[str], recursive: bool, sink: queue.SimpleQueue) -> None:
        from watchfiles._rust_notify import RustNotify

        self.stop_event = threading.Event()
        self._notify = RustNotify(paths, False, False, 50, recursive, True)
        self._sink = sink
        self.thread = threading.Thread(target=self._run, name="refscope-watch-source", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        notify, stop, sink = self._notify, self.stop_event, self._sink
        try:
            while not stop.is_set():
                raw = notify.watch(_STEP_MS * 5, _STEP_MS, 500, stop)
                if isinstance(raw, set):
                    sink.put((time.monotonic(), raw))
                elif raw == "stop":
                    break
        except Exception as err:  # the notify thread died (a watched dir removed, a name not UTF-8...)
            if not stop.is_set():
                sink.put((time.monotonic(), err))
        finally:
            notify.close()

    def stop(self) -> None:
        self.stop_event.set()


class _PollSource:
    """The fallback when file events fail: every ``_POLL_MS`` it stats the few things git changes when it
    writes refs (``packed-refs``, ``HEAD``, ``tables.list``, every directory under ``refs/`` -- git
    renames loose refs into place, which changes their directory's mtime -- and the ``*.lock`` names in
    the storage directories) and hands the paths that differ to the coordinator, as a notify source
    would. Works on any path (watchfiles needs UTF-8 paths)."""

    def __init__(self, commondir: str, sink: queue.SimpleQueue, interval_ms: int = _POLL_MS) -> None:
        self.commondir = commondir
        self.stop_event = threading.Event()
        self._sink = sink
        self._interval = interval_ms / 1000
        self._seen = self._scan()
        self.thread = threading.Thread(target=self._run, name="refscope-watch-poll", daemon=True)
        self.thread.start()

    def _scan(self) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        gitdirs = [self.commondir, *[gd for (gd,) in _worktree_gitdirs(self.commondir)]]
        for gd in gitdirs:
            for rel in ("packed-refs", "HEAD", os.path.join("reftable", "tables.list")):
                _stat_into(os.path.join(gd, rel), out)
            for d in (gd, os.path.join(gd, "reftable")):
                try:
                    names = os.listdir(d)
                except OSError:
                    continue
                out.update((os.path.join(d, n), ()) for n in names if n.endswith(".lock"))
            stack = [os.path.join(gd, "refs")]
            while stack:
                d = stack.pop()
                if not _stat_into(d, out):
                    continue
                try:
                    with os.scandir(d) as it:
                        stack.extend(e.path for e in it if e.is_dir(follow_symlinks=False))
                except OSError:
                    continue
        return out

    def _run(self) -> None:
        stop = self.stop_event
        wait = self._interval
        while not stop.wait(wait):
            t = time.monotonic()
            now = self._scan()
            wait = max(self._interval, 5 * (time.monotonic() - t))
            if now != self._seen:
                paths = {p for p in now.keys() | self._seen.keys() if now.get(p) != self._seen.get(p)}
                self._seen = now
                self._sink.put((time.monotonic(), {(2, p) for p in paths}))

    def stop(self) -> None:
        self.stop_event.set()


def _stat_into(path: str, out: dict[str, tuple]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    out[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return True


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
        self._sources: list[_Source] = []
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
        new = [_PollSource(self.commondir, self._queue)]
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
                new = [_Source(nonrec, False, self._queue)]
                if rec:
                    new.append(_Source(rec, True, self._queue))
                break
            except FileNotFoundError:  # a directory vanished while listing: list again
                continue
        else:  # pragma: no cover - directories keep vanishing
            new = [_Source([self.commondir], False, self._queue)]
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
            paths = _relevant_paths(commondir, raw)
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
                structural = bool(failed) or any(_is_structural(commondir, p) for p in paths)
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
        store_locks = {p for p in paths if _is_store_lock(self.commondir, p)}
        if not store_locks:
            return
        state = {"heads": {}, "locks": set(self._locks)}
        for p in store_locks:
            if os.path.lexists(p):
                state["locks"].add(p)
            else:
                state["locks"].discard(p)
        changes = [Change(LOCK_APPEARED, p) for p in sorted(state["locks"] - self._locks)]
        changes += [Change(LOCK_GONE, p) for p in sorted(self._locks - state["locks"])]
        self._locks = state["locks"]
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
        changes.sort(key=lambda c: (_RANK[c.kind], c.path))
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
        state: dict = {"heads": {}, "locks": set(self._locks)}
        if initial:
            gitdirs = [self.commondir, *[gd for gd, *_ in _worktree_gitdirs(self.commondir)]]
        else:
            gitdirs = self._touched_gitdirs(paths)
        for gd in gitdirs:
            state["heads"][gd] = self._head_value(gd, snap)
        for p in paths:
            if p.endswith(".lock") and _is_store_lock(self.commondir, p):
                if os.path.lexists(p):
                    state["locks"].add(p)
                else:
                    state["locks"].discard(p)
        if initial:
            state["locks"] = {p for p in _current_locks(self.commondir)}
        return state

    def _touched_gitdirs(self, paths: set[str]) -> list[str]:
        """Worktree git dirs whose HEAD may have moved in this batch (all of them when worktrees came or went:
        their files may have been written before the new directories were watched)."""
        out = set()
        if any(_is_structural(self.commondir, p) for p in paths):
            out.update(gd for (gd,) in _worktree_gitdirs(self.commondir))
            out.update(self._heads)
        if self.format == "reftable" and self.snapshot is not None:
            out.add(self.gitdir)  # own HEAD is in the stack we just refreshed: a cheap seek
        for p in paths:
            d, base = os.path.split(p)
            if base in ("HEAD", "HEAD.lock") and self.format == "files":
                out.add(d)
            elif base in ("tables.list", "tables.list.lock") and os.path.basename(d) == "reftable":
                out.add(os.path.dirname(d))
            elif os.path.dirname(d) == os.path.join(self.commondir, "worktrees"):
                out.add(d)  # a worktree came or went
            elif p == os.path.join(self.commondir, "worktrees", base):
                out.add(p)
        return sorted(out)

    def _head_value(self, gitdir: str, snap) -> bytes | None:
        """HEAD of the worktree whose git dir is ``gitdir``: b"ref: <target>", an oid, or None."""
        if not os.path.isdir(gitdir):
            return None
        if self.format == "files":
            data = _read_small(os.path.join(gitdir, "HEAD"))
            if data is None:
                return None
            return data.rstrip(b"\n")
        if gitdir == self.gitdir and snap is not None:
            ref = snap.head()
        else:
            from .store import open_store

            try:
                ref = open_store(self.repo._replace(gitdir=gitdir)).snapshot().head()
            except Exception:
                return None
        if ref is None:
            return None
        return b"ref: " + ref.target if ref.target is not None else ref.oid

    def _classify(self, prev, new, paths: set[str]) -> tuple[list[Change], Diff, dict]:
        state = self._observe(new, paths)
        changes: list[Change] = []
        if self.format == "reftable":
            d = self._classify_reftable(prev, new, paths, changes)
        else:
            d = self._classify_files(prev, new, paths, changes, state)
        for gd, value in state["heads"].items():
            old = self._heads.get(gd)
            if old != value:
                changes.append(Change(HEAD_MOVED, gd, None, (old, value)))
        for p in sorted(state["locks"] - self._locks):
            changes.append(Change(LOCK_APPEARED, p))
        for p in sorted(self._locks - state["locks"]):
            changes.append(Change(LOCK_GONE, p))
        return changes, d, state

    def _classify_reftable(self, prev, new, paths: set[str], changes: list[Change]) -> Diff:
        old_stacks = _stacks(prev)
        new_stacks = _stacks(new)
        cands: set[bytes] = set()
        full = False
        appended_only: list = []  # the new tables when the one stack only grew (the common case)
        for rdir in sorted(set(old_stacks) | set(new_stacks)):
            old_t = old_stacks.get(rdir, [])
            new_t = new_stacks.get(rdir, [])
            plan = _diff.plan_tables(old_t, new_t)
            list_path = os.path.join(rdir, "tables.list")
            if plan.unchanged:
                if list_path in paths and _identity(prev, list_path) != _identity(new, list_path):
                    changes.append(Change(TABLES_LIST_REWRITTEN, list_path))
                continue
            if plan.unexplained:
                changes.append(Change(TABLES_LIST_REWRITTEN, list_path))
                full = True
                continue
            if plan.appended or any(not c.pure for c in plan.compactions):
                # tables git appended; () when the writes were compacted before the watcher saw their table
                changes.append(Change(TABLES_APPENDED, list_path, None, plan.appended))
            for c in plan.compactions:
                changes.append(Change(TABLES_COMPACTED, list_path, None, c))
            if not plan.compactions and len(old_stacks) == len(new_stacks) == 1:
                appended_only = new_t[len(old_t) :]
                continue
            more = _diff.table_candidates(plan, old_t, new_t)
            if more is None:
                full = True
            else:
                cands |= more
        if full:
            return _diff.full_diff(prev, new)
        if appended_only and prev.format == "reftable" and prev.worktree_stack is None:
            size = sum(t.stat[2] for t in appended_only)
            self.phase = f"comparing {len(appended_only)} new table(s), {size / 1048576:.1f} MiB"
            return _diff.appended_diff(prev, appended_only)
        if appended_only:
            for t in appended_only:
                for rb, _i in t.iter_ref_blocks():
                    cands.update(rb.names)
        if not cands:
            return EMPTY
        return _diff.diff_names(prev, new, cands)

    def _packed_progress(self, done: int, total: int) -> None:
        self.phase = f"comparing packed-refs {100 * done // max(total, 1)}%"

    def _classify_files(self, prev, new, paths: set[str], changes: list[Change], state: dict) -> Diff:
        old_files = prev.files() if prev is not new else {}
        new_files = new.files()
        if prev is new:
            old_files = new_files
        cands: set[bytes] = set()
        # loose files whose identity changed
        seen: set[str] = set()
        for lc in _diff.loose_changes(old_files, new_files, self.gitdir, self.commondir):
            kind = {"created": LOOSE_CREATED, "changed": LOOSE_CHANGED, "deleted": LOOSE_DELETED}[lc.kind]
            changes.append(Change(kind, lc.path, lc.name))
            cands.add(lc.name)
            seen.add(lc.path)
        # touched loose files whose identity may have come back (inode reuse): their values decide
        for p in paths:
            if p in seen or p.endswith(".lock"):
                continue
            name = _diff.loose_name(p, self.gitdir, self.commondir)
            if name is None or not os.path.isfile(p) and p not in old_files:
                continue
            a = _diff.ref_value(prev.lookup(name))
            b = _diff.ref_value(new.lookup(name))
            if a != b:
                changes.append(Change(LOOSE_CHANGED, p, name))
                cands.add(name)
        # packed-refs: the snapshots keep the mapped file they read; compare the two byte-wise
        pp = os.path.join(self.commondir, "packed-refs")
        old_p = getattr(prev, "packed", None)
        new_p = getattr(new, "packed", None)
        if old_p is None or new_p is None:  # a store without its packed buffer: compare whole views
            if old_files.get(pp) != new_files.get(pp) or pp in paths:
                changes.append(Change(PACKED_REWRITTEN, pp))
                return _diff.full_diff(prev, new)
        elif old_p is not new_p:  # (a fresh snapshot maps the same file anew: then only bytes tell)
            span = new_p.span_from(old_p) if hasattr(new_p, "span_from") else None
            in_order = getattr(old_p, "in_name_order", False) and getattr(new_p, "in_name_order", False)
            seek = new_p.seek if in_order else None
            packed = _diff.packed_diff(old_p.buf, new_p.buf, span, prev.hexlen, seek, self._packed_progress)
            if any(packed) or old_p.identity() != new_p.identity():
                changes.append(Change(PACKED_REWRITTEN, pp))
            if any(packed):
                return _merge_packed(prev, new, packed, cands)
        if not cands:
            return EMPTY
        return _diff.diff_names(prev, new, cands)


def _merge_packed(prev, new, packed: tuple[list, list, list], cands: set[bytes]) -> Diff:
    """The packed-refs records' own differences are the refs' differences except where a loose file
    shadows the name in either snapshot or git hides it (a bad name): those few are looked up."""
    groups = list(packed)
    shadowed = prev.loose.keys() | new.loose.keys()
    odd: set[bytes] = set()
    for group in groups:
        group.sort()  # already in name order unless packed-refs is not sorted (then git sorts it too)
        if shadowed:
            odd.update(n for n in group if n in shadowed)
        odd.update(_hidden_names(group))
    if odd:
        groups = [[n for n in g if n not in odd] for g in groups]
        cands |= odd
    examined = sum(map(len, groups))
    if cands:
        looked = _diff.diff_names(prev, new, cands)
        examined += looked.examined
        groups = [sorted([*g, *extra]) for g, extra in zip(groups, looked[:3], strict=True)]
    return Diff(tuple(groups[0]), tuple(groups[1]), tuple(groups[2]), _diff.PACKED, examined)


def _hidden_names(names: list[bytes], chunk: int = 1024) -> list[bytes]:
    """The names git hides (failing check_refname), checked a chunk at a time at C speed; only a chunk
    that may hold one is checked name by name."""
    from .refname import is_valid_refname
    from .stores.reftable import block_names_suspect

    out: list[bytes] = []
    for k in range(0, len(names), chunk):
        part = names[k : k + chunk]
        if block_names_suspect(part):
            out.extend(n for n in part if not is_valid_refname(n))
    return out


# --- helpers ---------------------------------------------------------------------------------------------


def _relevant_paths(commondir: str, raw: set) -> set[str]:
    """The paths of a raw batch that concern ref storage, without the per-ref lock files under the
    common ``refs/`` (a files transaction of 700k refs creates and removes 700k of them: they change no
    ref and are not tracked, so they are dropped by the cheapest test first)."""
    ref_locks = commondir.rstrip("/") + "/refs/"
    return {
        p for _, p in raw if not (p.endswith(".lock") and p.startswith(ref_locks)) and relevant(commondir, p)
    }


def _is_store_lock(commondir: str, path: str) -> bool:
    """A lock in a storage directory (``packed-refs.lock``, ``HEAD.lock``, ``reftable/*.lock``), not
    one of the per-ref locks under ``refs/`` a files transaction takes (one per ref it touches)."""
    rel = path[len(commondir.rstrip("/")) + 1 :]
    parts = rel.split("/")
    if parts[0] == "worktrees":
        parts = parts[2:]
    return bool(parts) and parts[0] != "refs"


def _stacks(snap) -> dict[str, list]:
    """reftable dir -> tables (oldest first) for every stack the snapshot merges."""
    stacks = getattr(snap, "stacks", None)
    if stacks:
        return {d.rstrip("/"): list(tables) for d, tables in stacks.items()}
    tables = list(getattr(snap, "tables", []) or [])
    rdir = os.path.dirname(tables[0].path) if tables else os.path.join(snap.commondir, "reftable")
    return {rdir: tables}


def _identity(snap, path: str):
    try:
        return snap.files().get(path)
    except Exception:
        return None


def _read_small(path: str, limit: int = 4096) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO never blocks
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _worktree_gitdirs(commondir: str) -> list[tuple[str]]:
    wt = os.path.join(commondir, "worktrees")
    try:
        names = sorted(os.listdir(wt))
    except OSError:
        return []
    return [(os.path.join(wt, n),) for n in names if os.path.isdir(os.path.join(wt, n))]


def _current_locks(commondir: str) -> set[str]:
    """Lock files present now in the places git locks refs (no deep walk of refs/: loose-ref locks are short)."""
    out = set()
    for d in (commondir, os.path.join(commondir, "reftable")):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out.update(os.path.join(d, n) for n in names if n.endswith(".lock"))
    return out


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
