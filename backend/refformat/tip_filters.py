"""The TUI's filter terms on a ref's tip -- ``merged`` / ``merged:REF`` (``git for-each-ref --merged``),
``>90d`` / ``<2w`` (the tip's committer date against now), each negated by ``!`` -- and their test of
rows. A test asks ``tips_view.TipFacts`` for what it needs (committer times, the walk of each ``merged``)
and tests each distinct tip once: a million refs sharing 200k tips make 200k verdicts, the rows then take
their tip's by C-level maps.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from ..errors import BadFilter, CorruptStore, RefscopeError
from . import dates
from .tip_table import NO_TIME

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


PASSES = bytes([0, 0, 1]) + bytes(253)  # a verdict (0, 1 fails, 2 holds) as 0 / 1


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


def merged_base(facts, snap, c: Condition, head_branch: str | bytes) -> bytes:
    """The commit a ``merged`` condition tests against; ``BadFilter`` (one line naming the ref) when
    it names no commit. Damage of the refs met on the way stays what it is (a store error, not the
    filter's); damage of the objects refuses the filter (``_refusing``)."""
    name = c.ref or head_branch
    shown = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name
    try:
        oid = facts.revision(snap, name)
    except CorruptStore:
        raise
    except RefscopeError as err:
        why = err.what
        if why.startswith("malformed object name"):
            if c.ref:  # (a ref name holds neither: a base, then suffixes that name nothing)
                why = (
                    f"no such revision {shown}"
                    if "~" in shown or "^" in shown
                    else f"no ref or object id {shown}"
                )
            else:  # (HEAD itself: unborn, or detached at no commit)
                why = "HEAD has no commit" if shown == "HEAD" else f"HEAD's branch {shown} has no commit"
        raise BadFilter(None, f"filter {c.term}: {why}") from None
    with _refusing(c.term):
        commit = facts.commit_of(oid)
    if commit is None:
        raise BadFilter(None, f"filter {c.term}: {shown} does not point to a commit")
    return commit


@contextmanager
def _refusing(terms: str) -> Iterator[None]:
    """Damage met by a condition's own reads (the objects of a walk or of the tips: a corrupt pack, a
    commit that does not parse) refuses the filter, in one line naming the damage: the refs themselves
    are sound, so the list keeps its rows and the status line says nothing of the store."""
    try:
        yield
    except BadFilter:
        raise
    except RefscopeError as err:
        raise BadFilter(None, f"filter {terms}: {err}") from err


def tester(facts, snap, conditions: tuple[Condition, ...], head_branch: str | bytes,
           now: int | None = None) -> Callable[[list], bytes]:  # fmt: skip
    """A test of rows (row numbers of ``snap``) against every condition (all must hold), reading what
    they need: committer times (the commit-graph's where it has them), the walk of each ``merged``.

    ``merged`` leaves out a ref whose tip peels to no commit, negated or not (as git's --no-merged);
    an age leaves out a ref with no committer date either way. ``BadFilter`` at once when a
    ``merged`` names no commit, and when the objects read for a condition are damaged."""
    at = dates.now() if now is None else now
    reaches = []
    for c in conditions:
        if c.kind == "merged":
            base = merged_base(facts, snap, c, head_branch)
            with _refusing(c.term):
                reaches.append(facts.merged_nodes(base))
    ages = any(c.kind == "age" for c in conditions)
    table = facts.table
    nodes: dict[int, object] = {}  # slot -> walk name of the commit it peels to (None: no commit)

    def node_of(s: int):
        got = nodes.get(s, False)
        if got is False:
            pos = table.pos[s]
            if pos >= 0:
                got = pos
            else:
                with facts._walk_lock:
                    g = facts.graph()
                    c = g.commit_of(table.oids[s])
                    got = None if c is None else g.node(c)
            nodes[s] = got
        return got

    terms = " ".join(c.term for c in conditions)
    verdict = bytearray(len(table) + 1)  # per slot: 0 not tested yet, 1 fails, 2 holds; [-1]: no object

    def holds(s: int) -> bool:
        k = 0
        for c in conditions:
            if c.kind == "merged":
                n = node_of(s)
                if n is None or (n in reaches[k]) == c.negated:
                    return False
                k += 1
            else:
                t = table.ctime[s]
                if t == NO_TIME:
                    return False
                hit = at - t > c.age.seconds if c.age.older else at - t < c.age.seconds
                if hit == c.negated:
                    return False
        return True

    def test(rows) -> bytes:
        """1 for each of ``rows`` that passes, else 0: each distinct tip tested once, the rows then
        given their tip's verdict by C-level maps."""
        nonlocal verdict
        per_row = facts.row_slots(snap)
        if len(verdict) <= len(table):  # (the table grew: the last cell stays "no object")
            verdict = verdict[:-1] + bytearray(len(table) + 1 - len(verdict)) + b"\x01"
        verdict[-1] = 1
        slots = list(map(per_row.__getitem__, rows))
        todo = sorted({s for s in slots if s >= 0 and not verdict[s]})
        with _refusing(terms):
            judge(todo)
        return bytes(map(verdict.__getitem__, slots)).translate(PASSES)

    def judge(todo: list[int]) -> None:
        """The verdicts of slots ``todo``, reading their objects."""
        if todo:
            if ages:
                facts.know_times(todo)
            if reaches:
                oids = [table.oids[s] for s in todo if s not in nodes and table.pos[s] < 0]
                if oids:
                    with facts._walk_lock:
                        facts.graph().prefetch(oids)  # (their types in bulk: only tags are inflated)
            for s in todo:
                verdict[s] = 2 if holds(s) else 1

    return test
