"""Per-table facts and the compaction forecast for the reftable stack view.

Tables are immutable once named in ``tables.list``, so a table's summary is computed once (in a worker: counting
tombstones walks its ref records) and cached by (name, file identity). The counts are the backend's
(``Table.counts``, the same as ``refscope stack``); the forecast is the backend's (git's geometric policy over
the sizes git compares); this module only shapes them for the view.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple


class TableSummary(NamedTuple):
    name: str
    min_update_index: int
    max_update_index: int
    size: int
    version: int
    hash_name: str
    block_size: int
    ref_records: int  # ref records with a value (tombstones apart), as ``refscope stack``'s "refs"
    tombstones: int  # -1 until counted
    log_records: int  # reflog entries (-2: not counted, a big table)
    blocks: dict[str, int]  # block type letter -> count
    has_index: bool
    has_obj: bool
    log_deletions: int = -1  # log records deleting an entry (git writes them when a ref is deleted)


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
    return TableSummary(*_header(table), -1, -1, -1, {}, False, False)


def _header(table: Any) -> tuple:
    """The summary's first fields: what the table's header and footer say."""
    return (
        table.name,
        table.min_update_index,
        table.max_update_index,
        table.size,
        table.version,
        table.hash_name,
        table.block_size,
    )


DEEP_LIMIT = 4 << 20  # tables up to this size get every count; bigger ones skip counting log records


def full_summary(table: Any, deep: bool | None = None) -> TableSummary:
    """Every count the stack view shows (worker threads only), from ``Table.counts`` — the counts
    ``refscope stack`` prints.

    Counting ref records and tombstones decodes the ref blocks (~6 s of CPU at 1M refs); counting log
    records inflates and decodes every log record (~50 s at 1M): done for tables up to DEEP_LIMIT or when
    ``deep`` is asked; otherwise ``log_records`` is -2 ("not counted") and the view offers the deep count
    on a key."""
    key = _key(table)
    with _lock:
        done = _cache.get(key)
    if done is not None and (done.log_records != -2 or not deep):
        return done
    if deep is None:
        deep = table.size <= DEEP_LIMIT
    c = table.counts(logs=deep)
    blocks = dict(c["by_type"])
    s = TableSummary(
        *_header(table),
        c["refs"],
        c["tombstones"],
        c["logs"] if c["logs"] is not None else -2,
        blocks,
        "i" in blocks,
        "o" in blocks,
        c["log_deletions"] if c["log_deletions"] is not None else -2,
    )
    with _lock:
        _cache[key] = s
    return s


class Forecast(NamedTuple):
    factor: int
    auto: bool  # does a write auto-compact (git: always, unless GIT_TEST_REFTABLE_AUTOCOMPACTION=false)
    sizes: list[int]  # compaction sizes of the current tables
    now: tuple[int, int] | None  # what compacting the stack as it is would merge
    next_size: int  # assumed compaction size of the next write's table (a one-ref write)
    next: tuple[int, int] | None  # what the next write's auto-compaction merges (indexes incl. the new one)
    reasons: list[str]


def forecast(tables: list[Any], factor: int = 2, auto: bool = True, hash_name: str | None = None) -> Forecast:
    """The backend's forecast (``formats.reftable.policy.forecast`` / ``forecast_write``: git's policy over
    the stack now and after a typical small write), put in words for the view."""
    from refscope.backend.formats.reftable import policy

    if hash_name is None:
        hash_name = tables[0].hash_name if tables else "sha1"
    now = policy.forecast(tables, hash_name, factor)
    nxt = policy.forecast_write(tables, hash_name, factor)
    reasons = explain(nxt.sizes + [nxt.new_size], nxt.factor, nxt.segment, nxt.steps, new_last=True)
    if not auto:
        reasons.insert(0, "auto-compaction is off: git will not compact on its own")
    return Forecast(nxt.factor, auto, now.sizes, now.segment, nxt.new_size, nxt.segment, reasons)


def explain(
    sizes: list[int], factor: int, seg: tuple[int, int] | None, steps: list[Any], new_last: bool = False
) -> list[str]:
    """The backend's comparisons (``explain_compaction`` steps, newest backwards) as sentences."""
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
    for st in steps:
        i = st.index
        if i >= last:
            continue
        if i == last - 1:
            out.append(
                f"{label[i]} ({st.size} B) < {factor} × {label[last]} ({st.compared_with} B): "
                f"the merge ends at {label[last]}"
            )
        elif st.in_segment:
            why = "joins" if st.violates else "joins (an older table violates, the run is contiguous)"
            out.append(
                f"{label[i]} ({st.size} B) {'<' if st.violates else '≥'} {factor} × {st.compared_with} B "
                f"merged after it: {why}"
            )
        else:
            out.append(f"{label[i]} ({st.size} B) ≥ {factor} × {st.compared_with} B after it: stays")
    merged = sum(sizes[start:end])
    out.append(f"→ merge {label[start]}..{label[last]} ({end - start} tables, {merged} B)")
    return out
