"""The TUI's tips read in child processes (``tip_child``), seen from the parent: which children run,
what each is given, and how their answers are taken into the table -- a part of ``tips_view.TipFacts``
(its base), kept apart as the one place that knows the children.

A table of a million rows' tips is read in other processes so that this one keeps its GIL for the UI
and for the sort the user waits for. Without a commit-graph the date sort waits for the children's
dates, so the children started early (``prestart``) get the ids as ``row_slots`` finds them
(``_stream_start``): their dates are ready soon after the last id, not a whole read after it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from itertools import compress

from .tip_table import READ, UNKNOWN

CHILD_MIN = 8192  # tips to read below which a child process (``tip_child``) costs more than it saves
CHILDREN_MAX = 2  # child processes reading at once (no more than the cores)
TAKE_CHUNK = 8192  # a child's tips taken into the table under the lock at once


class ChildReads:
    """``TipFacts``'s child-process reads (its state is ``TipFacts``'s)."""

    def read_in_child(
        self,
        slots,
        cancelled: Callable[[], bool] = lambda: False,
        dates: bool = False,
        background: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> bool:
        """Have a child process (``tip_child``) read the tips of ``slots`` not read yet, and wait for it:
        one child at a time, whoever asks while it runs waits for it (then asks for what is still
        missing). False when cancelled (the child goes on for the others). A child that fails leaves its
        slots unread, says why in ``child_failed`` and no other is started: the caller reads them here.
        ``dates``: what the date order needs is enough (the commits' times: the children send them first).
        ``background``: the scan, which nobody waits for: taking the columns stands aside while a job
        inside ``first`` runs (a sort ranking the dates). ``progress``: called now and then meanwhile
        with how many tips the children have read."""
        state = self.table.state
        todo = list(slots)
        while True:
            todo = [s for s in todo if (state[s] == UNKNOWN if dates else state[s] != READ)]
            if len(todo) < CHILD_MIN or self.child_failed is not None:
                return True
            with self._child_lock:
                job = self._child
                if job is None:
                    job = self._child = _ChildRead()
                    threading.Thread(
                        target=self._child_read, args=(job, todo), name="tip-child", daemon=True
                    ).start()
            event = job.dated if dates else job.done
            if not dates and not background:
                job.wanted += 1  # (the columns are awaited: taking them no longer stands aside)
            while not event.wait(0.02):
                if cancelled():
                    return False
                if progress is not None:
                    progress(sum(child.progress for child in job.children))
            if dates:
                return True  # (the tips that are not commits are read by the caller: a few, or it waits)

    def _child_read(self, job: _ChildRead, slots: list[int]) -> None:
        """(its own thread) Start the child, wait for it without the GIL, take its columns into the
        table a chunk at a time under the lock (the visible rows' reads wait one chunk at most)."""
        from ..parallel import cores
        from .tip_child import Child

        try:
            table = self.table
            state = table.state
            # one child per core, each a contiguous share: all of them read while this process only waits
            n = max(1, min(cores(), CHILDREN_MAX, len(slots) // CHILD_MIN))
            cuts = [len(slots) * k // n for k in range(n + 1)]
            spare, self._spare = self._spare, []
            for child in spare[n:]:
                child.abandon()
            job.children = spare[:n]
            job.children += [
                Child(self.objects_dir, self.repo.hash_name, None) for _ in range(n - len(spare))
            ]
            # each share's slots with no date yet first: the children date only those (the commits
            # the commit-graph holds have theirs)
            shares = []
            for a, b in zip(cuts, cuts[1:], strict=False):
                undated = [s for s in slots[a:b] if state[s] == UNKNOWN]
                shares.append((undated + [s for s in slots[a:b] if state[s] != UNKNOWN], len(undated)))
            for child, (share, dated) in zip(job.children, shares, strict=False):
                child.give([table.oids[s] for s in share], dated)
                self.child_dated += dated
            for child in job.children:
                child.send()
            self._take_answers(job, [share for share, _ in shares])
        except Exception as err:  # (never a waiter left waiting: the failure is said, the caller reads)
            self.child_failed = f"tip reader failed: {type(err).__name__}: {err}"
        finally:
            self._child_over(job)

    def _take_answers(self, job: _ChildRead, shares: list[list[int]]) -> None:
        """(the children's thread) Wait for each child's answers without the GIL and take them into
        the table a chunk at a time under the lock (the visible rows' reads wait one chunk at most):
        first every commit's date (what a date sort waits for), then the whole tips."""
        from .tip_child import Failed

        table = self.table
        for child, share in zip(job.children, shares, strict=True):
            got = child.dates()
            if isinstance(got, Failed):
                return self._children_failed(job, got)
            for lo in range(0, child.dated, TAKE_CHUNK):
                hi = min(lo + TAKE_CHUNK, child.dated)
                commits = got.is_commit[lo:hi]
                with self.lock:
                    table.graphed_many(compress(share[lo:hi], commits), compress(got.times[lo:hi], commits))
                time.sleep(0)
        job.dated.set()
        for child, share in zip(job.children, shares, strict=True):
            got = child.result()
            if isinstance(got, Failed):
                return self._children_failed(job, got)
            self.child_read += len(share)
            for lo in range(0, len(share), TAKE_CHUNK):
                while self.urgent() and not job.wanted:  # (a sort on the dates runs: its turn first)
                    time.sleep(0.01)
                with self.lock:
                    table.take(got, share, lo, min(lo + TAKE_CHUNK, len(share)))
                time.sleep(0)

    def _child_over(self, job: _ChildRead) -> None:
        with self._child_lock:
            if self._child is job:
                self._child = None
        job.dated.set()
        job.done.set()

    # -- streaming: the children get the ids as row_slots finds them -------------------------------------
    def _stream_start(self) -> _ChildRead | None:
        """The started children (``prestart``) as a job fed by ``row_slots`` while it finds the ids,
        when no commit-graph dates the commits here: a date sort waits for the children's dates, which
        are then ready soon after the last id rather than a whole read later. None: not so."""
        with self._walk_lock:
            if self.graph().cg is not None:
                return None
        with self._child_lock:
            if not self._spare or self._child is not None or self.child_failed is not None:
                return None
            job = self._child = _ChildRead()
            job.children, self._spare = self._spare, []
        job.shares = [[] for _ in job.children]
        job.feeds = [queue.SimpleQueue() for _ in job.children]
        for child, feed in zip(job.children, job.feeds, strict=True):  # (a write blocks while its
            threading.Thread(target=_feed, args=(child, feed), name="tip-feed", daemon=True).start()
        return job  # child dates a block: one writer each, so finding the ids never waits for it)

    def _stream(self, job: _ChildRead, lo: int, hi: int) -> None:
        """Slots ``lo..hi-1`` (new in the table) to the next child."""
        k = job.turn % len(job.children)
        job.turn += 1
        job.shares[k].extend(range(lo, hi))
        job.feeds[k].put(self.table.oids[lo:hi])
        self.child_dated += hi - lo

    def _stream_end(self, job: _ChildRead, cancelled: bool) -> None:
        """No more ids: the answers are awaited in a thread of their own (or the children go)."""
        for feed in job.feeds:
            feed.put(None)
        if cancelled:
            for child in job.children:
                child.abandon()
            self._child_over(job)
            return

        def answers() -> None:
            try:
                self._take_answers(job, job.shares)
            except Exception as err:  # (as ``_child_read``)
                self.child_failed = f"tip reader failed: {type(err).__name__}: {err}"
            finally:
                self._child_over(job)

        threading.Thread(target=answers, name="tip-child", daemon=True).start()

    def _children_failed(self, job: _ChildRead, failed) -> None:
        self.child_failed = failed.line
        for other in job.children:
            other.abandon()

    def prestart(self, rows: int) -> None:
        """Start the children that will read the tips of ``rows`` rows (when there may be enough of
        them) before their ids are known: the interpreters start up meanwhile, on the other core."""
        from ..parallel import cores
        from .tip_child import Child

        with self._child_lock:
            if rows < CHILD_MIN or self._spare or self._child is not None or self.child_failed:
                return
            n = max(1, min(cores(), CHILDREN_MAX, rows // CHILD_MIN))
            self._spare = [Child(self.objects_dir, self.repo.hash_name, None) for _ in range(n)]

    def drop_spares(self) -> None:
        """Kill the children started by ``prestart`` and not given work."""
        with self._child_lock:
            spare, self._spare = self._spare, []
        for child in spare:
            child.abandon()

    def close(self) -> None:
        """Kill the child still reading, if any (the app is leaving), and those not given work yet."""
        self.drop_spares()
        job = self._child
        if job is not None:
            for child in job.children:
                child.abandon()


def _feed(child, feed: queue.SimpleQueue) -> None:
    """(a thread of its own) Write the ids put in ``feed`` to ``child`` until None comes."""
    alive = True
    while (oids := feed.get()) is not None:
        alive = alive and child.stream(oids)  # (a child gone: its answer says how it ended)
    child.end()


class _ChildRead:
    """One child's read of many slots (``TipFacts.read_in_child``): ``done`` once its columns are in
    the table or it failed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.dated = threading.Event()  # every commit's committer time is in the table (``graphed``)
        self.wanted = 0  # waiters for the whole columns (the scan, a filter): the take does not pause
        self.children: list = []  # (``tip_child.Child``)
        self.shares: list[list[int]] = []  # a streamed job's slots, per child, in the order sent
        self.feeds: list[queue.SimpleQueue] = []
        self.turn = 0  # the child the next block of a stream goes to
