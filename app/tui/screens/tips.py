"""The tip columns' side of the main screen: the repository's objects (``TipFacts``), the tips of the rows
on screen, and the background scan that reads every row's tip once a snapshot is counted.

The scan stands aside while the list's own work runs (``TipFacts.first``) and says how far it is on the
count line; the listing (``RefListing``) decides what the list shows and draws that line.
"""

from __future__ import annotations

import time

from textual.screen import Screen
from textual.worker import get_current_worker

from ..widgets.ref_list import RefList
from ..workers import work

TIPS_CHUNK = 8192  # tips of the background scan between two progress reports
PROGRESS_SECONDS = 0.2  # the least time between two of them


class TipColumns(Screen):
    """What the main screen knows of each ref's tip object, read off the UI thread."""

    def __init__(self) -> None:
        super().__init__()
        self._facts = False  # backend tips_view.TipFacts once opened; None: no object database
        self.tips_scanned: tuple[int, int] | None = None  # (done, total) of the background tip scan
        self._child_noted = False  # the tip reader's failure was said
        self._reported = 0.0  # when the scan's progress was last said

    @property
    def facts(self):
        """The repository's object side (``backend.refformat.tips_view``), None without a repository."""
        if self._facts is False:
            repo = self.app.repo
            if repo is None:
                self._facts = None
            else:
                from refscope.backend.refformat.tips_view import TipFacts

                self._facts = TipFacts(repo)
        return self._facts

    def on_unmount(self) -> None:
        if self._facts:
            self._facts.close()  # (a child still reading tips is killed, not left to finish)

    @property
    def ref_list(self) -> RefList:
        return self.query_one(RefList)

    def update_detail(self, walk: bool = True) -> None:
        """The detail line of the ref under the cursor (the main screen draws it)."""

    def update_count(self) -> None:
        """The count line, where the scan's progress shows (the listing draws it)."""

    def action_toggle_dates(self) -> None:
        """``d``: relative dates ↔ absolute ISO dates in the date column."""
        ref_list = self.ref_list
        ref_list.set_date_mode("iso" if ref_list.date_mode == "relative" else "relative")
        self.update_detail()

    def on_ref_list_tips_wanted(self, message: RefList.TipsWanted) -> None:
        if self.facts is not None and message.refs:
            self.read_tips(self.ref_list.snapshot, message.refs)

    @work(thread=True, exclusive=True, group="tips-visible", description="read the visible tips")
    def read_tips(self, snapshot, refs: list) -> None:
        """The tips of the rows on screen: a screenful of object reads, off the UI thread."""
        self.facts.fill_rows(snapshot, refs)
        self.app.call_from_thread(self._tips_read)

    def _tips_read(self) -> None:
        self.ref_list.tips_read()
        self.update_detail()

    @work(thread=True, exclusive=True, group="tips-scan", description="read every tip")
    def scan_tips(self, snapshot) -> None:
        """Every row's tip: each row's slot in the tips table (no ``Ref`` per row) and the commit-graph's
        times (what the date order needs) first, then the objects of every slot not read yet in the order
        the names first show them (what the filters, the sort and the columns then find read)."""
        worker = get_current_worker()
        facts = self.facts
        cancelled = lambda: worker.is_cancelled  # noqa: E731
        if (line := facts.replaced(snapshot)) is not None:  # (said once: the scan runs once per app)
            self.app.call_from_thread(self.notify, line, severity="warning", timeout=8, markup=False)
        if facts.row_slots(snapshot, cancelled) is None:
            return
        total = len(facts.table)
        if not facts.know_times(range(total), cancelled, read=False):  # (the date order's, ready early)
            return
        progress = lambda done: self._report_tips(done, total)  # noqa: E731
        if not facts.read_in_child(range(total), cancelled, background=True, progress=progress):
            return  # (read in other processes: off our GIL)
        if facts.child_failed is not None:
            self.app.call_from_thread(self._child_failed)
        for lo in range(0, total, TIPS_CHUNK):
            if not facts.read_slots(range(lo, min(lo + TIPS_CHUNK, total)), cancelled, background=True):
                return
            progress(min(lo + TIPS_CHUNK, total))
        self.app.call_from_thread(self._tips_progress, total, total)

    def _report_tips(self, done: int, total: int) -> None:
        """(the scan's worker) How far the scan is, on the count line (moving while children read)."""
        if done < total and time.monotonic() - self._reported > PROGRESS_SECONDS:
            self._reported = time.monotonic()
            self.app.call_from_thread(self._tips_progress, done, total)

    def _child_failed(self) -> None:
        """Say once that the tips are read in this process after all (the child reading them failed)."""
        line = self.facts.child_failed
        if line is not None and not self._child_noted:
            self._child_noted = True
            self.notify(
                f"{line}: reading the tips here (slower)", severity="warning", timeout=6, markup=False
            )

    def _tips_progress(self, done: int, total: int) -> None:
        self.tips_scanned = (done, total)
        self.update_count()
        if done >= total:
            self.ref_list.tips_read()
