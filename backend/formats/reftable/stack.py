"""The reftable stack: tables.list and git's geometric auto-compaction policy (API skeleton)."""

from __future__ import annotations


def read_tables_list(reftable_dir: str) -> list[str]:
    """Validated table names from ``<reftable_dir>/tables.list``, oldest first."""
    raise NotImplementedError


def suggest_compaction_segment(sizes: list[int], factor: int = 2) -> tuple[int, int] | None:
    """git's geometric policy: the half-open [start, end) range of tables to compact, or None."""
    raise NotImplementedError
