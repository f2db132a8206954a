"""Watch a ref store live: file events -> debounced batches -> refresh -> typed change events with a diff.

See ``watcher`` for the API and why it has this shape.
"""

from .watcher import (
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
    Watcher,
    iter_events,
    relevant,
    watch_dirs,
)

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
