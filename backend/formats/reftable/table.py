"""One reftable file, memory-mapped and decoded lazily.

Opening reads the header and footer only (and checks them as git does: magic, version, footer = header,
hash id, CRC-32). Blocks are parsed when first needed and cached in the Table (decoded ref blocks in a small
LRU, so random access over a huge table stays bounded in memory while sequential scans never cache).

Over 500 lines, on purpose: this is one class, the table's whole reading API (header and footer checks,
the block caches, ref, log and obj access through the indexes, whole-file walks), as git's reftable/table.c
is one file; its parts share the caches and the section checks, and split apart they would reach into
each other's private state. How the bytes are obtained is apart (mapping.py), so is all record decoding
(block.py, record.py).
"""

# ruff: noqa: SIM105  (contextlib pulls in functools and types: ~1.5 ms on every reftable CLI run)
from __future__ import annotations

import os
from binascii import crc32
from bisect import bisect_left
from collections import OrderedDict, namedtuple
from collections.abc import Iterator

from ...errors import CorruptStore, UnsupportedFormat
from ...fileio import open_regular, unreadable
from ...model import HASH_RAWSZ
from .block import (
    Block,
    RefBlock,
    decode_index_block,
    decode_ref_block,
    first_key,
    iter_raw_records,
    parse_block,
)
from .mapping import table_contents
from .record import BLOCK_INDEX, BLOCK_LOG, BLOCK_OBJ, BLOCK_REF, LogRecord, ObjRecord, RefRecord

HEADER_SIZE = {1: 24, 2: 28}
FOOTER_SIZE = {1: 68, 2: 72}
HASH_IDS = {b"sha1": "sha1", b"s256": "sha256"}
HASH_ID_OF = {"sha1": b"sha1", "sha256": b"s256"}
_BLOCK_TYPES = frozenset((BLOCK_REF, BLOCK_LOG, BLOCK_OBJ, BLOCK_INDEX))
BLOCK_TYPES_END = -1  # "type" past the table data
_REF_CACHE = 64  # decoded ref blocks kept per table
_LOG_CACHE = 32  # decoded log blocks kept per table


class Footer(
    namedtuple(
        "Footer",
        "ref_index_position obj_position obj_id_len obj_index_position log_position log_index_position crc",
    )
):
    """The footer's fields (positions are file offsets, 0 when the section is absent)."""

    __slots__ = ()


class BlockInfo(namedtuple("BlockInfo", "type section offset length block_len restart_count record_count")):
    """One block as laid out in the file: ``type`` ("r", "g", "o", "i"), ``section`` ("ref",
    "ref_index", "obj", "obj_index", "log", "log_index"), ``offset`` of the block (0 for the first, which
    begins with the file header), ``length`` = bytes it occupies on disk (padding included; for log blocks
    the compressed size), ``block_len`` as stored (inflated size for logs), ``restart_count``,
    ``record_count``. (collections.namedtuple: no ``typing`` import on the CLI path.)"""

    __slots__ = ()


class Table:
    """A reftable file. Attributes: name (file name), path, version, hash_name, hash_size, block_size,
    min_update_index, max_update_index, size (file size), header_size, footer (Footer), stat
    (st_dev, st_ino, st_size), has_refs, has_logs, has_objs."""

    __slots__ = (
        "name",
        "path",
        "version",
        "hash_name",
        "hash_size",
        "block_size",
        "min_update_index",
        "max_update_index",
        "size",
        "header_size",
        "data_end",
        "footer",
        "stat",
        "has_refs",
        "has_logs",
        "has_objs",
        "_mm",
        "_blocks",
        "_refcache",
        "_logcache",
        "_indexcache",
        "_ref_offsets",
        "_counts",
        "hidden_cache",
        "listed_cache",
        "nul_names",
        "__weakref__",
    )

    @classmethod
    def open(cls, path: str) -> Table:
        """Map and validate the table at ``path`` (FileNotFoundError propagates: the stack retries on it)."""
        try:
            fd, st = open_regular(path)  # a FIFO, directory or unreadable file: UnreadableFile
        except NotADirectoryError as e:
            raise unreadable(path, e) from None
        try:
            if st.st_size < HEADER_SIZE[2] + 1:
                raise CorruptStore(path, f"file too small for a reftable ({st.st_size} bytes)", 0)
            mm = table_contents(fd, st.st_size, path)
        finally:
            os.close(fd)
        return cls._over(path, (st.st_dev, st.st_ino, st.st_size), mm)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> Table:
        """A Table over bytes (tests, dumps of in-memory tables)."""
        if len(data) < HEADER_SIZE[2] + 1:
            raise CorruptStore(name, f"file too small for a reftable ({len(data)} bytes)", 0)
        return cls._over(name, (0, 0, len(data)), bytes(data))

    @classmethod
    def _over(cls, path: str, stat: tuple[int, int, int], mm) -> Table:
        """A Table over ``mm`` (an mmap or bytes) with empty caches; header and footer parsed."""
        t = cls.__new__(cls)
        t.path = path
        t.name = os.path.basename(path)
        t.stat = stat
        t.size = stat[2]
        t._mm = mm
        t._blocks = {}
        t._refcache = OrderedDict()
        t._logcache = OrderedDict()
        t._indexcache = {}
        t._ref_offsets = None
        t._counts = None
        t.hidden_cache = {}
        t.listed_cache = {}
        t.nul_names = {}  # name -> ref block offset: records whose key holds a NUL (not served)
        t._parse_header_footer()
        return t

    def _parse_header_footer(self) -> None:
        mm = self._mm
        path = self.path
        if mm[0:4] != b"REFT":
            raise CorruptStore(path, "bad magic (not a reftable)", 0)
        version = mm[4]
        if version not in (1, 2):
            raise UnsupportedFormat(path, f"unsupported reftable version {version}", 4)
        self.version = version
        hs = HEADER_SIZE[version]
        fs = FOOTER_SIZE[version]
        self.header_size = hs
        if self.size < fs:
            raise CorruptStore(path, f"file too small for a version {version} footer ({self.size} bytes)", 0)
        foot_at = self.size - fs
        footer = mm[foot_at : self.size]
        if footer[0:4] != b"REFT":
            raise CorruptStore(path, "bad footer magic", foot_at)
        if footer[:hs] != mm[0:hs]:
            raise CorruptStore(path, "footer does not repeat the header", foot_at)
        self.block_size = int.from_bytes(mm[5:8], "big")
        self.min_update_index = int.from_bytes(mm[8:16], "big")
        self.max_update_index = int.from_bytes(mm[16:24], "big")
        if version == 1:
            self.hash_name = "sha1"
        else:
            hid = mm[24:28]
            if hid not in HASH_IDS:
                raise CorruptStore(path, f"unknown hash id {hid!r}", 24)
            self.hash_name = HASH_IDS[hid]
        self.hash_size = HASH_RAWSZ[self.hash_name]
        f = hs
        vals = [int.from_bytes(footer[f + 8 * i : f + 8 * i + 8], "big") for i in range(5)]
        crc = int.from_bytes(footer[fs - 4 : fs], "big")
        computed = crc32(footer[: fs - 4])  # binascii's: zlib's CRC-32 without importing zlib
        if computed != crc:
            raise CorruptStore(
                path, f"footer CRC-32 mismatch (stored {crc:08x}, computed {computed:08x})", foot_at + fs - 4
            )
        obj = vals[1]
        self.footer = Footer(vals[0], obj >> 5, obj & 31, vals[2], vals[3], vals[4], crc)
        self.data_end = foot_at
        first = mm[hs] if hs < foot_at else 0
        if hs < foot_at and first not in (BLOCK_REF, BLOCK_LOG):
            # git would take such a table for one without refs and silently lose them all.
            kind = "unknown block type" if first not in b"oi" else "block type"
            raise CorruptStore(
                path, f"{kind} 0x{first:02x} in the first block (expected a ref or log block)", hs
            )
        self.has_refs = first == BLOCK_REF
        self.has_logs = first == BLOCK_LOG or self.footer.log_position > 0
        self.has_objs = self.footer.obj_position > 0
        if self.has_objs and not self.footer.obj_id_len:
            raise CorruptStore(path, "obj section present but obj_id_len is 0", foot_at + hs + 8)
        for what, pos in (
            ("ref_index_position", self.footer.ref_index_position),
            ("obj_position", self.footer.obj_position),
            ("obj_index_position", self.footer.obj_index_position),
            ("log_position", self.footer.log_position),
            ("log_index_position", self.footer.log_index_position),
        ):
            if pos >= foot_at and pos:
                raise CorruptStore(path, f"{what} {pos} points past the table data", foot_at + hs)
        # Every section a footer names must start with a block of that section's type. A seek trusts
        # these positions (the ref index above all), a linear walk does not look at them: checked here,
        # once, so that every reader -- a listing, a lookup, a transaction -- judges the table alike
        # (one byte each; the blocks themselves are checked when parsed).
        for i, (what, pos, want) in enumerate(
            (
                ("ref_index_position", self.footer.ref_index_position, BLOCK_INDEX),
                ("obj_position", self.footer.obj_position, BLOCK_OBJ),
                ("obj_index_position", self.footer.obj_index_position, BLOCK_INDEX),
                ("log_position", self.footer.log_position, BLOCK_LOG),
                ("log_index_position", self.footer.log_index_position, BLOCK_INDEX),
            )
        ):
            if pos and mm[pos] != want:
                kind = {BLOCK_INDEX: "an index", BLOCK_OBJ: "an obj", BLOCK_LOG: "a log"}[want]
                raise CorruptStore(
                    path, f"footer {what} {pos} does not point at {kind} block", foot_at + hs + 8 * i
                )

    def close(self) -> None:
        """Release the mapping (only when no decoded block still references it)."""
        mm = self._mm
        self._blocks.clear()
        self._refcache.clear()
        self._logcache.clear()
        self._indexcache.clear()
        if not isinstance(mm, bytes):
            try:
                mm.close()
            except BufferError:
                pass

    def __repr__(self) -> str:
        return f"<Table {self.name} v{self.version} {self.hash_name} {self.min_update_index}..{self.max_update_index}>"

    # --- blocks ----------------------------------------------------------------------------------------------

    def block_at(self, off: int) -> Block | None:
        """The parsed block at ``off`` (None at or past the end of the table data). Cached."""
        blk = self._blocks.get(off)
        if blk is None:
            if off >= self.data_end or (off == 0 and self.data_end <= self.header_size):
                return None  # past the data, or an empty table (header then footer)
            blk = parse_block(
                self._mm,
                off,
                0 if off else self.header_size,
                self.block_size,
                self.data_end,
                self.size,
                self.hash_size,
                self.path,
            )
            if blk.type == BLOCK_INDEX or blk.type == BLOCK_OBJ:  # few; ref/log blocks go through LRUs
                self._blocks[off] = blk
        return blk

    def _other_section(self, off: int, btype: int) -> bool:
        """Does the block at ``off`` (> 0) have a valid type other than ``btype``? Then a walk over the
        ``btype`` blocks ends there without parsing it (a log block would be inflated just to be skipped).
        An invalid type byte is left to ``block_at``, which reports it."""
        t = self._mm[off] if off < self.data_end else BLOCK_TYPES_END
        return t != btype and (t in _BLOCK_TYPES or t == BLOCK_TYPES_END)

    def next_block(self, blk: Block, btype: int) -> Block | None:
        """The block after ``blk`` when it is of type ``btype`` (None at the end of that section)."""
        if self._other_section(blk.offset + blk.full_size, btype):
            return None
        nxt = self.block_at(blk.offset + blk.full_size)
        if nxt is None or nxt.type != btype:
            return None
        return nxt

    def ref_block(self, off: int) -> RefBlock:
        """The decoded ref block at ``off`` (LRU-cached)."""
        rb = self._refcache.get(off)
        if rb is not None:
            try:  # another thread may have evicted it meanwhile
                self._refcache.move_to_end(off)
            except KeyError:
                pass
            return rb
        blk = self.block_at(off)
        if blk is None or blk.type != BLOCK_REF:
            raise CorruptStore(self.path, "expected a ref block", off)
        rb = decode_ref_block(blk, self.min_update_index)
        rb.hidden = self.hidden_cache.get(off)
        self._refcache[off] = rb
        if len(self._refcache) > _REF_CACHE:
            try:
                self._refcache.popitem(last=False)
            except KeyError:
                pass
        return rb

    def _index_records(self, blk: Block) -> tuple[list[bytes], list[int]]:
        got = self._indexcache.get(blk.offset)
        if got is None:
            got = decode_index_block(blk)
            self._indexcache[blk.offset] = got
        return got

    def _seek_indexed(self, index_pos: int, want: bytes, leaf_type: int) -> int | None:
        """Descend a (multi-level) index to the leaf block that may hold ``want`` (None: past the end)."""
        blk = self.block_at(index_pos)
        if blk is None or blk.type != BLOCK_INDEX:
            raise CorruptStore(self.path, "index position does not point at an index block", index_pos)
        depth = 0
        while True:
            keys, poss = self._index_records(blk)
            j = bisect_left(keys, want)
            if j == len(keys):
                blk = self.next_block(blk, BLOCK_INDEX)
                if blk is None:
                    return None
                continue
            pos = poss[j]
            child = self.block_at(pos)
            if child is None:
                raise CorruptStore(self.path, f"index points at {pos}, past the table data", blk.offset)
            if child.type == leaf_type:
                if leaf_type == BLOCK_REF:
                    # The entry must name the block's last ref; otherwise a lookup would look in the
                    # wrong block and report an existing ref as missing (decoded once, cached for the caller).
                    names = self.ref_block(pos).names
                    if names and names[-1] != keys[j]:
                        raise CorruptStore(
                            self.path,
                            f"index entry does not match the last ref of the block at {pos}",
                            blk.offset,
                        )
                return pos
            if child.type != BLOCK_INDEX:
                raise CorruptStore(self.path, "index points at a block of another section", pos)
            depth += 1
            if depth > 64:
                raise CorruptStore(self.path, "index levels loop", pos)
            blk = child

    # --- refs ------------------------------------------------------------------------------------------------

    def seek_ref_block(self, start: bytes) -> int | None:
        """Offset of the ref block that may hold ``start`` (the first name >= it), through the ref index
        when the table has one; None when the table has no refs."""
        if not self.has_refs:
            return None
        if not start:
            return 0
        first = self.ref_block(0)  # usually needed anyway; saves the index walk for early starts
        if first.names and first.names[-1] >= start:
            return 0
        if self.footer.ref_index_position:
            return self._seek_indexed(self.footer.ref_index_position, start, BLOCK_REF)
        blk = self.block_at(0)
        chosen = 0
        while True:
            nxt = self.next_block(blk, BLOCK_REF)
            if nxt is None or first_key(nxt) > start:
                return chosen
            chosen = nxt.offset
            blk = nxt

    def iter_ref_blocks(self, start: bytes = b"") -> Iterator[tuple[RefBlock, int]]:
        """(decoded ref block, index of its first record >= start) from the block that may hold ``start``
        onwards. The hot path for streaming: the caller walks the parallel lists itself."""
        first = True
        for blk in self.iter_ref_raw_blocks(start):
            rb = self._refcache.get(blk.offset)
            if rb is None:
                rb = decode_ref_block(blk, self.min_update_index)
                rb.hidden = self.hidden_cache.get(blk.offset)
            i = bisect_left(rb.names, start) if (first and start) else 0
            first = False
            yield rb, i

    def iter_ref_raw_blocks(self, start: bytes = b"") -> Iterator[Block]:
        """The parsed (not decoded) ref blocks from the one that may hold ``start`` onwards: for bulk paths
        that decode a block their own way (``block.ref_block_pairs``) and fall back to ``ref_block``."""
        off = self.seek_ref_block(start)
        if off is None:
            return
        while True:
            if off and self._other_section(off, BLOCK_REF):
                return
            blk = self.block_at(off)
            if blk is None or blk.type != BLOCK_REF:
                return
            yield blk
            off = blk.offset + blk.full_size

    def decode_ref(self, blk: Block) -> RefBlock:
        """``blk`` decoded (the cached decode when there is one; not cached otherwise, as in a scan)."""
        rb = self._refcache.get(blk.offset)
        if rb is None:
            rb = decode_ref_block(blk, self.min_update_index)
            rb.hidden = self.hidden_cache.get(blk.offset)
        return rb

    def iter_refs(self, start: bytes = b"") -> Iterator[RefRecord]:
        """Ref records (tombstones included) in name order from the first name >= ``start``."""
        for rb, i in self.iter_ref_blocks(start):
            for j in range(i, len(rb.names)):
                yield rb.record(j)

    def seek_ref(self, name: bytes) -> RefRecord | None:
        """The record of exactly ``name`` (possibly a tombstone), or None."""
        got = self.locate_ref(name)
        return got[0].record(got[1]) if got else None

    def locate_ref(self, name: bytes) -> tuple[RefBlock, int] | None:
        """(decoded block, record index) of ``name``, or None. Uses the index when present."""
        off = self.seek_ref_block(name)
        if off is None:
            return None
        rb = self.ref_block(off)
        i = bisect_left(rb.names, name)
        if i < len(rb.names):
            return (rb, i) if rb.names[i] == name else None
        # past the end of this block: the next block may start with it (linear case only)
        blk = self.block_at(off)
        nxt = self.next_block(blk, BLOCK_REF)
        if nxt is None:
            return None
        rb = self.ref_block(nxt.offset)
        return (rb, 0) if rb.names and rb.names[0] == name else None

    def middle_ref_key(self) -> bytes | None:
        """The last name of a ref block near the middle of the ref section, read from the ref index (a
        few index blocks, no ref block), or None when the table has no ref index. For splitting a scan."""
        pos = self.footer.ref_index_position
        if not pos or not self.has_refs:
            return None
        blk = self.block_at(pos)
        if blk is None or blk.type != BLOCK_INDEX:
            return None
        keys: list[bytes] = []
        poss: list[int] = []
        while blk is not None:  # the top level may span several index blocks
            k, p = self._index_records(blk)
            keys += k
            poss += p
            blk = self.next_block(blk, BLOCK_INDEX)
        frac = 0.5
        for _depth in range(64):
            if not keys:
                return None
            x = frac * len(keys)
            c = min(int(x), len(keys) - 1)
            frac = x - c
            child = self.block_at(poss[c])
            if child is None:
                return None
            if child.type == BLOCK_REF:
                return keys[c]
            if child.type != BLOCK_INDEX:
                return None
            keys, poss = self._index_records(child)
        return None

    def iter_ref_offsets(self) -> Iterator[tuple[int, Block | None]]:
        """(offset, parsed block or None) of every ref block in order: from the cached offsets (block
        None: parse it when needed) or, the first time, from one walk that parses each block once and
        fills the cache."""
        if self._ref_offsets is not None:
            for off in self._ref_offsets:
                yield off, None
            return
        offs = []
        for blk in self.iter_ref_raw_blocks(b""):
            offs.append(blk.offset)
            yield blk.offset, blk
        self._ref_offsets = offs

    def ref_block_offsets(self) -> list[int]:
        """File offsets of every ref block, in order (walks the block headers once; cached)."""
        if self._ref_offsets is None:
            offs = []
            if self.has_refs:
                blk = self.block_at(0)
                while blk is not None:
                    offs.append(blk.offset)
                    blk = self.next_block(blk, BLOCK_REF)
            self._ref_offsets = offs
        return self._ref_offsets

    # --- logs ------------------------------------------------------------------------------------------------

    def seek_log_block(self, key: bytes) -> int | None:
        """Offset of the log block from which the records with keys >= ``key`` start: through the log
        index when the table has one, else the first log block (None: no logs, or ``key`` past them)."""
        if not self.has_logs:
            return None
        if self.footer.log_index_position:
            return self._seek_indexed(self.footer.log_index_position, key, BLOCK_LOG)
        return self.footer.log_position

    def log_block(self, off: int) -> list[LogRecord]:
        """Decoded log records of the log block at ``off`` (cached)."""
        cache = self._logcache
        got = cache.get(off)
        if got is None:
            blk = self.block_at(off)
            if blk is None or blk.type != BLOCK_LOG:
                raise CorruptStore(self.path, "expected a log block", off)
            got = [raw.record for raw in iter_raw_records(blk)]
            cache[off] = got
            if len(cache) > _LOG_CACHE:
                try:
                    cache.popitem(last=False)
                except KeyError:
                    pass
        else:
            try:
                cache.move_to_end(off)
            except KeyError:
                pass
        return got

    def iter_logs(self, name: bytes | None = None) -> Iterator[LogRecord]:
        """Log records in key order (by name, newest update index first); only ``name``'s when given."""
        if not self.has_logs:
            return
        want = None
        if name is None:
            off = self.footer.log_position
        else:
            want = name + b"\0"
            off = self.seek_log_block(want)
            if off is None:
                return
            if not self.footer.log_index_position:  # a linear seek: up to the last block starting <= want
                blk = self.block_at(off)
                while True:
                    nxt = self.next_block(blk, BLOCK_LOG) if blk is not None else None
                    if nxt is None or first_key(nxt) > want:
                        break
                    blk = nxt
                off = blk.offset if blk is not None else off
        while True:
            blk = self.block_at(off)
            if blk is None or blk.type != BLOCK_LOG:
                return
            for rec in self.log_block(off):
                if name is not None:
                    if rec.name < name:
                        continue
                    if rec.name != name:
                        return
                yield rec
            off = blk.offset + blk.full_size

    # --- objs ------------------------------------------------------------------------------------------------

    def iter_objs(self) -> Iterator[ObjRecord]:
        """Every obj record in order."""
        if not self.has_objs:
            return
        off = self.footer.obj_position
        while True:
            blk = self.block_at(off)
            if blk is None or blk.type != BLOCK_OBJ:
                return
            for raw in iter_raw_records(blk):
                yield raw.record
            off = blk.offset + blk.full_size

    def refs_for_oid(self, oid: bytes) -> list[RefRecord]:
        """Refs whose value or peeled value is ``oid`` (hex), via the obj index when the table has one."""
        if not self.has_objs:
            return [r for r in self.iter_refs() if oid in (r.value, r.peeled)]
        prefix = bytes.fromhex(oid.decode())[: self.footer.obj_id_len]
        positions: tuple[int, ...] | None = None
        for rec in self.iter_objs():
            if rec.prefix == prefix:
                positions = rec.positions
                break
            if rec.prefix > prefix:
                break
        if positions is None:
            return []
        if not positions:
            return [r for r in self.iter_refs() if oid in (r.value, r.peeled)]
        out = []
        for p in positions:
            rb = self.ref_block(p)
            for j in range(len(rb.names)):
                if oid in (rb.oid(j), rb.peeled(j)):
                    out.append(rb.record(j))
        return out

    # --- whole-file walks (dumps, stack view) ----------------------------------------------------------------

    def iter_blocks(self) -> Iterator[tuple[str, Block]]:
        """(section, Block) for every block in file order."""
        off = 0
        section_of = {BLOCK_REF: "ref", BLOCK_OBJ: "obj", BLOCK_LOG: "log"}
        last = "ref"
        while off < self.data_end:
            blk = self.block_at(off)
            if blk is None:
                return
            if blk.type == BLOCK_INDEX:
                section = last + "_index"
            else:
                last = section_of[blk.type]
                section = last
            yield section, blk
            if blk.full_size <= 0:
                raise CorruptStore(self.path, "zero-length block", off)
            off = blk.offset + blk.full_size

    def blocks(self) -> list[BlockInfo]:
        """Every block of the file, in file order, with record counts (decodes every block)."""
        out = []
        for section, blk in self.iter_blocks():
            n = sum(1 for _ in iter_raw_records(blk, self.min_update_index))
            out.append(
                BlockInfo(
                    chr(blk.type), section, blk.offset, blk.full_size, blk.block_len, len(blk.restarts), n
                )
            )
        return out

    def counts(self, logs: bool = True) -> dict[str, int]:
        """Record counts: refs (ref records with a value), tombstones (ref deletions), logs (log entries),
        log_deletions (log records that delete a reflog entry), objs, blocks by type (cached). The one set
        of counts ``refscope stack`` and the TUI's stack view show.

        ``logs=False`` skips inflating the log blocks (the slow part on a big table): logs and
        log_deletions are then None unless a full count was made before."""
        if self._counts is not None and (not logs or self._counts["logs"] is not None):
            return self._counts
        c = {"refs": 0, "tombstones": 0, "logs": 0, "log_deletions": 0, "objs": 0, "blocks": 0}
        by_type: dict[str, int] = {}
        for _section, blk in self.iter_blocks():
            c["blocks"] += 1
            letter = chr(blk.type)
            by_type[letter] = by_type.get(letter, 0) + 1
            if blk.type == BLOCK_REF:
                rb = decode_ref_block(blk, self.min_update_index)
                z = rb.tombstones
                c["tombstones"] += z
                c["refs"] += len(rb.names) - z
            elif blk.type == BLOCK_LOG and logs:
                for rec in self.log_block(blk.offset):
                    c["logs" if rec.log_type else "log_deletions"] += 1
            elif blk.type == BLOCK_OBJ:
                c["objs"] += sum(1 for _ in iter_raw_records(blk))
        if not logs:
            c["logs"] = c["log_deletions"] = None
        c["by_type"] = by_type
        self._counts = c
        return self._counts
