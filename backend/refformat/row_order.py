"""The orders of the TUI's rows other than by name: by version (``--sort=version:refname``) and newest
first by committer date (``--sort=-committerdate``), both as git orders them, equal ones by name.

An order of a million rows is computed in a worker while the UI thread paints, and the UI must not wait
for the GIL meanwhile: the date order is one numpy sort, which lets go of it; the version order's keys
are bytes, so it is sorted a chunk at a time, with no C call over every row, and can be cancelled between
chunks (the next ``S`` supersedes it).
"""

from __future__ import annotations

import struct
import sys
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable
from functools import cmp_to_key, partial
from operator import add, itemgetter

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
    0), equal times in the order of ``rows``, as an ``array("I")``; None when cancelled.

    One stable sort of the negated times by numpy: it lets go of the GIL while it gathers and sorts, so
    the UI paints meanwhile, and at a million rows it takes a fraction of what the chunked sort and
    merge of Python ints took (``version_order`` still needs those: its keys are bytes)."""
    import numpy as np

    if cancelled():
        return None
    when = np.zeros(len(times) + 1, np.int64)  # (the last cell: slot -1)
    when[: len(times)] = np.frombuffer(times, np.int64)
    slots = np.frombuffer(per_row, np.int32)
    whole = isinstance(rows, range) and rows.start == 0 and rows.step == 1 and len(per_row) == len(rows)
    if whole:
        keys = when[slots]
    else:
        at = _positions(np, rows)
        keys = when[slots[at]]
    np.negative(keys, out=keys)
    order = np.argsort(keys, kind="stable")
    if cancelled():
        return None
    got = order if whole else at[order]
    return array("I", got.astype(np.uint32).tobytes())


def _positions(np, rows):
    """``rows`` (a range, an array of row numbers or a list) as a numpy array of indexes."""
    if isinstance(rows, range):
        return np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
    if isinstance(rows, array):
        return np.frombuffer(rows, np.dtype(rows.typecode)).astype(np.int64)
    return np.fromiter(rows, np.int64, len(rows))


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
