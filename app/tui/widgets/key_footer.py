"""KeyFooter: Textual's Footer, rebuilt only when the keys it shows changed.

Why: Footer rebuilds every key widget it holds (a mount and a CSS pass each) on every bindings signal,
and a screen sends that signal for each focus move and ``refresh_bindings``, most of which change no key
shown. At launch that was a few rebuilds of a frame's length each, on the UI thread, while the row index
of a 1M-ref repository was being built beside it.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


def shown_keys(screen: Screen) -> tuple:
    """What a Footer composes from: each shown binding with its enabled state and tooltip (the command
    palette's among them)."""
    return tuple((b, enabled, tip) for (_, b, enabled, tip) in screen.active_bindings.values() if b.show) + (
        screen.active_bindings.get(screen.app.COMMAND_PALETTE_BINDING, (None,))[1:],
    )


class KeyFooter(Footer):
    _shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        keys = shown_keys(screen)
        if keys == self._shown:
            return
        super().bindings_changed(screen)
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = keys  # (a recompose is on its way: Footer.bindings_changed)
