"""The ref list: a Line-API ScrollView over a lazy snapshot.

Nothing is materialised per ref: ``render_line(y)`` asks the snapshot for row ``view[scroll_offset.y + y]``
and caches the resulting Strip in an LRU cache. The view is a ``range`` (all refs, or a prefix) or an index
array (a scan result), swapped in whole. Marks live in the app's queue (a dict of names); toggling one
refreshes one line. A 1M-ref snapshot costs what the snapshot costs, plus a few hundred cached strips.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from . import columns
from .filtering import View, index_of


class RefList(ScrollView, can_focus=True):
    """Every ref of the current view, one line each; a cursor row; marks from the queue."""

    COMPONENT_CLASSES = {
        "reflist--cursor",
        "reflist--mark",
        "reflist--marked",
        "reflist--oid",
        "reflist--peeled",
        "reflist--target",
        "reflist--location",
        "reflist--changed",
        "reflist--error",
    }

    DEFAULT_CSS = """
    RefList {
        height: 1fr;
        overflow-x: hidden;
        background: $surface;
    }
    RefList > .reflist--cursor { background: $accent 40%; text-style: bold; }
    RefList:focus > .reflist--cursor { background: $accent 70%; }
    RefList > .reflist--mark { color: $warning; text-style: bold; }
    RefList > .reflist--marked { color: $warning; }
    RefList > .reflist--oid { color: $text-muted; }
    RefList > .reflist--peeled { color: $text-muted; text-style: italic; }
    RefList > .reflist--target { color: $secondary; }
    RefList > .reflist--location { color: $text-muted; }
    RefList > .reflist--changed { background: $success 30%; }
    RefList > .reflist--error { color: $error; text-style: bold; }
    """

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "jump_home", "Top", show=False),
        Binding("end,G", "jump_end", "Bottom", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    @dataclass
    class CursorMoved(Message):
        """The cursor is on a new row (``ref`` is None for an empty view)."""

        ref_list: RefList
        index: int

    @dataclass
    class AboveTop(Message):
        """↑ on the first row: the screen may move the focus to what is above the list (HEAD's line)."""

        ref_list: RefList

    @dataclass
    class LayoutChanged(Message):
        """The rows on screen asked for other column widths (the header follows)."""

        ref_list: RefList
        needs: columns.Needs

    def __init__(self, *, queue=None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshot = None
        self.view: View = range(0)
        self.preview: list | None = None  # first refs of a snapshot still being indexed (streamed)
        # name -> Ref from a newer snapshot whose row index is still being built: a change of value shows
        # at once (looked up by name, no index needed) while the rows keep their positions
        self.overrides: dict[bytes, object] = {}
        self.queue = queue if queue is not None else {}
        self.changed: set[bytes] = set()
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles: columns.Styles | None = None
        self._extra: tuple | None = None  # (marked, changed, cursor) styles, looked up once per style change
        self._base = None
        # the column widths the rows shown so far asked for: grown as rows come on screen, reset when
        # the view is swapped (so columns move at most when a longer row first shows, never back and forth)
        self.needs: columns.Needs = columns.NONE

    # -- data -------------------------------------------------------------------------------------------
    def set_view(self, snapshot, view: View, *, keep: bytes | None = None) -> None:
        """Swap in a snapshot and/or view at once; keep the cursor on ``keep`` (a name) if given."""
        self.snapshot = snapshot
        self.view = view
        self.preview = None
        self.overrides = {}
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(view))
        if keep is not None and len(view):
            self.cursor = index_of(snapshot, view, keep)
        else:
            self.cursor = min(self.cursor, max(0, len(view) - 1))
        self._scroll_cursor_into_view(center=keep is not None)
        self._measure(reset=True)
        self.refresh()

    def set_preview(self, snapshot, refs: list) -> None:
        """Show the first refs (streamed with ``iter_from``, no row index) while the snapshot is indexed
        in a worker: the first screen of a 1M-ref repository does not wait for the count."""
        self.snapshot = snapshot
        self.preview = refs
        self.view = range(len(refs))
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(refs))
        self.cursor = min(self.cursor, max(0, len(refs) - 1))
        self._measure(reset=True)
        self.refresh()

    def _ref_at(self, index: int):
        ref = self.preview[index] if self.preview is not None else self.snapshot.row(self.view[index])
        if self.overrides:
            return self.overrides.get(ref.name, ref)
        return ref

    def _name_at(self, index: int) -> bytes:
        if self.preview is not None:
            return self.preview[index].name
        return self.snapshot.name_at(self.view[index])

    def set_changed(self, names: set[bytes]) -> None:
        self.changed = names
        self._cache.clear()
        self.refresh()

    def current_name(self) -> bytes | None:
        if self.snapshot is None or not len(self.view):
            return None
        try:
            return self._name_at(self.cursor)
        except Exception:
            return None

    def current_ref(self):
        if self.snapshot is None or not len(self.view):
            return None
        try:
            return self._ref_at(self.cursor)
        except Exception:
            return None

    def refresh_name(self, name: bytes) -> None:
        """A mark changed: repaint just the line showing ``name`` if it is on screen."""
        self._cache.clear()
        top = self.scroll_offset.y
        for y in range(top, min(top + self.size.height, len(self.view))):
            try:
                if self._name_at(y) == name:
                    self.refresh_line(y)
                    return
            except Exception:
                return

    def refresh_rows(self) -> None:
        self._cache.clear()
        self.refresh()

    def go_to(self, index: int, center: bool = True) -> None:
        if not len(self.view):
            return
        self.cursor = max(0, min(index, len(self.view) - 1))
        self._scroll_cursor_into_view(center=center)

    # -- cursor ----------------------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old)
        self.refresh_line(new)
        self.post_message(self.CursorMoved(self, new))

    def _scroll_cursor_into_view(self, center: bool = False) -> None:
        """Now, and again once the layout has caught up: a list that has just been given a longer view has
        no scrollbar yet, and Textual refuses to scroll it (``allow_vertical_scroll``), which left a jump's
        cursor off screen with the list at the top. So the scroll is forced and checked after the refresh."""
        self._reveal_cursor(center)
        self.call_after_refresh(self._reveal_cursor, center)

    def _reveal_cursor(self, center: bool) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        if top <= self.cursor < top + height:
            return
        if center:
            y = max(0, self.cursor - height // 2)
        elif self.cursor < top:
            y = self.cursor
        else:
            y = self.cursor - height + 1
        self.scroll_to(y=y, animate=False, immediate=True, force=True)

    def action_cursor(self, delta: int) -> None:
        if delta < 0 and self.cursor == 0:
            self.post_message(self.AboveTop(self))
            return
        self.go_to(self.cursor + delta, center=False)

    def action_page(self, direction: int) -> None:
        self.go_to(self.cursor + direction * max(1, self.scrollable_content_region.height - 1), center=False)

    def action_jump_home(self) -> None:
        self.go_to(0, center=False)

    def action_jump_end(self) -> None:
        self.go_to(len(self.view) - 1, center=False)

    def on_click(self, event) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < len(self.view):
            self.go_to(row, center=False)

    # -- column widths --------------------------------------------------------------------------------
    def _measure(self, reset: bool = False, resized: bool = False) -> None:
        """Grow ``needs`` to fit the rows now on screen (a screenful of lookups, the rows' own cost)."""
        needs = columns.NONE if reset else self.needs
        if self.snapshot is not None:
            top = self.scroll_offset.y
            for index in range(top, min(top + max(1, self.size.height), len(self.view))):
                try:
                    needs = needs.grow(columns.row_needs(self._ref_at(index)))
                except Exception:
                    continue  # an unreadable row shows its error in place
        if needs != self.needs or resized:
            self.needs = needs
            self._cache.clear()
            self.refresh()
            self.post_message(self.LayoutChanged(self, needs))

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._measure()

    # -- rendering --------------------------------------------------------------------------------------
    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.view))
        self._measure(resized=True)

    def on_focus(self) -> None:
        self._extra = None
        self.refresh_rows()

    def on_blur(self) -> None:
        self._extra = None
        self.refresh_rows()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._extra = None
        self._base = None
        self._cache.clear()

    def _get_styles(self) -> columns.Styles:
        if self._styles is None:
            get = self.get_component_rich_style
            self._styles = columns.Styles(
                mark=get("reflist--mark"),
                name=Style(),
                oid=get("reflist--oid"),
                peeled=get("reflist--peeled"),
                target=get("reflist--target"),
                location=get("reflist--location"),
                error=get("reflist--error"),
            )
        return self._styles

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if self._base is None:
            self._base = self.rich_style  # inherited background etc.: computed once per style change
        base = self._base
        if self.snapshot is None or index >= len(self.view):
            return Strip.blank(width, base)
        row = self.view[index] if self.preview is None else -1 - index
        selected = index == self.cursor
        key = (row, width, selected, self.needs)
        strip = self._cache.get(key)
        if strip is not None:
            return strip
        styles = self._get_styles()
        try:
            ref = self._ref_at(index)
        except Exception as err:  # corrupt storage: show it in place, keep running
            text = columns.error_text(row, err, width, styles.error)
            extra = Style()
        else:
            marked = ref.name in self.queue
            text = columns.row_text(ref, width, marked, styles, self.needs)
            extra = Style()
            if self._extra is None:
                get = self.get_component_rich_style
                self._extra = (get("reflist--marked"), get("reflist--changed"), get("reflist--cursor"))
            if marked:
                extra += self._extra[0]
            if ref.name in self.changed:
                extra += self._extra[1]
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop_extend(0, width, None).apply_style(base)
        if extra:
            strip = columns.overlay(strip, extra)
        if selected:
            if self._extra is None:
                get = self.get_component_rich_style
                self._extra = (get("reflist--marked"), get("reflist--changed"), get("reflist--cursor"))
            strip = columns.overlay(strip, self._extra[2])
        self._cache[key] = strip
        return strip
