"""Objects inside a packfile: entry headers, zlib streams and delta chains (gitformat-pack(5)).

An entry's header gives its type and the inflated size; every inflation is bounded by that size, and a
delta's declared sizes by its base and the entry, so a hostile pack costs at most what it claims and a lie
is a ``CorruptStore`` naming the pack and the offset. Chains are resolved iteratively (no recursion
limit to hit) with a small cache of bases, since the tips of many refs share bases.
"""

from __future__ import annotations

import zlib
from itertools import compress, repeat
from operator import add, and_, lshift, or_, rshift

from ..errors import CorruptStore

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7
TYPE_NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}

# git's own default for core.deltaBaseCacheLimit is 96 MiB; these are entries, each bounded by the
# object size limit below.
_BASE_CACHE = 256
# An object larger than this is not read into memory (its type and size still are): refscope reads
# commits and tags, and a tip that is a 2 GB blob must not cost 2 GB.
MAX_INFLATE = 64 << 20
_MAX_CHAIN = 10000  # git's pack.depth cap is 4095; deeper means a loop in a hostile pack
_ONE_SHOT = 1 << 13  # objects up to this size are inflated by one call (see ``Pack.read_many``)
# ``Pack.inflate_many``'s column way: a first header byte of a whole object (commit to tag) whose size
# goes on in a second byte, and a second byte that ends the header (sizes 16 to 2047: a commit or a tag)
_FIRST_OK = bytes(1 if 0x90 <= b < 0xD0 else 0 for b in range(256))
_LAST_OK = bytes(1 if b < 0x80 else 0 for b in range(256))
CHUNK = 4096  # objects inflated at a time by ``inflate_chunks``
_FLIP = bytes.maketrans(b"\0\1", b"\1\0")


class Pack:
    """One ``.pack`` file over ``data`` (bytes or a read-only mapping); ``ref_base`` resolves a
    REF_DELTA's base by raw id (the object database, which may find it in another pack)."""

    __slots__ = ("path", "data", "rawsz", "_cache")

    def __init__(self, path: str, data, rawsz: int) -> None:
        if len(data) < 12 + rawsz or data[:4] != b"PACK" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
            raise CorruptStore(path, "not a version 2 or 3 pack", 0)
        self.path = path
        self.data = data
        self.rawsz = rawsz
        self._cache: dict[int, tuple[int, bytes]] = {}

    def _header(self, off: int) -> tuple[int, int, int]:
        """(type, size, offset of the data) of the entry at ``off``."""
        data = self.data
        end = len(data) - self.rawsz
        if not 12 <= off < end:
            raise CorruptStore(self.path, "pack offset out of range", off)
        c = data[off]
        kind = (c >> 4) & 7
        size = c & 15
        shift = 4
        pos = off + 1
        while c & 0x80:
            if pos >= end or shift > 60:
                raise CorruptStore(self.path, "bad pack entry header", off)
            c = data[pos]
            pos += 1
            size |= (c & 0x7F) << shift
            shift += 7
        if kind in (0, 5):
            raise CorruptStore(self.path, f"bad pack entry type {kind}", off)
        return kind, size, pos

    def _inflate(self, pos: int, size: int, at: int, limit: int | None = None) -> bytes:
        """The ``size`` bytes of the zlib stream at ``pos``; with ``limit``, only its first ``limit``
        bytes (a delta's header). Input is handed to zlib in slices a little longer than deflate can
        need for that output (zlib copies what it leaves unconsumed, so the rest of the pack must not be
        in the slice), and one byte beyond ``size`` is asked for, so that a stream longer than its header
        says is caught without inflating the rest."""
        want = size if limit is None else min(size, limit)
        end = len(self.data) - self.rawsz
        step = want + (want >> 10) + 64  # stored blocks: 5 bytes a 64 KiB block, plus header and trailer
        view = memoryview(self.data)
        d = zlib.decompressobj()
        out = b""
        try:
            while pos < end:
                chunk = view[pos : min(end, pos + step)]
                pos += len(chunk)
                out += d.decompress(chunk, want + 1 - len(out))
                if d.eof or d.unconsumed_tail or len(out) > want or (limit is not None and len(out) >= want):
                    break
        except zlib.error as err:
            raise CorruptStore(self.path, f"bad zlib stream: {err}", at) from None
        if limit is not None and len(out) >= want:
            return out[:want]
        if len(out) != want or not d.eof:
            raise CorruptStore(self.path, "inflated size does not match the entry header", at)
        return out

    def info(self, off: int, ref_base) -> tuple[int, int]:
        """(type, size) of the object at ``off`` without inflating it (a delta: its header only)."""
        kind, size, pos = self._header(off)
        depth = 0
        target = None
        while kind in (OFS_DELTA, REF_DELTA):
            base, pos = self._base(kind, off, pos, ref_base)
            if target is None:
                head = self._inflate(pos, size, off, 20)
                _, p = _delta_size(head, 0, self.path, off)
                target, _ = _delta_size(head, p, self.path, off)
            if isinstance(base, tuple):  # in another pack: it knows its own type
                return base[0], target
            off = base
            kind, size, pos = self._header(off)
            depth += 1
            if depth > _MAX_CHAIN:
                raise CorruptStore(self.path, "delta chain too long", off)
        return kind, size if target is None else target

    def types(self, offsets: list[int], ref_base) -> list[int]:
        """The types of the objects at ``offsets``: a whole object's is the first byte of its entry;
        a delta's (or a damaged entry's: the same error) goes through ``info``."""
        data = self.data
        end = len(data) - self.rawsz
        out = []
        for off in offsets:
            if 12 <= off < end:
                kind = (data[off] >> 4) & 7
                if COMMIT <= kind <= TAG:
                    out.append(kind)
                    continue
            out.append(self.info(off, ref_base)[0])
        return out

    def infos(self, offsets: list[int], ref_base) -> list[tuple[int, int]]:
        """(type, size) of the objects at ``offsets``: a whole object's from its entry's header alone,
        a delta's (or a damaged entry's: the same error) through ``info``. What git's object-info
        calls read when only the type and size are asked for, so a damaged body is not met."""
        header = self._header
        out = []
        for off in offsets:
            kind, size, _ = header(off)
            out.append((kind, size) if COMMIT <= kind <= TAG else self.info(off, ref_base))
        return out

    def read_many(self, offsets: list[int], ref_base, apply=None) -> list:
        """(type name, content) of the objects at ``offsets`` (ascending: the pack is read front to back),
        or ``apply(type name, content)`` of each (what a caller keeps of a million objects)."""
        out: list = []
        for kinds, contents in self.inflate_chunks(offsets, ref_base):
            names = map(TYPE_NAMES.__getitem__, kinds)
            out += zip(names, contents, strict=True) if apply is None else map(apply, names, contents)
        return out

    def inflate_chunks(self, offsets: list[int], ref_base):
        """``inflate_many`` a few thousand objects at a time (what is inflated is used while it is in
        the cache, and a million objects' contents are never all held at once)."""
        for lo in range(0, len(offsets), CHUNK):
            yield self.inflate_many(offsets[lo : lo + CHUNK], ref_base)

    def inflate_many(self, offsets: list[int], ref_base) -> tuple[list[int], list[bytes]]:
        """(the types, the contents) of the objects at ``offsets``, as two columns.

        A commit or a tag of 16 to 2047 bytes (a two-byte entry header) is inflated by one
        ``zlib.decompress`` of a slice that holds its stream with room to spare (zlib stops at the
        stream's end and checks its checksum), and it must give exactly the size the header says; those
        are found, sliced and inflated by C-level passes over the column (``map``), no Python code per
        object, since a sort by date reads every tip of a million refs. Anything else -- a delta, a
        bigger object, a stream the slice cuts short, a size that does not match -- goes the careful way
        (``read``), which names the damage."""
        data = self.data
        end = len(data) - self.rawsz
        n = len(offsets)
        if not n or min(offsets) < 12 or max(offsets) + 2 >= end:
            return self._inflate_each(offsets, ref_base)
        first = bytes(map(data.__getitem__, offsets))
        last = bytes(map(data.__getitem__, map(add, offsets, repeat(1))))
        good = bytes(map(and_, first.translate(_FIRST_OK), last.translate(_LAST_OK)))
        every = b"\0" not in good
        offs = offsets if every else list(compress(offsets, good))
        if not every:
            first, last = bytes(compress(first, good)), bytes(compress(last, good))
        sizes = list(map(or_, map(and_, first, repeat(15)), map(lshift, last, repeat(4))))
        starts = list(map(add, offs, repeat(2)))
        stops = map(min, map(add, starts, map(add, sizes, repeat(64))), repeat(end))
        try:  # (a slice of the mapping is a copy of a few hundred bytes: cheaper than a memoryview's)
            contents = list(map(zlib.decompress, map(data.__getitem__, map(slice, starts, stops))))
        except zlib.error:  # one stream is bad: each object the careful way, which names it
            return self._inflate_each(offsets, ref_base)
        kinds = list(map(and_, map(rshift, first, repeat(4)), repeat(7)))
        if list(map(len, contents)) != sizes:
            for i, (got, size) in enumerate(zip(contents, sizes, strict=True)):
                if len(got) != size:
                    kinds[i], contents[i] = self.read(offs[i], ref_base)
        if every:
            return kinds, contents
        slow_kinds, slow_contents = self._inflate_each(
            list(compress(offsets, good.translate(_FLIP))), ref_base
        )
        out_kinds: list[int] = []
        out_contents: list[bytes] = []
        fast, slow = (
            iter(zip(kinds, contents, strict=True)),
            iter(zip(slow_kinds, slow_contents, strict=True)),
        )
        for ok in good:
            k, c = next(fast) if ok else next(slow)
            out_kinds.append(k)
            out_contents.append(c)
        return out_kinds, out_contents

    def _inflate_each(self, offsets: list[int], ref_base) -> tuple[list[int], list[bytes]]:
        """``inflate_many`` one object at a time (a small whole object still by one ``decompress``)."""
        data = self.data
        view = memoryview(data)
        end = len(data) - self.rawsz
        decompress = zlib.decompress
        error = zlib.error
        kinds: list[int] = []
        contents: list[bytes] = []
        for off in offsets:
            c = data[off] if 12 <= off < end else 0
            kind = (c >> 4) & 7
            size = c & 15
            pos = off + 1
            shift = 4
            while c & 0x80 and pos < end and shift < 32:
                c = data[pos]
                pos += 1
                size |= (c & 0x7F) << shift
                shift += 7
            if c & 0x80 or not COMMIT <= kind <= TAG or size > _ONE_SHOT:
                kind, content = self.read(off, ref_base)
            else:
                stop = pos + size + 64
                try:
                    content = decompress(view[pos : stop if stop < end else end])
                except error:
                    content = b""
                if len(content) != size or not content:
                    kind, content = self.read(off, ref_base)
            kinds.append(kind)
            contents.append(content)
        return kinds, contents

    def read(self, off: int, ref_base) -> tuple[int, bytes]:
        """(type, content) of the object at ``off``, deltas applied."""
        hit = self._cache.get(off)
        if hit is not None:
            return hit
        chain = []  # (offset, delta data position, delta entry size), the object first
        kind, size, pos = self._header(off)
        at = off
        base_obj = None
        while kind in (OFS_DELTA, REF_DELTA):
            base, dpos = self._base(kind, at, pos, ref_base)
            chain.append((at, dpos, size))
            if isinstance(base, tuple):
                base_obj = base
                break
            if len(chain) > _MAX_CHAIN:
                raise CorruptStore(self.path, "delta chain too long", at)
            hit = self._cache.get(base)
            if hit is not None:
                base_obj = hit
                break
            at = base
            kind, size, pos = self._header(at)
        if base_obj is None:
            if size > MAX_INFLATE:
                raise CorruptStore(self.path, f"object too large to read ({size} bytes)", at)
            base_obj = (kind, self._inflate(pos, size, at))
            self._remember(at, base_obj)
        kind, content = base_obj
        for at, dpos, dsize in reversed(chain):
            if dsize > MAX_INFLATE:
                raise CorruptStore(self.path, f"delta too large to read ({dsize} bytes)", at)
            content = apply_delta(content, self._inflate(dpos, dsize, at), self.path, at)
            self._remember(at, (kind, content))
        return kind, content

    def _remember(self, off: int, obj: tuple[int, bytes]) -> None:
        cache = self._cache
        if len(cache) >= _BASE_CACHE:
            cache.pop(next(iter(cache)))
        cache[off] = obj

    def _base(self, kind: int, off: int, pos: int, ref_base):
        """(the base: its offset in this pack, or (type, content) from elsewhere; position of the delta
        data)."""
        data = self.data
        end = len(data) - self.rawsz
        if kind == REF_DELTA:
            if pos + self.rawsz > end:
                raise CorruptStore(self.path, "truncated delta base id", off)
            raw = bytes(data[pos : pos + self.rawsz])
            found = ref_base(raw, self)
            if found is None:
                raise CorruptStore(self.path, f"delta base {raw.hex()} missing", off)
            return found, pos + self.rawsz
        if pos >= end:
            raise CorruptStore(self.path, "truncated delta offset", off)
        c = data[pos]
        pos += 1
        rel = c & 0x7F
        while c & 0x80:
            if pos >= end or rel > 1 << 56:
                raise CorruptStore(self.path, "bad delta offset", off)
            c = data[pos]
            pos += 1
            rel = ((rel + 1) << 7) | (c & 0x7F)
        if not 0 < rel <= off - 12:
            raise CorruptStore(self.path, "delta base offset out of range", off)
        return off - rel, pos


def _delta_size(delta: bytes, pos: int, path: str, at: int) -> tuple[int, int]:
    size = 0
    shift = 0
    while True:
        if pos >= len(delta) or shift > 63:
            raise CorruptStore(path, "truncated delta header", at)
        c = delta[pos]
        pos += 1
        size |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return size, pos


def apply_delta(base: bytes, delta: bytes, path: str, at: int) -> bytes:
    """The object ``delta`` makes of ``base`` (copy and insert instructions), every range checked."""
    src, pos = _delta_size(delta, 0, path, at)
    if src != len(base):
        raise CorruptStore(path, "delta base size mismatch", at)
    dst, pos = _delta_size(delta, pos, path, at)
    if dst > MAX_INFLATE:
        raise CorruptStore(path, f"object too large to read ({dst} bytes)", at)
    out = bytearray()
    n = len(delta)
    while pos < n:
        op = delta[pos]
        pos += 1
        if op & 0x80:
            off = size = 0
            for bit, shift in ((1, 0), (2, 8), (4, 16), (8, 24)):
                if op & bit:
                    if pos >= n:
                        raise CorruptStore(path, "truncated delta copy", at)
                    off |= delta[pos] << shift
                    pos += 1
            for bit, shift in ((16, 0), (32, 8), (64, 16)):
                if op & bit:
                    if pos >= n:
                        raise CorruptStore(path, "truncated delta copy", at)
                    size |= delta[pos] << shift
                    pos += 1
            size = size or 0x10000
            if off + size > len(base) or len(out) + size > dst:
                raise CorruptStore(path, "delta copy out of range", at)
            out += base[off : off + size]
        elif op:
            if pos + op > n or len(out) + op > dst:
                raise CorruptStore(path, "delta insert out of range", at)
            out += delta[pos : pos + op]
            pos += op
        else:
            raise CorruptStore(path, "delta opcode 0", at)
    if len(out) != dst:
        raise CorruptStore(path, "delta result size mismatch", at)
    return bytes(out)
