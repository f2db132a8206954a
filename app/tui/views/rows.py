"""RowsView: a Line-API list for any number of one-line rows (packed-refs records, blocks, records, feeds).

Why not DataTable: it measures every cell and keeps per-row offsets, which costs seconds and hundreds of MiB
at 100k-1M rows (see the house style notes). Here a row is rendered only when it is on screen: ``render_line``
asks the source for that one row's ``rich.text.Text`` and caches the resulting Strip in an LRU cache.

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
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from ..widgets import filtering
from ..workers import work

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


class RowsView(ScrollView, can_focus=True):
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
    # The main list's keys (``widgets.reflist.RefList``), so every list of the app moves the same way; n/N
    # step through the matches of a ``/`` search (``RowSearch``) and leave the keys to the screen otherwise.
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        Binding("n", "search_step(1)", "Next match"),
        Binding("N", "search_step(-1)", "Prev match", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class CursorMoved(Message):
        """The cursor moved to ``row`` (posted for every move; the newest replaces older ones)."""

        def __init__(self, view: RowsView, row: int) -> None:
            super().__init__()
            self.view = view
            self.row = row

        @property
        def control(self) -> RowsView:
            return self.view

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RowsView.CursorMoved) and message.view is self.view

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
        self._cache: LRUCache[int, tuple[Strip, Any]] = LRUCache(1024)
        self._flash: dict[Any, float] = {}
        self.marked: set[Any] = set()
        self._flash_timer = None
        self._styles: dict[str, Style] = {}
        self._widest = 0
        self._header_cache: Strip | None = None
        self._header_source: Any = None
        self._center_next = False
        self.search: RowSearch | None = None  # the last ``/`` search over this view's rows

    # ---- data -------------------------------------------------------------------------------------------
    @property
    def _has_header(self) -> bool:
        return getattr(self.source, "header", None) is not None

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
        height = len(self.source) + (1 if self._has_header else 0)
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

    # ---- cursor -----------------------------------------------------------------------------------------
    @property
    def _page(self) -> int:
        """Rows on screen: the region inside the scrollbars (a wide row's horizontal scrollbar hides the
        bottom line of ``size``), less the header."""
        return max(1, self.scrollable_content_region.height - (1 if self._has_header else 0))

    def watch_cursor(self, old: int, new: int) -> None:
        center, self._center_next = self._center_next, False
        self.scroll_to_row(new, center=center)
        self.refresh()
        self.post_message(self.CursorMoved(self, new))

    def move_to(self, row: int, *, center: bool = False) -> None:
        """Put the cursor on ``row`` (clamped) and scroll it into view (``center``: in the middle of the
        page when it has to scroll, as a jump to a named record does)."""
        n = len(self.source)
        self._center_next = center
        self.cursor = max(0, min(row, n - 1)) if n else 0

    def scroll_to_row(self, row: int, *, center: bool = False) -> None:
        """Scroll ``row`` into view now, and again once the layout has caught up.

        A view that has just received a bigger source (or was just mounted) has no scrollbar yet and the
        wrong height: Textual then refuses the scroll (``allow_vertical_scroll`` is False until the next
        layout), which left a jump's cursor far below the screen. So the scroll is forced, and checked
        again after the refresh with the real page height.
        """
        self._reveal(row, center)
        self.call_after_refresh(self._reveal, None, center)

    def _reveal(self, row: int | None, center: bool) -> None:
        """Scroll ``row`` (None: wherever the cursor is by now) into view unless it is on the page."""
        if row is None:
            row = self.cursor
        top = round(self.scroll_y)
        page = self._page
        if top <= row < top + page:
            return
        if center:
            y = max(0, row - page // 2)
        elif row < top:
            y = row
        else:
            y = row - page + 1
        self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def on_resize(self) -> None:
        self._reveal(None, False)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * self._page)

    def action_edge(self, end: int) -> None:
        self.move_to(len(self.source) - 1 if end else 0)

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

    def on_click(self, event: Any) -> None:
        y = event.y - (1 if self._has_header else 0)
        if y >= 0:
            self.move_to(round(self.scroll_y) + y)

    # ---- rendering --------------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        """Component styles are CSS lookups (costly per line): cached until focus or styles change."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = (
                self.rich_style if name == "base" else self.get_component_rich_style(name)
            )
        return style

    def _restyle(self) -> None:
        """Styles changed (theme, focus): cached strips carry the old base style."""
        self._styles.clear()
        self._cache.clear()
        self._header_cache = None

    def notify_style_update(self) -> None:
        self._restyle()
        super().notify_style_update()

    def on_focus(self) -> None:
        self._restyle()
        self.refresh()

    def on_blur(self) -> None:
        self._restyle()
        self.refresh()

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
        if self._has_header:
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
