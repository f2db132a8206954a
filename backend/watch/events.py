"""What the watcher delivers: the change kinds, ``Change`` and ``Event`` (with its JSON form).

Kinds are strings so that JSON and tests read them as they are; an event's kind is its most significant
change's, in the order of ``ORDER``.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import diff as _diff
from ..diff import Diff
from ..meter import OpReport

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
ORDER = (
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
RANK = {k: i for i, k in enumerate(ORDER)}


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


def lock_changes(before: set[str], after: set[str]) -> list[Change]:
    """lock-appeared for each lock held now and not before, then lock-gone for each the other way round
    (each group sorted by path)."""
    changes = [Change(LOCK_APPEARED, p) for p in sorted(after - before)]
    changes += [Change(LOCK_GONE, p) for p in sorted(before - after)]
    return changes
