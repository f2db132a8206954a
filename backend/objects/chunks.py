"""The chunk table shared by the multi-pack-index and the commit-graph (gitformat-chunk(5)).

Both files are a header, a table of (4-byte id, 8-byte offset) rows ending in a zero id, and chunks laid
end to end; each reader asks for its chunks by id and gets their bounds, checked against the file.
"""

from __future__ import annotations

import struct

from ..errors import CorruptStore

_ROW = struct.Struct(">4sQ")


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
