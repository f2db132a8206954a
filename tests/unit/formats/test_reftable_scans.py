"""The commit's batched stack reads against its per-name seeks, on stacks of generated tables.

``lookup_many`` and ``log_indexes`` take a sorted walk over each table for many names (``log_indexes``
one walk per name for few), skipping records without building their keys and log values by comparing
bytes with the last one decoded; ``lookup`` and ``logs`` seek name by name through the readers. Both must give the same records for any stack: names with
long shared prefixes (multi-byte prefix and suffix varints), tombstones, peeled tags and symrefs, several
reflog entries per name with differing and repeated idents and messages, log deletions in newer tables,
small blocks (indexes, many restart intervals) and absent names between and around the present ones.
"""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend.engines.stack_io import StackWriter
from refscope.backend.formats.reftable import merged
from refscope.backend.formats.reftable.record import LogRecord, RefRecord
from refscope.backend.formats.reftable.table import Table
from refscope.backend.formats.reftable.writer import write_table

SEGMENTS = [b"a", b"ab", b"b", b"b/c", b"x" * 130, b"y" * 17, b"0", b"09", b"1", b"\xc3\xa9"]
IDENTS = [(b"A U Thor", b"author@example.com", 1700000000, 0), (b"C", b"c@x", 5, -120)]
MESSAGES = [b"\n", b"fetch: storing head\n", b"m" * 140 + b"\n", b"commit: x\n"]


@st.composite
def ref_names(draw) -> bytes:
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    return b"refs/heads/" + b"-".join(parts)


def _oid(draw) -> bytes:
    return draw(st.binary(min_size=20, max_size=20)).hex().encode()


@st.composite
def stacks(draw):
    """(tables oldest first, every name used): one to three tables, each newer one over the last."""
    names = sorted(set(draw(st.lists(ref_names(), min_size=1, max_size=40))))
    tables = []
    ui = 1
    for level in range(draw(st.integers(1, 3))):
        refs, logs = [], []
        for name in draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names))):
            kind = draw(st.integers(0, 5)) if level else draw(st.integers(1, 5))
            if kind == 0:
                refs.append(RefRecord(name, ui, 0))
            elif kind == 4:
                refs.append(RefRecord(name, ui, 2, _oid(draw), _oid(draw)))
            elif kind == 5:
                refs.append(RefRecord(name, ui, 3, target=draw(st.sampled_from(names))))
            else:
                refs.append(RefRecord(name, ui, 1, _oid(draw)))
        uniform = draw(st.booleans())  # one command's batch: every entry with the same ident and message
        shape = draw(st.sampled_from(IDENTS)), draw(st.sampled_from(MESSAGES))
        for name in draw(st.lists(st.sampled_from(names), max_size=2 * len(names))):
            at = draw(st.integers(1, ui))
            if level and draw(st.booleans()):
                logs.append(LogRecord(name, at, 0))
                continue
            (ident, email, when, tz), msg = (
                shape if uniform else (draw(st.sampled_from(IDENTS)), draw(st.sampled_from(MESSAGES)))
            )
            logs.append(LogRecord(name, at, 1, _oid(draw), _oid(draw), ident, email, when, tz, msg))
        seen = set()
        logs = [
            r for r in logs if (r.name, r.update_index) not in seen and not seen.add((r.name, r.update_index))
        ]
        data = write_table(
            refs,
            logs,
            min_update_index=ui,
            max_update_index=ui,
            block_size=draw(st.sampled_from([1024, 4096])),
            restart_interval=draw(st.integers(1, 16)),
        )
        tables.append(Table.from_bytes(data, f"t{level}.ref"))
        ui += 1
    return tables, names


@contextlib.contextmanager
def batched():
    """Force the batched paths for any number of names."""
    saved = merged.SEEK_LIMIT
    merged.SEEK_LIMIT = 0
    try:
        yield
    finally:
        merged.SEEK_LIMIT = saved


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(stacks(), st.data())
def test_batched_reads_equal_seeks(got, data) -> None:
    tables, names = got
    asked = data.draw(st.lists(st.sampled_from(names + _absent(names)), min_size=1))
    _check(tables, asked)


def _absent(names: list[bytes]) -> list[bytes]:
    """Names between, before and after the present ones."""
    return [n + b"!" for n in names[::3]] + [n[:-1] for n in names[::4]] + [b"HEAD", b"refs/zz", b"a"]


def _check(tables: list[Table], asked: list[bytes]) -> None:
    asked = sorted(set(asked))
    stack = StackWriter("/nonexistent", "sha1")
    stack.adopt([t.name for t in tables], tables)
    with batched():
        refs = stack.lookup_many(asked)
        logs = stack.log_indexes(asked)
    few = stack.log_indexes(asked[:5])  # one pass per name
    for name in asked:
        assert refs[name] == stack.lookup(name), name
        assert sorted(logs.get(name, [])) == sorted(r.update_index for r in stack.log_records(name)), name
    for name in asked[:5]:
        assert few.get(name) == logs.get(name), name


@st.composite
def batch_tables(draw):
    """A table as one command writes it: hundreds of numbered names, mostly one ident and message (the
    log scan skips such values by comparing bytes), some entries of another shape or several per name."""
    rng = draw(st.randoms(use_true_random=False))
    width = draw(st.integers(2, 5))
    stem = draw(st.sampled_from([b"refs/heads/b-", b"refs/pull/", b"refs/tags/v" + b"x" * 20 + b"/"]))
    count = min(draw(st.integers(20, 1000)), 10**width)
    names = [stem + b"%0*d" % (width, i) for i in sorted(rng.sample(range(10**width), count))]
    shape = (b"C O Mitter", b"c@example.com", 1700000000, 0, draw(st.sampled_from(MESSAGES)))
    other = (b"X", b"x@y", 7, 60, b"other\n")
    oid = rng.randbytes(20).hex().encode()
    logs = []
    for name in names:
        for at in range(1, 2 + (rng.random() < 0.2)):
            ident, email, when, tz, msg = other if rng.random() < 0.05 else shape
            logs.append(
                LogRecord(name, at, 1, oid, rng.randbytes(20).hex().encode(), ident, email, when, tz, msg)
            )
    refs = [RefRecord(name, 2, 1, oid) for name in names]
    data = write_table(refs, logs, min_update_index=2, max_update_index=2, block_size=4096)
    return [Table.from_bytes(data, "t.ref")], names


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(batch_tables(), st.integers(1, 12), st.integers(0, 11), st.data())
def test_batched_reads_equal_seeks_in_batch_tables(got, step: int, start: int, data) -> None:
    """Every step-th name (as a spread selection takes them), some absent ones among them."""
    tables, names = got
    _check(tables, names[start::step] + data.draw(st.lists(st.sampled_from(_absent(names)))))
