"""One reftable file, memory-mapped and decoded lazily (API skeleton; implementation follows)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from .record import LogRecord, RefRecord


class Footer(NamedTuple):
    ref_index_position: int
    obj_position: int
    obj_id_len: int
    obj_index_position: int
    log_position: int
    log_index_position: int
    crc: int


class BlockInfo(NamedTuple):
    """One block as laid out in the file: ``offset`` of its header, ``length`` = bytes it occupies on disk
    (including padding; for log blocks the compressed size), ``block_len`` as stored (inflated size for logs),
    ``restart_count``, ``record_count``, and ``level`` for index blocks (0 = leaf-pointing)."""

    type: str  # "r", "g", "o", "i"
    section: str  # "ref", "ref_index", "obj", "obj_index", "log", "log_index"
    offset: int
    length: int
    block_len: int
    restart_count: int
    record_count: int


class Table:
    """A reftable file. Attributes: name, path, version, hash_name, hash_size, block_size, min_update_index,
    max_update_index, size, header_size, footer (Footer), stat (st_dev, st_ino, st_size)."""

    @classmethod
    def open(cls, path: str) -> Table:
        raise NotImplementedError

    def iter_refs(self, start: bytes = b"") -> Iterator[RefRecord]:
        """Ref records (tombstones included) in name order from the first name >= start."""
        raise NotImplementedError

    def iter_refs_located(self, start: bytes = b"") -> Iterator[tuple[RefRecord, int]]:
        """Like iter_refs, with the block offset of each record."""
        raise NotImplementedError

    def seek_ref(self, name: bytes) -> RefRecord | None:
        """The record of exactly ``name`` (maybe a tombstone), via the index when present."""
        raise NotImplementedError

    def iter_logs(self, name: bytes | None = None) -> Iterator[LogRecord]:
        """Log records in key order (name, then newest update index first); only ``name``'s when given."""
        raise NotImplementedError

    def blocks(self) -> list[BlockInfo]:
        """Every block of the file, in file order."""
        raise NotImplementedError
