"""The size chart of a reftable stack: one bar per table on a log scale, so a geometric sequence (each table at
least ``factor``× the next) reads as an even staircase, and the tables the next compaction would merge stand out."""

from __future__ import annotations

import math

from rich.text import Text

from ..models.format import size as human


def size_chart(
    names: list[str],
    sizes: list[int],
    factor: int,
    merge: tuple[int, int] | None,
    width: int = 40,
    new_size: int | None = None,
) -> Text:
    """Bars oldest (top) to newest; ``merge`` is a half-open range of indexes (may include the hypothetical
    next table at index len(sizes), drawn when ``new_size`` is given)."""
    rows = list(zip(names, sizes, strict=True))
    if new_size is not None:
        rows.append(("next write", new_size))
    top = max((math.log2(max(s, 1)) for _n, s in rows), default=1.0) or 1.0
    out = Text(no_wrap=True)
    out.append(f"{'':>4} {'(orange: merged by the next write)':<{width}}", style="dim")
    out.append(f"  {'size':>8}  {'÷ next':>7}\n", style="dim")
    for i, (_name, s) in enumerate(rows):
        bar = max(1, round(width * math.log2(max(s, 1)) / top)) if s > 0 else 0
        in_merge = merge is not None and merge[0] <= i < merge[1]
        hypothetical = new_size is not None and i == len(rows) - 1
        label = "new" if hypothetical else f"#{i}"
        out.append(f"{label:>4} ", style="bold")
        style = "bold dark_orange" if in_merge else ("dim" if hypothetical else "steel_blue1")
        out.append(("░" if hypothetical else "█") * bar, style=style)
        out.append(" " * (width - bar + 1))
        out.append(f"{human(s):>9}", style="")
        if i + 1 < len(rows):
            nxt = rows[i + 1][1]
            ratio = s / nxt if nxt > 0 else float("inf")
            ok = s >= nxt * factor
            out.append(
                f"  ×{ratio:>5.1f}" if ratio != float("inf") else "  ×  inf", style="green" if ok else "red"
            )
            out.append(" ✓" if ok else f" <{factor}", style="green" if ok else "bold red")
        if in_merge:
            out.append(" ◀", style="bold dark_orange")
        if i + 1 < len(rows):
            out.append("\n")
    return out
