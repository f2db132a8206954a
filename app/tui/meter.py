"""The app's one meter interface: every screen measures through ``app.meter`` (or the meter it was given).

A meter is anything with ``measure(name, children=False)`` (a context manager yielding an object whose
``.report`` is the OpReport once the block ends) and ``adopt(report)`` (a report measured elsewhere, e.g.
by the engine inside a transaction, as this meter would show it). ``BackendMeter`` is the real one, over
``backend.meter.measure``; the snapshot tests' ``FakeMeter`` (``..fake_meter``) gives fixed figures through
the same interface so that the SVGs do not change run to run.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol


class Meter(Protocol):
    """What the app and its screens call: nothing else of a meter is used."""

    def measure(self, name: str, children: bool = False) -> AbstractContextManager[Any]: ...

    def adopt(self, report: Any) -> Any: ...


class BackendMeter:
    """The backend's meter (imported when first used: the CLI's fast paths never load it for the TUI)."""

    source = "backend"

    def measure(self, name: str, children: bool = False) -> AbstractContextManager[Any]:
        from refscope.backend.meter import measure

        return measure(name, children=children)

    def adopt(self, report: Any) -> Any:
        return report


def as_meter(meter: Meter | None) -> Meter:
    """``meter``, or the backend's when none is given (a screen opened outside the app, as tests do)."""
    return meter if meter is not None else BackendMeter()
