"""An OpReport (backend/meter.py) as one or two lines of Text: wall, CPU, syscalls by name, bytes, source."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from .format import size


def report_text(report: Any, label: str | None = None) -> Text:
    if report is None:
        return Text("no measurement", style="dim")
    t = Text(no_wrap=True)
    t.append(f"{label or report.name}: ", style="bold")
    t.append(f"wall {report.wall_ms:.2f} ms", style="cyan")
    t.append(f" · cpu {report.cpu_ms:.2f} ms", style="cyan")
    t.append(f" · {report.syscalls_total:,} syscalls", style="yellow")
    t.append(
        f" ({report.source}{', incl. children' if getattr(report, 'children', False) else ''})", style="dim"
    )
    t.append(f" · read {size(report.bytes_read)} · wrote {size(report.bytes_written)}")
    by_name = getattr(report, "syscalls_by_name", None) or {}
    if by_name:
        top = sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        t.append("\n  ")
        t.append("  ".join(f"{k} {v}" for k, v in top), style="dim")
    return t
