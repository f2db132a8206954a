"""What the TUI asks of a repository's objects about its refs: each tip's dates, author and subject, the
order by committer date or version, which tips are merged into a ref, how old a tip is, and how far two
commits are apart (ahead / behind).

The app reads nothing itself: it holds one ``TipFacts`` per repository and asks it from thread workers;
on the UI thread it only ``peek``s at what was read already. The tips live in a ``tip_table.TipTable``
(columns, not objects). Two locks: ``lock`` for the tips' object reads and the table's writers (the
visible rows' reads wait for at most one chunk of the background scan), and the commit graph's own
(``graph``: walks, commit-graph times, resolving), over an object database of its own, so a walk never
holds the visible rows back. Work the user waits for runs inside ``first``: the scan stands aside.
"""

from __future__ import annotations

import contextlib
import threading
import time
from array import array
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import eq, is_not

from ..errors import CorruptStore, RefscopeError
from ..model import HASH_HEXSZ
from ..objects.tips import MISSING, Tip, Tips
from . import dates, tip_children
from .row_order import date_order, version_order
from .tip_children import ChildReads
from .tip_table import READ, UNKNOWN, TipTable, row_oid_chunks

REACH_CACHE = 4  # commits whose ancestor sets are kept (each as big as the history)
ROWS_CHUNK = 1 << 12  # rows handled between cancellation checks and lock hand-overs
GROUP_CHUNK = 1 << 15  # rows whose ids numpy takes at once (``row_ids.group_rows``)
READ_CHUNK = 2048  # objects read under the lock at once (the visible rows wait at most that long)
PAINT_GRACE = 0.15  # seconds the background work still stands aside after a ``first`` job: its result's frame


def show_ident_date(ident, mode: str) -> str:
    """An ident's date in ``mode`` ("relative" or "iso": ``%(committerdate:relative)`` / ``:iso``);
    "" when the ident has none."""
    if ident is None or ident.time is None:
        return ""
    tz = int(ident.tz) if ident.tz else 0
    return dates.show(ident.time, tz, "relative" if mode == "relative" else "iso8601")


def target_oid(snap, ref) -> bytes | None:
    """The object id a row shows: its own, or (a symref) the one its chain ends at."""
    return ref.oid if ref.target is None else snap.resolve(ref.target)


class TipFacts(ChildReads):
    """The object side of the TUI's columns, sort and filters for one repository."""

    def __init__(self, repo) -> None:
        from ..objects.odb import Odb, objects_dir

        self.repo = repo
        self.objects_dir = objects_dir(repo)
        self.odb = Odb(self.objects_dir, repo.hash_name)
        self.table = TipTable()
        self.lock = threading.Lock()  # the tips' object reads and the table's writers
        self._rows_lock = threading.Lock()  # one builder of a snapshot's row slots; the others wait
        self._rows: tuple[object, array] | None = None  # (snapshot, slot of each row) of the newest asked
        self._graph = None
        self._reach: dict[bytes, set] = {}
        self._walk_lock = threading.Lock()  # the graph (``graph``); taken before ``lock`` when both
        self._urgent = 0  # jobs someone waits for (``first``): the background scan stands aside
        self._urgent_until = 0.0  # (and until then: the UI paints the last one's result)
        self._urgent_lock = threading.Lock()
        self._child = None  # (``tip_children._ChildRead``) the children reading tips, while they run
        self._child_lock = threading.Lock()
        self.child_failed: str | None = None  # why the child failed (its slots are then read here)
        self.child_read = 0  # tips the children have read (for the benchmark and the tests)
        self.child_dated = 0  # of them, those the children were asked to date first
        self._spare: list = []  # children started before their ids were known (``prestart``)

    @contextlib.contextmanager
    def first(self):
        """Work the user waits for (a sort, a filter) runs inside: the background scan pauses between
        two chunks meanwhile, so the two do not share the object reads, the lock and the GIL -- and for
        ``PAINT_GRACE`` after, while the UI thread paints the result (a million rows' new view, with the
        scan's work on the GIL beside it, took that frame past its budget)."""
        with self._urgent_lock:
            self._urgent += 1
        try:
            yield
        finally:
            with self._urgent_lock:
                self._urgent -= 1
                self._urgent_until = time.monotonic() + PAINT_GRACE

    def urgent(self) -> bool:
        """Work the user waits for runs, or its result is being painted: background work waits."""
        return bool(self._urgent) or time.monotonic() < self._urgent_until

    def stand_aside(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Wait while work inside ``first`` runs: for work nobody waits for that would share the GIL
        with it -- the detail line's ahead/behind walk, seconds of object reads without a commit-graph."""
        while self.urgent() and not cancelled():
            time.sleep(0.01)

    # -- tips --------------------------------------------------------------------------------------------
    def peek(self, oid: bytes | None) -> Tip | None:
        """The tip of ``oid`` if read already (the UI thread's only question), else None."""
        if oid is None:
            return MISSING
        s = self.table.slots.get(oid)
        return None if s is None else self.table.tip(s)

    def fill(self, oids: Iterable[bytes | None]) -> None:
        """Read the tips of ``oids`` not read yet (objects of one batch read in pack order)."""
        table = self.table
        slots, state = table.slots, table.state
        want = []
        for o in oids:
            if o is not None:
                s = slots.get(o)
                if s is None or state[s] != READ:
                    want.append(o)
        if want:
            with self.lock:
                self._read([table.slot(o) for o in want])

    def fill_rows(self, snap, refs: list) -> list[bytes | None]:
        """Read the tips of the rows ``refs``; their object ids, in order."""
        oids = [target_oid(snap, r) for r in refs]
        self.fill(oids)
        return oids

    def _read(self, slots: list[int]) -> None:
        """Read the objects of ``slots`` into the table (under the lock)."""
        read_into(self.table, self.odb, slots)

    def read_slots(
        self, slots, cancelled: Callable[[], bool] = lambda: False, background: bool = False
    ) -> bool:
        """Read every tip of ``slots`` not read yet, a chunk at a time (the lock is let go between
        chunks, so the visible rows' reads wait for one chunk at most); False when cancelled.
        ``background``: the scan, which waits while a job inside ``first`` runs."""
        state = self.table.state
        todo = [s for s in slots if state[s] != READ]
        if len(todo) >= tip_children.CHILD_MIN:
            if not self.read_in_child(todo, cancelled):
                return False
            todo = [s for s in todo if state[s] != READ]  # (none, unless the child failed)
        for lo in range(0, len(todo), READ_CHUNK):
            while background and self.urgent() and not cancelled():
                time.sleep(0.01)
            if cancelled():
                return False
            with self.lock:
                self._read(todo[lo : lo + READ_CHUNK])
            time.sleep(0)
        return True

    # -- rows ----------------------------------------------------------------------------------------------
    def row_slots(self, snap, cancelled: Callable[[], bool] = lambda: False) -> array | None:
        """The table slot of each row of ``snap`` (-1: a row naming no object), built once for the
        newest snapshot asked; None when cancelled. No ``Ref`` per row (``tip_table.row_oid_chunks``)."""
        with self._rows_lock:
            got = self._rows
            if got is not None and got[0] is snap:
                return got[1]
            table = self.table
            stream = None
            if self._rows is None:  # (the first build: the children that will read the tips start now)
                self.prestart(len(snap))
                stream = self._stream_start()
            try:
                out = self._find_slots(snap, cancelled, stream)
            except BaseException:  # (a damaged snapshot: the streamed children go, none left waiting)
                if stream is not None:
                    self._stream_end(stream, cancelled=True)
                raise
            if out is None:
                if stream is not None:
                    self._stream_end(stream, cancelled=True)
                return None
            if stream is not None:  # (too few tips for children after all: they go, as below)
                self._stream_end(stream, cancelled=len(table) < tip_children.CHILD_MIN)
            if len(table) < tip_children.CHILD_MIN:  # (too few tips for a child: the started ones go)
                self.drop_spares()
            self._rows = (snap, out)
            return out

    def _find_slots(self, snap, cancelled: Callable[[], bool], stream) -> array | None:
        """``row_slots``'s pass over the rows: the rows grouped by their ids by numpy
        (``row_ids.group_rows``) and one slot found per group; or, when the children are fed the new
        ids while the pass goes on (``stream``: they date the commits, so the date order waits for them)
        or numpy declines the rows, a look-up per row."""
        if stream is None:
            from .row_ids import group_rows

            hexsz = HASH_HEXSZ[self.repo.hash_name]
            grouped = group_rows(row_oid_chunks(snap, GROUP_CHUNK), len(snap), hexsz, cancelled)
            if cancelled():
                return None
            if grouped is not None:
                return self._slots_of_groups(*grouped)
        return self._look_up_slots(snap, cancelled, stream)

    def _slots_of_groups(self, ids: list[bytes], group) -> array:
        """Each row's slot, given the distinct ids and each row's index among them (-1: none); the ids
        given slots ``ROWS_CHUNK`` at a time (one C call over every id would hold the GIL a frame long)."""
        import numpy as np

        table = self.table
        got: list[int] = []
        for lo in range(0, len(ids), ROWS_CHUNK):
            part = ids[lo : lo + ROWS_CHUNK]
            with self.lock:
                made = table.add(part)
            mine = list(map(made.get, part))
            if None in mine:  # (ids with a slot already: the visible rows', read first)
                get = table.slots.get
                mine = [get(o, -1) if s is None else s for o, s in zip(part, mine, strict=True)]
            got += mine
            time.sleep(0)
        slots = np.array([*got, -1], np.int32)  # (the last: group -1)
        out = array("i")
        out.frombytes(slots[group].data.cast("B"))
        return out

    def _look_up_slots(self, snap, cancelled: Callable[[], bool], stream) -> array | None:
        """``_find_slots`` a look-up per row, new ids streamed to the children (``stream``)."""
        table = self.table
        out = array("i")
        get = table.slots.get
        for oids in row_oid_chunks(snap, ROWS_CHUNK):
            if cancelled():
                return None
            # (C loops only, one look-up per row where its id has a slot already -- most rows, as
            # refs share tips; None, no object: -1; an array made of a list: extending one by an
            # iterator converts each item the slow way)
            got = list(map(get, oids, repeat(-1)))
            if -1 in got:  # (ids seen first here, or rows naming no object)
                miss = list(compress(range(len(got)), map(eq, got, repeat(-1))))
                new = list(map(oids.__getitem__, miss))
                with self.lock:
                    base = len(table)
                    made = table.add(new)
                if stream is not None and len(table) > base:
                    self._stream(stream, base, len(table))
                # (an id another thread gave a slot meanwhile, or None, is not in ``made``)
                for k, o, s in zip(miss, new, map(made.get, new), strict=True):
                    got[k] = get(o, -1) if s is None else s
            out.extend(array("i", got))
            time.sleep(0)
        return out

    def know_times(self, slots, cancelled: Callable[[], bool] = lambda: False, read: bool = True) -> bool:
        """Make the committer time of each of ``slots`` known: from the commit-graph for the commits it
        holds (no object inflated), by reading the object for the rest (unless ``read`` is False: the
        background scan, which reads them all next); False when cancelled."""
        table = self.table
        state = table.state
        todo = [s for s in slots if state[s] == UNKNOWN]
        if not todo:
            return True
        g = self._graph
        if g is None:  # (once made, whether it has a commit-graph is read without the lock: a walk
            with self._walk_lock:  # holding it -- the detail line's ahead/behind without a commit-graph,
                g = self.graph()  # seconds of object reads -- must not hold the date order back)
        if g.cg is not None:  # (a chunk at a time, by C-level passes: see ``CommitGraph.times``)
            oids = table.oids
            for lo in range(0, len(todo), ROWS_CHUNK):
                if cancelled():
                    return False
                with self._walk_lock:
                    chunk = [s for s in todo[lo : lo + ROWS_CHUNK] if state[s] == UNKNOWN]
                    got = g.positions(list(map(oids.__getitem__, chunk)))
                    held = list(map(is_not, got, repeat(None)))
                    chunk, got = list(compress(chunk, held)), list(compress(got, held))
                    times = g.cg.times(got)
                    with self.lock:  # (always in this order)
                        table.graphed_many(chunk, times, got)  # (another job may have come first)
                time.sleep(0)
        if not read:
            return True
        todo = [s for s in todo if state[s] == UNKNOWN]
        if len(todo) >= tip_children.CHILD_MIN and not self.read_in_child(todo, cancelled, dates=True):
            return False
        return self.read_slots([s for s in todo if state[s] == UNKNOWN], cancelled)

    # -- order -------------------------------------------------------------------------------------------
    def order(self, snap, rows, key: str, cancelled: Callable[[], bool] = lambda: False):
        """``rows`` (in name order) ordered by ``key``: "version" (``--sort=version:refname``) or "date"
        (``--sort=-committerdate``: newest first, equal dates in name order); None when cancelled.

        The date order needs each row's committer time only: the commit-graph's when it holds the
        commit (the objects' reading goes on in the background scan), else the object's. No Python
        object per row; the one pass over every row is numpy's (``row_order.date_order``)."""
        if key == "version":
            from .settings import version_suffixes

            return version_order(snap, rows, cancelled, version_suffixes(self.repo.config))
        per_row = self.row_slots(snap, cancelled)
        if per_row is None:
            return None
        table = self.table
        whole = len(rows) == len(per_row)
        need = range(len(table)) if whole else sorted({per_row[i] for i in rows} - {-1})
        if not self.know_times(need, cancelled):
            return None
        return date_order(sort_times(table), per_row, rows, cancelled)

    # -- reachability --------------------------------------------------------------------------------------
    def graph(self):
        """The commit graph (under ``_walk_lock``), over an object database of its own: the walks of
        ``merged`` and the detail line's ahead/behind never hold the lock the visible rows' reads wait
        for. One for every question (its commit-graph position map and parents are a history's size)."""
        if self._graph is None:
            from ..objects.commitgraph import open_commit_graph
            from ..objects.odb import Odb
            from .command import shallow_commits
            from .reach import Graph
            from .values import Objects

            odb = Odb(self.objects_dir, self.repo.hash_name)
            odb.grafted = shallow_commits(self.repo)  # (a shallow clone's boundary: walked no further)
            graph = None if odb.grafted else open_commit_graph(self.objects_dir, odb.rawsz)  # (git: none)
            self._graph = Graph(Objects(odb), graph)
        return self._graph

    def replaced(self, snap) -> str | None:
        """One line when git would show these refs' tips through replace refs (``refformat.replace``),
        which this reader does not follow: the columns then show the objects themselves."""
        from .replace import replacing

        try:
            base = replacing(self.repo, snap)
        except RefscopeError as err:  # (core.useReplaceRefs not a boolean: git dies on it; said here)
            return err.what
        if base is None:
            return None
        return (
            f"replace refs ({base.decode('utf-8', 'replace')}*): the columns, sorts and filters read the"
            " objects themselves, where git reads their replacements"
        )

    def resolve(self, snap, text: str | bytes) -> bytes:
        """The commit ``text`` (a revision as ``revision.resolve_rev`` reads it; bytes as the store
        holds them) names; RefscopeError if none."""
        commit = self.commit_of(self.revision(snap, text))
        if commit is None:
            raise RefscopeError(None, f"{_text(text)} does not point to a commit")
        return commit

    def revision(self, snap, text: str | bytes) -> bytes:
        """The object id ``text`` names (the refs read, and the objects a suffix walks)."""
        from .revision import resolve_rev

        with self._walk_lock:  # (the graph's object database: a shallow clone's boundary is its)
            odb = self.graph().objects.odb
            return resolve_rev(snap, HASH_HEXSZ[self.repo.hash_name], _text(text), odb)

    def commit_of(self, oid: bytes) -> bytes | None:
        """The commit ``oid`` is or peels to (its objects read), None if none."""
        with self._walk_lock:
            return self.graph().commit_of(oid)

    def merged_nodes(self, commit: bytes) -> set:
        """The walk names of every commit ``commit`` reaches (``--merged=commit``), cached for the last
        few commits asked (the filter's ref and HEAD's branch are asked again and again)."""
        with self._walk_lock:  # (a walk of its own: the visible rows' reads never wait for one)
            hit = self._reach.pop(commit, None)
            if hit is None:
                hit = self.graph().ancestors([commit])
            self._reach[commit] = hit  # (re-inserted: the newest last)
            while len(self._reach) > REACH_CACHE:
                del self._reach[next(iter(self._reach))]
            return hit

    def ahead_behind(self, a: bytes, b: bytes) -> tuple[int, int]:
        """(commits reachable from ``a`` and not ``b``, from ``b`` and not ``a``): ``git rev-list
        --left-right --count a...b``. Both must be commits."""
        left = self.merged_nodes(a)
        right = self.merged_nodes(b)  # (HEAD's branch: cached across cursor moves)
        return len(left - right), len(right - left)


def _text(text: str | bytes) -> str:
    """A revision as typed, or a name as the store holds its bytes."""
    return text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else text


def sort_times(table: TipTable) -> array:
    """``TipTable.sort_time`` of every slot, by numpy over copies of the columns (a writer may append to
    them meanwhile): a commit's time, 0 for the rest and for NO_TIME (below every real time)."""
    import numpy as np

    ctime = np.frombuffer(table.ctime[:], np.int64)
    kind = np.frombuffer(table.kind[:], np.uint8)
    m = min(len(ctime), len(kind))
    return array("q", np.where(kind[:m] == 1, np.maximum(ctime[:m], 0), 0).tobytes())


def read_into(table: TipTable, odb, slots) -> None:
    """Read the objects of ``slots`` into ``table`` (the parent's, under its lock; or a child's: the same
    code reads the same facts). A ``Tips`` per batch: its per-object records are dropped once their
    cells are stored."""
    todo = [s for s in dict.fromkeys(slots) if table.state[s] != READ]
    if not todo:
        return
    tips = Tips(odb)
    oids = [table.oids[s] for s in todo]
    with contextlib.suppress(CorruptStore, ValueError):  # (damage in the batch: one by one below)
        tips.fill(oids)
    for s, o in zip(todo, oids, strict=True):
        try:
            tip = tips.tip(o)
        except CorruptStore as err:  # an unreadable object is a finding in its row, not the batch's
            where = "" if err.offset is None else f" at byte {err.offset}"
            tip = Tip(None, None, None, None, None, f"unreadable: {err.what}{where}".encode())
        table.store(s, tip)
