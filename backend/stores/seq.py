"""Read sequence numbers: which of two snapshots of one store shows the later state of the disk.

A refresh can take a long time (seconds on a huge change) while a quicker one started after it finishes
first; whoever holds a snapshot swaps in a new one only when it is not older (``is_older``). The number is
taken when a store *starts* reading the disk, so a snapshot with a higher one shows the disk's state at
that moment or after it. Kept apart from ``base`` (which imports ``typing``) for the CLI's start-up.
"""

from __future__ import annotations

import itertools

_READS = itertools.count(1)


def next_read_seq() -> int:
    """The next number (process-wide; ``count.__next__`` is atomic under the GIL)."""
    return next(_READS)


def is_older(candidate, current) -> bool:
    """Would swapping ``current`` (None: there is none yet) for ``candidate`` go back in time? A snapshot
    no store numbered (``read_seq`` 0: a test double) never counts as older."""
    return current is not None and 0 < candidate.read_seq < current.read_seq
