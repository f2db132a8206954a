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
    date: int = 0  # the tip columns (0: not shown: no object database, or no room)
    author: int = 0
    subject: int = 0


class Needs(NamedTuple):
    """The widths the rows on screen ask for (longest name, value and location text, in cells, each plus
    its separating space). ``NONE`` asks for the minimums."""

    name: int = 0
    value: int = 0
    location: int = 0
    tables: int = 0  # 1 when a row lives in a reftable table (the header then explains "upd")
    tips: int = 0  # 1 when the tip columns are shown (the repository's objects can be read)
    date: int = 0  # the longest date text on screen
    author: int = 0  # the longest author name on screen

    def grow(self, other: Needs) -> Needs:
        return Needs(*(max(a, b) for a, b in zip(self, other, strict=True)))


NONE = Needs()
NAME_MIN = 24  # a name is cut below this only when the terminal leaves nothing else
LOCATION_MIN = 12
AUTHOR_MAX = 18
SUBJECT_MIN = 12
DATE_MIN = len("date") + 1


def _tip_layout(avail: int, name: int, value: int, loc: int, needs: Needs) -> Layout:
    """With the tip columns: date, author and subject share what name, value and location leave. They are
    the extras: the location gives way for them first, then the author goes, then the subject narrows and
    the date goes; the name and the value keep what their content asks (a name is the row's identity)."""
    date = max(DATE_MIN, needs.date + 1)
    author = max(len("author") + 1, min(needs.author, AUTHOR_MAX) + 1)
    spare = avail - name - value - loc
    want = date + author + SUBJECT_MIN
    if spare < want and loc:
        spare += loc
        loc = 0
    if spare < want:
        author = 0
    if spare < date + SUBJECT_MIN:
        date = 0 if spare < date else date
    subject = max(0, spare - date - author) if date else 0
    return Layout(name, value, loc, date, author, subject)


def layout(width: int, needs: Needs = NONE) -> Layout:
    """Column widths for a line of ``width`` cells, sized to the rows' content (``needs``) and the terminal.

    Every column gets what its content asks when it fits, and the spare cells go to the end of the line,
    so a symref target is never cut to give a short name room. When the content does not fit, the
    location gives way first (down to LOCATION_MIN), then the name (down to NAME_MIN), then the value;
    a narrow terminal drops the location, then the value."""
    avail = max(0, width - MARK_W)
    loc = max(len("location") + 1, needs.location) if width >= 64 else 0
    value = max(VALUE_W, needs.value) if width >= 40 else 0
    name = max(len("name") + 1, min(needs.name, avail) if needs.name else avail - value - loc)
    over = name + value + loc - avail
    for col, floor in (("loc", LOCATION_MIN), ("name", NAME_MIN), ("value", VALUE_W), ("name", 8)):
        if over <= 0:
            break
        if col == "loc" and loc:
            cut = min(over, max(0, loc - floor))
            loc -= cut
        elif col == "name":
            cut = min(over, max(0, name - floor))
            name -= cut
        elif col == "value" and value:
            cut = min(over, max(0, value - floor))
            value -= cut
        else:
            cut = 0
        over -= cut
    if over > 0 and loc:  # still too wide: the location goes
        over -= loc
        loc = 0
    if over > 0:
        name = max(8, name - over)
    if needs.tips:
        return _tip_layout(avail, name, value, loc, needs)
    return Layout(name, value, loc)


def row_needs(ref, cells: TipCells | None = None) -> Needs:
    """What one row asks for (escaped name, value, location; each plus one space; the tip's date and
    author when the tip columns are shown)."""
    name = len(escape_name(ref.name)) + 1
    value = VALUE_W if ref.target is None else len(escape_name(ref.target)) + 3  # "→ " + target + " "
    loc = len(location_text(ref.location)) + 1
    tables = int(ref.location.kind == TABLE)
    if cells is None:
        return Needs(name, value, loc, tables)
    return Needs(name, value, loc, tables, 1, len(cells.date), len(cells.author))


def location_text(loc) -> str:
    """Where a ref lives: ``loose``, ``packed@OFFSET`` (a byte offset in packed-refs) or
    ``table MIN-MAX upd N`` (the table's update-index range and the record's update index)."""
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
        return f"table {span} upd {loc.update_index}"
    return loc.kind


# the location column's title, longest first: the first that fits the room is shown
TABLE_HEADERS = (
    "location (table update-index range, upd = the record's update index)",
    "location (upd = update index)",
    "location (upd=update idx)",
    "location",
)
FILES_HEADERS = ("location (packed@byte offset in packed-refs)", "location (packed@offset)", "location")


def header(width: int, style: Style | None = None, needs: Needs = NONE) -> Text:
    lay = layout(width, needs)
    text = Text(no_wrap=True, style=style or "")
    text.append(" " * MARK_W)
    text.append(_fit("name", lay.name))
    if lay.value:
        title = "oid      peeled/→ target"
        text.append(_fit(title if len(title) < lay.value else "oid      peeled/→", lay.value))
    if lay.location:
        room = width - MARK_W - lay.name - lay.value  # the header may use the spare cells at the end
        if lay.date:
            room = lay.location
        titles = TABLE_HEADERS if needs.tables else FILES_HEADERS
        title = next((h for h in titles if len(h) < room), "location")
        text.append(_fit(title, max(lay.location, min(room, len(title) + 1))))
    if lay.date:
        text.append(_fit("date", lay.date))
        if lay.author:
            text.append(_fit("author", lay.author))
        # the location's title is only "location" beside the tip columns: its legend goes where the
        # subject's title leaves room
        legend = ("  " + LEGENDS[bool(needs.tables)]) if lay.location else ""
        subject = "subject" + legend if len("subject" + legend) < lay.subject else "subject"
        text.append(_fit(subject, lay.subject))
    return text


LEGENDS = (
    "location: packed@byte offset in packed-refs",
    "location: table update-index range, upd = the record's update index",
)


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


class TipCells(NamedTuple):
    """The tip columns of one row, as shown (escaped): empty strings while not read yet."""

    date: str
    author: str
    subject: str


def tip_cells(tip, mode: str) -> TipCells:
    """A tip (``backend.objects.tips.Tip``, or None: not read yet) as its columns show it: the committer
    date in ``mode`` ("relative" or "iso"), the author's name, the subject."""
    from refscope.backend.refformat.tips_view import show_ident_date

    if tip is None:
        return TipCells("…", "", "")
    if tip.kind is None:  # (a damaged one's subject says what is wrong with it)
        what = "missing object" if tip.subject is None else escape_name(tip.subject)
        return TipCells("", "", f"({what})")
    author = escape_name(tip.author.name) if tip.author is not None else ""
    subject = escape_name(tip.subject) if tip.subject is not None else f"({tip.peeled_kind or tip.kind})"
    return TipCells(show_ident_date(tip.committer, mode), author, subject)


def row_text(ref, width: int, marked: bool, styles: Styles, needs: Needs = NONE,
             cells: TipCells | None = None, branch: str = " ") -> Text:  # fmt: skip
    """One row of the list as a Text of exactly ``width`` cells, in the columns ``layout`` gives;
    ``branch``: the second cell of the mark column (``*`` HEAD's branch, ``+`` checked out elsewhere)."""
    lay = layout(width, needs)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(("●" if marked else " ") + branch, styles.mark)
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
    if lay.date and cells is not None:
        text.append(_fit(cells.date, lay.date), styles.oid)
        if lay.author:
            text.append(_fit(cells.author, lay.author), styles.target)
        text.append(_fit(cells.subject, lay.subject))
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
