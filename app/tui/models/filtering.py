"""What the ref list shows: a filter pattern turned into a view of snapshot rows.

A view is either a ``range`` (no filter, or a prefix: a binary search, no scan at any size) or an
``array('I')`` of row indexes (substring or glob: a scan, run in a cancellable thread worker). Both support
``len()`` and indexing, so the list renders either the same way. No Textual here: this is testable alone.
"""

from __future__ import annotations

import re
import time
from array import array
from collections.abc import Callable
from itertools import compress, islice
from typing import NamedTuple

from refscope.backend.refformat.tip_filters import Condition, parse_age
from refscope.backend.refpattern import is_glob, literal_prefix, wildmatch

View = range | array

CHUNK = 4096  # rows between cancellation checks / progress reports
PLACEHOLDER = "filter: refs/heads/… prefix · text substring · * ? [ git glob · ! negates"


class Pattern(NamedTuple):
    """A parsed filter: ``kind`` is "all", "prefix", "substring" or "glob"; ``negated`` shows the rest."""

    kind: str
    text: str
    prefix: bytes  # rows outside prefix_range(prefix) can never match
    regex: re.Pattern[bytes] | None
    needle: bytes
    negated: bool = False
    conditions: tuple[Condition, ...] = ()  # terms on the tip (merged, age), all of which must hold
    terms: tuple[str, ...] = ()  # the conditions as typed, for the label

    @property
    def mode(self) -> str:
        """What the filter bar shows before the typed text: how the name pattern is read (``substring``,
        ``not glob``...), "" when there is none. Never the typed text itself: the field beside it shows
        that already (a condition such as ``!merged`` says what it is in its own words)."""
        if self.kind == "all":
            return ""
        return f"not {self.kind}" if self.negated else self.kind

    @property
    def label(self) -> str:
        """The whole filter as the count line names it (which does not show the typed text): the name
        pattern's mode, then each condition as typed."""
        return " + ".join(([self.mode] if self.mode else []) + list(self.terms)) or "all"

    @property
    def instant(self) -> bool:
        """Computed by binary search alone (no scan): everything, or a prefix."""
        return self.kind in ("all", "prefix") and not self.negated and not self.conditions

    @property
    def filtered(self) -> bool:
        """True unless the pattern shows every ref."""
        return self.kind != "all" or bool(self.conditions)


def parse(text: str) -> Pattern:
    """The terms of what the user typed, separated by spaces (a ref name holds none), all of which must
    hold: terms on the tip (``condition``) and at most one name pattern (``parse_name``; a second one
    is ignored). A ``!`` alone negates nothing yet: it is the start of a term being typed, so
    ``refs/heads/ !`` on the way to ``refs/heads/ !merged`` shows what ``refs/heads/`` shows."""
    conditions = []
    terms = []
    name = ""
    for term in text.split():
        cond = condition(term)
        if cond is not None:
            conditions.append(cond)
            terms.append(term)
        elif not name and term != "!":
            name = term
    if not conditions:
        return parse_name(name)._replace(text=name)
    return parse_name(name)._replace(text=text, conditions=tuple(conditions), terms=tuple(terms))


def condition(term: str) -> Condition | None:
    """A term on the ref's tip, or None (a name pattern):

    - ``merged`` / ``merged:REF``: the tip is reachable from REF (default: the branch HEAD points at),
      as ``git for-each-ref --merged``; refs whose tip is no commit are left out;
    - ``>90d`` / ``<2w``: the tip's committer date is older / newer than that (units ``s h d w m y``,
      ``m`` a month of 30 days);
    - a leading ``!`` negates either (``!merged`` is ``--no-merged``).
    """
    negated = term.startswith("!")
    body = term[1:] if negated else term
    if body == "merged" or body.startswith("merged:"):
        return Condition("merged", negated, body[len("merged:") :])
    age = parse_age(body)
    if age is not None:
        return Condition("age", negated, age=age)
    return None


def parse_name(text: str) -> Pattern:
    """Classify a name pattern.

    - empty: everything;
    - a leading ``!``: the rows the rest does not select;
    - no glob characters and starts with ``refs/`` (or is a start of ``refs/``): a prefix (binary search);
    - no glob characters otherwise: a substring anywhere in the name;
    - ``*``, ``?``, ``[`` or ``\\``: a glob as ``git for-each-ref`` matches it (wildmatch with WM_PATHNAME:
      ``*`` stops at ``/``, ``**`` crosses directories; ``backend.refpattern``). A glob that does not start
      with ``refs/`` matches the name's trailing components (as if written ``**/glob``), so ``pull/*/head``
      finds ``refs/pull/1/head``. The literal start of the glob narrows the scan.
    """
    negated = text.startswith("!")
    body = text[1:] if negated else text
    raw = body.encode("utf-8", "surrogateescape")
    if not body:
        return Pattern("all", text, b"", None, b"")
    if not is_glob(raw):
        if body.startswith("refs/") or "refs/".startswith(body):
            return Pattern("prefix", text, raw, None, b"", negated)
        return Pattern("substring", text, b"", None, raw, negated)
    glob = raw if raw.startswith(b"refs/") else b"**/" + raw
    return Pattern("glob", text, literal_prefix(glob), wildmatch(glob), b"", negated)


def matcher(pattern: Pattern) -> Callable[[bytes], bool]:
    """The one test of a name against ``pattern``, negation included: ``compute``'s scan and ``/`` in
    the views (``widgets.rows``) both use it. A glob matches as git's wildmatch; anything else is a
    substring (a prefix pattern, which ``compute`` answers by binary search, too, since a view's rows
    may be any text)."""
    negated = pattern.negated
    if pattern.kind == "glob":
        match = pattern.regex.match  # type: ignore[union-attr]

        def glob_hit(name: bytes) -> bool:
            return (match(name) is not None) != negated

        return glob_hit
    needle = {"substring": pattern.needle, "prefix": pattern.prefix}.get(
        pattern.kind, pattern.text.encode("utf-8", "surrogateescape")
    )

    def contains(name: bytes) -> bool:
        return (needle in name) != negated

    return contains


def compute(
    snapshot,
    pattern: Pattern,
    cancelled: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
    test: Callable[[list], list[bool]] | None = None,
) -> View | None:
    """The rows of ``snapshot`` that ``pattern`` selects; None when cancelled mid-scan.

    The name pattern first (below), then the conditions on what it selected: ``test`` (the backend's
    ``tip_filters.tester`` for them) asked a chunk of row numbers at a time (no ``Ref`` per row)."""
    view = _by_name(snapshot, pattern, cancelled, None if pattern.conditions else progress)
    if view is None or not pattern.conditions:
        return view
    if test is None:
        raise ValueError("a pattern with conditions needs their test")
    out = array("I")
    total = len(view)
    for lo in range(0, total, CHUNK):
        if cancelled():
            return None
        rows = view[lo : lo + CHUNK]
        out.extend(compress(rows, test(rows)))
        if progress is not None:
            progress(min(lo + CHUNK, total), total)
        time.sleep(0)
    return out


def _by_name(
    snapshot,
    pattern: Pattern,
    cancelled: Callable[[], bool],
    progress: Callable[[int, int], None] | None,
) -> View | None:
    """The rows the name pattern selects.

    Prefix patterns cost two binary searches. Scans walk only the prefix range of the pattern's literal
    start, check ``cancelled`` every CHUNK rows and report ``progress(done, total)``. A negated pattern
    selects every row outside that range without looking at it.
    """
    rows = len(snapshot)
    if pattern.kind == "all":
        return range(rows)
    bounds = snapshot.prefix_range(pattern.prefix) if pattern.prefix else range(rows)
    negated = pattern.negated
    if pattern.kind == "prefix":
        if not negated:
            return bounds
        out = array("I", range(bounds.start))
        out.extend(range(bounds.stop, rows))
        return out
    out = array("I", range(bounds.start)) if negated else array("I")
    total = len(bounds)
    hit = matcher(pattern)
    start, stop = bounds.start, bounds.stop
    names = _names(snapshot, pattern.prefix, start, stop)
    done = start
    while done < stop:
        if cancelled():
            return None
        chunk = list(islice(names, min(CHUNK, stop - done)))
        if not chunk:
            break
        out.extend(done + k for k, name in enumerate(chunk) if hit(name))
        done += len(chunk)
        if progress is not None:
            progress(done - start, total)
        time.sleep(0)  # let the UI thread take the GIL between chunks: typing never waits for a scan
    if negated:
        out.extend(range(stop, rows))
    return out


def _names(snapshot, prefix: bytes, start: int, stop: int):
    """Names of rows ``start..stop`` in order, streamed (``iter_names``: much cheaper per row than random
    access)."""
    first = snapshot.name_at(start) if start < stop else prefix
    return snapshot.iter_names(first)


def find_row(snapshot, view: View, name: bytes, chunk: int = 1 << 16) -> int:
    """``index_of`` a view in another order than the names' (a sort: the row is looked for, 0 if not
    there), in a worker and a chunk at a time: one ``index`` over every row is a C loop that holds the
    GIL the UI waits for, and on the UI thread it would be that long a frame."""
    if isinstance(view, range) or not len(view):
        return index_of(snapshot, view, name, False)
    row = snapshot.prefix_range(name).start
    for lo in range(0, len(view), chunk):
        try:
            return view.index(row, lo, min(lo + chunk, len(view)))
        except ValueError:
            continue
    return 0


def index_of(snapshot, view: View, name: bytes, by_name: bool = True) -> int:
    """Position in ``view`` of ``name``, or of the first row after it (for keeping the cursor in place).
    ``by_name`` False: the view is in another order (a sort); the row is looked for (0 if not there)."""
    if not len(view):
        return 0
    if not by_name:
        row = snapshot.prefix_range(name).start
        try:
            return view.index(row)
        except ValueError:
            return 0
    if isinstance(view, range):
        row = snapshot.prefix_range(name).start
        if row < view.start:
            return 0
        return min(row - view.start, len(view) - 1)
    lo, hi = 0, len(view)
    name_at = snapshot.name_at
    while lo < hi:
        mid = (lo + hi) // 2
        if name_at(view[mid]) < name:
            lo = mid + 1
        else:
            hi = mid
    return min(lo, len(view) - 1)
