"""The orders of the TUI's rows other than by name: by version (``--sort=version:refname``) and newest
first by committer date (``--sort=-committerdate``), both as git orders them, equal ones by name.

A date order of a million rows is computed in a worker while the UI thread paints: no step of it is one
C call over every row (the UI would wait for the GIL that long), and none is Python code per row.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_right
from collections.abc import Callable
from functools import cmp_to_key
from itertools import repeat
from operator import add, and_, mul
from operator import neg as neg_

from .order import versioncmp

ROWS_CHUNK = 1 << 13  # rows sorted at once, between cancellation checks


def version_order(snap, rows: list[int]) -> list[int]:
    """``rows`` (in name order) as ``--sort=version:refname`` orders their names (equal ones by name)."""
    names = {i: snap.name_at(i) for i in rows}

    def cmp(a: int, b: int) -> int:
        return versioncmp(names[a], names[b]) or (a > b) - (a < b)

    return sorted(rows, key=cmp_to_key(cmp))


def date_order(times: array, per_row: array, rows, cancelled: Callable[[], bool] = lambda: False):
    """``rows`` ordered newest first by ``times[per_row[row]]`` (slot -1, a row naming no object: date
    0), equal times in the order of ``rows``; None when cancelled.

    Each row is one int, its time negated times ``m`` plus its position in ``rows`` (unique, so a sort
    of them is stable, and the position is the low bits). No C call over every row -- the UI would
    wait for the GIL that long -- and no Python code per row: the keys are sorted a chunk at a time,
    each sorted chunk cut by bisection at boundaries sampled from all of them, and the pieces that fall
    between two boundaries sorted together (a chunk's size, whatever the dates' spread)."""
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
    step = max(1, ROWS_CHUNK // max(1, len(runs)))
    cuts = sorted(x for run in runs for x in run[step - 1 :: step])[:: max(1, len(runs))]
    out = array("I")
    mask = m - 1
    for cut in [*cuts, None]:
        if cancelled():
            return None
        piece = []
        for run in runs:  # (each run gives up what it hands over: its ints are freed a piece at a
            end = len(run) if cut is None else bisect_right(run, cut)  # time, not all at the end)
            piece += run[:end]
            del run[:end]
        piece.sort()
        got = map(and_, piece, repeat(mask))  # (positions in ``rows``)
        # (an array made of a list: extending one by an iterator converts each item the slow way)
        out.extend(array("I", list(got if whole else map(rows.__getitem__, got))))
        del piece
        time.sleep(0)
    return out
