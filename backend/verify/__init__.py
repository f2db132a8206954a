"""Integrity findings for a repository's ref storage, deeper than ``git refs verify``.

Why built on the parsers' own checks: a check that decodes the format a second time can disagree with the
readers, and then verify passes what a read rejects (or the reverse). As in git (``reftable/fsck.c``
walks tables with the readers that serve lookups; ``packed-backend.c`` has its ``packed_fsck``), each
format's check is a mode of its parser: ``formats/reftable/fsck.py`` walks a table block by block with the
reftable decoders and reports every fault where a reader stops at the first; packed-refs goes through the
packed parser's whole-file check, and only a file it is unsure of is walked line by line to name each
problem. On top, verify checks what no reader looks at (update indexes through the stack, names git hides,
symrefs pointing nowhere, stray files, locks, ownership) and then cross-checks by opening the store with
the stores' readers: anything they reject that the checks missed is reported too.

The package: ``findings`` (the records, the collector, the name checks), ``files`` (packed-refs and
loose refs), ``reftable`` (tables.list and the stack), ``locks`` (lock files and their owners),
``ownership``, ``run`` (one run and its summary). verify never writes; ``remove_stale_lock`` removes a
lock only when no process could be holding it.
"""

from __future__ import annotations

from .files import verify_loose, verify_packed
from .findings import ERROR, MAX_PER_FILE, WARNING, Collector, Finding
from .locks import STALE_AFTER_S, LockInfo, remove_stale_lock, stale_locks
from .ownership import check_ownership
from .reftable import TableInfo, table_blocks, verify_reftable, verify_table_bytes
from .run import Summary, verify, verify_summary

__all__ = [
    "ERROR",
    "MAX_PER_FILE",
    "STALE_AFTER_S",
    "WARNING",
    "Collector",
    "Finding",
    "LockInfo",
    "Summary",
    "TableInfo",
    "check_ownership",
    "remove_stale_lock",
    "stale_locks",
    "table_blocks",
    "verify",
    "verify_loose",
    "verify_packed",
    "verify_reftable",
    "verify_summary",
    "verify_table_bytes",
]
