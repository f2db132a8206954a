"""What the readers of ``Snapshot.iter_bulk`` chunks share (listing, for-each-ref's context).

Kept apart from ``base`` (which imports ``typing``) for the CLI's start-up.
"""

from __future__ import annotations

from bisect import bisect_left


def cut_before(hi: bytes, names: list, oids: list, peeled: list | None, targets: list | None) -> tuple:
    """The columns of one chunk (``names`` sorted) cut before the first name at or after ``hi``."""
    k = bisect_left(names, hi)
    return (
        names[:k],
        oids[:k],
        peeled[:k] if peeled is not None else None,
        targets[:k] if targets is not None else None,
    )
