"""The filter's text field: an ``Input`` whose editing keys apply in the order they were typed.

An ``Input`` inserts printable keys in its own turn, but its editing keys (backspace, delete, cursor
moves) are bindings, which Textual runs only once the key has bubbled up to the app, after the field
has already inserted the characters typed behind them. A burst such as ``martinvonz``, 21 backspaces,
``refs/pull/50`` then comes out as ``rrefs/pull/5``. This field runs its own bindings as each key
arrives, so every edit applies in order.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class FilterInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()
                    return
        await super()._on_key(event)
