"""The orders of the TUI's rows other than by name: by version (``--sort=version:refname``) and newest
first by committer date (``--sort=-committerdate``), both as git orders them, equal ones by name.

An order of a million rows is computed in a worker while the UI thread paints: no step of it is one C
call over every row (the UI would wait for the GIL that long), and it can be cancelled between chunks
(the next ``S`` supersedes it).
"""

from __future__ import annotations

import struct
import sys
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable
from functools import cmp_to_key, partial
from itertools import repeat
from operator import add, and_, itemgetter, mul
from operator import neg as neg_

from .order import version_key, versioncmp

ROWS_CHUNK = 1 << 13  # rows sorted at once, between cancellation checks


_TIE = struct.Struct(">xI")  # NUL, then a row's position: after a version key, unique and in order


def version_order(
    snap, rows, cancelled: Callable[[], bool] = lambda: False, suffixes: tuple[bytes, ...] = ()
) -> array | None:
    """``rows`` (in name order) as ``--sort=version:refname`` orders their names (equal ones by name;
    ``suffixes``: versionsort.suffix); None when cancelled. Each name's ``order.version_key`` (the
    CLI's, checked against versioncmp) ends with its position, a chunk at a time, each chunk sorted,
    and the chunks merged as ``date_order``'s are: one bytes object per row, no tuple. With prerelease
    suffixes no such key exists: the names are compared by versioncmp itself (slower), the same way."""
    n = len(rows)
    runs = []
    by = cmp_to_key(partial(versioncmp, suffixes=suffixes)) if suffixes else None
    for lo in range(0, n, ROWS_CHUNK):
        if cancelled():
            return None
        hi = min(lo + ROWS_CHUNK, n)
        names = map(snap.name_at, rows[lo:hi])
        if by is None:
            runs.append(sorted(map(add, map(version_key, names), map(_TIE.pack, range(lo, hi)))))
        else:
            runs.append(sorted(zip(map(by, names), range(lo, hi), strict=True)))
        time.sleep(0)
    return _merged(runs, rows, _tie_positions if by is None else partial(map, itemgetter(1)), cancelled)


def _tie_positions(piece: list[bytes]) -> array:
    """The positions ``version_order`` ended its keys with."""
    got = array("I")
    got.frombytes(b"".join(map(itemgetter(slice(-4, None)), piece)))
    if sys.byteorder == "little":
        got.byteswap()
    return got


def date_order(times: array, per_row: array, rows, cancelled: Callable[[], bool] = lambda: False):
    """``rows`` ordered newest first by ``times[per_row[row]]`` (slot -1, a row naming no object: date
    0), equal times in the order of ``rows``; None when cancelled.

    Each row is one int, its time negated times ``m`` plus its position in ``rows`` (unique, so a sort
    of them is stable, and the position is the low bits), sorted a chunk at a time and merged
    (``_merged``)."""
    n = len(rows)
    m = 1 << max(1, n.bit_length())
    whole = isinstance(rows, range) and rows.start == 0 and rows.step == 1 and len(per_row) == n
    # each slot's time, negated, times m (a row's key is that plus its position): 64-bit cells (close
    # together in memory, unlike a list's ints), or Python ints when a time far in the future leaves them
    cells = max(times, default=0) <= ((1 << 63) - 1) // m
    negm: array | list[int] = array("q") if cells else []
    for lo in range(0, len(times), ROWS_CHUNK):
        part = list(map(mul, map(neg_, times[lo : lo + ROWS_CHUNK]), repeat(m)))
        negm.extend(array("q", part) if cells else part)
    negm.append(0)  # (index -1)
    runs = []
    for lo in range(0, n, ROWS_CHUNK):
        if cancelled():
            return None
        hi = min(lo + ROWS_CHUNK, n)
        # (every row shown: row i is slot per_row[i], and no look-up of the row in ``rows``)
        slots = per_row[lo:hi] if whole else map(per_row.__getitem__, rows[lo:hi])
        runs.append(sorted(map(add, map(negm.__getitem__, slots), range(lo, hi))))
        time.sleep(0)
    return _merged(runs, None if whole else rows, lambda piece: map(and_, piece, repeat(m - 1)), cancelled)


def _merged(runs: list[list], rows, positions, cancelled: Callable[[], bool]) -> array | None:
    """The sorted ``runs`` (each of unique items) as one order: ``rows[p]`` for each item's position
    ``p`` (``positions`` of a piece of items gives theirs; ``rows`` None: the positions themselves).

    No C call over every row -- the UI would wait for the GIL that long -- and no Python code per row:
    each run is cut by bisection at boundaries sampled from all of them, and the pieces that fall
    between two boundaries are sorted together (a run's size, whatever the keys' spread)."""
    step = max(1, ROWS_CHUNK // max(1, len(runs)))
    cuts = sorted(x for run in runs for x in run[step - 1 :: step])[:: max(1, len(runs))]
    out = array("I")
    for cut in [*cuts, None]:
        if cancelled():
            return None
        piece = []
        for run in runs:  # (each run gives up what it hands over: its items are freed a piece at a
            end = len(run) if cut is None else bisect_right(run, cut)  # time, not all at the end)
            piece += run[:end]
            del run[:end]
        piece.sort()
        got = positions(piece)
        # (an array made of a list: extending one by an iterator converts each item the slow way)
        out.extend(array("I", list(got if rows is None else map(rows.__getitem__, got))))
        del piece
        time.sleep(0)
    return out
