"""A pack's ``.idx``: which objects a pack holds and where (gitformat-pack(5), versions 1 and 2).

Lookups are a binary search inside the fanout bucket of the first byte, straight on the mapped file: no
table of names is built, so opening an index costs its header whatever the pack's size. Every count and
offset is checked against the file's length before use, so a truncated or hostile index is a
``CorruptStore`` naming the file and the byte, never an IndexError or a huge allocation.
"""

from __future__ import annotations

import struct

from ..errors import CorruptStore
from .chunks import bisect_ids, hex_ids, read_fanout

_V2_MAGIC = b"\377tOc"
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


class PackIndex:
    """The index of one pack, over ``data`` (bytes or a read-only mapping of the ``.idx`` file)."""

    __slots__ = (
        "path",
        "data",
        "rawsz",
        "count",
        "version",
        "_fanout",
        "_names",
        "_offsets",
        "_big",
        "_stride",
        "_table",
    )

    def __init__(self, path: str, data, rawsz: int) -> None:
        self.path = path
        self.data = data
        self.rawsz = rawsz
        self._table: dict[bytes, int] | None = None
        size = len(data)
        if data[:4] == _V2_MAGIC:
            if size < 8 + 1024 or _U32.unpack_from(data, 4)[0] != 2:
                raise CorruptStore(path, "unsupported pack index version", 4)
            self.version = 2
            fan_at = 8
        else:
            self.version = 1
            fan_at = 0
        if size < fan_at + 1024 + 2 * rawsz:
            raise CorruptStore(path, "pack index too short", 0)
        fanout = read_fanout(path, data, fan_at, "pack index")
        n = fanout[255]
        self.count = n
        self._fanout = fanout
        body = fan_at + 1024
        if self.version == 1:
            # entries of (4-byte offset, name), then the two checksums
            if size != body + n * (4 + rawsz) + 2 * rawsz:
                raise CorruptStore(path, "pack index size does not match its object count", 0)
            self._stride = 4 + rawsz
            self._names = body + 4
            self._offsets = body
            self._big = 0
            return
        self._stride = rawsz
        self._names = body
        self._offsets = body + n * rawsz + n * 4  # names, then one CRC32 per object, then the offsets
        self._big = self._offsets + n * 4
        least = self._big + 2 * rawsz
        if size < least or (size - least) % 8 or (size - least) // 8 > n:
            raise CorruptStore(path, "pack index size does not match its object count", 0)

    def find(self, raw: bytes) -> int | None:
        """The position in the index of the object with raw id ``raw``, or None."""
        i, found = self.bisect(raw)
        return i if found else None

    def bisect(self, raw: bytes) -> tuple[int, bool]:
        """(where ``raw`` is or would be inserted, whether it is there)."""
        return bisect_ids(self.data, self._fanout, self._names, self._stride, self.rawsz, raw)

    def name(self, i: int) -> bytes:
        at = self._names + i * self._stride
        return bytes(self.data[at : at + self.rawsz])

    def offset(self, i: int) -> int:
        """The pack offset of the ``i``-th object (64-bit offsets through the large-offset table)."""
        at = self._offsets + i * (self._stride if self.version == 1 else 4)
        off = _U32.unpack_from(self.data, at)[0]
        if self.version == 2 and off & 0x80000000:
            big = self._big + (off & 0x7FFFFFFF) * 8
            if big + 8 > len(self.data) - 2 * self.rawsz:
                raise CorruptStore(self.path, "large pack offset out of range", at)
            off = _U64.unpack_from(self.data, big)[0]
        return off

    def lookup(self, raw: bytes) -> int | None:
        """The pack offset of the object ``raw``, or None."""
        if self._table is not None:
            return self._table.get(raw)
        i = self.find(raw)
        return None if i is None else self.offset(i)

    def lookup_many(self, raws: list[bytes]) -> list[int | None]:
        """The pack offsets of ``raws`` (None where absent), through one dict when they are many."""
        if len(raws) * 8 > self.count:
            self.build_table()
        if self._table is not None:
            return list(map(self._table.get, raws))
        return [self.lookup(raw) for raw in raws]

    def offsets(self, lo: int = 0, hi: int | None = None) -> list[int]:
        """The pack offsets of the objects ``lo`` to ``hi`` (all by default), in index (name) order."""
        hi = self.count if hi is None else hi
        if self.version == 1:
            return [_U32.unpack_from(self.data, self._offsets + i * self._stride)[0] for i in range(lo, hi)]
        small = struct.unpack_from(f">{hi - lo}I", self.data, self._offsets + lo * 4)
        if not small or max(small) < 0x80000000:
            return list(small)
        return [self.offset(i) for i in range(lo, hi)]

    def span(self, first: int, last: int) -> tuple[int, int]:
        """The positions (from, to) of the objects whose id's first byte is ``first`` to ``last``."""
        return (self._fanout[first - 1] if first else 0), self._fanout[last]

    def build_table(self) -> None:
        """Turn lookups into one dict probe each: worth it when a caller is about to look up many
        objects (a column of 1M refs), not for one."""
        if self._table is not None:
            return
        data, base, w, stride = bytes(self.data), self._names, self.rawsz, self._stride
        names = [data[base + i * stride : base + i * stride + w] for i in range(self.count)]
        self._table = dict(zip(names, self.offsets(), strict=True))

    def hex_columns(self, first: int = 0, last: int = 255) -> tuple[list[bytes], list[int]]:
        """(lowercase hex ids, pack offsets) of the objects whose id's first byte is ``first`` to
        ``last`` (every object by default), in index order: for a caller about to look up a good part
        of them by the hex ids it holds (a column of ref values), which then tests each of these for
        membership in its own set rather than building a table of them all (the names are turned into
        hex in one C-level call). Two processes that split their ids at a first byte make half each."""
        lo, hi = self.span(first, last)
        if hi <= lo:
            return [], []
        return self.hex_names(lo, hi), self.offsets(lo, hi)

    def hex_names(self, lo: int = 0, hi: int | None = None) -> list[bytes]:
        """The ids of positions ``lo`` to ``hi`` (the end by default), in lowercase hex."""
        return hex_ids(self.data, self._names, self._stride, self.rawsz, lo, self.count if hi is None else hi)
