"""Reftable blocks: header, restart table, prefix-compressed records, zlib-inflated log blocks.

A ``Block`` is parsed from the table's mmap at a file offset. Its ``data`` are the block's bytes (for the first
block they start with the file header; for a log block they are the inflated bytes, the 4-byte block header
first, as git's reader builds them). Every length and count is checked against the bytes present; any
violation raises ``CorruptStore(file, what, offset)``.

Over 500 lines, on purpose: every walk over a block's records lives here and nowhere else, so that a rule
of the record format is changed in one file. The checked walks (``decode_index_block``,
``iter_raw_records``, ``_decode_checked``) take each key from ``record.decode_key``; the fast paths, the
shapes refscope meets at scale, inline its one-byte case and hand anything else to the checked walks:
``_decode_fast`` (a ref block's names), ``ref_block_pairs`` (a ref block as (oid, name) pairs for
listing), ``ref_rows`` (a one-table stack's rows), ``seek_refs`` / ``scan_log_keys`` (the writers'
batched lookups, keys built only where they can match).
"""

from __future__ import annotations

from binascii import hexlify
from collections.abc import Iterator

from ...errors import CorruptStore, RecordError
from .record import (
    BLOCK_INDEX,
    BLOCK_LOG,
    BLOCK_OBJ,
    BLOCK_REF,
    RefRecord,
    decode_index_value,
    decode_key,
    decode_log_value,
    decode_obj_value,
    decode_ref_value,
    get_varint,
)

BLOCK_TYPES = (BLOCK_REF, BLOCK_LOG, BLOCK_OBJ, BLOCK_INDEX)
_NULL_CACHE: dict[int, bytes] = {}


class Block:
    """One parsed block. ``offset`` = file offset of the block (0 for the first block, whose ``header_off``
    is the file header size); ``full_size`` = bytes it occupies in the file (padding included, for log
    blocks the compressed length) so the next block starts at ``offset + full_size``."""

    __slots__ = (
        "file",
        "offset",
        "type",
        "header_off",
        "block_len",
        "data",
        "restart_off",
        "restarts",
        "full_size",
        "hash_size",
    )

    def __init__(
        self, file, offset, btype, header_off, block_len, data, restart_off, restarts, full_size, hs
    ):
        self.file = file
        self.offset = offset
        self.type = btype
        self.header_off = header_off
        self.block_len = block_len
        self.data = data
        self.restart_off = restart_off
        self.restarts = restarts
        self.full_size = full_size
        self.hash_size = hs

    @property
    def restart_count(self) -> int:
        return len(self.restarts)

    def err(self, what: str, pos: int | None = None) -> CorruptStore:
        """A CorruptStore at in-block position ``pos`` (file offset for ref/obj/index blocks; for log blocks
        the offset of the block, the position inside the inflated data is named in the message)."""
        if self.type == BLOCK_LOG:
            if pos is not None:
                what = f"{what} (inflated log block byte {pos})"
            return CorruptStore(self.file, what, self.offset)
        return CorruptStore(self.file, what, self.offset + (pos if pos is not None else 0))


def parse_block(
    mm,
    off: int,
    header_off: int,
    table_block_size: int,
    data_end: int,
    file_size: int,
    hash_size: int,
    file: str,
) -> Block:
    """Parse the block at file offset ``off`` (``header_off`` > 0 only for the first block).

    ``data_end`` is where the footer starts; blocks must lie before it."""
    hdr = off + header_off
    if hdr + 4 > data_end:
        raise CorruptStore(file, "block header past the end of the table data", off)
    btype = mm[hdr]
    if btype not in BLOCK_TYPES:
        raise CorruptStore(file, f"unknown block type 0x{btype:02x}", hdr)
    block_len = int.from_bytes(mm[hdr + 1 : hdr + 4], "big")
    if block_len < header_off + 4 + 2:
        raise CorruptStore(file, f"block_len {block_len} too small", hdr + 1)
    if btype == BLOCK_LOG:
        data, consumed = _inflate(mm, off, header_off, block_len, data_end, file)
        full_size = header_off + 4 + consumed
    else:
        if off + block_len > data_end:
            raise CorruptStore(
                file,
                f"block_len {block_len} runs past the end of the table data ({data_end - off} bytes left)",
                hdr + 1,
            )
        data = mm[off : off + block_len]
        if table_block_size == 0 or block_len >= table_block_size:
            full_size = block_len
        elif off + block_len < file_size and mm[off + block_len] != 0:
            full_size = block_len  # unpadded: the next block (or the footer) follows at once
        else:
            full_size = table_block_size
    count = int.from_bytes(data[block_len - 2 : block_len], "big")
    restart_off = block_len - 2 - 3 * count
    if count == 0:
        blk = Block(file, off, btype, header_off, block_len, data, restart_off, (), full_size, hash_size)
        raise blk.err("restart_count is 0", block_len - 2)
    if restart_off < header_off + 4:
        blk = Block(file, off, btype, header_off, block_len, data, restart_off, (), full_size, hash_size)
        raise blk.err(
            f"restart table of {count} entries does not fit in block_len {block_len}", block_len - 2
        )
    restarts = []
    prev = header_off + 3
    for p in range(restart_off, block_len - 2, 3):
        r = (data[p] << 16) | (data[p + 1] << 8) | data[p + 2]
        if r <= prev or r >= restart_off:
            blk = Block(file, off, btype, header_off, block_len, data, restart_off, (), full_size, hash_size)
            raise blk.err(f"restart offset {r} outside the records or not ascending", p)
        restarts.append(r)
        prev = r
    return Block(
        file, off, btype, header_off, block_len, data, restart_off, tuple(restarts), full_size, hash_size
    )


def _inflate(mm, off: int, header_off: int, block_len: int, data_end: int, file: str) -> tuple[bytes, int]:
    """Inflate a log block: (header + inflated bytes, compressed byte count)."""
    import zlib  # only log blocks need it (not imported on the listing path)

    skip = header_off + 4
    want = block_len - skip
    start = off + skip
    d = zlib.decompressobj()
    pos = start
    # deflateBound-ish: compressed data never exceeds this, so one slice almost always suffices.
    step = want + (want >> 11) + 64
    out = []
    got = 0
    try:
        while True:
            end = min(data_end, pos + step)
            if pos >= end:
                raise CorruptStore(file, "truncated log block (zlib stream does not end)", off)
            chunk = mm[pos:end]
            part = d.decompress(chunk, want - got + 1)
            got += len(part)
            out.append(part)
            if got > want:
                raise CorruptStore(file, f"log block inflates to more than its block_len {block_len}", off)
            if d.eof:
                consumed = (end - start) - len(d.unused_data)
                break
            if d.unconsumed_tail:
                raise CorruptStore(file, f"log block inflates to more than its block_len {block_len}", off)
            pos = end
            step = max(step, 65536)
    except zlib.error as e:
        raise CorruptStore(file, f"log block does not inflate: {e}", off) from None
    if got != want:
        raise CorruptStore(file, f"log block inflates to {got + skip} bytes, block_len says {block_len}", off)
    header = mm[off : off + skip]
    return header + b"".join(out), consumed


def _vfail(blk: Block, e: RecordError) -> CorruptStore:
    return blk.err(e.what, e.offset)


# --- ref blocks: the hot path ----------------------------------------------------------------------------


class RefBlock:
    """A decoded ref block: two parallel lists, one entry per record (no per-record objects).

    ``names[i]`` and ``meta[i] = (doff << 3) | value_type`` where ``doff`` is the position in ``data`` of the
    record's update-index varint (the value follows it). Everything else decodes lazily from ``data``; the
    decoder already checked that every record's varints and value lie inside the block. ``tombstones`` counts
    value-type-0 records; ``simple`` says every record is a plain oid (type 1) with a one-byte delta, so
    columns can be sliced without per-record branching."""

    __slots__ = (
        "offset",
        "names",
        "meta",
        "data",
        "hash_size",
        "min_update_index",
        "file",
        "tombstones",
        "simple",
        "symrefs",
        "hidden",
    )

    def __init__(self, blk: Block, names: list[bytes], meta: list[int], min_update_index: int) -> None:
        self.offset = blk.offset
        self.file = blk.file
        self.names = names
        self.meta = meta
        self.data = blk.data
        self.hash_size = blk.hash_size
        self.min_update_index = min_update_index
        self.tombstones = 0
        self.simple = False  # every record: value type 1 with a one-byte update-index delta
        self.symrefs = 0
        self.hidden = None  # set by the store: indices git's ref iterator would not list (cached per block)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def types(self) -> list[int]:
        return [m & 7 for m in self.meta]

    def value_type(self, i: int) -> int:
        return self.meta[i] & 7

    def _value_pos(self, i: int) -> tuple[int, int]:
        """(update index, value position) of record i."""
        data = self.data
        p = self.meta[i] >> 3
        c = data[p]
        if c < 0x80:
            return c + self.min_update_index, p + 1
        d, p = get_varint(data, p, len(data))
        return d + self.min_update_index, p

    def update_index(self, i: int) -> int:
        return self._value_pos(i)[0]

    def oid(self, i: int) -> bytes | None:
        t = self.meta[i] & 7
        if t == 1 or t == 2:
            o = self._value_pos(i)[1]
            return hexlify(self.data[o : o + self.hash_size])
        return None

    def peeled(self, i: int) -> bytes | None:
        if self.meta[i] & 7 == 2:
            o = self._value_pos(i)[1] + self.hash_size
            return hexlify(self.data[o : o + self.hash_size])
        return None

    def target(self, i: int) -> bytes | None:
        if self.meta[i] & 7 == 3:
            data = self.data
            n, p = get_varint(data, self._value_pos(i)[1], len(data))
            return data[p : p + n]
        return None

    def record(self, i: int) -> RefRecord:
        t = self.meta[i] & 7
        return RefRecord(self.names[i], self.update_index(i), t, self.oid(i), self.peeled(i), self.target(i))

    def fields(self, i: int) -> tuple[int, bytes | None, bytes | None, bytes | None]:
        """(update index, oid, peeled, target) of record i in one pass over its value (row building)."""
        m = self.meta[i]
        t = m & 7
        data = self.data
        p = m >> 3
        d = data[p]
        if d < 0x80:
            p += 1
        else:
            d, p = get_varint(data, p, len(data))
        hs = self.hash_size
        ui = d + self.min_update_index
        if t == 1:
            return ui, hexlify(data[p : p + hs]), None, None
        if t == 2:
            return ui, hexlify(data[p : p + hs]), hexlify(data[p + hs : p + 2 * hs]), None
        if t == 3:
            n, p = get_varint(data, p, len(data))
            return ui, None, None, data[p : p + n]
        return ui, None, None, None

    def value_key(self, i: int) -> bytes | None:
        """What makes record i's ref "the same" (``diff.ref_value``): its oid (raw), or NUL + target for a
        symref; None for a tombstone. The peeled oid is a cache of the object graph and does not count."""
        m = self.meta[i]
        t = m & 7
        if not t:
            return None
        data = self.data
        p = m >> 3
        if data[p] < 0x80:
            p += 1
        else:
            _d, p = get_varint(data, p, len(data))
        if t == 3:
            n, p = get_varint(data, p, len(data))
            return b"\0" + bytes(data[p : p + n])
        return bytes(data[p : p + self.hash_size])

    def oid_columns(self, i: int, k: int) -> tuple[list, list | None]:
        """(oids, peeled or None) of records ``i:k`` of a block without tombstones or symrefs: one hexlify
        of the block, one slice per oid (a ``simple`` block: no per-record branching at all)."""
        hx2 = 2 * self.hash_size
        hx = hexlify(self.data)
        if self.simple:
            return [hx[2 + 2 * (m >> 3) : 2 + 2 * (m >> 3) + hx2] for m in self.meta[i:k]], None
        data = self.data
        end = len(data)
        oids: list = []
        peeled: list = []
        for m in self.meta[i:k]:
            p = m >> 3
            p = p + 1 if data[p] < 0x80 else get_varint(data, p, end)[1]
            q = p + p
            oids.append(hx[q : q + hx2])
            peeled.append(hx[q + hx2 : q + hx2 + hx2] if m & 7 == 2 else None)
        return oids, peeled


def ref_rows(blocks, table_name: str, hidden_of, resolve) -> Iterator:
    """``model.Ref`` rows of the records of ``blocks`` ((RefBlock, first index) pairs, as
    ``Table.iter_ref_blocks`` yields them) up to the first name outside refs/: tombstones, the records
    ``hidden_of(rb)`` names and symrefs ``resolve`` cannot follow are skipped, as git's iterator does.
    The hot loop of listing a one-table stack: everything inlined, oids sliced from one hexlify per block,
    one Location per run of records with the same update index."""
    from ...model import TABLE, Location, Ref

    new = tuple.__new__  # NamedTuples without their Python-level __new__
    for rb, i in blocks:
        names = rb.names
        meta = rb.meta
        data = rb.data
        hx = hexlify(data)
        hx2 = 2 * rb.hash_size
        hx4 = 2 * hx2
        off = rb.offset
        minui = rb.min_update_index
        lastd = -1
        loc = None
        hidden = hidden_of(rb)
        for j in range(i, len(names)):
            m = meta[j]
            vt = m & 7
            if not vt or (hidden and j in hidden):
                continue
            name = names[j]
            if not name.startswith(b"refs/"):
                return
            p = m >> 3
            d = data[p]
            if d < 0x80:
                p += 1
            else:
                d, p = get_varint(data, p, len(data))
            if d != lastd:
                lastd = d
                loc = new(Location, (TABLE, table_name, off, d + minui))
            if vt == 1:
                p += p
                yield new(Ref, (name, hx[p : p + hx2], None, None, loc))
            elif vt == 2:
                p += p
                yield new(Ref, (name, hx[p : p + hx2], hx[p + hx2 : p + hx4], None, loc))
            elif resolve(name) is not None:
                n, p = get_varint(data, p, len(data))
                yield new(Ref, (name, None, None, data[p : p + n], loc))


def _decode_fast(data, pos: int, end: int, restarts: tuple, hs: int):
    """The common shape of a ref block, decoded with as little work per record as Python allows: every
    record a value type 1 or 2, or a tombstone (type 0: what a huge deletion writes), with a one-byte prefix length, a one- or two-byte suffix/type varint and a
    one- or two-byte update-index delta, the first record at the first restart point. Returns (names,
    meta, peeled count, big-delta count, tombstone count), or None as soon as anything else is seen (another shape, or any
    inconsistency: corrupt input then goes through ``_decode_checked``, which names the fault).

    It accepts exactly what ``_decode_checked`` accepts for these shapes and yields the same lists. Records
    are walked restart group by restart group: each group must end exactly at the next restart point (so
    every restart point is a record boundary) and start with prefix length 0; every read position lies
    below the final position of its group, so nothing past ``end`` is ever taken for record bytes."""
    if restarts[0] != pos:
        return None
    names: list[bytes] = []
    meta: list[int] = []
    add_name = names.append
    add_meta = meta.append
    hs1 = hs + 1
    peeled = 0
    big = 0
    dead = 0
    try:
        for nr in restarts[1:] + (end,):
            last = b""
            while pos < nr:
                p = data[pos]
                x = data[pos + 1]
                if (p | x) < 0x80:
                    s = pos + 2
                else:
                    y = data[pos + 2]
                    if p >= 0x80 or y >= 0x80:
                        return None
                    x = (((x & 0x7F) + 1) << 7) | y
                    s = pos + 3
                e = s + (x >> 3)
                if p > len(last):  # also rejects a restart record (last == b"") with a prefix
                    return None
                last = last[:p] + data[s:e]
                add_name(last)
                vt = x & 7
                add_meta((e << 3) | vt)
                if data[e] < 0x80:
                    pos = e + hs1
                elif data[e + 1] < 0x80:
                    pos = e + 1 + hs1
                    big += 1
                else:
                    return None
                if vt != 1:
                    if vt == 2:
                        pos += hs
                        peeled += 1
                    elif vt == 0:
                        pos -= hs  # no value
                        dead += 1
                    else:
                        return None
            if pos != nr:
                return None
    except IndexError:
        return None
    if not all(names):
        return None
    return names, meta, peeled, big, dead


def ref_block_pairs(blk: Block) -> list[bytes] | None:
    """For bulk listing: ``[oid0, name0, oid1, name1, ...]`` (hex oids) of a ref block whose records are
    all value type 1 in the shape ``_decode_fast`` takes, else None (the caller then decodes the block
    the general way). The same walk as there, with no per-record work beyond the two slices; the oids
    are cut from one hexlify of the whole block. Accepts exactly what ``decode_ref_block`` accepts for
    this shape."""
    data = blk.data
    pos = blk.header_off + 4
    restarts = blk.restarts
    if restarts[0] != pos:
        return None
    hs1 = blk.hash_size + 1
    h2 = 2 * blk.hash_size
    hx = hexlify(data)
    out: list[bytes] = []
    add = out.append
    try:
        for nr in restarts[1:] + (blk.restart_off,):
            last = b""
            while pos < nr:
                p = data[pos]
                x = data[pos + 1]
                if (p | x) < 0x80:
                    s = pos + 2
                else:
                    y = data[pos + 2]
                    if p >= 0x80 or y >= 0x80:
                        return None
                    x = (((x & 0x7F) + 1) << 7) | y
                    s = pos + 3
                e = s + (x >> 3)
                if p > len(last) or x & 7 != 1:
                    return None
                last = last[:p] + data[s:e]
                if data[e] < 0x80:
                    pos = e + hs1
                elif data[e + 1] < 0x80:
                    e += 1
                    pos = e + hs1
                else:
                    return None
                e += e + 2
                add(hx[e : e + h2])
                add(last)
            if pos != nr:
                return None
    except IndexError:
        return None
    if not all(out):
        return None
    return out


def decode_ref_block(blk: Block, min_update_index: int) -> RefBlock:
    """Decode every record key of a ref block (checks every length against the block).

    The hot path of refscope: the common shape goes through ``_decode_fast``; anything else (symrefs,
    long varints, corruption) through the fully checked decoder."""
    got = _decode_fast(blk.data, blk.header_off + 4, blk.restart_off, blk.restarts, blk.hash_size)
    if got is None:
        return _decode_checked(blk, min_update_index)
    names, meta, peeled, big, dead = got
    rb = RefBlock(blk, names, meta, min_update_index)
    rb.tombstones = dead
    rb.simple = not (peeled or big or dead)
    return rb


def _decode_checked(blk: Block, min_update_index: int) -> RefBlock:
    """Every record shape, every check (errors name the fault and its offset)."""
    data = blk.data
    end = blk.restart_off
    hs = blk.hash_size
    hs2 = 2 * hs
    restarts = blk.restarts
    nrest = len(restarts)
    ri = 0
    next_restart = restarts[0]
    names: list[bytes] = []
    meta: list[int] = []
    add_name = names.append
    add_meta = meta.append
    last = b""
    tombstones = 0
    symrefs = 0
    peeled = 0
    big_deltas = 0
    pos = blk.header_off + 4
    try:
        while pos < end:
            rec = pos
            restart = rec >= next_restart
            if restart:
                if rec > next_restart:
                    raise blk.err(f"restart offset {next_restart} is not at a record boundary", next_restart)
                ri += 1
                next_restart = restarts[ri] if ri < nrest else end
            last, vt, npos, _p = decode_key(data, pos, end, last, restart)
            if npos >= end:
                raise blk.err("record runs past the records", npos - (len(last) - _p))
            add_meta((npos << 3) | vt)
            if data[npos] < 0x80:
                pos = npos + 1
            else:
                pos = get_varint(data, npos, end)[1]
                big_deltas += 1
            if vt == 1:
                pos += hs
            elif vt == 2:
                pos += hs2
                peeled += 1
            elif vt == 3:
                n, pos = get_varint(data, pos, end)
                pos += n
                symrefs += 1
            elif vt:
                raise blk.err(f"unknown ref value type {vt}", rec)
            else:
                tombstones += 1
            if pos > end:
                raise blk.err("ref value runs past the records", rec)
            add_name(last)
    except RecordError as e:
        raise _vfail(blk, e) from None
    if ri != nrest:
        raise blk.err(f"restart offset {restarts[ri]} is not at a record boundary", restarts[ri])
    rb = RefBlock(blk, names, meta, min_update_index)
    rb.tombstones = tombstones
    rb.symrefs = symrefs
    rb.simple = not (tombstones or symrefs or peeled or big_deltas)
    return rb


def decode_index_block(blk: Block) -> tuple[list[bytes], list[int]]:
    """(last keys, block positions) of an index block: used by every indexed seek (cached per table)."""
    data = blk.data
    end = blk.restart_off
    restarts = set(blk.restarts)
    keys: list[bytes] = []
    poss: list[int] = []
    last = b""
    pos = blk.header_off + 4
    seen = 0
    try:
        while pos < end:
            rec = pos
            restart = rec in restarts
            seen += restart
            last, extra, pos, _p = decode_key(data, pos, end, last, restart)
            if extra:
                raise blk.err(f"index record with value type {extra}", rec)
            position, pos = get_varint(data, pos, end)
            keys.append(last)
            poss.append(position)
    except RecordError as e:
        raise _vfail(blk, e) from None
    if seen != len(restarts):
        raise blk.err("a restart offset is not at a record boundary", blk.restart_off)
    return keys, poss


# --- generic records (log, obj, index; and ref for dumps) ------------------------------------------------


class RawRecord:
    """A record as laid out in its block, for dumps: offsets, prefix and suffix lengths, key, extra bits,
    and the decoded record (RefRecord / LogRecord / ObjRecord / IndexRecord)."""

    __slots__ = ("offset", "prefix_len", "suffix_len", "key", "extra", "record", "size")

    def __init__(self, offset, prefix_len, suffix_len, key, extra, record, size):
        self.offset = offset
        self.prefix_len = prefix_len
        self.suffix_len = suffix_len
        self.key = key
        self.extra = extra
        self.record = record
        self.size = size


def iter_raw_records(blk: Block, min_update_index: int = 0) -> Iterator[RawRecord]:
    """Every record of any block type, with its layout (``offset`` is the in-block position)."""
    data = blk.data
    end = blk.restart_off
    hs = blk.hash_size
    restarts = blk.restarts
    rset = set(restarts)
    seen = 0
    last = b""
    pos = blk.header_off + 4
    btype = blk.type
    try:
        while pos < end:
            rec = pos
            restart = rec in rset
            seen += restart
            key, extra, pos, prefix = decode_key(data, pos, end, last, restart)
            if btype == BLOCK_REF:
                record, pos = decode_ref_value(data, key, extra, pos, end, hs, min_update_index, rec)
            elif btype == BLOCK_LOG:
                record, pos = decode_log_value(data, key, extra, pos, end, hs, rec)
            elif btype == BLOCK_OBJ:
                record, pos = decode_obj_value(data, key, extra, pos, end)
            else:
                record, pos = decode_index_value(data, key, extra, pos, end, rec)
            yield RawRecord(rec, prefix, len(key) - prefix, key, extra, record, pos - rec)
            last = key
    except RecordError as e:
        raise _vfail(blk, e) from None
    if seen != len(restarts):
        raise blk.err("a restart offset is not at a record boundary", blk.restart_off)


def first_key(blk: Block) -> bytes:
    """The key of the block's first record (stored uncompressed)."""
    data = blk.data
    end = blk.restart_off
    pos = blk.header_off + 4
    try:
        prefix, pos = get_varint(data, pos, end)
        x, pos = get_varint(data, pos, end)
    except RecordError as e:
        raise _vfail(blk, e) from None
    slen = x >> 3
    if prefix or pos + slen > end or not slen:
        raise blk.err("bad first record key", blk.header_off + 4)
    return data[pos : pos + slen]


# --- batched seeks: many sorted keys through one block, keys built only where they can match --------------
# The writers look up thousands of names at once (a big deletion): these walks skip the records that sort
# below the wanted key without building their keys. Faults raise CorruptStore ("... does not decode").

_MAX_UI = 0xFFFFFFFFFFFFFFFF
_IN_RUN = 1 << 62  # the walks' "common prefix with the wanted key" inside that key's own run: decode all


def _interval_starts(blk: Block) -> tuple[int, ...]:
    """Where the restart intervals of ``blk`` begin. git's first record is always a restart point; a
    block whose first record is not one is walked as one interval."""
    first = blk.header_off + 4
    restarts = blk.restarts
    return restarts if restarts and restarts[0] == first else (first,)


def _restart_key(data, r: int) -> bytes:
    """The key of the record at restart offset ``r`` (a restart stores its key whole: prefix length 0)."""
    x = data[r + 1]
    if x < 0x80:
        return data[r + 2 : r + 2 + (x >> 3)]
    y = data[r + 2]
    if y < 0x80:  # two bytes: a log key or a long ref name
        x = (((x & 0x7F) + 1) << 7) | y
        return data[r + 3 : r + 3 + (x >> 3)]
    x, p = get_varint(data, r + 1, len(data))
    return data[p : p + (x >> 3)]


def _key_header(data, pos: int, end: int) -> tuple[int, int, int]:
    """(prefix length, suffix length << 3 | type, key suffix position) of the record at ``pos``: the walks'
    slow path, for varints longer than one byte (a restart record's whole key is usually 16 bytes or more)."""
    p = data[pos]
    if p < 0x80:
        pos += 1
    else:
        p, pos = get_varint(data, pos, end)
    x = data[pos]
    if x < 0x80:
        return p, x, pos + 1
    y = data[pos + 1]
    if y < 0x80:
        return p, (((x & 0x7F) + 1) << 7) | y, pos + 2
    x, pos = get_varint(data, pos, end)
    return p, x, pos


def _ref_value_end(data, vpos: int, end: int, vt: int, hs: int) -> int:
    """Where the ref value at ``vpos`` (update-index delta first) ends: the walk's slow path."""
    pos = vpos + 1 if data[vpos] < 0x80 else get_varint(data, vpos, end)[1]
    if vt == 1:
        return pos + hs
    if vt == 2:
        return pos + 2 * hs
    if vt == 3:
        c, pos = get_varint(data, pos, end)
        return pos + c
    if vt:
        raise RecordError(f"unknown ref value type {vt}", vpos)
    return pos


def seek_refs(blk: Block, want: list[bytes], k: int, kend: int, found: dict, min_ui: int) -> int:
    """Resolve ``want[k:kend]`` (sorted, all below the next block's first key) in the ref block ``blk``:
    ``found[name]`` = its RefRecord (tombstones too) for each one the block holds; returns ``kend``.

    Restart intervals whose successor's key is not above the wanted name are skipped. Inside an interval
    the walk keeps ``m``, the length the previous key has in common with the wanted name ``T`` (it sorts
    below ``T``): a record sharing more than ``m`` bytes with its predecessor, or exactly ``m`` and then a
    smaller byte than ``T``'s, sorts below ``T`` as well and is skipped without building its key. Only a
    record that reaches ``T`` (about once per wanted name) has its key built (``decode_key``'s step,
    inlined) and its value decoded."""
    try:
        return _seek_refs(blk, want, k, kend, found, min_ui)
    except RecordError as e:
        raise CorruptStore(blk.file, f"ref block does not decode ({e.what})") from None


def _seek_refs(blk: Block, want: list[bytes], k: int, kend: int, found: dict, min_ui: int) -> int:
    data = blk.data
    end = blk.restart_off
    hs = blk.hash_size
    hs1 = hs + 1
    frombytes = int.from_bytes
    t = want[k]
    starts = _interval_starts(blk)
    nr = len(starts)
    j = 0
    while j < nr:
        pos = starts[j]
        j += 1
        if j < nr:
            stop = starts[j]
            limit = _restart_key(data, stop)
            if limit <= t:
                continue  # every key of the interval sorts below the wanted name
        else:
            stop = end
            limit = None
        last = b""
        m = 0
        while pos < stop:
            p = data[pos]
            x = data[pos + 1]
            if (p | x) < 0x80:
                s = pos + 2
            else:
                p, x, s = _key_header(data, pos, stop)
            e = s + (x >> 3)
            if e >= stop:
                raise RecordError("a ref record runs past its restart interval", pos)
            vt = x & 7
            pos = e + hs1 if vt == 1 and data[e] < 128 else _ref_value_end(data, e, stop, vt, hs)
            if p > m or (p == m and s < e and data[s] < t[m]):
                continue  # below the wanted name
            key = last[:p] + data[s:e] if p else data[s:e]
            last = key
            while key >= t:
                if key == t:
                    found[key] = decode_ref_value(data, key, vt, e, stop, hs, min_ui, pos)[0]
                k += 1  # found, or passed: absent
                if k == kend:
                    return kend
                t = want[k]
                if limit is not None and limit <= t:
                    pos = stop  # the rest of the interval sorts below the next wanted name
                    break
            else:
                n = len(key) if len(key) < len(t) else len(t)
                m = n - ((frombytes(key[:n], "big") ^ frombytes(t[:n], "big")).bit_length() + 7) // 8
        if pos != stop:
            raise RecordError("a ref record runs past its restart interval", pos)
    return kend


def scan_log_keys(blk: Block, targets, names, k: int, seen: dict, skip: tuple) -> tuple[int, tuple]:
    """Record (name, update index) -> log type of the log records of ``names[k:]`` in the log block
    ``blk`` (``targets``: each name + NUL, the prefix of its keys; sorted). Returns the index of the first
    name whose records may continue past the block, and ``skip`` for the next block (see below).

    The walk is ``seek_refs``'s: intervals below the wanted name skipped, keys built only for records
    that reach it. Values are skipped, never decoded: after the two object ids come the name, email,
    time, tz and message. Consecutive entries mostly share them (a batch of refs written by one command)
    or at least all but the message, so ``skip`` holds the bytes of the last value's fields after the ids
    (``tail``) and of its name to tz (``ident``): when the bytes ahead equal one of them, that run is
    skipped by one C-level compare (equal bytes decode equally: every field is self-delimiting)."""
    try:
        return _scan_log_keys(blk, targets, names, k, seen, skip)
    except RecordError as e:
        raise CorruptStore(blk.file, f"log block does not decode ({e.what})", blk.offset) from None


def _scan_log_keys(blk: Block, targets, names, k: int, seen: dict, skip: tuple) -> tuple[int, tuple]:
    data = blk.data
    end = blk.restart_off
    hs2 = 2 * blk.hash_size
    ident, tail = skip
    li = len(ident)
    ltail = len(tail)
    frombytes = int.from_bytes
    nt = len(targets)
    t = targets[k]
    lt = len(t)
    starts = _interval_starts(blk)
    nr = len(starts)
    j = 0
    while j < nr:
        pos = starts[j]
        j += 1
        if j < nr:
            stop = starts[j]
            limit = _restart_key(data, stop)
            if limit <= t:
                continue  # every key of the interval sorts below the wanted name's
        else:
            stop = end
            limit = None
        last = b""
        m = 0
        while pos < stop:
            p = data[pos]
            x = data[pos + 1]
            if (p | x) < 0x80:
                s = pos + 2
            else:
                p, x, s = _key_header(data, pos, stop)
            e = s + (x >> 3)
            if x & 7:
                q = e + hs2
                # (a slice compares faster than startswith parses its arguments)
                if data[q : q + ltail] == tail:
                    pos = q + ltail
                else:
                    pos = q
                    if data[pos : pos + li] == ident:
                        pos += li
                    else:  # (every read below the interval's end: get_varint raises past it)
                        c = data[pos] if pos < stop else 0x80  # committer name
                        if c < 0x80:
                            pos += 1 + c
                        else:
                            c, pos = get_varint(data, pos, stop)
                            pos += c
                        c = data[pos] if pos < stop else 0x80  # email
                        if c < 0x80:
                            pos += 1 + c
                        else:
                            c, pos = get_varint(data, pos, stop)
                            pos += c
                        while pos < stop and data[pos] >= 0x80:  # time
                            pos += 1
                        pos += 3  # the time's last byte, tz
                        ident = data[q:pos]
                        li = pos - q
                    c = data[pos] if pos < stop else 0x80  # message
                    if c < 0x80:
                        pos += 1 + c
                    else:
                        c, pos = get_varint(data, pos, stop)
                        pos += c
                    tail = data[q:pos]
                    ltail = pos - q
            else:
                pos = e
            if p > m or (p == m and s < e and data[s] < t[m]):
                continue  # below the wanted name's keys
            key = last[:p] + data[s:e] if p else data[s:e]
            last = key
            while key >= t:
                if key.startswith(t):  # one of the wanted name's entries
                    if len(key) != lt + 8:
                        raise RecordError("log key is not name NUL update index", s)
                    got = (names[k], _MAX_UI - frombytes(key[lt:], "big"))
                    if got not in seen:
                        seen[got] = x & 7
                    m = _IN_RUN
                    break
                k += 1  # past the wanted name's entries
                if k == nt:
                    return k, (ident, tail)
                t = targets[k]
                lt = len(t)
                if limit is not None and limit <= t:
                    pos = stop  # the rest of the interval sorts below the next wanted name
                    break
            else:
                n = len(key) if len(key) < lt else lt
                m = n - ((frombytes(key[:n], "big") ^ frombytes(t[:n], "big")).bit_length() + 7) // 8
        if pos != stop:
            raise RecordError("a log record runs past its restart interval", pos)
    return k, (ident, tail)
