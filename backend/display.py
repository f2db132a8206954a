"""The one function that turns a ref name (bytes) into text for a human.

Ref names may legally contain bytes >= 0x80: an 8-bit CSI (0x9B), C1 controls, bidi overrides (U+202E).
A terminal would obey them. Every view, CLI and TUI alike, goes through ``escape_name``; the result
contains only printable characters and is never parsed as Rich/Textual markup by callers (they build
``rich.text.Text`` objects from it, or print it raw).
"""

from __future__ import annotations

import unicodedata

# Characters that reorder or hide text: bidi embeddings/overrides/isolates, marks, zero-width joiners.
_INVISIBLE = {
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2070),
    0xFEFF,
    0x061C,
}


def _escape_char(ch: str, backslash: bool = True) -> str:
    cp = ord(ch)
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    if 0x80 <= cp < 0xA0:
        return f"\\u{cp:04x}"
    if cp in _INVISIBLE or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        if 0xDC80 <= cp <= 0xDCFF:  # surrogateescape'd raw byte
            return f"\\x{cp - 0xDC00:02x}"
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"
    if ch == "\\" and backslash:
        return "\\\\"
    return ch


def needs_escape(text: str) -> bool:
    """Does ``text`` hold a character the display escapes (anything but a backslash)? The one predicate
    for "a terminal may obey or hide this": verify's warning about a name asks exactly this, so the
    warning and the escaping cannot disagree."""
    if text.isascii() and text.isprintable():
        return False
    return any(_escape_char(ch, backslash=False) != ch for ch in text)


def escape_name(name: bytes) -> str:
    """Printable text for a ref name: invalid UTF-8 bytes as ``\\xNN``, controls and bidi as escapes."""
    text = name.decode("utf-8", "surrogateescape")
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    return "".join(_escape_char(ch) for ch in text)


def printable(line: str) -> str:
    """``line`` (a message that quotes names, paths or file bytes) with everything a terminal would obey
    made visible, by the same rules as ``escape_name``; backslashes stay as they are."""
    if line.isprintable():
        return line
    return "".join(_escape_char(ch, backslash=False) for ch in line)
