"""The multi-pack-index (``objects/pack/multi-pack-index``): one sorted table of the objects of many
packs, so a lookup is one binary search instead of one per pack (gitformat-pack(5)).

Only what lookups need is read: pack names, fanout, ids and offsets. A pack the midx names but that is
gone is skipped (git rewrites the midx lazily); the packs it does not cover keep their own ``.idx``.
"""

from __future__ import annotations

import struct

from ..errors import CorruptStore
from .chunks import bisect_ids, hex_ids, need, read_chunks, read_fanout

_OOFF = struct.Struct(">II")
_U64 = struct.Struct(">Q")
_HASH_VERSION = {1: 20, 2: 32}


class MultiPackIndex:
    __slots__ = ("path", "data", "rawsz", "packs", "count", "_fanout", "_names", "_offsets", "_large")

    def __init__(self, path: str, data, rawsz: int) -> None:
        self.path = path
        self.data = data
        self.rawsz = rawsz
        if len(data) < 12 + rawsz or data[:4] != b"MIDX":
            raise CorruptStore(path, "not a multi-pack-index", 0)
        version, hash_version, nchunks, nbase = data[4], data[5], data[6], data[7]
        if version not in (1, 2):
            raise CorruptStore(path, f"unsupported multi-pack-index version {version}", 4)
        if _HASH_VERSION.get(hash_version) != rawsz:
            raise CorruptStore(path, "multi-pack-index hash does not match the repository's", 5)
        if nbase:
            raise CorruptStore(path, "incremental multi-pack-index layers are not supported", 7)
        npacks = struct.unpack_from(">I", data, 8)[0]
        chunks = read_chunks(path, data, 12, nchunks, rawsz)
        pstart, pend = need(path, chunks, b"PNAM")
        names = bytes(data[pstart:pend]).split(b"\0")
        packs = [n.decode("utf-8", "surrogateescape") for n in names if n]
        if len(packs) != npacks:
            raise CorruptStore(path, "multi-pack-index pack names do not match its pack count", pstart)
        self.packs = packs
        fstart, _ = need(path, chunks, b"OIDF", 1024)
        self._fanout = read_fanout(path, data, fstart, "multi-pack-index")
        n = self._fanout[255]
        self.count = n
        self._names, _ = need(path, chunks, b"OIDL", n * rawsz)
        self._offsets, _ = need(path, chunks, b"OOFF", n * 8)
        self._large = chunks.get(b"LOFF")

    def lookup(self, raw: bytes) -> tuple[str, int] | None:
        """(name of the pack's ``.idx``, offset in the pack) of the object ``raw``, or None."""
        i, found = self.bisect(raw)
        return self._location(i) if found else None

    def name(self, i: int) -> bytes:
        at = self._names + i * self.rawsz
        return bytes(self.data[at : at + self.rawsz])

    def hex_names(self) -> list[bytes]:
        """Every id, in order, in lowercase hex."""
        return hex_ids(self.data, self._names, self.rawsz, self.rawsz, 0, self.count)

    def bisect(self, raw: bytes) -> tuple[int, bool]:
        """(where ``raw`` is or would be inserted, whether it is there)."""
        return bisect_ids(self.data, self._fanout, self._names, self.rawsz, self.rawsz, raw)

    def _location(self, i: int) -> tuple[str, int]:
        at = self._offsets + i * 8
        pack, off = _OOFF.unpack_from(self.data, at)
        if pack >= len(self.packs):
            raise CorruptStore(self.path, "multi-pack-index names a pack it does not list", at)
        if off & 0x80000000:
            if self._large is None:
                raise CorruptStore(self.path, "large offset without a LOFF chunk", at)
            big = self._large[0] + (off & 0x7FFFFFFF) * 8
            if big + 8 > self._large[1]:
                raise CorruptStore(self.path, "large offset out of range", at)
            off = _U64.unpack_from(self.data, big)[0]
        return self.packs[pack], off
