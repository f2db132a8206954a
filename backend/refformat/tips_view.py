"""What the TUI asks of a repository's objects about its refs: each tip's dates, author and subject, the
order by committer date or version, which tips are merged into a ref, how old a tip is, and how far two
commits are apart (ahead / behind).

The app reads nothing itself: it holds one ``TipFacts`` per repository and asks it from thread workers;
on the UI thread it only ``peek``s at what was read already. One lock serialises the readers (the object
database's pack readers and the caches are one reader at a time), so the visible rows' reads wait for at
most one chunk of a background scan.
"""

from __future__ import annotations

import heapq
import re
import threading
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import NamedTuple

from ..errors import BadFilter, CorruptStore, RefscopeError
from ..model import HASH_HEXSZ, SYMREF_MAXDEPTH
from ..objects.tips import MISSING, Tip, Tips
from . import dates
from .order import versioncmp

REACH_CACHE = 4  # commits whose ancestor sets are kept (each as big as the history)
SORT_RUN = 1 << 15  # rows sorted by one C call (the UI waits at most that long for the GIL)
DAY = 86400
# age units of the filters (``>90d``): git's approxidate words, one letter each (``m`` is a month)
AGE_UNITS = {"s": 1, "h": 3600, "d": DAY, "w": 7 * DAY, "m": 30 * DAY, "y": 365 * DAY}
_AGE = re.compile(r"^([<>])(\d+)([shdwmy])$")


class Age(NamedTuple):
    """``>90d``: ``older`` True and ``seconds`` 90 days; ``<2w``: ``older`` False."""

    older: bool
    seconds: int


def parse_age(text: str) -> Age | None:
    """``>N<unit>`` (older than) or ``<N<unit>`` (newer than), unit one of s h d w m y; None otherwise."""
    m = _AGE.match(text)
    if m is None:
        return None
    return Age(m.group(1) == ">", int(m.group(2)) * AGE_UNITS[m.group(3)])


def show_ident_date(ident, mode: str) -> str:
    """An ident's date in ``mode`` ("relative" or "iso": ``%(committerdate:relative)`` / ``:iso``);
    "" when the ident has none."""
    if ident is None or ident.time is None:
        return ""
    tz = int(ident.tz) if ident.tz else 0
    return dates.show(ident.time, tz, "relative" if mode == "relative" else "iso8601")


def tip_time(tip: Tip) -> int | None:
    """The committer time of the commit a tip peels to (the age filters and the date column)."""
    c = tip.committer
    return None if c is None else c.time


def sort_time(tip: Tip) -> int:
    """``%(committerdate)`` as ``--sort=committerdate`` compares it: the object's own committer (an
    annotated tag has none: 0, as git sorts it), not the commit the tag peels to."""
    if tip.kind != "commit" or tip.committer is None or tip.committer.time is None:
        return 0
    return tip.committer.time


def target_oid(snap, ref) -> bytes | None:
    """The object id a row shows: its own, or (a symref) the one its chain ends at."""
    if ref.target is None:
        return ref.oid
    name = ref.target
    for _ in range(SYMREF_MAXDEPTH):
        nxt = snap.lookup(name)
        if nxt is None:
            return None
        if nxt.target is None:
            return nxt.oid
        name = nxt.target
    return None


def version_order(snap, rows: list[int]) -> list[int]:
    """``rows`` (in name order) as ``--sort=version:refname`` orders their names (equal ones by name)."""
    names = {i: snap.name_at(i) for i in rows}

    def cmp(a: int, b: int) -> int:
        return versioncmp(names[a], names[b]) or (a > b) - (a < b)

    return sorted(rows, key=cmp_to_key(cmp))


class TipFacts:
    """The object side of the TUI's columns, sort and filters for one repository."""

    def __init__(self, repo) -> None:
        from ..objects.odb import Odb, objects_dir

        self.repo = repo
        self.objects_dir = objects_dir(repo)
        self.odb = Odb(self.objects_dir, repo.hash_name)
        self.tips = Tips(self.odb)
        self.lock = threading.Lock()
        self._graph = None
        self._reach: dict[bytes, set] = {}

    # -- tips --------------------------------------------------------------------------------------------
    def peek(self, oid: bytes | None) -> Tip | None:
        """The tip of ``oid`` if read already (the UI thread's only question), else None."""
        if oid is None:
            return MISSING
        return self.tips.cached(oid)

    def fill(self, oids: Iterable[bytes | None]) -> None:
        """Read the tips of ``oids`` not read yet (objects of one batch read in pack order)."""
        want = [o for o in oids if o is not None and self.tips.cached(o) is None]
        if want:
            with self.lock:
                self.tips.fill(want)

    def fill_rows(self, snap, refs: list) -> list[bytes | None]:
        """Read the tips of the rows ``refs``; their object ids, in order."""
        oids = [target_oid(snap, r) for r in refs]
        self.fill(oids)
        return oids

    # -- order -------------------------------------------------------------------------------------------
    def order(self, snap, rows: list[int], key: str, cancelled: Callable[[], bool] = lambda: False):
        """``rows`` (in name order) ordered by ``key``: "version" (``--sort=version:refname``) or "date"
        (``--sort=-committerdate``: newest first, equal dates in name order); None when cancelled. The
        date order reads every row's tip (the background scan's reads, if it ran, are cached)."""
        if key == "version":
            return version_order(snap, rows)
        times = {}
        step = 2048
        for lo in range(0, len(rows), step):
            if cancelled():
                return None
            part = rows[lo : lo + step]
            refs = [snap.row(i) for i in part]
            oids = self.fill_rows(snap, refs)
            for i, oid in zip(part, oids, strict=True):
                times[i] = sort_time(self.peek(oid) or MISSING)
        # (newest first, then the row: rows are in name order, so equal dates keep it). Sorted in runs
        # merged in Python: one C sort of every row would hold the GIL, and the UI, for its whole length
        keyed = [(-times[i], i) for i in rows]
        if len(keyed) <= SORT_RUN:
            return [i for _, i in sorted(keyed)]
        runs = []
        for lo in range(0, len(keyed), SORT_RUN):
            if cancelled():
                return None
            runs.append(sorted(keyed[lo : lo + SORT_RUN]))
        return [i for _, i in heapq.merge(*runs)]

    # -- reachability --------------------------------------------------------------------------------------
    def graph(self):
        if self._graph is None:
            from ..objects.commitgraph import open_commit_graph
            from .reach import Graph
            from .values import Objects

            self._graph = Graph(Objects(self.odb), open_commit_graph(self.objects_dir, self.odb.rawsz))
        return self._graph

    def resolve(self, snap, text: str | bytes) -> bytes:
        """The commit ``text`` (a ref name as git resolves it, or a full id; bytes as the store holds
        them) names; RefscopeError if none."""
        from .command import resolve_rev

        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogateescape")
        oid = resolve_rev(snap, HASH_HEXSZ[self.repo.hash_name], text)
        with self.lock:
            commit = self.graph().commit_of(oid)
        if commit is None:
            raise RefscopeError(None, f"{text} does not point to a commit")
        return commit

    def merged_nodes(self, commit: bytes) -> set:
        """The walk names of every commit ``commit`` reaches (``--merged=commit``), cached for the last
        few commits asked (the filter's ref and HEAD's branch are asked again and again)."""
        hit = self._reach.pop(commit, None)
        if hit is None:
            with self.lock:
                hit = self.graph().ancestors([commit])
        self._reach[commit] = hit  # (re-inserted: the newest last)
        while len(self._reach) > REACH_CACHE:
            del self._reach[next(iter(self._reach))]
        return hit

    def is_merged(self, oid: bytes | None, reach: set) -> bool | None:
        """Whether the commit ``oid`` peels to is in ``reach``; None when it peels to no commit (git's
        ``--merged`` and ``--no-merged`` both leave such a ref out)."""
        if oid is None:
            return None
        with self.lock:
            g = self.graph()
            c = g.commit_of(oid)
            return None if c is None else g.node(c) in reach

    def ahead_behind(self, a: bytes, b: bytes) -> tuple[int, int]:
        """(commits reachable from ``a`` and not ``b``, from ``b`` and not ``a``): ``git rev-list
        --left-right --count a...b``. Both must be commits."""
        left = self.merged_nodes(a)
        right = self.merged_nodes(b)  # (HEAD's branch: cached across cursor moves)
        return len(left - right), len(right - left)


class Condition(NamedTuple):
    """One filter term on a ref's tip: ``kind`` "merged" (``ref``: the name or id, b"" for HEAD's
    branch) or "age" (``age``); ``negated`` turns it around."""

    kind: str
    negated: bool = False
    ref: str = ""
    age: Age | None = None

    @property
    def term(self) -> str:
        """The condition as typed (``!merged:main``); an age's as its parsed value."""
        neg = "!" if self.negated else ""
        if self.kind == "merged":
            return f"{neg}merged:{self.ref}" if self.ref else f"{neg}merged"
        return f"{neg}{'>' if self.age.older else '<'}{self.age.seconds}s"


def merged_base(facts: TipFacts, snap, c: Condition, head_branch: str | bytes) -> bytes:
    """The commit a ``merged`` condition tests against; ``BadFilter`` (one line naming the ref) when
    it names no commit. Damage met on the way stays what it is (a store error, not the filter's)."""
    name = c.ref or head_branch
    try:
        return facts.resolve(snap, name)
    except CorruptStore:
        raise
    except RefscopeError as err:
        shown = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name
        why = err.what
        if why.startswith("malformed object name"):
            why = f"no ref or object id {shown}" if c.ref else f"HEAD's branch {shown} has no commit"
        raise BadFilter(None, f"filter {c.term}: {why}") from None


def tester(facts: TipFacts, snap, conditions: tuple[Condition, ...], head_branch: str | bytes,
           now: int | None = None) -> Callable[[list], list[bool]]:  # fmt: skip
    """A test of rows (``Ref``s) against every condition (all must hold), reading what they need.

    ``merged`` leaves out a ref whose tip peels to no commit, negated or not (as git's --no-merged);
    an age leaves out a ref with no committer date either way."""
    at = dates.now() if now is None else now
    reaches = []
    for c in conditions:
        if c.kind == "merged":
            reaches.append(facts.merged_nodes(merged_base(facts, snap, c, head_branch)))

    def test(refs: list) -> list[bool]:
        oids = facts.fill_rows(snap, refs)
        out = []
        for oid in oids:
            ok = True
            k = 0
            for c in conditions:
                if c.kind == "merged":
                    got = facts.is_merged(oid, reaches[k])
                    k += 1
                    ok = got is not None and got != c.negated
                else:
                    t = tip_time(facts.peek(oid) or MISSING)
                    if t is None:
                        ok = False
                    else:
                        older = at - t > c.age.seconds
                        hit = older if c.age.older else at - t < c.age.seconds
                        ok = hit != c.negated
                if not ok:
                    break
            out.append(ok)
        return out

    return test
