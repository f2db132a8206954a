"""Reftable records and their byte encodings (varints, keys, values).

Pure functions over bytes/memoryviews. Decoders never raise IndexError/struct.error: every length is
checked against the bytes present and failures raise ``CorruptStore(file, what, offset)``.
"""

from __future__ import annotations

from binascii import hexlify, unhexlify
from collections import namedtuple

from ...errors import RecordError, VarintError

# Block types.
BLOCK_REF = ord("r")
BLOCK_LOG = ord("g")
BLOCK_OBJ = ord("o")
BLOCK_INDEX = ord("i")

# Ref value types.
VALUE_DELETION = 0
VALUE_VAL1 = 1
VALUE_VAL2 = 2
VALUE_SYMREF = 3

# Log types.
LOG_DELETION = 0
LOG_UPDATE = 1


# Records are collections.namedtuple classes, not typing.NamedTuple: no ``typing`` import on the CLI path.
class RefRecord(
    namedtuple("RefRecord", "name update_index value_type value peeled target", defaults=(None,) * 3)
):
    """One ref record: ``name`` (bytes), ``update_index``, ``value_type``; ``value`` is the oid (hex
    bytes) for types 1/2, ``peeled`` for type 2, ``target`` the symref target for type 3; unused fields
    are None. Type 0 is a tombstone."""

    __slots__ = ()


class LogRecord(
    namedtuple(
        "LogRecord",
        "name update_index log_type old new ident_name email time tz message",
        defaults=(b"", b"", b"", b"", 0, 0, b""),
    )
):
    """One log record (``log_type`` 1 = reflog entry, 0 = deletion of the entry with this update index).
    ``old``/``new`` are hex bytes; for log_type 0 the data fields are empty.

    ``tz`` is the stored sint16 exactly as git writes it: the ident's ``±HHMM`` read as a decimal number
    (``+0130`` -> 130, ``-0800`` -> -800; refs/reftable-backend.c), not minutes as reftable.adoc says.
    ``tz_minutes``/``tz_from_minutes`` convert."""

    __slots__ = ()


def tz_minutes(tz: int) -> int:
    """Minutes east of UTC of a stored ``±HHMM`` value (git's encoding)."""
    a = abs(tz)
    m = (a // 100) * 60 + a % 100
    return -m if tz < 0 else m


def tz_from_minutes(minutes: int) -> int:
    """The stored ``±HHMM`` value git writes for an offset of ``minutes`` east of UTC."""
    a = abs(minutes)
    v = (a // 60) * 100 + a % 60
    return -v if minutes < 0 else v


class ObjRecord(namedtuple("ObjRecord", "prefix positions")):
    """Obj record: an abbreviated (binary) oid ``prefix`` and the ``positions`` (tuple) of ref blocks
    holding it."""

    __slots__ = ()


class IndexRecord(namedtuple("IndexRecord", "last_key position")):
    """Index record: the ``last_key`` of a block and that block's file ``position``."""

    __slots__ = ()


# --- varints ---------------------------------------------------------------------------------------------
# git's reftable varint: big-endian groups of 7 bits, each continuation adds 1 (so no two encodings of one
# value exist). Values are uint64; decoding rejects anything that would overflow 64 bits.

_VARINT_LIMIT = 1 << 57  # a value this large cannot be shifted by 7 more bits within 64 bits


def get_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Decode one varint from ``buf[pos:end]``: (value, next position). Raises VarintError."""
    if pos >= end:
        raise VarintError("truncated varint", pos)
    c = buf[pos]
    pos += 1
    val = c & 0x7F
    while c & 0x80:
        val += 1
        if val >= _VARINT_LIMIT:
            raise VarintError("varint overflows 64 bits", pos - 1)
        if pos >= end:
            raise VarintError("truncated varint", pos)
        c = buf[pos]
        pos += 1
        val = (val << 7) + (c & 0x7F)
    return val, pos


def put_varint(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**64) as git's reftable varint."""
    if value < 0x80:
        return bytes((value,))
    out = [value & 0x7F]
    value >>= 7
    while value:
        value -= 1
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.reverse()
    return bytes(out)


# --- decoding one record -----------------------------------------------------------------------------
# Every record of every block type starts with its key: varint prefix length, varint (suffix length << 3 |
# extra), suffix; the key is the previous key's first ``prefix`` bytes and the suffix (reftable.adoc). The
# checked decoders below raise RecordError with the in-block offset of the fault; the block turns it into a
# CorruptStore. The fast paths in block.py inline the one-byte case of ``decode_key`` (the common shape).


def decode_key(buf, pos: int, end: int, last: bytes, restart: bool = False) -> tuple[bytes, int, int, int]:
    """The key of the record at ``pos`` of records ending at ``end``, after the key ``last``: (key, extra
    bits, position after the key, prefix length). ``restart``: the record is a restart point (prefix
    length 0). git's reftable_decode_key."""
    rec = pos
    if pos < end and buf[pos] < 0x80:  # one-byte varints inline: get_varint's own checks hold
        prefix = buf[pos]
        pos += 1
    else:
        prefix, pos = get_varint(buf, pos, end)
    if pos < end and buf[pos] < 0x80:
        x = buf[pos]
        pos += 1
    else:
        x, pos = get_varint(buf, pos, end)
    if restart and prefix:
        raise RecordError(f"record at restart point has prefix length {prefix}", rec)
    if prefix > len(last):
        raise RecordError(f"prefix length {prefix} longer than the previous key ({len(last)})", rec)
    npos = pos + (x >> 3)
    if npos > end:
        raise RecordError(f"key suffix of {x >> 3} bytes runs past the records", pos)
    key = last[:prefix] + buf[pos:npos] if prefix else buf[pos:npos]
    if not key:
        raise RecordError("empty key", rec)
    return key, x & 7, npos, prefix


def decode_ref_value(buf, key: bytes, vt: int, pos: int, end: int, hs: int, min_ui: int, rec: int):
    """(RefRecord, position after it) of the ref value of type ``vt`` at ``pos`` (``rec``: the record's
    offset, for errors; ``hs``: the hash size)."""
    delta, pos = get_varint(buf, pos, end)
    val = peeled = target = None
    if vt == 1:
        if pos + hs > end:
            raise RecordError("ref value runs past the records", rec)
        val = hexlify(buf[pos : pos + hs])
        pos += hs
    elif vt == 2:
        if pos + 2 * hs > end:
            raise RecordError("ref value runs past the records", rec)
        val = hexlify(buf[pos : pos + hs])
        peeled = hexlify(buf[pos + hs : pos + 2 * hs])
        pos += 2 * hs
    elif vt == 3:
        n, pos = get_varint(buf, pos, end)
        if pos + n > end:
            raise RecordError("symref target runs past the records", rec)
        target = buf[pos : pos + n]
        pos += n
    elif vt != 0:
        raise RecordError(f"unknown ref value type {vt}", rec)
    return RefRecord(key, delta + min_ui, vt, val, peeled, target), pos


def _string(buf, pos: int, end: int, rec: int, what: str) -> tuple[bytes, int]:
    n, pos = get_varint(buf, pos, end)
    if pos + n > end:
        raise RecordError(f"log {what} runs past the records", rec)
    return buf[pos : pos + n], pos + n


def decode_log_value(buf, key: bytes, lt: int, pos: int, end: int, hs: int, rec: int):
    """(LogRecord, position after it) of the log record with ``key`` and log type ``lt``."""
    if len(key) <= 9 or key[-9] != 0:
        raise RecordError("log key is not name NUL update-index", rec)
    name = key[:-9]
    ui = 0xFFFFFFFFFFFFFFFF - int.from_bytes(key[-8:], "big")
    if lt == 0:
        return LogRecord(name, ui, 0), pos
    if pos + 2 * hs > end:
        raise RecordError("log old/new ids run past the records", rec)
    old = hexlify(buf[pos : pos + hs])
    new = hexlify(buf[pos + hs : pos + 2 * hs])
    pos += 2 * hs
    ident, pos = _string(buf, pos, end, rec, "name")
    email, pos = _string(buf, pos, end, rec, "email")
    t, pos = get_varint(buf, pos, end)
    if pos + 2 > end:
        raise RecordError("log timezone runs past the records", rec)
    tz = int.from_bytes(buf[pos : pos + 2], "big", signed=True)
    pos += 2
    msg, pos = _string(buf, pos, end, rec, "message")
    return LogRecord(name, ui, lt, old, new, ident, email, t, tz, msg), pos


def decode_obj_value(buf, key: bytes, cnt3: int, pos: int, end: int):
    """(ObjRecord, position after it) of the obj record with ``key`` (``cnt3``: its extra bits)."""
    count = cnt3
    if cnt3 == 0:
        count, pos = get_varint(buf, pos, end)
        if count > end - pos:
            raise RecordError(f"obj record claims {count} positions", pos)
    positions = []
    if count:
        p, pos = get_varint(buf, pos, end)
        positions.append(p)
        for _ in range(count - 1):
            d, pos = get_varint(buf, pos, end)
            p += d
            positions.append(p)
    return ObjRecord(key, tuple(positions)), pos


def decode_index_value(buf, key: bytes, extra: int, pos: int, end: int, rec: int):
    """(IndexRecord, position after it) of the index record with ``key``."""
    if extra:
        raise RecordError(f"index record with value type {extra}", rec)
    position, pos = get_varint(buf, pos, end)
    return IndexRecord(key, position), pos


def log_key(name: bytes, update_index: int) -> bytes:
    """The sort key of a log record: name NUL reverse_int64(update_index)."""
    return name + b"\0" + (0xFFFFFFFFFFFFFFFF - update_index).to_bytes(8, "big")


def split_log_key(key: bytes) -> tuple[bytes, bytes] | None:
    """(name, the 8 stored bytes of its reversed update index) of a log key; None when ``key`` is not one
    (the inverse of ``log_key``, for views that show a log key's parts)."""
    if len(key) > 9 and key[-9:-8] == b"\0":
        return key[:-9], key[-8:]
    return None


def common_prefix_len(a: bytes, b: bytes) -> int:
    """Length of the common prefix of ``a`` and ``b`` (C-speed: one XOR of the two as big integers)."""
    n = min(len(a), len(b))
    x = int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")
    return n - (x.bit_length() + 7) // 8


def encode_ref_value(rec: RefRecord, min_update_index: int) -> bytes:
    """update_index_delta varint + the value bytes of a ref record (oids given as hex)."""
    head = put_varint(rec.update_index - min_update_index)
    vt = rec.value_type
    if vt == VALUE_DELETION:
        return head
    if vt == VALUE_VAL1:
        return head + unhexlify(rec.value)
    if vt == VALUE_VAL2:
        return head + unhexlify(rec.value) + unhexlify(rec.peeled)
    if vt == VALUE_SYMREF:
        return head + put_varint(len(rec.target)) + rec.target
    raise ValueError(f"bad ref value type {vt}")


def encode_log_value(rec: LogRecord, hash_size: int) -> bytes:
    """The log_data of a log record (empty for a deletion record)."""
    if rec.log_type == LOG_DELETION:
        return b""
    old = unhexlify(rec.old) if rec.old else bytes(hash_size)
    new = unhexlify(rec.new) if rec.new else bytes(hash_size)
    return b"".join(
        (
            old,
            new,
            put_varint(len(rec.ident_name)),
            rec.ident_name,
            put_varint(len(rec.email)),
            rec.email,
            put_varint(rec.time),
            (rec.tz & 0xFFFF).to_bytes(2, "big"),
            put_varint(len(rec.message)),
            rec.message,
        )
    )


def encode_obj_value(positions: tuple[int, ...] | list[int]) -> tuple[bytes, int]:
    """(value bytes, cnt_3) of an obj record."""
    n = len(positions)
    parts = []
    if n == 0 or n >= 8:
        parts.append(put_varint(n))
    if n:
        parts.append(put_varint(positions[0]))
        last = positions[0]
        for p in positions[1:]:
            parts.append(put_varint(p - last))
            last = p
    return b"".join(parts), (n if 0 < n < 8 else 0)
