"""The one place where bytes read from a file become text for a human, and the one JSON encoder.

Ref names (and packed-refs traits, reflog idents and messages, paths) may hold any byte: an 8-bit CSI
(0x9B), C1 controls, ESC sequences, bidi overrides (U+202E), line separators, invalid UTF-8. A terminal
would obey them. So:

- Records keep such fields as ``bytes``; nothing outside this module decodes them for display.
- ``escape_name`` (bytes) and ``printable`` (a message) return ``Shown``, a ``str`` subclass that only
  this module makes: text with every control, C1, bidi and separator character as a visible escape.
- The printers accept only ``Shown``: ``emit`` (the CLI's text output) and the TUI's Text builders
  (``app/tui/views/fmt.py``) raise ``TypeError`` for anything else, so a raw field cannot reach a terminal
  by accident. ``line`` builds a ``Shown`` from parts, passing every part that is not already ``Shown``
  through the escaper. ``Shown`` is never parsed as Rich/Textual markup by its users (they build
  ``rich.text.Text`` from it).
- JSON goes through ``to_json``: strict UTF-8 (ASCII with ``\\u`` escapes), bytes as text with U+FFFD
  where they are not UTF-8, plus their exact bytes in base64 under ``<key>_b64`` (present only then).
"""

from __future__ import annotations

# Characters that reorder or hide text: bidi embeddings/overrides/isolates, marks, zero-width joiners.
_INVISIBLE = {
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2070),
    0xFEFF,
    0x061C,
}


def _category(ch: str) -> str:
    """``unicodedata.category``, imported on first use: the CLI's plain paths never need it."""
    global _category
    from unicodedata import category

    _category = category
    return category(ch)


def _escape_char(ch: str, backslash: bool = True) -> str:
    cp = ord(ch)
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    if 0x80 <= cp < 0xA0:
        return f"\\u{cp:04x}"
    if cp in _INVISIBLE or _category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        if 0xDC80 <= cp <= 0xDCFF:  # surrogateescape'd raw byte
            return f"\\x{cp - 0xDC00:02x}"
        return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"
    if ch == "\\" and backslash:
        return "\\\\"
    return ch


class Shown(str):
    """Text safe to give a terminal as it is (and never to be parsed as markup). Made only by this module:
    ``escape_name``, ``printable``, ``show``, ``line``. Concatenating it with anything gives a plain ``str``
    again, which the printers refuse: build lines with ``line``."""

    __slots__ = ()


_new = str.__new__


def needs_escape(text: str) -> bool:
    """Does ``text`` hold a character the display escapes (anything but a backslash)? The one predicate
    for "a terminal may obey or hide this": verify's warning about a name asks exactly this, so the
    warning and the escaping cannot disagree."""
    if text.isascii() and text.isprintable():
        return False
    return any(_escape_char(ch, backslash=False) != ch for ch in text)


def escape_name(name: bytes) -> Shown:
    """Printable text for a ref name: invalid UTF-8 bytes as ``\\xNN``, controls and bidi as escapes."""
    text = name.decode("utf-8", "surrogateescape")
    if text.isascii() and text.isprintable() and "\\" not in text:
        return _new(Shown, text)
    return _new(Shown, "".join(_escape_char(ch) for ch in text))


def escape_lines(value: bytes) -> bytes:
    """A value of several lines (a commit's body in ``list --format`` output to a terminal): each line as
    ``escape_name`` shows it, the line breaks kept -- a subject cannot move the cursor or set a title, a
    body still reads as lines."""
    return b"\n".join(escape_name(part).encode("utf-8") for part in value.split(b"\n"))


def printable(line: str) -> Shown:
    """``line`` (a message that quotes names, paths or file bytes) with everything a terminal would obey
    made visible, by the same rules as ``escape_name``; backslashes stay as they are."""
    if type(line) is Shown:
        return line
    if line.isprintable():
        return _new(Shown, line)
    return _new(Shown, "".join(_escape_char(ch, backslash=False) for ch in line))


def show(value: object) -> Shown:
    """Any one value as display text: bytes through ``escape_name``, text through ``printable`` (a path
    with surrogate-escaped bytes shows them as ``\\xNN``), ``None`` as ``-``, numbers as they print."""
    if type(value) is Shown:
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return escape_name(bytes(value))
    if value is None:
        return _new(Shown, "-")
    if isinstance(value, str):
        return printable(value)
    return printable(str(value))


def line(*parts: object) -> Shown:
    """One piece of display text from parts: ``Shown`` parts as they are, every other part through ``show``
    (so a field, bytes or text, is escaped wherever it sits in the line)."""
    return _new(Shown, "".join(p if type(p) is Shown else show(p) for p in parts))


def join(sep: str, parts) -> Shown:
    """``sep.join(parts)`` with every part (and ``sep``) through ``show``."""
    return _new(Shown, show(sep).join(p if type(p) is Shown else show(p) for p in parts))


def path_text(path: str | bytes) -> Shown:
    """A file path as display text, escaped like a ref name (backslashes doubled)."""
    import os

    return escape_name(os.fsencode(path))


def require(text: object) -> Shown:
    """``text`` itself if it is ``Shown``; a ``TypeError`` otherwise (the printers' gate)."""
    if type(text) is not Shown:
        raise TypeError(f"not display text (build it with refscope.backend.display): {type(text).__name__}")
    return text


def emit(lines, stream=None) -> None:
    """Write display lines (each ``Shown``, without its newline) to ``stream`` (stdout by default), one
    write. The CLI's text output goes through here and nowhere else."""
    import sys

    out = sys.stdout if stream is None else stream
    out.write("".join(require(t) + "\n" for t in lines))


# -- JSON ------------------------------------------------------------------------------------------------
def _utf8(b: bytes) -> str | None:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


def json_value(value: object) -> tuple[object, object]:
    """(the JSON value, its ``_b64`` companion or None) for one field: bytes and text that is not valid
    UTF-8 (surrogate-escaped paths) become text with U+FFFD plus their exact bytes in base64; lists and
    dicts are converted member by member (a list's companion is a list with null for valid members)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value, None
        except UnicodeEncodeError:
            try:
                value = value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                value = value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes | bytearray | memoryview):
        b = bytes(value)
        text = _utf8(b)
        if text is not None:
            return text, None
        import base64

        return b.decode("utf-8", "replace"), base64.b64encode(b).decode("ascii")
    if isinstance(value, dict):
        return json_ready(value), None
    if isinstance(value, list | tuple):
        pairs = [json_value(v) for v in value]
        extra = [b for _v, b in pairs]
        return [v for v, _b in pairs], (extra if any(b is not None for b in extra) else None)
    return value, None


def json_ready(obj: dict) -> dict:
    """``obj`` with every field as strict JSON wants it: see ``json_value``; a field ``k`` whose bytes are
    not UTF-8 gets ``k_b64`` right after it."""
    out: dict = {}
    for k, v in obj.items():
        jv, b64 = json_value(v)
        out[k] = jv
        if b64 is not None:
            out[f"{k}_b64"] = b64
    return out


def to_json(obj: object) -> str:
    """The one JSON encoder: strict UTF-8 (in fact ASCII: everything else as ``\\u`` escapes, so no
    control byte or bidi character reaches a terminal), never a lone surrogate."""
    import json

    value, _b64 = json_value(obj)
    return json.dumps(value, ensure_ascii=True)


def clipboard_text(value: bytes) -> tuple[str, bool]:
    """(text for the clipboard, exact). The clipboard travels base64 inside OSC 52, so no byte of it
    drives the terminal, and a UTF-8 name goes as it is (what ``git`` will take back when pasted); a name
    that is not UTF-8 cannot travel as text, so its escaped form goes instead and ``exact`` is False."""
    try:
        return value.decode("utf-8"), True
    except UnicodeDecodeError:
        return escape_name(value), False
