"""HEAD, shown above the ref list (git keeps it apart from refs/: ``for-each-ref`` never prints it).

A one-line widget that takes the focus: ↑ from the list's first row reaches it, ``l`` (or Enter) opens
HEAD's reflog, ``y`` copies and ``o`` opens ``git log`` as on any ref, ↓ goes back to the list.
"""

from __future__ import annotations

from refscope.backend.display import escape_name
from refscope.backend.errors import RefscopeError
from rich.text import Text
from textual.binding import Binding

from .text_line import TextLine


def head_text(snapshot) -> Text:
    """``HEAD → refs/heads/main (symref)`` or ``HEAD 1a2b3c4d (detached)``; the name escaped."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("HEAD", "bold")
    try:
        head = snapshot.head() if snapshot is not None else None
    except RefscopeError as err:
        text.append(f"  unreadable: {escape_name(str(err).encode('utf-8', 'surrogateescape'))}", "red")
        return text
    if head is None:
        text.append("  (missing)", "dim")
    elif head.target is not None:
        text.append(" → ")
        text.append(escape_name(head.target))
        text.append("  symref", "dim")
    else:
        text.append(" " + escape_name((head.oid or b"")[:12]))
        text.append("  detached", "dim")
    text.append("   (↑ to select it: l reflog · y copy · o git log)", "dim italic")
    return text


class HeadLine(TextLine, can_focus=True):
    DEFAULT_CSS = """
    HeadLine { height: 1; padding: 0 0 0 2; background: $surface; color: $text; }
    HeadLine:focus { background: $accent 70%; text-style: bold; }
    """
    BINDINGS = [
        Binding("enter", "app.view('reflog')", "HEAD's reflog", show=False),
        Binding("down,j", "screen.focus_list", "Down", show=False),
    ]

    name_bytes = b"HEAD"

    def show(self, snapshot) -> None:
        self.set_text(head_text(snapshot))
