"""TextLine: a one-line Static for text that changes while workers run (the count, the status line, HEAD,
the detail line, the column titles).

Why: ``Static.update`` asks for a layout each time: a reflow of the whole screen and a repaint of what
moved, on the UI thread, while the workers of a 1M-ref sort or scan hold the GIL between its steps. Most
updates repeat the text already shown (the status line after every view, the count at each scan step),
and a line whose width its CSS sets never moves anything. So ``set_text`` does nothing for the text shown,
and asks for a layout only when the width follows the text (``width: auto``) and its cell length changed;
otherwise it repaints the line alone.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static


def _key(text: Text | str) -> tuple:
    """What the line looks like (``Text.__eq__`` compares the plain text and spans, not the base style)."""
    if isinstance(text, str):
        return ("", text)
    return (text.plain, str(text.style), tuple(text.spans), text.no_wrap, text.overflow, text.justify)


def _cells(text: Text | str) -> int:
    return cell_len(text) if isinstance(text, str) else text.cell_len


class TextLine(Static):
    DEFAULT_CSS = "TextLine { height: 1; }"

    _shown: tuple | None = None
    _width: int = -1

    def set_text(self, text: Text | str) -> None:
        """The line's new text (its only setter: ``update`` would leave the text compared stale)."""
        key = _key(text)
        if key == self._shown:
            return
        width = self.styles.width  # (None: the container's width, set by the layout, not by the text)
        cells = _cells(text)
        relayout = width is not None and width.is_auto and cells != self._width
        self._shown, self._width = key, cells
        self.update(text, layout=relayout)


class ProgressLine(TextLine):
    """A progress bar drawn as a line of text (``━`` done, dim ``━`` to go, the percentage): Textual's
    ``ProgressBar`` asks for a layout at every step, a TextLine of a set width only for a repaint."""

    def set_progress(self, done: int, total: int) -> None:
        width = self.content_region.width or self.size.width
        if width <= 5 or total <= 0:
            return
        done = max(0, min(done, total))
        bar = width - 5
        filled = bar * done // total
        text = Text(no_wrap=True)
        text.append("━" * filled, "bold")
        text.append("━" * (bar - filled), "dim")
        text.append(f" {100 * done // total:3d}%")
        self.set_text(text)
