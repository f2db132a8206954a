"""backend.refformat.row_ids: the rows grouped by their ids are the grouping a dict makes, and ids numpy
must not group (64-bit collisions, other spellings) are declined, so the per-row look-up decides."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from refscope.backend.refformat import tips_view
from refscope.backend.refformat.row_ids import group_rows
from refscope.backend.refformat.tips_view import TipFacts
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.git import git
from tests.support.tui import TIPS_NOW, tips_repo


def by_dict(rows: list[bytes | None]) -> tuple[list[bytes], list[int]]:
    seen: dict[bytes, int] = {}
    group = [-1 if o is None else seen.setdefault(o, len(seen)) for o in rows]
    return list(seen), group


def chunked(rows: list, size: int) -> list[list]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def hex_ids(hexsz: int):
    return st.binary(min_size=hexsz // 2, max_size=hexsz // 2).map(lambda b: b.hex().encode())


@settings(max_examples=60, deadline=None)
@given(
    hexsz=st.sampled_from([40, 64]),
    data=st.data(),
    size=st.integers(1, 9),
)
def test_grouping_is_a_dicts(hexsz: int, data, size: int) -> None:
    # ids repeated in any order, rows naming no object among them, any chunking, SHA-1 and SHA-256
    pool = data.draw(st.lists(hex_ids(hexsz), min_size=1, max_size=8, unique=True))
    rows = data.draw(st.lists(st.one_of(st.sampled_from(pool), st.none()), max_size=40))
    got = group_rows(chunked(rows, size), len(rows), hexsz)
    assert got is not None
    ids, group = got
    assert (ids, group.tolist()) == by_dict(rows)


@pytest.mark.parametrize(
    "rows",
    [
        [b"0123456789abcdef" + b"0" * 24, b"0123456789abcdef" + b"1" * 24],  # the first 64 bits shared
        [b"0123456789abcdef" + b"2" * 24, b"0123456789abcdef" + b"2" * 23 + b"3"],  # ... the last digit not
        [b"A" * 40],  # upper case: another spelling, another key in the table's dict
        [b"g" * 40],
        [b"a" * 39],
        [b"a" * 40, b"a" * 41],
    ],
)
def test_ids_numpy_must_not_group_are_declined(rows: list[bytes]) -> None:
    assert group_rows(chunked(rows, 1), len(rows), 40) is None


def test_no_rows_and_only_rows_naming_nothing() -> None:
    ids, group = group_rows([], 0, 40)
    assert (ids, group.tolist()) == ([], [])
    ids, group = group_rows([[None, None]], 2, 40)
    assert (ids, group.tolist()) == ([], [-1, -1])


def test_cancelled_is_none() -> None:
    assert group_rows([[b"a" * 40]], 1, 40, lambda: True) is None


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_row_slots_are_the_look_ups(tmp_path: Path, git_bin: str, fmt: str, monkeypatch) -> None:
    # numpy's grouping (a commit-graph: no child is fed while the pass goes on) and the per-row look-up
    # give every row the slot of its own id (symrefs: the one their chain ends at), the visible rows'
    # slots made first kept
    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(TIPS_NOW))
    path = tips_repo(tmp_path / "repo", fmt=fmt)
    git(path, "symbolic-ref", "refs/heads/link", "refs/heads/mid")
    git(path, "commit-graph", "write", "--reachable")
    repo = discover(str(path))
    snap = open_store(repo).snapshot()
    want = [tips_view.target_oid(snap, snap.row(i)) for i in range(len(snap))]
    from refscope.backend.refformat import row_ids

    grouped = []
    real = row_ids.group_rows
    monkeypatch.setattr(row_ids, "group_rows", lambda *a, **k: grouped.append(real(*a, **k)) or grouped[-1])
    facts = TipFacts(repo)
    facts.fill(want[-3:])  # (the visible rows' slots, made before the pass)
    early = {o: facts.table.slots[o] for o in want[-3:] if o is not None}
    slots = facts.row_slots(snap)
    assert len(grouped) == 1 and grouped[0] is not None  # (numpy's path taken)
    assert [facts.table.oids[s] if s >= 0 else None for s in slots] == want
    assert {o: facts.table.slots[o] for o in early} == early
    assert len(facts.table) == len({o for o in want if o is not None})
    monkeypatch.setattr(row_ids, "group_rows", lambda *a, **k: None)  # (declined: the look-ups)
    looked = TipFacts(repo)
    assert [looked.table.oids[s] if s >= 0 else None for s in looked.row_slots(snap)] == want
