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
- ``stop()`` returns within 100 ms: notify sources poll the stop event every ``STEP_MS``; a refresh still
  running in the background finishes and is discarded.

The modules, one job each: ``events`` (the change kinds, ``Change``, ``Event``), ``paths`` (which
directories to watch, the event filter, storage locks), ``sources`` (notify and polling sources),
``heads`` (every worktree's HEAD), ``classify`` (what a batch changed), ``watcher`` (the coordinator).
"""

from .events import (
    ERROR,
    HEAD_MOVED,
    LOCK_APPEARED,
    LOCK_GONE,
    LOOSE_CHANGED,
    LOOSE_CREATED,
    LOOSE_DELETED,
    PACKED_REWRITTEN,
    RECOVERED,
    TABLES_APPENDED,
    TABLES_COMPACTED,
    TABLES_LIST_REWRITTEN,
    WATCHER_POLLING,
    WATCHER_RESTARTED,
    Change,
    Event,
)
from .paths import relevant, watch_dirs
from .watcher import Watcher, iter_events

__all__ = [
    "ERROR",
    "HEAD_MOVED",
    "LOCK_APPEARED",
    "LOCK_GONE",
    "LOOSE_CHANGED",
    "LOOSE_CREATED",
    "LOOSE_DELETED",
    "PACKED_REWRITTEN",
    "RECOVERED",
    "TABLES_APPENDED",
    "TABLES_COMPACTED",
    "TABLES_LIST_REWRITTEN",
    "WATCHER_POLLING",
    "WATCHER_RESTARTED",
    "Change",
    "Event",
    "Watcher",
    "iter_events",
    "relevant",
    "watch_dirs",
]
