"""Queueing edits from the main screen: a new branch or tag at the ref under the cursor, a rename, a move,
and undoing a queued entry.

Each key opens an ``EditPrompt`` for the new name or the target revision; the answer is checked off the UI
thread (``models.edits``: git's ref-name rules, the snapshot, the resolver, the object database) and
refused in the dialog, one line, or queued beside the deletions (``widgets.queue``). Nothing is written
until the queue is committed (``.commit``), as one transaction.
"""

from __future__ import annotations

from refscope.backend.display import escape_name, line
from textual.actions import SkipAction
from textual.widgets import Input

from ..models import edits
from ..widgets.headline import HeadLine
from ..widgets.queue import CREATE, MOVE, RENAME, Entry, QueuePanel, entry_text
from .dialogs import EditPrompt
from .listing import RefListing


def rename_available() -> bool:
    """The backend's ``Rename`` record is there (it executes renames in the native engines)."""
    from refscope.backend.update import commands

    return hasattr(commands, "Rename")


class Editing(RefListing):
    """The main screen's part that queues creates, moves and renames, and undoes entries."""

    def _edit_target(self, verb: str):
        """The ref under the cursor for ``verb`` (HEAD's line: HEAD itself, for a create only), or None
        with a notice."""
        if isinstance(self.focused, Input):
            raise SkipAction()  # (a priority binding: the letter is typed into the filter)
        if self._commit_locked():
            return None
        if self.app.snapshot is None or self.app.store is None:
            self.notify("no store to edit", severity="error", timeout=3)
            return None
        if isinstance(self.focused, HeadLine):
            if verb != "create":
                self.notify(f"HEAD is not a ref to {verb}: pick a branch in the list", severity="warning")
                return None
            ref = self.app.snapshot.head()
        else:
            ref = self.ref_list.current_ref()
        if ref is None:
            self.notify("no ref under the cursor", severity="warning", timeout=2)
        return ref

    def _queue_answer(self, entry) -> None:
        """The dialog's checked answer, queued (unless a commit started meanwhile, or another entry now
        touches the same ref)."""
        app = self.app
        if entry is None:
            return
        if app.commit_running:
            self.notify("a commit is running: nothing queued", severity="warning", timeout=3)
            return
        why = app.queue.add_edit(entry)
        if why is not None:
            self.notify(why, severity="warning", timeout=4, markup=False)
            return
        self.ref_list.refresh_name(entry.name)
        self.query_one(QueuePanel).sync()
        self.notify(line("queued: ", entry_text(entry)), timeout=3, markup=False)

    def _create(self, namespace: bytes, what: str) -> None:
        ref = self._edit_target("create")
        if ref is None:
            return
        app = self.app
        snapshot, queue, repo = app.snapshot, app.queue, app.repo
        oid = edits.value_of(snapshot, ref)
        if oid is None:
            self.notify(line(ref.name, " resolves to no object"), severity="warning", markup=False)
            return

        def job(text: str) -> Entry:
            name = edits.full_name(text, namespace)
            edits.check_new_name(snapshot, queue, name)
            return Entry(name, None, kind=CREATE, new=edits.branch_point(repo, oid, name))

        short = "refs/heads/" if namespace == edits.BRANCHES else "refs/tags/"
        prompt = line(
            f"Name of the new {what} at ", ref.name, " (", oid[:8], f"); a short name goes under {short}:"
        )
        app.push_holding(EditPrompt(f"New {what}", prompt, "", job), callback=self._queue_answer)

    def action_new_branch(self) -> None:
        """``n``: queue a new branch at the ref under the cursor (a tag's commit, as git branch peels)."""
        self._create(edits.BRANCHES, "branch")

    def action_new_tag(self) -> None:
        """``t``: queue a new lightweight tag at the ref under the cursor (its object as it is)."""
        self._create(edits.TAGS, "tag")

    def _free(self, ref, verb: str) -> bool:
        """A rename or move needs a ref holding an oid that no entry touches yet."""
        if ref.target is not None:
            self.notify(
                line(ref.name, " is a symbolic ref (→ ", ref.target, f"): {verb} the ref it points at"),
                severity="warning",
                markup=False,
            )
            return False
        other = self.app.queue.claimed(ref.name)
        if other is not None:
            self.notify(
                line(ref.name, f" is queued already ({other.kind}): u undoes that entry"),
                severity="warning",
                markup=False,
            )
            return False
        return True

    def action_rename(self) -> None:
        """``R``: queue a rename of the ref under the cursor (git branch -m: its reflog goes with it)."""
        ref = self._edit_target("rename")
        if ref is None or not self._free(ref, "rename"):
            return
        if not rename_available():
            self.notify("rename: this build's backend has no Rename yet", severity="error", timeout=4)
            return
        app = self.app
        snapshot, queue = app.snapshot, app.queue
        old = ref.name

        def job(text: str) -> Entry:
            name = edits.full_name(text, edits.namespace_of(old))
            edits.check_new_name(snapshot, queue, name, renaming=old)
            return Entry(old, ref, kind=RENAME, new_name=name)

        prompt = line("Rename ", old, " (", (ref.oid or b"")[:8], ") to (its reflog goes with it):")
        app.push_holding(EditPrompt("Rename", prompt, escape_name(old), job), callback=self._queue_answer)

    def action_move(self) -> None:
        """``M``: queue a move of the ref under the cursor to another commit (its old value recorded: the
        commit refuses it if the ref moved meanwhile)."""
        ref = self._edit_target("move")
        if ref is None or not self._free(ref, "move"):
            return
        app = self.app
        snapshot, repo, store = app.snapshot, app.repo, app.store

        def job(text: str) -> Entry:
            from refscope.backend.update.txn import UpdateTransaction

            txn = UpdateTransaction(store, snapshot=snapshot)
            new = edits.branch_point(repo, edits.resolve_revision(txn, text), ref.name)
            if new == ref.oid:
                raise edits.refuse(line(ref.name, " is at ", new[:8], " already"))
            return Entry(ref.name, ref, kind=MOVE, new=new)

        prompt = line(
            "Move ", ref.name, " (now at ", (ref.oid or b"")[:8], ") to: a ref name or a full object name"
        )
        app.push_holding(EditPrompt("Move", prompt, "", job), callback=self._queue_answer)

    def action_undo(self) -> None:
        """``u``: take back the entry of the ref under the cursor (in the queue panel: the entry under its
        cursor), else the entry queued last."""
        if self._commit_locked():
            return
        queue = self.app.queue
        if not queue:
            self.notify("the queue is empty: nothing to undo", severity="warning", timeout=2)
            return
        entry = None
        panel = self.query_one(QueuePanel)
        if self.focused is panel:
            names = queue.names()
            if 0 <= panel.cursor < len(names):
                entry = queue[names[panel.cursor]]
        elif not isinstance(self.focused, HeadLine):
            name = self.ref_list.current_name()
            entry = queue.claimed(name) if name is not None else None
        if entry is None:
            entry = queue.last()
        queue.remove(entry.name)
        self.ref_list.refresh_rows()
        panel.sync()
        self.notify(line("undone: ", entry_text(entry)), timeout=3, markup=False)
