"""Formatting helpers shared by the storage views: sizes, oids, dates, names as Rich Text (never markup).

Fields read from files (names, targets, traits, idents, messages, paths) are bytes in the records and
become text only through ``refscope.backend.display`` (``Shown``); ``field`` and ``shown_text`` are the
Text builders for them and refuse anything that is not ``Shown`` or bytes (escaped on the way in).
"""

from __future__ import annotations

import time as _time

from refscope.backend.display import Shown, escape_name, line, require, show
from rich.text import Text


def name_text(name: bytes, style: str = "") -> Text:
    """A ref name as Text: escaped by the backend's single display function, never parsed as markup."""
    return Text(escape_name(name), style=style, no_wrap=True)


def field(t: Text, value: bytes | Shown, style: str = "") -> Text:
    """Append one field to ``t``: bytes through the display function; text only as ``Shown``."""
    t.append(escape_name(value) if isinstance(value, bytes) else require(value), style=style)
    return t


def shown_text(value: bytes | Shown, style: str = "") -> Text:
    """One field as a Text of its own (see ``field``)."""
    return field(Text(no_wrap=True), value, style)


def size(n: int) -> str:
    """Bytes for humans: 812 B, 4.0 KiB, 12.3 MiB."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{n} B"  # unreachable


def count(n: int) -> str:
    return f"{n:,}"


def git_date(seconds: int, tz_minutes: int) -> str:
    """git's default date format (``git log``/``git reflog --date=default``) in the entry's own zone."""
    t = _time.gmtime(seconds + tz_minutes * 60)
    sign = "+" if tz_minutes >= 0 else "-"
    hh, mm = divmod(abs(tz_minutes), 60)
    return _time.strftime("%a %b %-d %H:%M:%S %Y", t) + f" {sign}{hh:02d}{mm:02d}"


def hexstr(value: bytes | None, width: int = 0) -> Shown:
    """An oid (hex bytes) as text, shortened to ``width`` characters when asked; '-' for none."""
    if value is None:
        return line("-")
    return show(value[:width] if width else value)


def cell(text: str, width: int, right: bool = False) -> str:
    """Pad or cut a plain string to exactly ``width`` cells (columns of the line views)."""
    if len(text) > width:
        return text[: max(0, width - 1)] + "…"
    return text.rjust(width) if right else text.ljust(width)


def bytes_text(value: bytes, limit: int = 80) -> Shown:
    """Arbitrary bytes (a key suffix, a message) as printable escaped text, cut to ``limit`` characters."""
    text = escape_name(value)
    return text if len(text) <= limit else line(text[: limit - 1], "…")
