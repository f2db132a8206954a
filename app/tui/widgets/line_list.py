"""LineList: the one Line-API list base of the app (the ref list, and every list of records in the views).

Why not DataTable: it measures every cell and keeps per-row offsets, which costs seconds and hundreds of MiB
at 100k-1M rows (see the house style notes). A line list renders a row only when it is on screen
(``render_line``), keeps the Strips it made in an LRU cache, and holds nothing per row: row ``i`` is on
screen line ``i - scroll_offset.y + header_rows``. Subclasses say how many rows there are and paint one;
this base owns what must be the same everywhere: the keys, the cursor and its message, scrolling a row into
view, clicks, and the component-style lookups (CSS lookups are costly per line: cached until the styles
change or the focus moves).
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView

CACHE_STRIPS = 1024  # a few screens of rows, at every width seen lately


class LineList(ScrollView, can_focus=True):
    """One-line rows under a cursor; ``row_count`` rows, ``header_rows`` sticky lines above them."""

    # The app's one key map for lists: every list moves the same way (the screens add their own keys).
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "Top", show=False),
        Binding("end,G", "edge(1)", "Bottom", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, init=False, repaint=False)
    # rows a page key keeps on screen from the page before (the ref list keeps one, as less does)
    page_overlap = 0

    class CursorMoved(Message):
        """The cursor moved to ``row`` (posted for every move; the newest replaces older ones)."""

        def __init__(self, line_list: LineList, row: int) -> None:
            super().__init__()
            self.line_list = line_list
            self.row = row

        @property
        def control(self) -> LineList:
            return self.line_list

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LineList.CursorMoved) and message.line_list is self.line_list

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._cache: LRUCache[Any, Any] = LRUCache(CACHE_STRIPS)
        self._styles: dict[str, Style] = {}

    # ---- what subclasses provide ----------------------------------------------------------------------
    @property
    def row_count(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def header_rows(self) -> int:
        """Sticky lines above the rows (a column header): 0 or 1."""
        return 0

    # ---- cursor ---------------------------------------------------------------------------------------
    @property
    def _page(self) -> int:
        """Rows on screen: the region inside the scrollbars (a wide row's horizontal scrollbar hides the
        bottom line of ``size``), less the header."""
        return max(1, self.scrollable_content_region.height - self.header_rows)

    def watch_cursor(self, old: int, new: int) -> None:
        header = self.header_rows
        self.refresh_line(old + header)
        self.refresh_line(new + header)
        self.post_message(self.CursorMoved(self, new))

    def move_to(self, row: int, *, center: bool = False) -> None:
        """Put the cursor on ``row`` (clamped) and scroll it into view (``center``: in the middle of the
        page when it has to scroll, as a jump to a named ref or record does)."""
        n = self.row_count
        if not n:
            return
        self.cursor = max(0, min(row, n - 1))
        self.scroll_cursor_into_view(center=center)

    def scroll_cursor_into_view(self, center: bool = False) -> None:
        """Now, and again once the layout has caught up.

        A list that has just received more rows (or was just mounted) has no scrollbar yet and the wrong
        height: Textual then refuses the scroll (``allow_vertical_scroll`` is False until the next layout),
        which left a jump's cursor far below the screen with the list at the top. So the scroll is forced,
        and checked again after the refresh with the real page height.
        """
        self._reveal(center)
        self.call_after_refresh(self._reveal, center)

    def _reveal(self, center: bool) -> None:
        """Scroll the cursor's row into view unless it is on the page already."""
        row = self.cursor
        top = self.scroll_offset.y
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

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(1, self._page - self.page_overlap))

    def action_edge(self, end: int) -> None:
        self.move_to(self.row_count - 1 if end else 0)

    def on_click(self, event: Any) -> None:
        row = self.scroll_offset.y + event.y - self.header_rows
        if event.y >= self.header_rows and row < self.row_count:
            self.move_to(row)

    # ---- styles ---------------------------------------------------------------------------------------
    def _style(self, name: str) -> Style:
        """A component class's style (``"base"``: the widget's own), looked up once per style change."""
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = (
                self.rich_style if name == "base" else self.get_component_rich_style(name)
            )
        return style

    def _restyle(self) -> None:
        """Styles changed (theme, focus): cached strips carry the old ones."""
        self._styles.clear()
        self._cache.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._restyle()

    def on_focus(self) -> None:
        self._restyle()
        self.refresh()

    def on_blur(self) -> None:
        self._restyle()
        self.refresh()
