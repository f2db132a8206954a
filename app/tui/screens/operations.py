"""One operation's full breakdown, and the side-by-side bench result.

An OpReport shows wall and CPU time, every syscall kind with its count, bytes read and written, whether a
child process was counted, and where the counts came from (kernel tracepoints, strace, /proc io, fake).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def report_text(report, phases=()) -> Text:
    text = Text()
    text.append(f"{report.name}\n", "bold")
    text.append(f"  wall      {report.wall_ms:10.3f} ms\n")
    text.append(f"  cpu       {report.cpu_ms:10.3f} ms\n")
    text.append(f"  syscalls  {report.syscalls_total:10,}   source: {report.source}")
    text.append("  (children counted)\n" if report.children else "\n")
    if report.bytes_read or report.bytes_written:
        text.append(f"  bytes     {report.bytes_read:,} read, {report.bytes_written:,} written\n")
    kinds = sorted(report.syscalls_by_name.items(), key=lambda kv: (-kv[1], kv[0]))
    if kinds:
        text.append("\n  by kind\n", "bold")
        width = max(len(k) for k, _ in kinds)
        top = max(v for _, v in kinds) or 1
        for name, count in kinds:
            bar = "█" * max(0, round(20 * count / top))
            text.append(f"    {name:<{width}} {count:>8,} ")
            text.append(bar + "\n", "cyan")
    for phase in phases:
        text.append(
            f"\n  phase {phase.name}: {phase.wall_ms:.3f} ms wall, {phase.cpu_ms:.3f} ms cpu, "
            f"{phase.syscalls_total:,} syscalls",
            "dim",
        )
    return text


class OperationScreen(ModalScreen[None]):
    """The breakdown of one operation (or a commit's result with its phases)."""

    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close")]

    def __init__(self, report, title: str | None = None, header: Text | None = None, phases=()) -> None:
        super().__init__(classes="dialog")
        self.report = report
        self.title_text = title or f"operation: {report.name}"
        self.header = header
        self.phases = phases

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                if self.header is not None:
                    yield Static(self.header, id="op-header")
                yield Static(report_text(self.report, self.phases), id="op-detail")


class BenchScreen(ModalScreen[None]):
    """The queued transaction through both engines on scratch copies, side by side (``refscope bench``).

    The table is as wide as ``refscope bench`` prints it: never wrapped (a wrapped row breaks its
    columns), the dialog as wide as the terminal allows, and it scrolls sideways beyond that."""

    DEFAULT_CSS = """
    BenchScreen #dialog-box { width: 98%; max-width: 100%; }
    BenchScreen #dialog-body { overflow-x: auto; }
    BenchScreen #bench-result { width: auto; text-wrap: nowrap; text-overflow: clip; }
    """
    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close")]

    def __init__(self, body: Text) -> None:
        super().__init__(classes="dialog")
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box", classes="-wide"):
            yield Static(Text("bench: the queued transaction, both engines", "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="bench-result")
