"""The commit-graph (``objects/info/commit-graph``, or a chain under ``objects/info/commit-graphs/``):
parents, committer time and generation of commits without inflating them (gitformat-commit-graph(5)).

Positions are global across a chain, the base graph first, as git numbers them; a graph layer is
mapped, not read, and each lookup is one binary search in one layer's fanout bucket, newest layer first.
Every chunk is bounds-checked at open; a parent position beyond the chain is a ``CorruptStore``.
"""

from __future__ import annotations

import os
import struct
from binascii import hexlify
from itertools import repeat
from operator import add, and_, itemgetter, mul

from ..errors import CorruptStore
from ..fileio import map_regular, read_regular
from .chunks import bisect_ids, need, read_chunks, read_fanout

_CDAT_TAIL = struct.Struct(">IIII")
_CDAT_WHEN = struct.Struct(">Q")  # an entry's last two words: generation and time's top bits, time's low
_WHEN_MASK = (1 << 34) - 1
_U32 = struct.Struct(">I")
_HASH_VERSION = {1: 20, 2: 32}
PARENT_NONE = 0x70000000
_EXTRA_EDGES = 0x80000000
_LAST_EDGE = 0x80000000
POSITIONS_BLOCK = 8192  # commits per block of hex_positions (a few ms: the GIL is free between blocks)


class _Layer:
    __slots__ = ("path", "data", "rawsz", "base", "count", "fanout", "oids", "cdat", "edges", "edges_end")

    def __init__(self, path: str, data, rawsz: int, base: int) -> None:
        self.path = path
        self.data = data
        self.rawsz = rawsz
        self.base = base  # commits in the layers below
        if len(data) < 8 + rawsz or data[:4] != b"CGPH":
            raise CorruptStore(path, "not a commit-graph", 0)
        if data[4] != 1:
            raise CorruptStore(path, f"unsupported commit-graph version {data[4]}", 4)
        if _HASH_VERSION.get(data[5]) != rawsz:
            raise CorruptStore(path, "commit-graph hash does not match the repository's", 5)
        chunks = read_chunks(path, data, 8, data[6], rawsz)
        fstart, _ = need(path, chunks, b"OIDF", 1024)
        self.fanout = read_fanout(path, data, fstart, "commit-graph")
        n = self.count = self.fanout[255]
        self.oids, _ = need(path, chunks, b"OIDL", n * rawsz)
        self.cdat, _ = need(path, chunks, b"CDAT", n * (rawsz + 16))
        self.edges, self.edges_end = chunks.get(b"EDGE", (0, 0))

    def find(self, raw: bytes) -> int | None:
        i, found = bisect_ids(self.data, self.fanout, self.oids, self.rawsz, self.rawsz, raw)
        return i if found else None


class CommitGraph:
    """The layers of a repository's commit-graph, base first."""

    __slots__ = ("layers", "total", "rawsz")

    def __init__(self, layers: list[_Layer], rawsz: int) -> None:
        self.layers = layers
        self.rawsz = rawsz
        self.total = sum(layer.count for layer in layers)

    def position(self, raw: bytes) -> int | None:
        """The global position of the commit ``raw``, or None when no layer has it."""
        for layer in reversed(self.layers):
            i = layer.find(raw)
            if i is not None:
                return layer.base + i
        return None

    def hex_positions(self) -> dict[bytes, int]:
        """{hex id: position} of every commit: one dict for a caller about to look up many ids it holds in
        hex (a column of ref values). Built a block of names at a time, each block a few C-level calls:
        one call over a whole layer holds the GIL long enough to stop the TUI's frames, since the caller
        is often a worker thread."""
        out: dict[bytes, int] = {}
        w = self.rawsz
        step = POSITIONS_BLOCK
        for layer in self.layers:
            for i in range(0, layer.count, step):
                n = min(step, layer.count - i)
                at = layer.oids + i * w
                names = hexlify(layer.data[at : at + n * w], b" ", w).split()
                start = layer.base + i
                out.update(zip(names, range(start, start + n), strict=True))
        return out

    def _at(self, pos: int) -> tuple[_Layer, int]:
        for layer in self.layers:
            if pos < layer.base + layer.count:
                return layer, pos - layer.base
        raise CorruptStore(self.layers[-1].path, f"commit-graph position {pos} out of range")

    def oid(self, pos: int) -> bytes:
        layer, i = self._at(pos)
        at = layer.oids + i * self.rawsz
        return bytes(layer.data[at : at + self.rawsz])

    def times(self, positions: list[int]) -> list[int]:
        """The committer time of the commit at each of ``positions`` (``commit(p)[0]``) by C-level
        passes over the list: the caller is a worker asking for a whole table's times, and a Python
        call per commit cost it seconds of the GIL the UI waits for. A chain goes commit by commit."""
        if len(self.layers) != 1:
            return [self.commit(p)[0] for p in positions]
        layer = self.layers[0]
        if positions and not 0 <= min(positions) <= max(positions) < layer.count:
            raise CorruptStore(layer.path, "commit-graph position out of range")
        at = map(add, map(mul, positions, repeat(self.rawsz + 16)), repeat(layer.cdat + self.rawsz + 8))
        got = map(_CDAT_WHEN.unpack_from, repeat(layer.data), at)
        return list(map(and_, map(itemgetter(0), got), repeat(_WHEN_MASK)))

    def commit(self, pos: int) -> tuple[int, tuple[int, ...], int]:
        """(committer time, parent positions, topological generation) of the commit at ``pos``."""
        layer, i = self._at(pos)
        at = layer.cdat + i * (self.rawsz + 16) + self.rawsz
        p1, p2, hi, lo = _CDAT_TAIL.unpack_from(layer.data, at)
        when = ((hi & 3) << 32) | lo
        generation = hi >> 2
        if p1 == PARENT_NONE:
            return when, (), generation
        parents = [p1]
        if p2 & _EXTRA_EDGES:
            e = layer.edges + (p2 & 0x7FFFFFFF) * 4
            while True:
                if not layer.edges or e + 4 > layer.edges_end:
                    raise CorruptStore(layer.path, "commit-graph edge list out of range", at)
                v = _U32.unpack_from(layer.data, e)[0]
                parents.append(v & 0x7FFFFFFF)
                if v & _LAST_EDGE:
                    break
                e += 4
        elif p2 != PARENT_NONE:
            parents.append(p2)
        for p in parents:
            if p >= self.total:
                raise CorruptStore(layer.path, f"commit-graph parent position {p} out of range", at)
        return when, tuple(parents), generation


def open_commit_graph(objects_dir: str, rawsz: int) -> CommitGraph | None:
    """The commit-graph of ``objects_dir``: the chain when there is one (git prefers it), else the single
    file, else None."""
    info = os.path.join(objects_dir, "info")
    chain = os.path.join(info, "commit-graphs", "commit-graph-chain")
    try:
        listing, _ = read_regular(chain, 1 << 20)
    except (FileNotFoundError, NotADirectoryError):
        listing = None
    paths = []
    if listing is not None:
        for line in listing.split(b"\n"):
            if not line:
                continue
            name = line.decode("ascii", "replace")
            if len(name) != rawsz * 2 or any(c not in "0123456789abcdef" for c in name):
                raise CorruptStore(chain, f"bad commit-graph chain entry {name[:80]!r}")
            paths.append(os.path.join(info, "commit-graphs", f"graph-{name}.graph"))
    else:
        single = os.path.join(info, "commit-graph")
        if not os.path.exists(single):
            return None
        paths.append(single)
    layers = []
    base = 0
    for path in paths:
        try:
            data = map_regular(path)
        except (FileNotFoundError, NotADirectoryError):
            raise CorruptStore(chain, f"commit-graph layer {os.path.basename(path)} is missing") from None
        layer = _Layer(path, data, rawsz, base)
        layers.append(layer)
        base += layer.count
    return CommitGraph(layers, rawsz) if layers else None
