"""The distinct object ids of a snapshot's rows, and which of them each row shows, found by numpy.

Rows share tips heavily (a million refs over a few hundred thousand commits): a dict look-up per row of a
fresh id, hashed and compared at a random place in memory, was most of the date order's time at launch.
Here each id's first 64 bits are its key, one numpy sort (the GIL let go) groups the rows, and the rest of
every id is compared with its group's first, so two ids that share 64 bits (a collision anyone can make
with 2^32 hashes) are never taken for one: ``group_rows`` then says so and the caller looks the rows up.
"""

from __future__ import annotations

from binascii import hexlify
from collections.abc import Callable, Iterable

_WORD = 16  # hex digits in a 64-bit word
_IDS_CHUNK = 1 << 14  # distinct ids spelt in hex at once


def group_rows(
    chunks: Iterable[list[bytes | None]], rows: int, hexsz: int, cancelled: Callable[[], bool] = lambda: False
):
    """(distinct ids in the order rows first show them, each row's index among them as a numpy int32
    array; -1: a row naming no object) of the ``rows`` rows whose ids ``chunks`` gives a list at a time.
    None when cancelled, or when an id is not ``hexsz`` lower-case hex digits or two distinct ids share
    their first 64 bits: the caller's per-row look-up then decides.

    Memory is the ids' own words and a few 4- or 8-byte columns of the rows, freed as soon as used (the
    TUI's whole peak is on a budget)."""
    import numpy as np

    digits = np.full(256, 255, np.uint8)
    digits[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)
    words = -(-hexsz // _WORD)
    pad = words * _WORD - hexsz
    ids = np.empty((rows, words), np.uint64)  # each named row's id as words, the first its key
    none: list[int] = []
    n = count = 0
    for oids in chunks:
        if cancelled():
            return None
        size = len(oids)
        if None in oids:  # (a symref that ends at nothing: left out, its row -1 below)
            none += [n + k for k, o in enumerate(oids) if o is None]
            oids = [o for o in oids if o is not None]
        m = len(oids)
        text = b"".join(oids)
        if len(text) != m * hexsz or count + m > rows:
            return None
        nib = digits[np.frombuffer(text, np.uint8)].reshape(m, hexsz)
        if m and nib.max() > 15:
            return None
        if pad:
            nib = np.pad(nib, ((0, 0), (0, pad)))
        ids[count : count + m] = ((nib[:, 0::2] << 4) | nib[:, 1::2]).view(">u8")
        count += m
        n += size
    ids = ids[:count]
    if not count:
        return [], np.full(n, -1, np.int32)
    # the groups: one stable sort of the keys; a group's first row in that order is its earliest
    perm = np.argsort(np.ascontiguousarray(ids[:, 0]), kind="stable")
    key = ids[perm, 0]
    new = np.empty(count, bool)
    new[0] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    del key
    first = perm[np.flatnonzero(new)]
    inv = np.empty(count, np.int32)
    inv[perm] = np.cumsum(new, dtype=np.int32) - 1
    del perm, new
    for w in range(1, words):  # (the rest of every id is its group's first id's, a block at a time)
        for lo in range(0, count, _IDS_CHUNK * 4):
            hi = lo + _IDS_CHUNK * 4
            if not np.array_equal(ids[first[inv[lo:hi]], w], ids[lo:hi, w]):
                return None
    seen = np.argsort(first, kind="stable")  # the groups in the order the rows first show them
    rank = np.empty(len(seen), np.int32)
    rank[seen] = np.arange(len(seen), dtype=np.int32)
    group = rank[inv]
    del inv
    if none:
        named = np.ones(n, bool)
        named[np.asarray(none, np.int64)] = False
        full = np.full(n, -1, np.int32)
        full[named] = group
        group = full
    distinct: list[bytes] = []
    ordered = ids[first[seen]].astype(">u8")
    del ids
    for lo in range(0, len(ordered), _IDS_CHUNK):  # (a C call over every id would hold the GIL long)
        text = hexlify(ordered[lo : lo + _IDS_CHUNK].tobytes(), b" ", words * _WORD // 2).split()
        distinct += text if not pad else [h[:hexsz] for h in text]
    return distinct, group
