"""Command-palette provider: jump to a ref by name (prefix search on the snapshot, no scan)."""

from __future__ import annotations

from functools import partial

from refscope.backend.display import escape_name
from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

MAX_HITS = 20
_ROOTS = (b"refs/heads/", b"refs/tags/", b"refs/remotes/", b"refs/")


class RefJumpProvider(Provider):
    """Typing ``feat`` offers refs/heads/feat…, refs/tags/feat…, …; typing ``refs/…`` is a plain prefix."""

    async def discover(self) -> Hits:
        yield DiscoveryHit("Jump to ref…", lambda: None, help="type a ref name (prefix) to jump to it")

    async def search(self, query: str) -> Hits:
        snapshot = getattr(self.app, "snapshot", None)
        query = query.strip()
        if snapshot is None or not query or self.app.ref_count() is None:
            return  # not indexed yet: prefix searches would build the row index on the UI thread
        raw = query.encode("utf-8", "surrogateescape")
        prefixes = [raw] if raw.startswith(b"refs/") else [root + raw for root in _ROOTS]
        seen = 0
        for prefix in prefixes:
            try:
                rows = snapshot.prefix_range(prefix)
            except Exception:
                return
            for i in rows[: MAX_HITS - seen]:
                name = snapshot.name_at(i)
                display = Text("jump: ")
                display.append(escape_name(name), "bold")
                yield Hit(1.0 - seen / 100, display, partial(self.app.jump_to, name), help=f"row {i:,}")
                seen += 1
            if seen >= MAX_HITS:
                return
