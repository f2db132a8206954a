"""The C heap's policy for the TUI's process, which makes and frees arrays of a million cells in workers.

glibc serves a big allocation by mmap and gives it back to the system when it is freed -- but the first
such free raises its threshold to that size, and from then on arrays of that size come from the heap,
whose freed memory stays with the process (each thread has its own arena) and in its resident set. The
date order and the rows' grouping make a few arrays of 4-8 bytes a row each time: with the threshold
moving, the peak resident set of a sort at 1M refs grew by a hundred MB and stayed. Fixed, every such
array's memory goes back when it is freed (what tests/bench/bench_tui_tips.py's peak RSS measures).
"""

from __future__ import annotations

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
THRESHOLD = 128 * 1024  # glibc's own starting value


def fix_mmap_threshold() -> bool:
    """Keep glibc's mmap threshold where it starts (a fixed threshold no free moves); False where the C
    library has no mallopt (macOS) or refuses it."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD))
