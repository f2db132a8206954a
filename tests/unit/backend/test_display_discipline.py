"""The structure that keeps file bytes off the terminal (DESIGN.md rule 6, issue 13 item 4).

Fields read from files stay bytes in the records; they become text only in ``backend/display.py``, whose
``Shown`` type is what the printers (``display.emit``, the TUI's ``fmt.field``) accept. These tests check the
structure itself: nothing in the app decodes bytes or encodes JSON on its own, and the printers refuse
plain text. ``tests/cli/test_hostile_output.py`` checks the outcome over every output path.
"""

from __future__ import annotations

import ast
import io

import pytest
from refscope.backend import display

from tests.support.git import ROOT

APP = ROOT / "app"


def _calls(attr: str) -> list[str]:
    found = []
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr:
                found.append(f"{path.relative_to(APP)}:{node.lineno}")
    return found


def test_the_app_never_decodes_bytes_itself() -> None:
    """Every ``bytes -> str`` of the app is the display function's (escape_name / show / line / to_json)."""
    assert _calls("decode") == []


def test_the_app_never_encodes_json_itself() -> None:
    """Every JSON document goes through ``display.to_json`` (strict UTF-8, ``_b64`` for other bytes)."""
    assert _calls("dumps") == [] and _calls("dump") == []


@pytest.mark.parametrize("value", ["plain text", b"bytes", 3, None])
def test_printers_accept_only_shown(value) -> None:
    with pytest.raises(TypeError):
        display.emit([value], io.StringIO())
    pytest.importorskip("rich")
    from refscope.app.tui.models.format import field
    from rich.text import Text

    if isinstance(value, bytes):  # bytes are escaped on the way in
        assert field(Text(), b"\x1b]0;x\x07").plain == "\\x1b]0;x\\x07"
    else:
        with pytest.raises(TypeError):
            field(Text(), value)


def test_shown_is_made_by_display_only_and_concatenation_loses_it() -> None:
    s = display.line("a ", b"\x9b[31m", " ", "\u202e")
    assert type(s) is display.Shown and s == "a \\x9b[31m \\u202e"
    assert type(s + "x") is str  # built text must go through display.line again
    with pytest.raises(TypeError):
        display.emit([s + "x"], io.StringIO())
    out = io.StringIO()
    display.emit([s, display.line(s, "x")], out)
    assert out.getvalue() == "a \\x9b[31m \\u202e\na \\x9b[31m \\u202ex\n"


def test_to_json_is_strict_and_carries_exact_bytes() -> None:
    import base64
    import json

    doc = display.to_json(
        {"name": b"caf\xe9", "ok": "x\u202e", "traits": [b"a", b"\x9b"], "path": "/r\udcff"}
    )
    doc.encode("ascii")  # ASCII: every non-ASCII and control character as a \u escape
    obj = json.loads(doc)
    assert obj["name"] == "caf\ufffd" and base64.b64decode(obj["name_b64"]) == b"caf\xe9"
    assert obj["ok"] == "x\u202e" and "ok_b64" not in obj
    assert obj["traits"] == ["a", "\ufffd"] and obj["traits_b64"] == [None, "mw=="]
    assert base64.b64decode(obj["path_b64"]) == b"/r\xff"
    assert list(obj) == ["name", "name_b64", "ok", "traits", "traits_b64", "path", "path_b64"]
