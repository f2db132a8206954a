"""The app's own messages, in one place: what workers and the watcher thread tell the screens.

Workers and the watcher talk to the UI thread only by these (``post_message``) or ``call_from_thread``;
screens post and handle them. Widgets post only about themselves (a cursor moved, a row chosen): those
messages stay nested in the widget (``widgets.line_list.LineList.CursorMoved``, ``QueuePanel.Removed``...),
as Textual's own widgets do. High-rate messages set ``can_replace`` so a burst costs one repaint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from textual.message import Message

if TYPE_CHECKING:
    from refscope.backend.diff import Diff
    from refscope.backend.stores.base import Snapshot
    from refscope.backend.watch import Event

UpdateKind = Literal["open", "refresh", "watch", "commit", "error"]


class SnapshotUpdate(NamedTuple):
    """Published on ``app.snapshot_changed`` (a Signal, not a message: every screen on the stack hears
    it): the new snapshot, the one it replaces, why, and what changed when known."""

    snapshot: Snapshot | None
    previous: Snapshot | None
    kind: UpdateKind
    diff: Diff | None = None
    event: Event | None = None


@dataclass
class WatchEvent(Message):
    """Posted from the watcher's thread to the app: one debounced batch of file events."""

    event: Event


@dataclass
class FilterProgress(Message):
    """The ``prepare`` worker's scan of filter ``generation``: ``done`` rows of ``total``."""

    generation: int
    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FilterProgress)


@dataclass
class CommitProgress(Message):
    """Posted by the commit worker as it enters a phase (``done``: the fraction of that phase)."""

    phase: str
    done: float

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CommitProgress)
