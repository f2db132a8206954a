"""Modal dialogs: the commit confirmation, a generic yes/no, and a plain message (refusals, results).

Each is a typed ``ModalScreen`` awaited with ``push_screen_wait`` from a ``@work`` action. Everything shown
is built as ``rich.text.Text`` from escaped names: a ref name can never style the dialog.
"""

from __future__ import annotations

from typing import NamedTuple

from refscope.backend.display import escape_name
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

MAX_LISTED = 8


class CommitPlan(NamedTuple):
    """What the confirmation shows: counts and the names that deserve a loud warning."""

    count: int
    engine: str
    stale: list[bytes]
    checked_out: list[tuple[bytes, str]]  # (branch, worktree path)
    head_branch: bytes | None
    symrefs: list[tuple[bytes, bytes]]  # (symref, target)
    tags: list[bytes]


def _names(names, limit: int = MAX_LISTED) -> str:
    shown = ", ".join(escape_name(n) for n in names[:limit])
    return shown + (f" … and {len(names) - limit:,} more" if len(names) > limit else "")


def plan_text(plan: CommitPlan) -> Text:
    text = Text()
    text.append(f"Delete {plan.count:,} ref{'s' if plan.count != 1 else ''}", "bold")
    text.append(" in one atomic transaction with the ")
    text.append(f"{plan.engine}", "bold reverse")
    text.append(" engine?\n")
    warnings = []
    if plan.head_branch is not None:
        warnings.append(
            f"HEAD's branch {escape_name(plan.head_branch)} is queued: HEAD will point to nothing"
        )
    if plan.checked_out:
        listed = _names([b for b, _ in plan.checked_out])
        warnings.append(
            f"{len(plan.checked_out):,} branch(es) checked out in a worktree: {listed} (git refuses)"
        )
    if plan.symrefs:
        listed = ", ".join(f"{escape_name(s)} → {escape_name(t)}" for s, t in plan.symrefs[:MAX_LISTED])
        warnings.append(f"{len(plan.symrefs):,} symref(s), deleted themselves (not their targets): {listed}")
    if plan.tags:
        warnings.append(f"{len(plan.tags):,} tag(s): {_names(plan.tags)}")
    if plan.stale:
        warnings.append(
            f"{len(plan.stale):,} stale entr(ies) changed since queued: {_names(plan.stale)} (will refuse)"
        )
    for w in warnings:
        text.append("\n⚠ ", "bold red")
        text.append(w, "bold red")
    if not warnings:
        text.append("\nNo branches checked out, no symrefs, no tags.", "dim")
    return text


class ConfirmCommit(ModalScreen[bool]):
    """ "Commit N deletions?" with loud warnings. Returns True to commit."""

    BINDINGS = [
        Binding("escape,n", "dismiss(False)", "Cancel"),
        Binding("y", "dismiss(True)", "Commit"),
    ]

    def __init__(self, plan: CommitPlan) -> None:
        super().__init__(classes="dialog")
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box", classes="-warn" if self._loud() else ""):
            yield Static(Text("Commit deletions", "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(plan_text(self.plan), id="commit-plan")
            with Horizontal(id="dialog-buttons"):
                yield Button(f"Delete {self.plan.count:,}", variant="error", id="yes")
                yield Button("Cancel", variant="primary", id="no")

    def _loud(self) -> bool:
        p = self.plan
        return bool(p.head_branch or p.checked_out or p.symrefs or p.tags or p.stale)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Confirm(ModalScreen[bool]):
    """A plain yes/no question."""

    BINDINGS = [Binding("escape,n", "dismiss(False)", "No"), Binding("y", "dismiss(True)", "Yes")]

    def __init__(self, title: str, question: Text | str, yes: str = "Yes") -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.question = question if isinstance(question, Text) else Text(question)
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.question, id="dialog-question")
            with Horizontal(id="dialog-buttons"):
                yield Button(self.yes, variant="warning", id="yes")
                yield Button("No", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class Message(ModalScreen[None]):
    """A plain message: a refusal with its reason, or a result. Any of escape/enter/q closes it."""

    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close")]

    def __init__(self, title: str, body: Text | str, error: bool = False) -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.body = body if isinstance(body, Text) else Text(body)
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box", classes="-error" if self.error else ""):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="dialog-message")
            with Horizontal(id="dialog-buttons"):
                yield Button("OK", variant="primary", id="ok")

    def on_mount(self) -> None:
        self.query_one("#ok", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)
