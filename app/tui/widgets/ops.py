"""The operations panel: every operation the app ran, with what it cost, and a sparkline of recent times.

Reports are the backend meter's OpReport (wall, CPU, syscalls total and by kind, and the counts' source).
Selecting one posts ``OpsPanel.Selected`` so the app can show its full breakdown.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Sparkline

MAX_OPS = 200
SPARK = 40


def top_kinds(report, n: int = 3) -> str:
    """``openat 3, read 2`` — the syscall kinds that dominate a report."""
    kinds = sorted(report.syscalls_by_name.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v}" for k, v in kinds[:n] if v)


def summary(report) -> Text:
    """One line: name, wall, CPU, syscalls (top kinds), source. Plain Text, never markup."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{report.name:<9}", "bold")
    text.append(f"{report.wall_ms:>8.2f} ms ")
    text.append(f"{report.syscalls_total:>6,} sys")
    kinds = top_kinds(report)
    if kinds:
        text.append(f" ({kinds})", "dim")
    text.append(f"  cpu {report.cpu_ms:.2f} ms", "dim")
    text.append(f"  [{report.source}]", "dim italic")
    return text


class OpsPanel(Vertical):
    """Recent operations, newest at the bottom; a sparkline of their wall times above."""

    DEFAULT_CSS = """
    OpsPanel { height: 1fr; }
    OpsPanel > Sparkline { height: 1; margin: 0 1; }
    OpsPanel > OptionList:focus { border: none; }
    OpsPanel > OptionList { height: 1fr; border: none; padding: 0; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    @dataclass
    class Selected(Message):
        report: object

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.reports: deque = deque(maxlen=MAX_OPS)

    def compose(self) -> ComposeResult:
        yield Sparkline([], summary_function=max, id="ops-spark")
        yield OptionList(id="ops-list")

    def add(self, report) -> None:
        self.reports.append(report)
        options = self.query_one(OptionList)
        if options.option_count >= MAX_OPS:
            options.remove_option_at_index(0)
        options.add_option(summary(report))
        options.highlighted = options.option_count - 1
        options.scroll_end(animate=False, immediate=True)
        self.query_one(Sparkline).data = [r.wall_ms for r in list(self.reports)[-SPARK:]]
        self.border_title = f"operations · {len(self.reports)}"

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self.reports):
            self.post_message(self.Selected(self.reports[index]))

    def selected_report(self):
        options = self.query_one(OptionList)
        index = options.highlighted
        if index is not None and 0 <= index < len(self.reports):
            return self.reports[index]
        return self.reports[-1] if self.reports else None
