"""The queue's transaction from the main screen: the plan and its confirmation, the commit, the bench.

A queue of deletions only commits as it always has (``backend.txn.Transaction``: chunked, its phases on
the bar); a queue that also holds creates, moves or renames commits as one
``backend.update.txn.UpdateTransaction`` of ``update.commands`` records (``models.edits``), with the same
confirmation, progress, staleness re-check and report.

One commit runs at a time: while it runs, what would change it (commit, bench, marking, the engine) is
disabled (``COMMIT_LOCKED``), a progress bar follows its phases (``CommitProgress``), and the queue waits for
its result before judging staleness (the snapshots seen meanwhile show the commit's own intermediate
states). What the confirmation warns of is the backend's to say (``effects.checked_out_among``,
``effects.dangling_symrefs``); a check that cannot be made fails the plan rather than drop its warning.
"""

from __future__ import annotations

from refscope.backend.errors import RefscopeError
from rich.text import Text
from textual.widgets import ProgressBar

from ..messages import CommitProgress
from ..widgets.queue import QueuePanel
from ..widgets.text_line import TextLine
from ..workers import failure_line, work
from .dialogs import CommitPlan, ConfirmCommit
from .dialogs import Message as MessageDialog
from .listing import RefListing
from .operations import BenchScreen, OperationScreen

BENCH_RUNS = 3
PRECHECK_MIN = 1 << 20  # packed-refs from this size are checked while the commit dialog is open
QUEUE_CHUNK = 10_000  # deletions handed to the transaction at a time (progress between chunks)
# the commit's steps as the progress bar counts them: its phases before the lock are one step
COMMIT_STEPS = {"queue": 0, "check packed-refs": 1, "read": 1, "commit": 2, "refresh": 3}
COMMIT_TOTAL = 4
# bindings that would change a running commit (its queue, its engine) or start another one
COMMIT_LOCKED = frozenset(
    {
        "commit",
        "bench",
        "toggle_mark",
        "mark_all",
        "unmark_all",
        "load_queue",
        "new_branch",
        "new_tag",
        "rename",
        "move",
        "undo",
    }
)
MESSAGE = b"refscope: queue committed from the TUI"  # the reflog message of a mixed queue's transaction


class QueueTransaction(RefListing):
    """The main screen's part that commits (or benches) the queue."""

    def __init__(self) -> None:
        super().__init__()
        self._committing = 0  # deletions in the running commit (the queue may hold more: left out)
        self._committing_edits = False  # the running commit is a mixed queue's (worded as edits)

    def commit_plan(self, entries=None) -> CommitPlan:
        """What the confirmation warns about for ``entries`` (the queue by default). Reads the worktrees and
        walks the snapshot's symrefs (``effects.dangling_symrefs``): called off the UI thread (``make_plan``)."""
        from refscope.backend.effects import checked_out_among, dangling_symrefs

        from ..widgets.queue import DELETE, KINDS, entry_text

        app = self.app
        snapshot = app.snapshot
        if entries is None:
            entries = list(app.queue.values())
        counts = dict.fromkeys(KINDS, 0)
        for e in entries:
            counts[e.kind] += 1
        mixed = counts[DELETE] != len(entries)
        edits = [entry_text(e) for e in entries if e.kind != DELETE] if mixed else []
        renamed = [e.name for e in entries if e.kind == "rename"]
        stale = [e.name for e in entries if e.stale]
        entries = [e for e in entries if e.kind == DELETE] if mixed else entries  # (what deletions warn of)
        queued = {e.name for e in entries}
        # A check that cannot be made fails the plan (shown by the worker, no dialog): a dialog that
        # silently lacked the checked-out or dangling warnings would be worse than none.
        head_branch = None
        head = snapshot.head() if snapshot is not None else None
        if head is not None and head.target is not None and head.target in queued:
            head_branch = head.target
        checked_out = checked_out_among(app.repo, queued) if app.repo is not None else []
        gone = queued.union(renamed)  # a symref pointing at a renamed ref dangles as well
        dangling = dangling_symrefs(snapshot, gone) if snapshot is not None else []
        return CommitPlan(
            count=sum(counts.values()),
            engine=app.engine,
            stale=stale,
            checked_out=checked_out,
            head_branch=head_branch,
            symrefs=[(e.name, e.seen.target) for e in entries if e.seen.target is not None],
            tags=[e.name for e in entries if e.name.startswith(b"refs/tags/")],
            # HEAD's own dangling is the warning about HEAD's branch
            dangling=[(s, t) for s, t in dangling if s != b"HEAD"],
            stash=b"refs/stash" in queued,
            notes=[e.name for e in entries if e.name.startswith(b"refs/notes/")],
            head_itself=b"HEAD" in queued,
            format=snapshot.format if snapshot is not None else "files",
            kinds={k: n for k, n in counts.items() if n} if mixed else {},
            edits=edits,
        )

    @work(thread=True, exclusive=True, group="commit-plan", description="check the queue")
    def make_plan(self, entries) -> CommitPlan:
        return self.commit_plan(entries)

    @work(exclusive=True, group="commit-dialog", description="commit dialog")
    async def action_commit(self) -> None:
        app = self.app
        if self._commit_locked():
            return
        if not app.queue:
            self.notify("the queue is empty: space marks a ref", severity="warning", timeout=3)
            return
        if app.store is None:
            self.notify("no store to commit to", severity="error")
            return
        snap = app.snapshot
        packed = snap.packed if snap is not None and snap.format == "files" else None
        if app.engine == "native" and packed is not None and packed.size >= PRECHECK_MIN:
            self.precheck(packed)
        plan = await self.make_plan(list(app.queue.values())).wait()
        if plan is None:  # (its failure is shown)
            return
        choice = await app.push_screen_wait(ConfirmCommit(plan))
        if choice is None:
            return
        if self._commit_locked():  # (another dialog's commit started first)
            return
        entries = [e for e in app.queue.values() if e.name not in choice.left_out]
        if not entries:
            self.notify("nothing left to commit", severity="warning", timeout=3)
            return
        app.begin_commit()
        self._committing = len(entries)
        self._committing_edits = any(e.kind != "delete" for e in entries)
        self._commit_progress("queue", 0)
        if self._committing_edits:
            self.commit_edits(entries, app.engine, app.snapshot, choice.allow_checked_out)
        else:
            self.commit(entries, app.engine, app.snapshot, choice.allow_checked_out)

    @work(thread=True, exclusive=True, group="precheck", description="check packed-refs")
    def precheck(self, packed) -> None:
        """Check the packed-refs a native commit rewrites while the user reads the confirmation: ~0.65 s for
        a million records here, which the commit then finds done (a file that changed meanwhile it checks
        itself). A damaged file is left for the commit to refuse, with its message."""
        app = self.app
        try:
            with app.meter.measure("check packed-refs") as m:
                packed.validate()
        except RefscopeError:
            return
        app.call_from_thread(app.record_op, m.report)

    @work(thread=True, exclusive=True, group="commit", description="commit")
    def commit(self, entries, engine: str, snapshot, allow_checked_out: bool = False) -> None:
        """The queue (or the part of it the user chose) as one transaction. Started by ``action_commit``
        with the queue held; whatever happens, the result (or the refusal, or the failure) arrives on the UI
        thread, which ends the hold. Meanwhile the watcher does not rescan the transaction's own locks
        (``own_transaction``). Checked-out branches are deleted only when the user allowed it."""
        from refscope.backend.txn import Transaction

        app = self.app
        with app.own_transaction() as adopt:
            txn = Transaction(
                app.store,
                engine=engine,
                no_deref=True,
                allow_checked_out=allow_checked_out,
                snapshot=snapshot,
            )
            n = len(entries)
            for start in range(0, n, QUEUE_CHUNK):  # (200k names take seconds to check: show them going)
                chunk = entries[start : start + QUEUE_CHUNK]
                txn.delete_many([(entry.name, entry.old_oid) for entry in chunk])
                self.post_message(CommitProgress("queue", (start + len(chunk)) / n))
            result = txn.commit(on_phase=lambda phase: self.post_message(CommitProgress(phase, 0)))
            fresh = self._refresh_after(adopt)
        app.call_from_thread(self._committed, result, fresh)

    def _refresh_after(self, adopt):
        """The snapshot after a commit, adopted as the transaction's own (None when it cannot be read:
        committed all the same -- the result says so, the status line says why)."""
        app = self.app
        self.post_message(CommitProgress("refresh", 0))
        try:
            fresh = app.store.refresh(app.snapshot)
        except RefscopeError as err:
            fresh = None
            app.call_from_thread(self._store_failed, failure_line(err))
        adopt(fresh)
        return fresh

    @work(thread=True, exclusive=True, group="commit", description="commit")
    def commit_edits(self, entries, engine: str, snapshot, allow_checked_out: bool = False) -> None:
        """A mixed queue as one ``UpdateTransaction``: every entry with the value it was seen at (a create:
        the name must be absent), so that under the locks a ref that moved, vanished or appeared refuses
        the whole transaction, nothing written. The rest as ``commit`` does."""
        from refscope.backend.update.txn import UpdateTransaction

        from ..models.edits import commands

        app = self.app
        with app.own_transaction() as adopt:
            txn = UpdateTransaction(
                app.store,
                engine=engine,
                message=MESSAGE,
                allow_checked_out=allow_checked_out,
                snapshot=snapshot,
            )
            txn.queue(commands(entries, txn.zero))  # (the new objects checked, checked-out branches kept)
            self.post_message(CommitProgress("queue", 1))
            self.post_message(CommitProgress("commit", 0))
            result = txn.commit()
            fresh = self._refresh_after(adopt)
        app.call_from_thread(self._committed_edits, result, fresh, [e.name for e in entries])

    def on_commit_progress(self, message: CommitProgress) -> None:
        if self.app.commit_running:
            self._commit_progress(message.phase, message.done)

    def _commit_progress(self, phase: str, done: float) -> None:
        bar = self.query_one("#commit-bar")
        bar.display = True
        step = COMMIT_STEPS.get(phase, 0)
        self.query_one("#commit-progress", ProgressBar).update(progress=step + done)
        n = self._committing
        what = "edit" if self._committing_edits else "deletion"
        self.query_one("#commit-phase", TextLine).set_text(
            Text(f"committing {n:,} {what}{'s' if n != 1 else ''} ({self.app.engine}): {phase}…")
        )

    def _commit_ended(self, snapshot=None) -> None:
        """The commit's result (or refusal, or failure) is in: release the queue and judge it against the
        newest snapshot (``snapshot``, read once the commit returned, when it is new)."""
        app = self.app
        app.end_commit()
        self.query_one("#commit-bar").display = False
        if snapshot is not None and snapshot is not app.snapshot:
            app.set_snapshot(snapshot, "commit")  # (which rechecks the queue)
        elif app.snapshot is not None:
            try:
                app.queue.recheck(app.snapshot)
            except RefscopeError as err:
                app.store_error = failure_line(err)
        self.query_one(QueuePanel).sync()
        self.ref_list.refresh_rows()
        self.update_status()

    def _commit_refused(self, err: Exception) -> None:
        """A refusal (a typed error before anything was written): its line, and the queue as it was."""
        self._commit_ended()
        body = Text()
        body.append(failure_line(err), "bold")
        body.append(f"\n\nNothing was changed. The queue is kept ({len(self.app.queue):,} entries).", "dim")
        self.app.push_screen(MessageDialog("commit refused", body, error=True))

    def _commit_failed(self, line: str) -> None:
        """A commit that raised something other than a refusal (a full disk, a bug): what happened, and
        the disk re-read, so that the list and the queue show what the commit did or did not do."""
        self._commit_ended()
        body = Text()
        body.append(line, "bold")
        body.append(
            "\n\nThe commit did not finish. The list and the queue are re-read from the disk "
            f"({len(self.app.queue):,} entries queued).",
            "dim",
        )
        self.app.push_screen(MessageDialog("commit failed", body, error=True))
        self.action_refresh()

    def _committed(self, result, snapshot) -> None:
        app = self.app
        report = app.meter.adopt(result.report)
        app.record_op(report)
        if result.committed:
            app.queue.discard_many(result.deleted)
        self._commit_ended(snapshot)
        header = Text(
            f"{'committed' if result.committed else 'not committed'}: {len(result.deleted):,} ref(s) deleted "
            f"with the {result.engine} engine\n",
            "bold green" if result.committed else "bold red",
        )
        phases = [app.meter.adopt(p) for p in result.phases]
        app.push_screen(OperationScreen(report, title="commit result", header=header, phases=phases))

    def _committed_edits(self, result, snapshot, names: list[bytes]) -> None:
        """A mixed queue's result: all of it was committed (one transaction), its entries leave the queue."""
        from .dialogs import kinds_text

        app = self.app
        report = app.meter.adopt(result.report)
        app.record_op(report)
        from ..widgets.queue import KINDS

        counted = dict.fromkeys(KINDS, 0)
        for name in names:
            entry = app.queue.get(name)
            if entry is not None:
                counted[entry.kind] += 1
        counted = {k: n for k, n in counted.items() if n}
        if result.committed:
            app.queue.discard_many(names)
        self._commit_ended(snapshot)
        n = len(result.updates)
        header = Text(
            f"{'committed' if result.committed else 'not committed'}: {kinds_text(counted)} "
            f"({n:,} ref update{'s' if n != 1 else ''}) with the {result.engine} engine\n",
            "bold green" if result.committed else "bold red",
        )
        phases = [app.meter.adopt(p) for p in result.phases]
        app.push_screen(OperationScreen(report, title="commit result", header=header, phases=phases))

    def action_bench(self) -> None:
        app = self.app
        if self._commit_locked():
            return
        if not app.queue:
            self.notify(
                "the queue is empty: bench runs the queued transaction", severity="warning", timeout=3
            )
            return
        if app.repo is None:
            self.notify("no repository to bench", severity="error")
            return
        if app.queue.edits():
            self.notify("bench: running the mixed transaction through both engines on scratch copies…")
            self.bench_edits(list(app.queue.values()))
            return
        self.notify("bench: running both engines on scratch copies…", timeout=3)
        self.bench([(e.name, e.old_oid) for e in app.queue.values() if e.seen.target is None])

    @work(thread=True, exclusive=True, group="bench", description="bench")
    def bench(self, deletions: list[tuple[bytes, bytes | None]]) -> None:
        """``refscope bench`` for the queue: never touches the repository (scratch copies only)."""
        from refscope.backend import bench
        from refscope.backend.engines.git import git_binary

        app = self.app
        result = bench.run_bench(app.repo, deletions, [git_binary()], runs=BENCH_RUNS, count_refs=False)
        body = Text(bench.format_table(result), no_wrap=True)
        app.call_from_thread(app.push_screen, BenchScreen(body))

    @work(thread=True, exclusive=True, group="bench", description="bench")
    def bench_edits(self, entries) -> None:
        """A mixed queue's ``refscope bench`` (``bench.run_update_bench``): the same records the commit
        would queue, on scratch copies; an engine that refuses them (git: a rename) says so in its row."""
        from refscope.backend import bench
        from refscope.backend.engines.git import git_binary
        from refscope.backend.model import HASH_HEXSZ

        from ..models.edits import commands

        app = self.app
        zero = b"0" * HASH_HEXSZ[app.repo.hash_name]
        result = bench.run_update_bench(
            app.repo,
            commands(entries, zero),
            [git_binary()],
            runs=BENCH_RUNS,
            count_refs=False,
            message=MESSAGE,
        )
        body = Text(bench.format_table(result), no_wrap=True)
        app.call_from_thread(app.push_screen, BenchScreen(body))
