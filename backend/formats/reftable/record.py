"""Reftable records and their byte encodings (varints, keys, values).

Pure functions over bytes/memoryviews. Decoders never raise IndexError/struct.error: every length is
checked against the bytes present and failures raise ``CorruptStore(file, what, offset)``.
"""

from __future__ import annotations

from typing import NamedTuple

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


class RefRecord(NamedTuple):
    """One ref record. ``value`` is the oid (hex bytes) for types 1/2, ``peeled`` for type 2,
    ``target`` the symref target for type 3; unused fields are None. Type 0 is a tombstone."""

    name: bytes
    update_index: int
    value_type: int
    value: bytes | None = None
    peeled: bytes | None = None
    target: bytes | None = None


class LogRecord(NamedTuple):
    """One log record (``log_type`` 1 = reflog entry, 0 = deletion of the entry with this update index).
    ``old``/``new`` are hex bytes; ``tz`` is minutes east of UTC; for log_type 0 the data fields are empty."""

    name: bytes
    update_index: int
    log_type: int
    old: bytes = b""
    new: bytes = b""
    ident_name: bytes = b""
    email: bytes = b""
    time: int = 0
    tz: int = 0
    message: bytes = b""


class ObjRecord(NamedTuple):
    """Obj record: an abbreviated (binary) oid prefix and the positions of ref blocks holding it."""

    prefix: bytes
    positions: tuple[int, ...]


class IndexRecord(NamedTuple):
    """Index record: the last key of a block and that block's file position."""

    last_key: bytes
    position: int
