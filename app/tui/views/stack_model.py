"""Per-table facts and the compaction forecast for the reftable stack view.

Tables are immutable once named in ``tables.list``, so a table's summary is computed once (in a worker: counting
tombstones walks its ref records) and cached by (name, file identity). The forecast uses the backend's
``suggest_compaction_segment`` (git's geometric policy) over the sizes git itself compares: file size minus
footer minus (header size - 1), as ``stack_segments_for_compaction`` in git's reftable/stack.c does.
"""

from __future__ import annotations

import os
import threading
from typing import Any, NamedTuple

HEADER = {1: 24, 2: 28}
FOOTER = {1: 68, 2: 72}


class TableSummary(NamedTuple):
    name: str
    min_update_index: int
    max_update_index: int
    size: int
    version: int
    hash_name: str
    block_size: int
    ref_records: int
    tombstones: int  # -1 until counted
    log_records: int
    blocks: dict[str, int]  # block type letter -> count
    has_index: bool
    has_obj: bool


_cache: dict[tuple, TableSummary] = {}
_lock = threading.Lock()


def _key(table: Any) -> tuple:
    return (table.name, tuple(getattr(table, "stat", ()) or ()))


def quick_summary(table: Any) -> TableSummary:
    """What the header/footer say, without walking blocks (for the first frame)."""
    with _lock:
        done = _cache.get(_key(table))
    if done is not None:
        return done
    return TableSummary(
        table.name,
        table.min_update_index,
        table.max_update_index,
        table.size,
        table.version,
        table.hash_name,
        table.block_size,
        -1,
        -1,
        -1,
        {},
        False,
        False,
    )


DEEP_LIMIT = 4 << 20  # tables up to this size get every count; bigger ones skip counting log records


def full_summary(table: Any, deep: bool | None = None) -> TableSummary:
    """Every count the stack view shows (worker threads only).

    Block types come from walking the block headers; ref records and tombstones from decoding the ref blocks
    (~6 s of CPU at 1M refs). Counting log records means inflating and decoding every log record (~50 s at
    1M): done for tables up to DEEP_LIMIT or when ``deep`` is asked; otherwise ``log_records`` is -2 ("not
    counted") and the view offers the deep count on a key."""
    key = _key(table)
    with _lock:
        done = _cache.get(key)
    if done is not None and (done.log_records != -2 or not deep):
        return done
    if deep is None:
        deep = table.size <= DEEP_LIMIT
    blocks: dict[str, int] = {}
    has_index = has_obj = False
    refs = tombstones = 0
    from refscope.backend.formats.reftable.block import decode_ref_block

    for section, blk in table.iter_blocks():
        letter = chr(blk.type)
        blocks[letter] = blocks.get(letter, 0) + 1
        if section.endswith("index"):
            has_index = True
        if section.startswith("obj"):
            has_obj = True
        if letter == "r" and not deep:
            rb = decode_ref_block(blk, table.min_update_index)
            refs += len(rb.names)
            tombstones += rb.types.count(0)
    if deep:
        c = table.counts()
        refs = c["refs"] + c["tombstones"]
        tombstones = c["tombstones"]
        logs = c["logs"] + c["log_deletions"]
    else:
        logs = -2
    s = TableSummary(
        table.name,
        table.min_update_index,
        table.max_update_index,
        table.size,
        table.version,
        table.hash_name,
        table.block_size,
        refs,
        tombstones,
        logs,
        blocks,
        has_index,
        has_obj,
    )
    with _lock:
        _cache[key] = s
    return s


def compaction_size(size: int, version: int, hash_name: str = "sha1") -> int:
    """The size git's auto-compaction compares: table size without footer, minus (header - 1).

    git takes the header size from the stack's hash (sha1 -> version 1, else 2) and the footer from the table.
    """
    stack_version = 1 if hash_name == "sha1" else 2
    return size - FOOTER.get(version, 68) - (HEADER[stack_version] - 1)


def suggest(sizes: list[int], factor: int) -> tuple[int, int] | None:
    from refscope.backend.formats.reftable.stack import suggest_compaction_segment

    seg = suggest_compaction_segment(list(sizes), factor)
    if seg is None:
        return None
    start, end = seg
    return (start, end) if end - start > 1 else None


class Forecast(NamedTuple):
    factor: int
    auto: bool  # does a write auto-compact (git: always, unless GIT_TEST_REFTABLE_AUTOCOMPACTION=false)
    sizes: list[int]  # compaction sizes of the current tables
    now: tuple[int, int] | None  # what compacting the stack as it is would merge
    next_size: int  # assumed compaction size of the next write's table
    next: (
        tuple[int, int] | None
    )  # what the next write's auto-compaction would merge (indexes incl. the new one)
    reasons: list[str]


def forecast(tables: list[Any], factor: int = 2, auto: bool = True, next_size: int | None = None) -> Forecast:
    """git's policy applied to the stack now and after one more write of ``next_size`` (default: the newest
    table's size, i.e. 'another write like the last one')."""
    sizes = [compaction_size(t.size, t.version, t.hash_name) for t in tables]
    now = suggest(sizes, factor) if len(sizes) > 1 else None
    if next_size is None:
        next_size = sizes[-1] if sizes else 0
    nxt_sizes = sizes + [next_size]
    nxt = suggest(nxt_sizes, factor) if len(nxt_sizes) > 1 else None
    reasons = explain(nxt_sizes, factor, nxt, new_last=True)
    if not auto:
        reasons.insert(0, "auto-compaction is off: git will not compact on its own")
    return Forecast(factor, auto, sizes, now, next_size, nxt, reasons)


def explain(sizes: list[int], factor: int, seg: tuple[int, int] | None, new_last: bool = False) -> list[str]:
    """Why git's policy picks ``seg``: the comparisons it makes, in its own order (newest backwards)."""
    n = len(sizes)
    label = [f"#{i}" for i in range(n)]
    if new_last and n:
        label[-1] = "new"
    if seg is None:
        return [
            f"every table is at least {factor}× the next newer one: the sequence is geometric, "
            f"nothing to merge"
        ]
    start, end = seg
    last = end - 1
    out = []
    if last < n - 1:
        out.append(
            f"tables after {label[last]} are geometric (each ≥ {factor}× the next newer), so they stay"
        )
    out.append(
        f"{label[last - 1]} ({sizes[last - 1]} B) < {factor} × {label[last]} ({sizes[last]} B): "
        f"the merge ends at {label[last]}"
    )
    acc = sizes[last]
    for i in range(last - 1, -1, -1):
        violates = sizes[i] < acc * factor
        if i < last - 1 and i >= start:
            why = "joins" if violates else "joins (an older table violates, the run is contiguous)"
            out.append(
                f"{label[i]} ({sizes[i]} B) {'<' if violates else '≥'} {factor} × {acc} B merged after "
                f"it: {why}"
            )
        elif i < start:
            out.append(f"{label[i]} ({sizes[i]} B) ≥ {factor} × {acc} B after it: stays")
        acc += sizes[i]
    merged = sum(sizes[start:end])
    out.append(f"→ merge {label[start]}..{label[last]} ({end - start} tables, {merged} B)")
    return out


def lock_files(reftable_dir: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(reftable_dir) if n.endswith(".lock"))
    except OSError:
        return []
