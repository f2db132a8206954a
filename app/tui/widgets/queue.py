"""The queue of edits -- deletions, and creates, moves and renames -- with the values each was seen at, and its panel.

The queue is a dict (name -> Entry), so ``name in queue`` is the mark test the ref list uses on every row:
a deletion, a move and a rename are keyed by the ref they change, a create by the name it makes (which no
row shows yet). One entry per name: a name a rename takes is claimed too (``claimed``), so two entries can
never fight over one ref.
It survives filtering and refreshes: it is keyed by name, not by row. When a new snapshot arrives,
``recheck`` flags entries whose ref changed or vanished since it was queued (stale), before any commit.
While a commit runs the queue is ``held``: the snapshots seen meanwhile show the commit's own intermediate
states (a ref already gone from packed-refs, its loose file not yet), so staleness is judged again only
against the snapshot taken once the commit's result is in. Staleness is per kind: a deleted, moved or
renamed ref that moved or vanished, a created name (or a rename's new name) that appeared meanwhile.
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

DELETE, CREATE, MOVE, RENAME = "delete", "create", "move", "rename"
KINDS = (DELETE, CREATE, MOVE, RENAME)


class Entry(NamedTuple):
    name: bytes  # the ref the entry changes (a create: the name it makes)
    seen: object  # the Ref as it was when queued (a create: None, the name must not exist)
    stale: str | None = None  # why it no longer matches ("now at X", "gone"), None when fresh
    kind: str = DELETE
    new: bytes | None = None  # create, move: the hex oid the ref gets
    new_name: bytes | None = None  # rename: the ref's full name after

    @property
    def old_oid(self) -> bytes | None:
        """The value the transaction must find under the lock (None for a symref: deleted by name; None
        for a create, whose name must be absent)."""
        seen = self.seen
        return None if seen is None or seen.target is not None else seen.oid


class Queue(dict):
    """Ordered name -> Entry; a tiny layer over dict so the ref list can test marks with ``in``."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0
        self._names: list[bytes] | None = None
        self.held = False  # a commit of these entries is running: neither edited nor re-judged
        # the entries that are not deletions, by name -> the name a rename takes (None for the others):
        # kept beside the dict so that a queue of a million deletions never walks them for an edit's sake
        self._edited: dict[bytes, bytes | None] = {}

    def _touch(self) -> None:
        self.version += 1
        self._names = None

    def add(self, ref) -> None:
        """Queue the deletion of ``ref`` as it is now."""
        self[ref.name] = Entry(ref.name, ref)
        self._touch()

    def remove(self, name: bytes) -> None:
        if self.pop(name, None) is not None:
            self._edited.pop(name, None)
            self._touch()

    def toggle(self, ref) -> bool:
        """Mark or unmark; returns whether ``ref`` is now queued."""
        if ref.name in self:
            self.remove(ref.name)
            return False
        self.add(ref)
        return True

    def _renamed_to(self) -> set[bytes]:
        """The names renames in the queue take: a deletion of one is not queued beside them."""
        return {n for n in self._edited.values() if n is not None}

    def add_many(self, refs) -> int:
        n = 0
        taken = self._renamed_to()
        for ref in refs:
            if ref.name not in self and ref.name not in taken:
                self[ref.name] = Entry(ref.name, ref)
                n += 1
        self._touch()
        return n

    def add_entries(self, entries) -> int:
        """Queue prepared entries (a loaded queue file) not queued yet, and not of a name a queued rename
        takes; returns how many were added."""
        n = 0
        taken = self._renamed_to()
        for entry in entries:
            if entry.name not in self and entry.name not in taken:
                self[entry.name] = entry
                n += 1
        self._touch()
        return n

    def discard_many(self, names) -> None:
        edited = self._edited
        for name in names:
            self.pop(name, None)
            if edited:
                edited.pop(name, None)
        self._touch()

    def add_edit(self, entry: Entry) -> str | None:
        """Queue a create, move or rename; returns why not (one line) when it would touch a ref another
        entry already touches, None when queued."""
        for name in (entry.name, entry.new_name):
            if name is None:
                continue
            other = self.claimed(name)
            if other is not None:
                return line(name, f" is queued already ({other.kind}): u undoes that entry")
        self[entry.name] = entry
        self._edited[entry.name] = entry.new_name
        self._touch()
        return None

    def claimed(self, name: bytes) -> Entry | None:
        """The entry that touches ``name``: keyed by it, or renaming a ref to it."""
        entry = self.get(name)
        if entry is not None:
            return entry
        for key, new_name in self._edited.items():
            if new_name == name:
                return self[key]
        return None

    def edits(self) -> int:
        """How many entries are not deletions (a queue of deletions only commits as it always has)."""
        return len(self._edited)

    def last(self) -> Entry | None:
        """The entry queued last (what ``u`` undoes when the cursor's ref has none)."""
        return self[next(reversed(self))] if self else None

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
            if entry.kind == CREATE:
                why = None if now is None else line("exists now at ", _value(now))
            elif now is None:
                why = "gone"
            elif now.target != entry.seen.target or now.oid != entry.seen.oid:
                why = line("now at ", _value(now))  # a target read from a file: through the display function
            else:
                why = None
            if why is None and entry.kind == RENAME:
                taken = snapshot.lookup(entry.new_name)
                if taken is not None:
                    why = line(entry.new_name, " exists now at ", _value(taken))
            if why != entry.stale:
                self[name] = entry._replace(stale=why)
                if why:
                    turned.append(name)
        if turned:
            self._touch()
        return turned


def _value(ref) -> bytes:
    """A ref's value as the queue shows it: a symref's target, else its oid's first 8 digits."""
    return ref.target if ref.target is not None else (ref.oid or b"")[:8]


def entry_parts(entry: Entry) -> tuple[str, bytes, str]:
    """(verb, name, values) of an entry as display text: ``create N  -> NEW``, ``move N  OLD -> NEW``,
    ``rename N -> NEW_NAME``, ``delete N OLD`` (a symref's old value: ``→ target``)."""
    seen = entry.seen
    if entry.kind == CREATE:
        return CREATE, entry.name, line("  -> ", entry.new[:8])
    if entry.kind == MOVE:
        return MOVE, entry.name, line("  ", _value(seen), " -> ", entry.new[:8])
    if entry.kind == RENAME:
        return RENAME, entry.name, line(" -> ", entry.new_name)
    value = line("→ ", escape_name(seen.target)) if seen.target is not None else show((seen.oid or b"")[:8])
    return DELETE, entry.name, line(" ", value)


def entry_text(entry: Entry):
    """One entry on one line of display text (the commit dialog's list, the tests)."""
    verb, name, values = entry_parts(entry)
    return line(verb, " ", name, values)


class QueuePanel(LineList):
    """The queued edits, one line each: what it does with the old and new values, stale flag.
    ``delete``/``x`` removes (undoes) one."""

    COMPONENT_CLASSES = {"queue--cursor", "queue--stale", "queue--oid", "queue--verb"}
    DEFAULT_CSS = """
    QueuePanel { height: 1fr; overflow-x: hidden; }
    QueuePanel > .queue--cursor { background: $accent 30%; }
    QueuePanel:focus > .queue--cursor { background: $accent 70%; }
    QueuePanel > .queue--stale { color: $error; text-style: bold; }
    QueuePanel > .queue--oid { color: $text-muted; }
    QueuePanel > .queue--verb { text-style: bold; }
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
        text = Text(no_wrap=True)
        text.append(
            "! " if entry.stale else "• ",
            self._style("queue--stale") if entry.stale else "",
        )
        verb, name_bytes, values = entry_parts(entry)
        mixed = self.queue.edits()
        if mixed:  # a mixed queue says what each entry does; deletions alone need not
            text.append(f"{verb:<6} ", self._style("queue--verb"))
        tail = values + (f"  STALE: {entry.stale}" if entry.stale else "")
        name = Text(escape_name(name_bytes), no_wrap=True)
        room = width - len(text) - len(tail)
        if mixed:  # (an edit's values are long: the name keeps half the line, the values give way)
            room = max(room, min(len(name), (width - len(text)) // 2))
        name.truncate(max(4, room), overflow="ellipsis")
        text.append_text(name)
        text.append(tail, self._style("queue--stale" if entry.stale else "queue--oid"))
        text.truncate(width, overflow="ellipsis", pad=True)
        strip = Strip(list(text.render(self.app.console))).apply_style(self._style("base"))
        if index == self.cursor:
            strip = overlay(strip, self._style("queue--cursor"))
        self._cache[key] = strip
        return strip
