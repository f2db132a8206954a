"""Modal dialogs: the commit confirmation, a generic yes/no (and quitting with a queue), a plain message
(refusals, results), the path prompt for exporting and loading the queue, and the edit prompt.

Each is a typed ``ModalScreen`` awaited with ``push_screen_wait`` from a ``@work`` action. Everything shown
is built as ``rich.text.Text`` from escaped names: a ref name can never style the dialog.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from refscope.backend.display import escape_name
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Static

from ..widgets.filter_input import FilterInput
from ..workers import Failure, work

MAX_LISTED = 8


class CommitPlan(NamedTuple):
    """What the confirmation shows: counts and the names that deserve a loud warning (computed off the UI
    thread by the main screen, the symrefs that would dangle by the backend: ``effects.dangling_symrefs``)."""

    count: int
    engine: str
    stale: list[bytes]
    checked_out: list[tuple[bytes, str]]  # (branch, working tree path)
    head_branch: bytes | None
    symrefs: list[tuple[bytes, bytes]]  # (queued symref, its target)
    tags: list[bytes]
    dangling: list[tuple[bytes, bytes]] = []  # (remaining symref, the queued ref its chain reaches)
    stash: bool = False  # refs/stash is queued
    notes: list[bytes] = []  # queued refs/notes/*
    head_itself: bool = False  # HEAD itself is queued (a loaded queue file can hold it)
    format: str = "files"
    kinds: dict[str, int] = {}  # entries of each kind (``widgets.queue.KINDS``); deletions alone: empty
    edits: list = []  # a mixed queue's edits other than deletions, as display text (``entry_text``)

    @property
    def mixed(self) -> bool:
        """The queue holds creates, moves or renames: one ``UpdateTransaction``, worded as edits."""
        return any(kind != "delete" for kind in self.kinds)

    def left_out(self, allow_checked_out: bool) -> frozenset[bytes]:
        """The entries "leave out and delete the rest" skips: stale ones (the commit would refuse them)
        and checked-out branches unless the user allowed deleting those."""
        out = set(self.stale)
        if not allow_checked_out:
            out.update(b for b, _ in self.checked_out)
        return frozenset(out)


class CommitChoice(NamedTuple):
    """What the user chose: commit the queue without ``left_out``, allowing checked-out branches or not."""

    left_out: frozenset[bytes]
    allow_checked_out: bool


def _names(names, limit: int = MAX_LISTED) -> str:
    shown = ", ".join(escape_name(n) for n in names[:limit])
    return shown + (f" … and {len(names) - limit:,} more" if len(names) > limit else "")


def _pairs(pairs, joint: str, limit: int = MAX_LISTED) -> str:
    shown = ", ".join(f"{escape_name(a)}{joint}{escape_name(b)}" for a, b in pairs[:limit])
    return shown + (f" … and {len(pairs) - limit:,} more" if len(pairs) > limit else "")


def _paths(pairs, limit: int = MAX_LISTED) -> str:
    shown = ", ".join(f"{escape_name(b)} in {escape_name(os.fsencode(p))}" for b, p in pairs[:limit])
    return shown + (f" … and {len(pairs) - limit:,} more" if len(pairs) > limit else "")


def warnings(plan: CommitPlan, allow_checked_out: bool = False) -> list[str]:
    """The dialog's warnings, one line of text each, loudest first. Every claim about git is what git
    does: ``git branch -d`` refuses a checked-out branch, ``git update-ref -d`` (what refscope does) does
    not, and the worktree is then on an unborn branch."""
    out = []
    if plan.engine == "git" and plan.kinds.get("rename"):
        out.append(
            "the git engine has no rename (git update-ref cannot move a reflog): the commit would be "
            "refused; e switches to the native engine"
        )
    if plan.head_itself:
        if plan.format == "reftable":
            out.append(
                'HEAD itself is queued: git then finds no HEAD ("Not currently on any branch"; '
                'git log: "your current branch appears to be broken")'
            )
        else:
            out.append(
                "HEAD itself is queued: without .git/HEAD git no longer recognizes the repository "
                '("fatal: not a git repository")'
            )
    if plan.head_branch is not None:
        out.append(
            f"HEAD's branch {escape_name(plan.head_branch)} is queued: HEAD is left on an unborn branch "
            "(the next commit starts a new history)"
        )
    if plan.checked_out:
        n = len(plan.checked_out)
        verdict = (
            "allowed (o): they will be deleted"
            if allow_checked_out
            else "refscope refuses them unless you allow it (o), or leaves them out (d)"
        )
        out.append(
            f"{n:,} branch{'es' if n != 1 else ''} checked out in a worktree: {_paths(plan.checked_out)}. "
            "Deleting one leaves that worktree on an unborn branch; git branch -d refuses, "
            f"git update-ref -d does not; {verdict}"
        )
    if plan.stash:
        out.append(
            "refs/stash is queued: every stash entry is lost (stash@{0}, stash@{1}, … are its reflog, "
            "deleted with it)"
        )
    if plan.notes:
        n = len(plan.notes)
        out.append(
            f"{n:,} notes ref{'s' if n != 1 else ''} queued: {_names(plan.notes)} "
            "(the notes it holds are no longer reachable)"
        )
    if plan.dangling:
        n = len(plan.dangling)
        out.append(
            f"{n:,} symref{'s' if n != 1 else ''} left pointing at a deleted ref (dangling): "
            f"{_pairs(plan.dangling, ' → ')}"
        )
    if plan.symrefs:
        out.append(
            f"{len(plan.symrefs):,} symref(s), deleted themselves (not their targets): "
            f"{_pairs(plan.symrefs, ' → ')}"
        )
    if plan.tags:
        out.append(f"{len(plan.tags):,} tag(s): {_names(plan.tags)}")
    if plan.stale:
        out.append(
            f"{len(plan.stale):,} stale entr(ies) changed since queued: {_names(plan.stale)} "
            "(the commit refuses them; d leaves them out)"
        )
    return out


def kinds_text(kinds: dict[str, int]) -> str:
    """``2 deletes, 1 create, 1 rename``: a queue's counts of each kind."""
    return ", ".join(f"{n:,} {kind}{'s' if n != 1 else ''}" for kind, n in kinds.items())


def plan_text(plan: CommitPlan, allow_checked_out: bool = False) -> Text:
    text = Text()
    if plan.mixed:
        text.append(f"Commit {plan.count:,} edit{'s' if plan.count != 1 else ''}", "bold")
        text.append(f" ({kinds_text(plan.kinds)})")
    else:
        text.append(f"Delete {plan.count:,} ref{'s' if plan.count != 1 else ''}", "bold")
    text.append(" in one atomic transaction with the ")
    text.append(f"{plan.engine}", "bold reverse")
    text.append(" engine?\n")
    if plan.edits:
        for edit in plan.edits[:MAX_LISTED]:
            text.append(f"\n  {edit}")
        if len(plan.edits) > MAX_LISTED:
            text.append(f"\n  … and {len(plan.edits) - MAX_LISTED:,} more", "dim")
        text.append("\n")
    found = warnings(plan, allow_checked_out)
    for w in found:
        text.append("\n⚠ ", "bold red")
        text.append(w, "bold red")
    if not found and plan.mixed:
        text.append("\nNothing it deletes or renames is checked out, a symref or a tag.", "dim")
    elif not found:
        text.append("\nNo branches checked out, no symrefs, no tags.", "dim")
    return text


class ConfirmCommit(ModalScreen[CommitChoice | None]):
    """ "Commit N deletions?" with loud warnings and the keys on screen. Enter is Cancel (the focused
    button). ``y`` commits the whole queue; ``d`` (when some entries are stale or checked out) leaves those
    out and commits the rest; ``o`` allows deleting checked-out branches. Returns None to cancel."""

    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel"),
        Binding("y", "commit_all", "Commit"),
        Binding("d", "commit_rest", "Commit the rest"),
        Binding("o", "allow_checked_out", "Allow checked-out"),
    ]

    def __init__(self, plan: CommitPlan) -> None:
        super().__init__(classes="dialog")
        self.plan = plan
        self.allow = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box", classes="-warn" if self._loud() else ""):
            title = "Commit edits" if self.plan.mixed else "Commit deletions"
            yield Static(Text(title, "bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(plan_text(self.plan), id="commit-plan")
            if self.plan.checked_out:
                yield Checkbox(
                    Text("o  allow deleting checked-out branches (as git update-ref -d does)"),
                    id="allow-checked-out",
                )
            with Horizontal(id="dialog-buttons"):
                yield Button(self._all_label(), variant="error", id="yes")
                yield Button("", variant="warning", id="rest")
                yield Button(Text("n  Cancel"), variant="primary", id="no")
            yield Static(id="dialog-keys")

    def _loud(self) -> bool:
        return bool(warnings(self.plan))

    def _all_label(self) -> Text:
        return Text(f"y  {self._verb().title()} {self.plan.count:,}")

    def _verb(self) -> str:
        return "commit" if self.plan.mixed else "delete"

    def _rest(self) -> tuple[frozenset[bytes], int]:
        """The entries ``d`` leaves out and how many it deletes (0: nothing to leave out, or nothing left)."""
        left = self.plan.left_out(self.allow)
        rest = self.plan.count - len(left)
        return left, (rest if left else 0)

    def _sync(self) -> None:
        """Labels, the key line and the warnings as the override stands."""
        left, rest = self._rest()
        button = self.query_one("#rest", Button)
        button.display = bool(rest)
        verb = self._verb()
        keys = [f"y {verb} all {self.plan.count:,}"]
        if rest:
            button.label = Text(f"d  {verb.title()} the other {rest:,}")
            stale = set(self.plan.stale)
            parts = [f"{len(stale):,} stale"] if stale else []
            if len(left) > len(stale):
                parts.append(f"{len(left) - len(stale):,} checked out")
            keys.append(f"d leave out {' and '.join(parts)}, {verb} {rest:,}")
        if self.plan.checked_out:
            keys.append(f"o allow checked-out branches: {'on' if self.allow else 'off'}")
        keys.append("n, Enter or Esc cancel")
        self.query_one("#dialog-keys", Static).update(Text("  ·  ".join(keys), "dim"))
        self.query_one("#commit-plan", Static).update(plan_text(self.plan, self.allow))

    def on_mount(self) -> None:
        self._sync()
        self.query_one("#no", Button).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_commit_all(self) -> None:
        self.dismiss(CommitChoice(frozenset(), self.allow))

    def action_commit_rest(self) -> None:
        left, rest = self._rest()
        if rest:
            self.dismiss(CommitChoice(left, self.allow))

    def action_allow_checked_out(self) -> None:
        if self.plan.checked_out:
            box = self.query_one("#allow-checked-out", Checkbox)
            box.value = not box.value  # (its Changed message syncs the rest)

    @on(Checkbox.Changed, "#allow-checked-out")
    def _allow_changed(self, event: Checkbox.Changed) -> None:
        self.allow = event.value
        self._sync()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "yes":
            self.action_commit_all()
        elif event.button.id == "rest":
            self.action_commit_rest()
        else:
            self.action_cancel()


class Confirm(ModalScreen[bool]):
    """A plain yes/no question."""

    BINDINGS = [Binding("escape,n", "dismiss(False)", "No"), Binding("y", "dismiss(True)", "Yes")]

    def __init__(self, title: str, question: Text | str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.question = question if isinstance(question, Text) else Text(question)
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(self.question, id="dialog-question")
            with Horizontal(id="dialog-buttons"):
                yield Button(Text(self.yes), variant="warning", id="yes")
                yield Button(Text(self.no), variant="primary", id="no")

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


class ConfirmQuit(Confirm):
    """ "Quit with N refs queued?" (default No: Enter is the focused No). ``q`` again does nothing here:
    a second ``q`` must not turn into an answer."""

    BINDINGS = [Binding("q", "noop", show=False)]

    def action_noop(self) -> None:
        """Swallow the key."""


class PathPrompt(ModalScreen[object]):
    """A path asked for on one line (an Input, prefilled), for exporting or loading the queue.

    Enter runs ``job(path)`` in a thread worker (disk I/O stays off the UI thread) and dismisses with its
    result; an error is shown in place, as one line under the input, and the dialog stays for another try.
    Escape cancels (None)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, prompt: str, default: str, job) -> None:
        super().__init__(classes="dialog")
        self.title_text = title
        self.prompt = prompt
        self.default = default
        self.job = job

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-box"):
            yield Static(Text(self.title_text, "bold"), id="dialog-title")
            yield Static(Text(self.prompt), id="dialog-question")
            yield FilterInput(value=self.default, id="path")  # (its editing keys apply in order)
            yield Static("", id="prompt-error")
            yield Static(Text("Enter  ok  ·  Esc  cancel", "dim"), id="dialog-keys")

    def on_mount(self) -> None:
        self.set_focus(self.query_one("#path", Input))  # (at once: ``focus`` queues it behind the keys)
        self.app.call_next(self.app.release_keys)  # the keys typed behind the one that opened it, if held

    def action_cancel(self) -> None:
        self.dismiss(None)

    EMPTY = "no path given"

    @on(Input.Submitted, "#path")
    def _submitted(self, event: Input.Submitted) -> None:
        path = event.value.strip()
        if not path:
            self.query_one("#prompt-error", Static).update(Text(self.EMPTY, "bold red"))
            return
        self.query_one("#prompt-error", Static).update(Text("…", "dim"))
        self.attempt(path)

    @work(thread=True, exclusive=True, group="path-prompt", description="queue file")
    def attempt(self, path: str) -> None:
        result = self.job(path)
        self.app.call_from_thread(self.dismiss, result)

    def show_failure(self, failure: Failure) -> None:
        """The job's error, in place (``..workers``): one line, escaped; the dialog stays."""
        self.query_one("#prompt-error", Static).update(Text(failure.line, "bold red"))


class EditPrompt(PathPrompt):
    """A new name or a target revision asked for on one line (``n``, ``t``, ``R``, ``M``): Enter runs
    ``job(text)`` off the UI thread -- the checks of ``models.edits`` against the snapshot, git's rules
    and the object database -- and dismisses with the entry to queue; a refusal stays in the dialog as one
    line, and nothing is queued. Escape cancels (None)."""

    EMPTY = "nothing given"
