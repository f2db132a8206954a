"""Screenshots of the storage views, for ``scripts/screenshots`` (TUI-MAIN) and the README.

``await capture_views(app, pilot, out_dir, prefix)`` drives a running RefscopeApp from its main screen with
the real keys (``s``, ``enter``, ``p``, ``l``, ``escape``), waits for each view's background work, saves one
SVG per view and returns to the main screen. Use a fake meter and ``watch=False`` for stable pictures.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any


async def _settle(app: Any, pilot: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while any(w.is_running for w in app.workers) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    screen = app.screen
    summaries = getattr(screen, "summaries", None)
    while summaries is not None and any(s.ref_records < 0 for s in screen.summaries):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    index = getattr(screen, "index", None)
    while index is not None and index.peeled_count < 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    await pilot.pause()


async def capture_views(app: Any, pilot: Any, out_dir: str | Path, prefix: str = "") -> list[Path]:
    """One SVG per storage view of the app's repository; returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    async def shot(name: str) -> None:
        await _settle(app, pilot)
        path = out / f"{prefix}{name}.svg"
        app.save_screenshot(filename=path.name, path=str(out))
        written.append(path)

    reftable = getattr(app.snapshot, "format", "") == "reftable"
    await pilot.press("s")
    await shot("stack" if reftable else "packed-refs")
    if reftable:
        await pilot.press("enter")
        await shot("table")
        await pilot.press("escape")
    await pilot.press("escape")
    await pilot.press("l")
    await shot("reflog")
    await pilot.press("escape")
    await _settle(app, pilot)
    return written
