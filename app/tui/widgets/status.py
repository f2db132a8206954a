"""The status line: repository, ref format, hash, ref count, storage size, engine, live state."""

from __future__ import annotations

import os

from refscope.backend.display import escape_name, printable
from rich.text import Text

from .text_line import TextLine


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


def storage_summary(snapshot) -> str:
    """``packed-refs 1.2 MiB · 3 loose`` or ``4 tables 12.0 MiB`` from the files the snapshot read."""
    try:
        files = snapshot.files()
    except Exception:
        return "storage ?"
    if snapshot.format == "reftable":
        tables = [size for path, (_dev, _ino, size) in files.items() if path.endswith(".ref")]
        if not tables:
            return f"{len(snapshot.tables)} tables"
        return f"{len(tables)} table{'s' if len(tables) != 1 else ''} {human_bytes(sum(tables))}"
    packed = sum(size for path, (_d, _i, size) in files.items() if os.path.basename(path) == "packed-refs")
    loose = sum(1 for path in files if os.path.basename(path) not in ("packed-refs", "HEAD"))
    return f"packed-refs {human_bytes(packed)} · {loose:,} loose"


class StatusLine(TextLine):
    """One line, rebuilt from plain Text on every change (the repo path is never parsed as markup)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(
        self, *, repo: str, snapshot, count: int | None, engine: str, live: str, error: str | None = None
    ) -> None:
        """The whole line when it fits the width; else a compact one (shorter path, no labels, no storage
        summary), so an 80-column terminal still shows the engine, the live state and an error."""
        self._last = dict(repo=repo, snapshot=snapshot, count=count, engine=engine, live=live, error=error)
        width = self.content_region.width or self.size.width
        text = self._build(repo, snapshot, count, engine, live, error, compact=False)
        if width and text.cell_len > width:
            text = self._build(repo, snapshot, count, engine, live, error, compact=True)
        self.set_text(text)

    _last: dict | None = None

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(**self._last)

    def _build(self, repo, snapshot, count, engine, live, error, *, compact: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("refscope ", "bold")
        text.append(short_repo(repo, 16 if compact else 32))
        if snapshot is not None:
            refs = (
                f"{count:,} refs" if count is not None else ("refs unreadable" if error else "counting refs…")
            )
            text.append(f" · {snapshot.format}{'' if compact else ' · ' + snapshot.hash_name} · {refs}")
        text.append(" · " if compact else " · engine ")
        text.append(f" {engine} ", "bold reverse")
        text.append(" · ")
        style = {"live": "bold green", "off": "dim", "error": "bold red"}.get(
            live.split()[0].rstrip(":"), "yellow"
        )
        text.append(printable(("● " if live.startswith("live") else "○ ") + live), style)  # may quote a path
        if error:
            text.append(" · ")
            text.append("⚠ " + escape_name(error.encode("utf-8", "surrogateescape")), "bold red")
        if snapshot is not None and not compact:
            text.append(f" · {storage_summary(snapshot)}", "dim")
        return text


def short_repo(path: str, limit: int = 32) -> str:
    """The repository path, home as ``~``, cut from the left to ``limit`` cells (escaped)."""
    home = os.path.expanduser("~")
    if home not in ("/", "") and path.startswith(home + os.sep):
        path = "~" + path[len(home) :]
    shown = escape_name(os.fsencode(path))
    return shown if len(shown) <= limit else "…" + shown[-(limit - 1) :]
