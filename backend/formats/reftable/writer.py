"""Writing reftable files byte for byte the way git's reftable/writer.c does.

Same block filling (a record goes into the current block when it, the restart table and the count fit in
``block_size``), same restart points (every ``restart_interval`` records, plus any record that shares no
prefix with the previous key), ref/obj/index blocks padded to ``block_size`` except the last block before the
log section or the footer, log blocks zlib-deflated at level 9 and never padded, a ref index only when
there are more than 3 ref blocks (multi-level until a level has at most 3 blocks), obj blocks only when a
ref index was written and ``index_objects``, and the same footer with its CRC-32.
"""

from __future__ import annotations

import zlib
from binascii import unhexlify
from collections.abc import Iterable
from itertools import chain, compress, islice, repeat
from operator import add, itemgetter, lt, ne

from ...errors import EntryTooBig
from ...model import HASH_RAWSZ
from .record import (
    BLOCK_INDEX,
    BLOCK_LOG,
    BLOCK_OBJ,
    BLOCK_REF,
    LOG_DELETION,
    VALUE_DELETION,
    VALUE_VAL1,
    VALUE_VAL2,
    LogRecord,
    RefRecord,
    common_prefix_len,
    encode_log_value,
    encode_obj_value,
    encode_ref_value,
    put_varint,
)
from .table import HASH_ID_OF, HEADER_SIZE

MAX_RESTARTS = 65535
_INDEX_THRESHOLD = 3


_PAIRS: list[list[bytes]] = []  # [p][x]: the two one-byte varints heading a record, built on first use


def _pairs() -> list[list[bytes]]:
    _PAIRS.extend([bytes((p, x)) for x in range(128)] for p in range(128))
    return _PAIRS


class _BlockWriter:
    __slots__ = (
        "type",
        "header_off",
        "buf",
        "next",
        "block_size",
        "restarts",
        "entries",
        "last_key",
        "interval",
    )

    def __init__(self, btype: int, header_off: int, block_size: int, interval: int) -> None:
        self.type = btype
        self.header_off = header_off
        self.buf = bytearray(header_off) + bytes((btype, 0, 0, 0))
        self.next = header_off + 4
        self.block_size = block_size
        self.restarts: list[int] = []
        self.entries = 0
        self.last_key = b""
        self.interval = interval

    def add(self, key: bytes, extra: int, value: bytes) -> bool:
        """Append a record; False when it does not fit (the block must be flushed)."""
        return self.fill((key,), (extra,), (value,), 0, 1) == 1

    def fill(self, keys, extras, values, i: int, n: int) -> int:
        """Append records ``i``.. of the parallel sequences while they fit; the index of the first record
        that did not (``n`` when all did). The writer's hot loop: state in locals, the room left kept
        net of the restart table, the two one-byte varints of a record appended as one pair."""
        buf = self.buf
        restarts = self.restarts
        rlen = len(restarts)
        free = self.block_size - self.next - 2 - 3 * rlen  # for records and their restart entries
        entries = self.entries
        last = self.last_key
        interval = self.interval
        pairs = _PAIRS or _pairs()
        frombytes = int.from_bytes
        while i < n:
            key = keys[i]
            lk = len(key)
            if entries % interval == 0:
                p = 0
            else:
                m = len(last)
                if lk < m:
                    m = lk
                p = m - ((frombytes(last[:m]) ^ frombytes(key[:m])).bit_length() + 7) // 8
            x = ((lk - p) << 3) | extras[i]
            head = pairs[p][x] if p < 128 and x < 128 else put_varint(p) + put_varint(x)
            size = len(head) + lk - p + len(values[i])
            if p == 0 and rlen < MAX_RESTARTS:
                if size + 3 > free:
                    break
                restarts.append(self.block_size - 2 - 3 * rlen - free)
                rlen += 1
                free -= size + 3
                buf += head
                buf += key
            else:
                if size > free:
                    break
                free -= size
                buf += head
                buf += key[p:]
            buf += values[i]
            last = key
            entries += 1
            i += 1
        self.next = self.block_size - 2 - 3 * rlen - free
        self.entries = entries
        self.last_key = last
        return i

    def finish(self) -> bytearray:
        """The block's bytes (header space included; log blocks deflated)."""
        buf = self.buf
        for r in self.restarts:
            buf += r.to_bytes(3, "big")
        buf += len(self.restarts).to_bytes(2, "big")
        block_len = len(buf)
        h = self.header_off
        buf[h + 1 : h + 4] = block_len.to_bytes(3, "big")
        if self.type == BLOCK_LOG:
            skip = h + 4
            co = zlib.compressobj(9)
            buf = buf[:skip] + co.compress(bytes(buf[skip:])) + co.flush()
        return buf


class _Stats:
    __slots__ = ("offset", "blocks", "index_offset", "index_blocks")

    def __init__(self) -> None:
        self.offset = 0
        self.blocks = 0
        self.index_offset = 0
        self.index_blocks = 0


class _Writer:
    def __init__(
        self, hash_name, min_ui, max_ui, block_size, restart_interval, version, index_objects, exact
    ):
        if not 0 < block_size < (1 << 24):
            raise ValueError(f"block size {block_size} out of range")
        self.hash_name = hash_name
        self.hash_size = HASH_RAWSZ[hash_name]
        self.version = version
        self.header_size = HEADER_SIZE[version]
        self.min_ui = min_ui
        self.max_ui = max_ui
        self.block_size = block_size
        self.interval = restart_interval or 16
        self.index_objects = index_objects
        self.exact = exact
        self.out: list[bytes] = []
        self.next = 0
        self.pending_padding = 0
        self.index: list[tuple[bytes, int]] = []
        self.last_key = b""
        self.stats = {t: _Stats() for t in (BLOCK_REF, BLOCK_LOG, BLOCK_OBJ, BLOCK_INDEX)}
        self.obj_tree: dict[bytes, list[int]] = {}
        self.object_id_len = 0
        self.bw: _BlockWriter | None = None
        self._reinit(BLOCK_REF)

    def header(self) -> bytes:
        h = b"REFT" + bytes((self.version,)) + self.block_size.to_bytes(3, "big")
        h += self.min_ui.to_bytes(8, "big") + self.max_ui.to_bytes(8, "big")
        if self.version == 2:
            h += HASH_ID_OF[self.hash_name]
        return h

    def _reinit(self, btype: int) -> None:
        self.last_key = b""
        self.bw = _BlockWriter(
            btype, self.header_size if self.next == 0 else 0, self.block_size, self.interval
        )

    def _padded_write(self, data, padding: int) -> None:
        if self.pending_padding:
            self.out.append(bytes(self.pending_padding))
        self.pending_padding = padding
        self.out.append(bytes(data))

    def _flush_block(self) -> None:
        bw = self.bw
        if bw is None or bw.entries == 0:
            return
        data = bw.finish()
        raw = len(data)
        padding = 0 if bw.type == BLOCK_LOG else self.block_size - raw
        st = self.stats[bw.type]
        if st.blocks == 0 and self.next > 0:
            st.offset = self.next
        st.blocks += 1
        if self.next == 0:
            data[: self.header_size] = self.header()
        self._padded_write(data, padding)
        self.index.append((bw.last_key, self.next))
        self.next += padding + raw
        self.bw = None

    def _add_record(self, btype: int, key: bytes, extra: int, value: bytes) -> None:
        if self.last_key >= key:
            raise ValueError(f"records out of order or duplicate: {key!r}")
        self.last_key = key
        if self.bw is None:
            self._reinit(btype)
            self.last_key = key
        if self.bw.type != btype:
            raise ValueError("record of another section")
        if self.bw.add(key, extra, value):
            return
        self._flush_block()
        self._reinit(btype)
        self.last_key = key
        if not self.bw.add(key, extra, value):
            raise EntryTooBig(f"record {key!r} does not fit in a {self.block_size}-byte block")

    def add_sorted(self, btype: int, keys, extras, values, hashes=None) -> None:
        """Append a whole section's records at once (``keys`` strictly ascending, checked here), filling
        blocks in one loop. ``hashes``: per record the raw object ids to index (ref section)."""
        n = len(keys)
        if not n:
            return
        if self.last_key >= keys[0] or not all(map(lt, keys, islice(keys, 1, None))):
            raise ValueError("records out of order or duplicate")
        if self.bw is None:
            self._reinit(btype)
        if self.bw.type != btype:
            raise ValueError("record of another section")
        self._add_rows(btype, keys, extras, values, hashes)
        self.last_key = keys[-1]

    def _add_rows(self, btype: int, keys, extras, values, hashes) -> None:
        """Fill blocks from the columns (``_BlockWriter.fill``), flushing each full one."""
        n = len(keys)
        i = 0
        while i < n:
            if self.bw is None:
                self._reinit(btype)
            bw = self.bw
            j = bw.fill(keys, extras, values, i, n)
            if hashes is not None and j > i:
                self._index_objects(hashes, i, j)
            if j < n:
                if bw.entries == 0:
                    raise EntryTooBig(f"record {keys[j]!r} does not fit in a {self.block_size}-byte block")
                self._flush_block()
                self._reinit(btype)
            i = j

    def _index_objects(self, hashes, i: int, j: int) -> None:
        """Records ``i``..``j`` went into the block at ``self.next``: note it for each id they point at."""
        at = self.next
        obj_tree = self.obj_tree
        for h in dict.fromkeys(chain.from_iterable(hashes[i:j])):
            offs = obj_tree.get(h)
            if offs is None:
                obj_tree[h] = [at]
            elif offs[-1] != at:
                offs.append(at)

    def _finish_section(self) -> None:
        typ = self.bw.type
        before = self.stats[BLOCK_INDEX].blocks
        self._flush_block()
        index_start = 0
        while len(self.index) > _INDEX_THRESHOLD:
            index_start = self.next
            self._reinit(BLOCK_INDEX)
            idx = self.index
            self.index = []
            for key, off in idx:
                self._add_record(BLOCK_INDEX, key, 0, put_varint(off))
            self._flush_block()
        self.index = []
        st = self.stats[typ]
        st.index_blocks = self.stats[BLOCK_INDEX].blocks - before
        st.index_offset = index_start
        self.last_key = b""

    def _dump_object_index(self) -> None:
        hashes = sorted(self.obj_tree)
        common = 1
        for a, b in zip(hashes, hashes[1:], strict=False):
            n = common_prefix_len(a, b)
            if n > common:
                common = n
        self.object_id_len = common + 1
        self._reinit(BLOCK_OBJ)
        for h in hashes:
            key = h[: self.object_id_len]
            offs = self.obj_tree[h]
            value, cnt = encode_obj_value(offs)
            if self.bw.add(key, cnt, value):
                continue
            self._flush_block()
            self._reinit(BLOCK_OBJ)
            if self.bw.add(key, cnt, value):
                continue
            value, cnt = encode_obj_value(())
            if not self.bw.add(key, cnt, value):
                raise EntryTooBig("obj record does not fit in an empty block")
        self._finish_section()

    def _finish_public_section(self) -> None:
        if self.bw is None:
            return
        typ = self.bw.type
        self._finish_section()
        if typ == BLOCK_REF and self.index_objects and self.stats[BLOCK_REF].index_blocks > 0:
            self._dump_object_index()
        self.obj_tree = {}
        self.bw = None

    def close(self) -> bytes:
        self._finish_public_section()
        empty = self.next == 0
        self.pending_padding = 0
        if empty:
            self._padded_write(self.header(), 0)
        f = self.header()
        f += self.stats[BLOCK_REF].index_offset.to_bytes(8, "big")
        f += ((self.stats[BLOCK_OBJ].offset << 5) | self.object_id_len).to_bytes(8, "big")
        f += self.stats[BLOCK_OBJ].index_offset.to_bytes(8, "big")
        f += self.stats[BLOCK_LOG].offset.to_bytes(8, "big")
        f += self.stats[BLOCK_LOG].index_offset.to_bytes(8, "big")
        f += zlib.crc32(f).to_bytes(4, "big")
        self._padded_write(f, 0)
        return b"".join(self.out)


def write_table(
    refs: Iterable[RefRecord],
    logs: Iterable[LogRecord] = (),
    *,
    hash_name: str = "sha1",
    min_update_index: int,
    max_update_index: int,
    block_size: int = 4096,
    restart_interval: int = 16,
    version: int | None = None,
    index_objects: bool = True,
    exact_log_message: bool = False,
) -> bytes:
    """The bytes of a table holding ``refs`` and ``logs``, exactly as git's writer lays them out.

    Refs are sorted by name and logs by (name, newest update index first) here; duplicates raise
    ValueError. ``version`` None picks git's choice (1 for SHA-1, 2 for SHA-256). Ref update indices must
    lie in [min, max]; log update indices may be below min (git allows it) but not above max. Unless
    ``exact_log_message``, messages are normalised as git does (trailing newlines stripped, one added;
    a multi-line message is refused). A table with no records is header + footer: git never adds such a
    table to the stack, so callers should skip it.
    """
    if version is None:
        version = 1 if hash_name == "sha1" else 2
    if version == 1 and hash_name != "sha1":
        raise ValueError("version 1 tables are SHA-1 only")
    w = _Writer(
        hash_name, min_update_index, max_update_index, block_size, restart_interval, version, index_objects,
        exact_log_message,
    )  # fmt: skip
    refs = sorted(refs, key=_by_name)  # itemgetter: C-speed keys
    lo, hi = min_update_index, max_update_index
    if refs:
        values, hashes = _ref_values(refs, lo, hi, index_objects)
        w.add_sorted(BLOCK_REF, list(map(_by_name, refs)), list(map(_by_type, refs)), values, hashes)
    logs = list(logs)
    if logs:
        if w.bw is not None and w.bw.type == BLOCK_REF:
            w._finish_public_section()
        w.next -= w.pending_padding
        w.pending_padding = 0
        keys, types, values = _log_columns(logs, max_update_index, w.hash_size, exact_log_message)
        w.add_sorted(BLOCK_LOG, keys, types, values)
    return w.close()


_by_name = itemgetter(0)  # RefRecord.name
_by_type = itemgetter(2)  # RefRecord.value_type, LogRecord.log_type


def _ref_values(refs, lo: int, hi: int, index_objects: bool) -> tuple[list[bytes], list | None]:
    """Each ref's value bytes (the update-index delta first) and, when objects are indexed, the raw ids
    each points at; None instead when no record points at one (a batch of tombstones: nothing to index,
    and no per-record pass over empty id lists)."""
    uis = list(map(_by_update_index, refs))
    if min(uis) < lo or max(uis) > hi:
        ui = next(u for u in uis if not lo <= u <= hi)
        raise ValueError(f"update index {ui} outside {lo}..{hi}")
    deltas = {ui: put_varint(ui - lo) for ui in set(uis)}  # mostly one: a table's records share it
    heads = list(map(deltas.__getitem__, uis))
    types = list(map(_by_type, refs))
    # plain refs in C loops; the few others (peeled tags, symrefs, tombstones) patched after
    others = list(compress(range(len(types)), map(ne, types, repeat(VALUE_VAL1))))
    hexes = list(map(_by_value, refs))
    for i in others:
        hexes[i] = b""
    raws = list(map(unhexlify, hexes))
    values = list(map(add, heads, raws))
    if not index_objects:
        hashes = None
    elif len(others) < len(types):
        hashes = list(zip(raws))
    else:
        hashes = [()] * len(types)
    for i in others:
        rec = refs[i]
        vt = types[i]
        if vt == VALUE_VAL2:
            raw, peeled = unhexlify(rec.value), unhexlify(rec.peeled)
            values[i] = heads[i] + raw + peeled
            ids: tuple[bytes, ...] = (raw, peeled)
        else:
            values[i] = heads[i] if vt == VALUE_DELETION else encode_ref_value(rec, lo)
            ids = ()
        if hashes is not None:
            hashes[i] = ids
    return values, hashes if hashes is not None and any(hashes) else None


_by_update_index = itemgetter(1)  # RefRecord.update_index
_by_value = itemgetter(3)  # RefRecord.value


def _log_columns(logs: list[LogRecord], hi: int, hs: int, exact: bool) -> tuple[list, list, list]:
    """Keys, types and value bytes of the log records, in key order. The key (name NUL reversed update
    index) sorts as (name, newest first): sorted by it at C speed."""
    rev = 0xFFFFFFFFFFFFFFFF
    unsorted = [rec.name + b"\0" + (rev - rec.update_index).to_bytes(8, "big") for rec in logs]
    if not any(map(_by_type, logs)):  # deletion records only (a deletion batch): no values
        return sorted(unsorted), [LOG_DELETION] * len(logs), [b""] * len(logs)
    order = sorted(range(len(logs)), key=unsorted.__getitem__)
    keys = [unsorted[i] for i in order]
    types = []
    values = []
    tails: dict[tuple, bytes] = {}  # who, when and why, encoded once: a transaction's entries share them
    zero = bytes(hs)
    for i in order:
        rec = logs[i]
        kind = rec.log_type
        types.append(kind)
        if kind == LOG_DELETION:
            values.append(b"")
            continue
        if rec.update_index > hi:
            raise ValueError(f"log update index {rec.update_index} above max {hi}")
        shared = rec[5:]  # ident_name email time tz message
        tail = tails.get(shared)
        if tail is None:
            if not exact:
                msg = rec.message.rstrip(b"\n")
                if b"\n" in msg:
                    raise ValueError(f"multi-line reflog message for {rec.name!r}")
                rec = rec._replace(message=msg + b"\n")
            tail = tails[shared] = encode_log_value(rec._replace(old=b"", new=b""), hs)[2 * hs :]
        old, new = rec.old, rec.new
        values.append((unhexlify(old) if old else zero) + (unhexlify(new) if new else zero) + tail)
    return keys, types, values
