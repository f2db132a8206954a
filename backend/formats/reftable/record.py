"""Reftable records and their byte encodings (varints, keys, values).

Pure functions over bytes/memoryviews. Decoders never raise IndexError/struct.error: every length is
checked against the bytes present and failures raise ``CorruptStore(file, what, offset)``.
"""

from __future__ import annotations

from binascii import unhexlify
from collections import namedtuple

from ...errors import VarintError

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
