"""What git's sorted object-id tables share: the chunk table of the multi-pack-index and the commit-graph
(gitformat-chunk(5)), and the 256-entry fanout and binary search of those two and the pack index.

A chunked file is a header, a table of (4-byte id, 8-byte offset) rows ending in a zero id, and chunks
laid end to end; each reader asks for its chunks by id and gets their bounds, checked against the file.
Every id table is sorted and fanned out by its first byte; one search serves all three.
"""

from __future__ import annotations

import struct
from binascii import hexlify

from ..errors import CorruptStore

_ROW = struct.Struct(">4sQ")
_FANOUT = struct.Struct(">256I")


def read_fanout(path: str, data, at: int, what: str) -> tuple[int, ...]:
    """The 256 cumulative counts at ``at``, refused unless they never decrease."""
    fanout = _FANOUT.unpack_from(data, at)
    if any(fanout[i] > fanout[i + 1] for i in range(255)):
        raise CorruptStore(path, f"{what} fanout not monotonic", at)
    return fanout


def bisect_ids(
    data, fanout: tuple[int, ...], base: int, stride: int, width: int, raw: bytes
) -> tuple[int, bool]:
    """(where ``raw`` is or would be inserted among the ids at ``base``, ``stride`` bytes apart, whether
    it is there), searching only the fanout bucket of its first byte, straight on the mapped file."""
    b = raw[0]
    lo = fanout[b - 1] if b else 0
    hi = fanout[b]
    while lo < hi:
        mid = (lo + hi) >> 1
        at = base + mid * stride
        name = data[at : at + width]
        if name < raw:
            lo = mid + 1
        elif name > raw:
            hi = mid
        else:
            return mid, True
    return lo, False


def hex_ids(data, base: int, stride: int, width: int, lo: int, hi: int) -> list[bytes]:
    """The ids ``lo`` to ``hi`` of a sorted table (at ``base``, ``stride`` bytes apart) in lowercase
    hex: by one C-level call when they lie end to end (a space put between each two, then split)."""
    if hi <= lo:
        return []
    if stride == width:
        return hexlify(data[base + lo * width : base + hi * width], b" ", width).split()
    return [
        bytes(data[at : at + width]).hex().encode()
        for at in range(base + lo * stride, base + hi * stride, stride)
    ]


def read_chunks(path: str, data, table_at: int, count: int, trailer: int) -> dict[bytes, tuple[int, int]]:
    """{chunk id: (start, end)} of the ``count`` chunks whose table starts at ``table_at``; the chunks
    must lie between the table and the ``trailer`` bytes of checksum at the end."""
    end_of_table = table_at + (count + 1) * _ROW.size
    limit = len(data) - trailer
    if end_of_table > limit:
        raise CorruptStore(path, "chunk table runs past the end of the file", table_at)
    rows = [_ROW.unpack_from(data, table_at + i * _ROW.size) for i in range(count + 1)]
    if rows[-1][0] != b"\0\0\0\0":
        raise CorruptStore(path, "chunk table not terminated", end_of_table - _ROW.size)
    out = {}
    for i in range(count):
        cid, start = rows[i]
        stop = rows[i + 1][1]
        if not end_of_table <= start <= stop <= limit:
            raise CorruptStore(
                path, f"chunk {cid.decode('latin-1')!r} out of bounds", table_at + i * _ROW.size
            )
        out.setdefault(cid, (start, stop))
    return out


def need(path: str, chunks: dict, cid: bytes, size: int | None = None) -> tuple[int, int]:
    """The bounds of a required chunk, of exactly ``size`` bytes when given."""
    got = chunks.get(cid)
    if got is None:
        raise CorruptStore(path, f"missing required chunk {cid.decode('latin-1')}")
    if size is not None and got[1] - got[0] != size:
        raise CorruptStore(path, f"chunk {cid.decode('latin-1')} has the wrong size", got[0])
    return got
