"""The deletion queue: names with the value each was seen at, and its panel.

The queue is a dict (name -> Entry), so ``name in queue`` is the mark test the ref list uses on every row.
It survives filtering and refreshes: it is keyed by name, not by row. When a new snapshot arrives,
``recheck`` flags entries whose ref changed or vanished since it was queued (stale), before any commit.
While a commit runs the queue is ``held``: the snapshots seen meanwhile show the commit's own intermediate
states (a ref already gone from packed-refs, its loose file not yet), so staleness is judged again only
against the snapshot taken once the commit's result is in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from refscope.backend.display import escape_name, line, show
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from .columns import overlay
from .line_list import LineList


class Entry(NamedTuple):
    name: bytes
    seen: object  # the Ref as it was when queued
    stale: str | None = None  # why it no longer matches ("now at X", "gone"), None when fresh

    @property
    def old_oid(self) -> bytes | None:
        """The value the transaction must find under the lock (None for a symref: deleted by name)."""
        return None if self.seen.target is not None else self.seen.oid


class Queue(dict):
    """Ordered name -> Entry; a tiny layer over dict so the ref list can test marks with ``in``."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0
        self._names: list[bytes] | None = None
        self.held = False  # a commit of these entries is running: neither edited nor re-judged

    def _touch(self) -> None:
        self.version += 1
        self._names = None

    def add(self, ref) -> None:
        self[ref.name] = Entry(ref.name, ref)
        self._touch()

    def remove(self, name: bytes) -> None:
        if self.pop(name, None) is not None:
            self._touch()

    def toggle(self, ref) -> bool:
        """Mark or unmark; returns whether ``ref`` is now queued."""
        if ref.name in self:
            self.remove(ref.name)
            return False
        self.add(ref)
        return True

    def add_many(self, refs) -> int:
        n = 0
        for ref in refs:
            if ref.name not in self:
                self[ref.name] = Entry(ref.name, ref)
                n += 1
        self._touch()
        return n

    def add_entries(self, entries) -> int:
        """Queue prepared entries (a loaded queue file) not queued yet; returns how many were added."""
        n = 0
        for entry in entries:
            if entry.name not in self:
                self[entry.name] = entry
                n += 1
        self._touch()
        return n

    def discard_many(self, names) -> None:
        for name in names:
            self.pop(name, None)
        self._touch()

    def names(self) -> list[bytes]:
        if self._names is None:
            self._names = list(self)
        return self._names

    def stale_count(self) -> int:
        return sum(1 for e in self.values() if e.stale)

    def recheck(self, snapshot) -> list[bytes]:
        """Flag entries whose ref no longer has the value it was seen at. Returns the names that turned stale.
        Nothing while ``held``: the commit's result is what tells the truth about its entries."""
        if self.held:
            return []
        turned = []
        for name, entry in list(self.items()):
            now = snapshot.head() if name == b"HEAD" else snapshot.lookup(name)  # (HEAD: a loaded file)
            if now is None:
                why = "gone"
            elif now.target != entry.seen.target or now.oid != entry.seen.oid:
                value = now.target if now.target is not None else (now.oid or b"")[:8]
                why = line("now at ", value)  # a target read from a file: through the display function
            else:
                why = None
            if why != entry.stale:
                self[name] = entry._replace(stale=why)
                if why:
                    turned.append(name)
        if turned:
            self._touch()
        return turned


class QueuePanel(LineList):
    """The queued deletions, one line each: name, value seen at, stale flag. ``delete``/``x`` removes one."""

    COMPONENT_CLASSES = {"queue--cursor", "queue--stale", "queue--oid"}
    DEFAULT_CSS = """
    QueuePanel { height: 1fr; overflow-x: hidden; }
    QueuePanel > .queue--cursor { background: $accent 30%; }
    QueuePanel:focus > .queue--cursor { background: $accent 70%; }
    QueuePanel > .queue--stale { color: $error; text-style: bold; }
    QueuePanel > .queue--oid { color: $text-muted; }
    """
    BINDINGS = [Binding("delete,x,backspace", "remove", "Remove")]  # (and the line list's keys)

    @dataclass
    class Removed(Message):
        name: bytes

    def __init__(self, queue: Queue, **kwargs) -> None:
        super().__init__(**kwargs)
        self.queue = queue

    def sync(self) -> None:
        """The queue changed: resize and repaint."""
        self._cache.clear()
        n = len(self.queue)
        self.virtual_size = Size(self.size.width, n)
        if self.cursor >= n:
            self.cursor = max(0, n - 1)
        self.border_title = f"queue · {n:,}" + (f" · {self.queue.stale_count():,} stale" if n else "")
        self.refresh()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Removing an entry while a commit of the queue runs: shown disabled (the footer dims it)."""
        if action == "remove" and self.queue.held:
            return None
        return True

    @property
    def row_count(self) -> int:
        return len(self.queue)

    def action_remove(self) -> None:
        names = self.queue.names()
        if 0 <= self.cursor < len(names):
            name = names[self.cursor]
            self.queue.remove(name)
            self.post_message(self.Removed(name))

    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.queue))

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        names = self.queue.names()
        if index >= len(names):
            if not names and y == 0:
                hint = Text("  nothing queued: space marks a ref", style=self._style("queue--oid"))
                hint.truncate(width, pad=True)
                return Strip(list(hint.render(self.app.console))).apply_style(self._style("base"))
            return Strip.blank(width, self._style("base"))
        key = (index, width, index == self.cursor, self.queue.version)
        strip = self._cache.get(key)
        if strip is not None:
            return strip
        entry = self.queue[names[index]]
        seen = entry.seen
        text = Text(no_wrap=True)
        text.append(
            "! " if entry.stale else "• ",
            self._style("queue--stale") if entry.stale else "",
        )
        value = (
            line("→ ", escape_name(seen.target)) if seen.target is not None else show((seen.oid or b"")[:8])
        )
        tail = f" {value}" + (f"  STALE: {entry.stale}" if entry.stale else "")
        name = Text(escape_name(entry.name), no_wrap=True)
        name.truncate(max(4, width - 2 - len(tail)), overflow="ellipsis")
        text.append_text(name)
        text.append(tail, self._style("queue--stale" if entry.stale else "queue--oid"))
        text.truncate(width, overflow="ellipsis", pad=True)
        strip = Strip(list(text.render(self.app.console))).apply_style(self._style("base"))
        if index == self.cursor:
            strip = overlay(strip, self._style("queue--cursor"))
        self._cache[key] = strip
        return strip
