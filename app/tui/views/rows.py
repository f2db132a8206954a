"""RowsView: a Line-API list for any number of one-line rows (packed-refs records, blocks, records, feeds).

Why not DataTable: it measures every cell and keeps per-row offsets, which costs seconds and hundreds of MiB
at 100k-1M rows (see the house style notes). Here a row is rendered only when it is on screen: ``render_line``
asks the source for that one row's ``rich.text.Text`` and caches the resulting Strip in an LRU cache.

A source is any object with ``__len__``, ``row_text(i) -> Text`` and a ``width`` attribute (cells of the widest
row, an estimate is fine); optionally ``header -> Text`` (a sticky first line) and ``row_key(i)`` (a stable key
for flashing rows whose index may shift). Sources build Text objects from plain strings (ref names go through
``display.escape_name``), never from markup.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

FLASH_SECONDS = 2.0


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
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
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
        return max(1, self.size.height - (1 if self._has_header else 0))

    def watch_cursor(self, old: int, new: int) -> None:
        self.scroll_to_row(new)
        self.refresh()
        self.post_message(self.CursorMoved(self, new))

    def move_to(self, row: int) -> None:
        """Put the cursor on ``row`` (clamped) and scroll it into view."""
        n = len(self.source)
        self.cursor = max(0, min(row, n - 1)) if n else 0

    def scroll_to_row(self, row: int) -> None:
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + self._page:
            self.scroll_to(y=row - self._page + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * self._page)

    def action_edge(self, end: int) -> None:
        self.move_to(len(self.source) - 1 if end else 0)

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
