"""Writing reftable files the way git's reftable/writer.c does (API skeleton)."""

from __future__ import annotations

from collections.abc import Iterable

from .record import LogRecord, RefRecord


def write_table(
    refs: Iterable[RefRecord],
    logs: Iterable[LogRecord] = (),
    *,
    hash_name: str = "sha1",
    min_update_index: int,
    max_update_index: int,
    block_size: int = 4096,
    restart_interval: int = 16,
    version: int = 1,
    index_objects: bool = True,
) -> bytes:
    """The bytes of a table holding ``refs`` and ``logs`` (sorted here; names must be unique)."""
    raise NotImplementedError
