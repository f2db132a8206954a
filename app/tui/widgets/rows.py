"""RowsView: a line list (``widgets.line_list``) of any number of one-line rows (packed-refs records,
blocks, records, feeds): ``render_line`` asks the source for the one row's ``rich.text.Text``.

A source is any object with ``__len__``, ``row_text(i) -> Text`` and a ``width`` attribute (cells of the widest
row, an estimate is fine); optionally ``header -> Text`` (a sticky first line), ``row_key(i)`` (a stable key
for flashing rows whose index may shift) and ``search_key(i) -> bytes`` (what ``/`` matches: the record's
name; the row's text when absent). Sources build Text objects from plain strings (ref names go through
``display.escape_name``), never from markup.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.worker import get_current_worker

from ..models import filtering
from ..workers import work
from .line_list import LineList

FLASH_SECONDS = 2.0
SEARCH_CHUNK = 4096  # rows between cancellation checks of a search


def row_matcher(text: str) -> Callable[[bytes], bool]:
    """What ``/`` in a view selects, read as the main filter reads it (``widgets.filtering``: one
    matcher): a glob by git's rules (``*`` stops at ``/``), else a substring of the name; a leading ``!``
    negates."""
    return filtering.matcher(filtering.parse(text))


def search_key_of(source: Any) -> Callable[[int], bytes]:
    """Row -> what a search matches: the source's ``search_key`` or the row's plain text."""
    key = getattr(source, "search_key", None)
    if key is not None:
        return key
    return lambda i: source.row_text(i).plain.encode("utf-8", "surrogateescape")


@dataclass
class RowSearch:
    """One ``/`` search over one source: the rows it matched so far, in row order (filled by the worker;
    the UI thread only reads), and whether the scan is over. ``start`` is where it lands first."""

    text: str
    source: Any
    start: int
    matches: array = field(default_factory=lambda: array("I"))
    done: bool = False
    landed: int | None = None  # the row it landed on, once found


class ListSource:
    """The simplest source: a list of Text rows (for small lists: tables of a stack, feeds, reflogs)."""

    def __init__(self, rows: list[Text] | None = None, header: Text | None = None, keys: list | None = None):
        self.rows = rows or []
        self.header = header
        self.keys = keys
        self.width = max((r.cell_len for r in self.rows), default=0)
        if header is not None:
            self.width = max(self.width, header.cell_len)

    def __len__(self) -> int:
        return len(self.rows)

    def row_text(self, i: int) -> Text:
        return self.rows[i]

    def row_key(self, i: int) -> Any:
        return self.keys[i] if self.keys is not None else i


class RowsView(LineList):
    """A scrolling, cursor-driven view over a row source; the optional header line stays on top."""

    DEFAULT_CSS = """
    RowsView {
        height: 1fr;
        background: $surface;
    }
    RowsView > .rows--header {
        text-style: bold;
        color: $text-accent;
        background: $panel;
    }
    RowsView > .rows--cursor {
        background: $block-cursor-blurred-background;
    }
    RowsView:focus > .rows--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
    }
    RowsView > .rows--flash {
        background: $warning 35%;
    }
    RowsView > .rows--mark {
        background: $accent 25%;
    }
    """
    COMPONENT_CLASSES = {"rows--header", "rows--cursor", "rows--flash", "rows--mark"}
    # The line list's keys, and n/N: they step through the matches of a ``/`` search (``RowSearch``) and
    # leave the keys to the screen otherwise.
    BINDINGS = [
        Binding("n", "search_step(1)", "Next match"),
        Binding("N", "search_step(-1)", "Prev match", show=False),
    ]

    def __init__(
        self,
        source: Any = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source = source if source is not None else ListSource()
        self._flash: dict[Any, float] = {}
        self.marked: set[Any] = set()
        self._flash_timer = None
        self._widest = 0
        self._header_cache: Strip | None = None
        self._header_source: Any = None
        self.search: RowSearch | None = None  # the last ``/`` search over this view's rows

    # ---- data -------------------------------------------------------------------------------------------
    @property
    def header_rows(self) -> int:
        return 1 if getattr(self.source, "header", None) is not None else 0

    @property
    def row_count(self) -> int:
        return len(self.source)

    def set_source(self, source: Any, cursor: int | None = None) -> None:
        """Swap in a new source whole (a refreshed snapshot); keeps the cursor row unless told."""
        self.source = source
        self._cache.clear()
        self._update_virtual_size()
        n = len(source)
        target = self.cursor if cursor is None else cursor
        self.set_reactive(RowsView.cursor, max(0, min(target, n - 1)))
        self.refresh()

    def _update_virtual_size(self) -> None:
        """Width: the widest row rendered so far (or the header), so a horizontal scrollbar appears only
        when something on screen is actually cut; sources' ``width`` is only the first estimate. It only
        grows (a shrink and regrow on every source swap would cost two layout passes)."""
        height = len(self.source) + self.header_rows
        header = getattr(self.source, "header", None)
        width = max(self._widest, header.cell_len if header is not None else 0)
        if not width:
            width = getattr(self.source, "width", 0)
        size = Size(max(width + 1, 1), height)
        if size != self.virtual_size:  # every change costs a layout pass of the whole screen
            self.virtual_size = size

    def on_mount(self) -> None:
        self._update_virtual_size()

    def _key(self, row: int) -> Any:
        key_of = getattr(self.source, "row_key", None)
        return key_of(row) if key_of is not None else row

    def flash(self, keys: Iterable[Any], seconds: float = FLASH_SECONDS) -> None:
        """Highlight rows (by key) for a moment: what just appeared or changed."""
        deadline = time.monotonic() + seconds
        for key in keys:
            self._flash[key] = deadline
        if self._flash and self._flash_timer is None:
            self._flash_timer = self.set_interval(0.25, self._expire_flash)
        self.refresh()

    def _expire_flash(self) -> None:
        now = time.monotonic()
        expired = [k for k, t in self._flash.items() if t <= now]
        for key in expired:
            del self._flash[key]
        if expired:
            self.refresh()
        if not self._flash and self._flash_timer is not None:
            self._flash_timer.stop()
            self._flash_timer = None

    @property
    def flashing(self) -> set[Any]:
        return set(self._flash)

    def on_resize(self) -> None:
        self._reveal(False)

    # ---- search ---------------------------------------------------------------------------------------
    class Searched(Message):
        """A search landed on a row, stepped to one, or ended (``row`` None: no match, or not yet)."""

        def __init__(self, view: RowsView, search: RowSearch, row: int | None, wrapped: bool = False) -> None:
            super().__init__()
            self.view = view
            self.search = search
            self.row = row
            self.wrapped = wrapped

        @property
        def control(self) -> RowsView:
            return self.view

    def start_search(self, text: str) -> RowSearch | None:
        """Search the rows for ``text`` from the cursor on (wrapping): the cursor lands on the first match
        as soon as the scan finds it; the scan goes on in a thread worker to count every match for n/N.
        An empty text ends the search (n/N are the screen's keys again)."""
        if not text:
            self.search = None
            self.workers.cancel_group(self, "rows-search")
            return None
        search = RowSearch(text, self.source, self.cursor)
        self.search = search
        self._scan(search)
        return search

    @work(thread=True, exclusive=True, group="rows-search", description="search records")
    def _scan(self, search: RowSearch) -> None:
        """One pass over every row (a million packed records: about a second), cancellable between chunks;
        the rows are read as the source reads them (``search_key``), never all held at once."""
        worker = get_current_worker()
        hit = row_matcher(search.text)
        key = search_key_of(search.source)
        n = len(search.source)
        matches = search.matches
        landed = False
        for start in range(0, n, SEARCH_CHUNK):
            if worker.is_cancelled:
                return
            for i in range(start, min(n, start + SEARCH_CHUNK)):
                if hit(key(i)):
                    matches.append(i)
                    if not landed and i >= search.start:
                        landed = True
                        self.app.call_from_thread(self._land, search, i, False)
            time.sleep(0)  # let the UI thread take the GIL between chunks
        search.done = True
        if not landed:
            self.app.call_from_thread(self._land, search, matches[0] if matches else None, bool(matches))
        else:
            self.app.call_from_thread(self._report, search)

    def _land(self, search: RowSearch, row: int | None, wrapped: bool) -> None:
        if search is not self.search or search.source is not self.source:
            return  # a newer search, or a new source (its rows are other rows)
        search.landed = row
        if row is not None:
            self.move_to(row, center=True)
        self.post_message(self.Searched(self, search, row, wrapped))

    def _report(self, search: RowSearch) -> None:
        """The scan is over: the status gets the final count, if the cursor is still on a match."""
        if search is not self.search:
            return
        matches, cursor = search.matches, self.cursor
        k = bisect_left(matches, cursor)
        if k < len(matches) and matches[k] == cursor:
            self.post_message(self.Searched(self, search, cursor))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """n/N are this list's only while it has a search (the footer then says "Next match"); otherwise
        they go on to the screen (the packed-refs view's next shadowed record)."""
        if action == "search_step":
            return self.search is not None and self.search.source is self.source
        return super().check_action(action, parameters)

    def action_search_step(self, direction: int) -> None:
        """n / N: the next / previous match from the cursor, wrapping once the scan is complete."""
        search = self.search
        if search is None or search.source is not self.source:
            raise SkipAction()  # no search here: the key is the screen's (packed-refs: next shadowed)
        matches = search.matches
        wrapped = False
        if direction > 0:
            k = bisect_right(matches, self.cursor)
            if k >= len(matches):
                if not search.done or not matches:
                    self.post_message(self.Searched(self, search, None))
                    return
                k, wrapped = 0, True
        else:
            k = bisect_left(matches, self.cursor) - 1
            if k < 0:
                if not search.done or not matches:
                    self.post_message(self.Searched(self, search, None))
                    return
                k, wrapped = len(matches) - 1, True
        self.move_to(matches[k], center=True)
        self.post_message(self.Searched(self, search, matches[k], wrapped))

    # ---- rendering --------------------------------------------------------------------------------------
    def _restyle(self) -> None:
        super()._restyle()
        self._header_cache = None

    def _row_strip(self, row: int) -> tuple[Strip, Any]:
        """The row's Strip, already in the widget's base style, and its key (both cached: a key may cost a
        decode too). Reusing the same Strip object also reuses its own crop cache from frame to frame."""
        cached = self._cache.get(row)
        if cached is None:
            text = self.source.row_text(row)
            text.no_wrap = True
            text.end = ""
            segments = Segment.apply_style(text.render(self.app.console), self._style("base"))
            strip = Strip(list(segments), text.cell_len)
            if strip.cell_length > self._widest:
                self._widest = strip.cell_length
                self.call_later(self._update_virtual_size)
            key = self._key(row) if (self._flash or self.marked) else None
            cached = (strip, key)
            self._cache.set(row, cached)
        elif cached[1] is None and (self._flash or self.marked):
            cached = (cached[0], self._key(row))
            self._cache.set(row, cached)
        return cached

    def _header_strip(self) -> Strip:
        strip = self._header_cache
        if strip is None or self._header_source is not self.source:
            header: Text = self.source.header.copy()
            header.no_wrap = True
            header.end = ""
            style = self._style("base") + self._style("rows--header")
            strip = Strip(list(Segment.apply_style(header.render(self.app.console), style)), header.cell_len)
            self._header_cache, self._header_source = strip, self.source
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self._style("base")
        if self.header_rows:
            if y == 0:
                style = base + self._style("rows--header")
                return self._header_strip().crop_extend(scroll_x, scroll_x + width, style)
            y -= 1
        row = scroll_y + y
        if row >= len(self.source):
            return Strip.blank(width, base)
        strip, key = self._row_strip(row)
        overlay: Style | None = None
        if self._flash and key in self._flash:
            overlay = self._style("rows--flash")
        elif self.marked and key in self.marked:
            overlay = self._style("rows--mark")
        if row == self.cursor:
            cursor = self._style("rows--cursor")
            overlay = cursor if overlay is None else overlay + cursor
        if overlay is None:
            return strip.crop_extend(scroll_x, scroll_x + width, base)
        segments = Segment.apply_style(strip, None, overlay)
        return Strip(segments, strip.cell_length).crop_extend(scroll_x, scroll_x + width, base + overlay)
