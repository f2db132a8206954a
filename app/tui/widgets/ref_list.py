"""The ref list: a line list (``.line_list``) over a lazy snapshot.

Nothing is materialised per ref: ``render_line(y)`` asks the snapshot for row ``view[scroll_offset.y + y]``
and caches the resulting Strip in an LRU cache. The view is a ``range`` (all refs, or a prefix) or an index
array (a scan result), swapped in whole. Marks live in the app's queue (a dict of names); toggling one
refreshes one line. A 1M-ref snapshot costs what the snapshot costs, plus a few hundred cached strips.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from ..models.filtering import View, index_of
from . import columns
from .line_list import LineList


class RefList(LineList):
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

    page_overlap = 1

    @dataclass
    class AboveTop(Message):
        """↑ on the first row: the screen may move the focus to what is above the list (HEAD's line)."""

        ref_list: RefList

    @dataclass
    class TipsWanted(Message):
        """Rows on screen whose tips are not read yet (the screen reads them in a worker)."""

        ref_list: RefList
        refs: list

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RefList.TipsWanted)

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
        self._columns: columns.Styles | None = None
        # the column widths the rows shown so far asked for: grown as rows come on screen, reset when
        # the view is swapped (so columns move at most when a longer row first shows, never back and forth)
        self.needs: columns.Needs = columns.NONE
        # the tip columns: ``facts`` (backend ``tips_view.TipFacts``) when the repository's objects can be
        # read; the list only peeks at what was read, the screen's workers read
        self.facts = None
        self.date_mode = "relative"
        self.branch_marks: dict[bytes, str] = {}  # name -> "*" (HEAD's branch) or "+" (another worktree)
        self.by_name = True  # False while the view is sorted otherwise (the cursor is then found by row)

    # -- data -------------------------------------------------------------------------------------------
    def set_view(self, snapshot, view: View, *, keep: bytes | None = None, at: int | None = None) -> None:
        """Swap in a snapshot and/or view at once; keep the cursor on ``keep`` (a name) if given, found
        at ``at`` when the worker that made a sorted view looked for it already (``find_row``)."""
        self.snapshot = snapshot
        self.view = view
        self.preview = None
        self.overrides = {}
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(view))
        if keep is not None and at is not None:
            self.cursor = min(at, max(0, len(view) - 1))
        elif keep is not None and len(view):
            self.cursor = index_of(snapshot, view, keep, self.by_name)
        else:
            self.cursor = min(self.cursor, max(0, len(view) - 1))
        self.scroll_cursor_into_view(center=keep is not None)
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

    @property
    def row_count(self) -> int:
        return len(self.view)

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

    def tips_read(self) -> None:
        """Tips were read (a worker): repaint and grow the columns to the new texts."""
        self._cache.clear()
        self._measure()
        self.refresh()

    def set_date_mode(self, mode: str) -> None:
        self.date_mode = mode
        self._cache.clear()
        self._measure(reset=True)
        self.refresh()

    def cells_of(self, ref) -> columns.TipCells | None:
        """The tip columns of ``ref`` (None when not shown); "…" while its tip is not read yet."""
        facts = self.facts
        if facts is None:
            return None
        from refscope.backend.refformat.tips_view import target_oid

        oid = ref.oid if ref.target is None else target_oid(self.snapshot, ref)
        return columns.tip_cells(facts.peek(oid), self.date_mode)

    def action_cursor(self, delta: int) -> None:
        if delta < 0 and self.cursor == 0:
            self.post_message(self.AboveTop(self))
            return
        super().action_cursor(delta)

    # -- column widths --------------------------------------------------------------------------------
    def _measure(self, reset: bool = False, resized: bool = False) -> None:
        """Grow ``needs`` to fit the rows now on screen (a screenful of lookups, the rows' own cost)."""
        needs = columns.NONE if reset else self.needs
        wanted = []
        if self.snapshot is not None:
            top = self.scroll_offset.y
            for index in range(top, min(top + max(1, self.size.height), len(self.view))):
                try:
                    ref = self._ref_at(index)
                    cells = self.cells_of(ref)
                    needs = needs.grow(columns.row_needs(ref, cells))
                except Exception:
                    continue  # an unreadable row shows its error in place
                if cells is not None and cells.date == "…":
                    wanted.append(ref)
        if wanted:
            self.post_message(self.TipsWanted(self, wanted))
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

    def _restyle(self) -> None:
        super()._restyle()
        self._columns = None

    def _get_styles(self) -> columns.Styles:
        if self._columns is None:
            get = self._style
            self._columns = columns.Styles(
                mark=get("reflist--mark"),
                name=Style(),
                oid=get("reflist--oid"),
                peeled=get("reflist--peeled"),
                target=get("reflist--target"),
                location=get("reflist--location"),
                error=get("reflist--error"),
            )
        return self._columns

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        base = self._style("base")  # inherited background etc.
        if self.snapshot is None or index >= len(self.view):
            return Strip.blank(width, base)
        row = self.view[index] if self.preview is None else -1 - index
        selected = index == self.cursor
        key = (row, width, selected, self.needs, self.date_mode)
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
            cells = self.cells_of(ref)
            branch = self.branch_marks.get(ref.name, " ")
            text = columns.row_text(ref, width, marked, styles, self.needs, cells, branch)
            extra = Style()
            if marked:
                extra += self._style("reflist--marked")
            if ref.name in self.changed:
                extra += self._style("reflist--changed")
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop_extend(0, width, None).apply_style(base)
        if extra:
            strip = columns.overlay(strip, extra)
        if selected:
            strip = columns.overlay(strip, self._style("reflist--cursor"))
        self._cache[key] = strip
        return strip
