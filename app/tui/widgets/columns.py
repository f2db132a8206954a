"""The ref list's columns: one layout shared by the header line and every row, so they always line up.

Every name goes through ``backend.display.escape_name`` and becomes a ``rich.text.Text`` built from plain
strings (never markup), so a name can neither style nor move the terminal.
"""

from __future__ import annotations

from typing import NamedTuple

from refscope.backend.display import escape_name, show
from refscope.backend.model import LOOSE, PACKED, TABLE
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

MARK_W = 2
VALUE_W = 19  # "abcdef01 ^12345678 " or "→ target"
SHORT = 8


class Layout(NamedTuple):
    name: int
    value: int
    location: int


def layout(width: int) -> Layout:
    """Column widths for a line of ``width`` cells; narrow terminals drop the location first."""
    location = 22 if width >= 90 else (16 if width >= 64 else 0)
    value = VALUE_W if width >= 40 else 0
    name = max(8, width - MARK_W - value - location)
    return Layout(name, value, location)


def location_text(loc) -> str:
    """Where a ref lives: ``loose``, ``packed@OFFSET`` or ``table MIN-MAX #UPDATE_INDEX``."""
    if loc.kind == LOOSE:
        return "loose"
    if loc.kind == PACKED:
        return f"packed@{loc.offset}"
    if loc.kind == TABLE:
        base = loc.file.rsplit("/", 1)[-1]
        parts = base.split("-")
        try:
            span = f"{int(parts[0], 16)}-{int(parts[1], 16)}"
        except (ValueError, IndexError):
            span = base[:12]
        return f"table {span} #{loc.update_index}"
    return loc.kind


def header(width: int, style: Style | None = None) -> Text:
    lay = layout(width)
    text = Text(no_wrap=True, style=style or "")
    text.append(" " * MARK_W)
    text.append(_fit("name", lay.name))
    if lay.value:
        text.append(_fit("oid      peeled/→", lay.value))
    if lay.location:
        text.append(_fit("location", lay.location))
    return text


def _fit(s: str, width: int) -> str:
    if len(s) > width - 1:
        s = s[: max(0, width - 2)] + "…"
    return s.ljust(width)


class Styles(NamedTuple):
    mark: Style
    name: Style
    oid: Style
    peeled: Style
    target: Style
    location: Style
    error: Style


def row_text(ref, width: int, marked: bool, styles: Styles) -> Text:
    """One row of the list as a Text of exactly ``width`` cells."""
    lay = layout(width)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("● " if marked else "  ", styles.mark)
    name = Text(escape_name(ref.name), styles.name, no_wrap=True)
    name.truncate(lay.name - 1, overflow="ellipsis", pad=True)
    text.append_text(name)
    text.append(" ")
    if lay.value:
        if ref.target is not None:
            target = Text("→ " + escape_name(ref.target), styles.target, no_wrap=True)
            target.truncate(lay.value - 1, overflow="ellipsis", pad=True)
            text.append_text(target)
            text.append(" ")
        else:
            oid = show((ref.oid or b"")[:SHORT])  # hex by the stores' checks, escaped all the same
            text.append(oid.ljust(SHORT + 1), styles.oid)
            peeled = "^" + show(ref.peeled[:SHORT]) if ref.peeled else ""
            text.append(peeled.ljust(lay.value - SHORT - 1), styles.peeled)
    if lay.location:
        text.append(_fit(location_text(ref.location), lay.location), styles.location)
    text.truncate(width, overflow="ellipsis", pad=True)
    return text


def error_text(index: int, err: Exception, width: int, style: Style) -> Text:
    """A row that could not be read: the error in place (file and offset), the app keeps running."""
    what = escape_name(str(err).encode("utf-8", "surrogateescape"))
    text = Text(f"  row {index}: {what}", style, no_wrap=True)
    text.truncate(width, overflow="ellipsis", pad=True)
    return text


def overlay(strip: Strip, style: Style) -> Strip:
    """Lay ``style`` over every segment (cursor and highlight rows: their background wins)."""
    return Strip([Segment(text, (s or Style()) + style, ctl) for text, s, ctl in strip], strip.cell_length)
