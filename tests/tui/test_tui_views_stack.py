"""The reftable stack view and the table view, on real git repositories (TUI-VIEWS)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.models.stack_rows import forecast
from refscope.app.tui.screens.stack import StackScreen
from refscope.app.tui.screens.table import TableScreen
from refscope.app.tui.widgets.rows import RowsView

from tests.support.git import for_each_ref, git, git_noauto
from tests.support.tui import Host, open_store, stacked_repo, tables_list, wait_for

pytestmark = pytest.mark.anyio


def _range(name: str) -> tuple[int, int]:
    lo, hi, _ = name.split("-")
    return int(lo, 16), int(hi, 16)


def _stack_host(repo: Path, follow: bool = False) -> Host:
    store = open_store(repo)
    return Host(lambda: StackScreen(store, store.snapshot(), FakeMeter(), follow=follow))


def _rows(view: RowsView) -> list[str]:
    return [view.source.row_text(i).plain for i in range(len(view.source))]


@pytest.fixture
def stack_repo(tmp_path: Path, git_bin: str) -> Path:
    return stacked_repo(tmp_path / "repo")


async def test_stack_view_shows_every_table_oldest_first(stack_repo: Path) -> None:
    app = _stack_host(stack_repo)
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, StackScreen)
        await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
        names = tables_list(stack_repo)
        rows = _rows(screen.tables_view)
        assert len(rows) == len(names) == 5
        for i, (row, name) in enumerate(zip(rows, names, strict=True)):
            lo, hi = _range(name)
            assert row.split()[:2] == [str(i), name]
            assert (f"{lo}..{hi}" if lo != hi else str(lo)) in row
        big, *small = screen.summaries
        assert big.size == os.stat(stack_repo / ".git/reftable" / names[0]).st_size
        # pack-refs --all wrote HEAD + every ref into the base table; each later write holds one ref
        assert big.ref_records == len(for_each_ref(stack_repo)) - len(small) + 1
        assert [s.ref_records for s in small] == [1] * 4
        assert all(s.log_records == 1 for s in small)
        assert big.blocks["r"] >= 2 and big.has_index
        assert screen.summaries[0].tombstones == 0
        chart = str(screen.query_one("#stack-chart").render())
        assert "#0" in chart and "merge" in chart


async def test_forecast_matches_what_git_then_compacts(stack_repo: Path) -> None:
    app = _stack_host(stack_repo)
    async with app.run_test(size=(150, 45)):
        fc = forecast(app.screen.tables, factor=2)
        forecast_text = str(app.screen.query_one("#stack-forecast").render())
    before = tables_list(stack_repo)
    assert fc.next is not None  # four small tables in a row violate the geometric sequence
    start, end = fc.next
    assert f"next write merges #{start}..#" in forecast_text
    git(stack_repo, "update-ref", "refs/heads/next", "HEAD")
    after = tables_list(stack_repo)
    new_max = _range(before[-1])[1] + 1
    assert after[:start] == before[:start]  # untouched tables keep their names
    assert len(after) == start + 1
    assert _range(after[-1]) == (_range(before[start])[0], new_max)
    assert end == len(before) + 1  # the forecast included the write's own table, as git did


async def test_forecast_no_merge_on_geometric_stack(tmp_path: Path, git_bin: str) -> None:
    repo = stacked_repo(tmp_path / "repo", small=1)
    store = open_store(repo)
    fc = forecast(store.snapshot().tables, factor=2)
    before = tables_list(repo)
    if fc.next is None:
        git(repo, "update-ref", "refs/heads/next", "HEAD")
        after = tables_list(repo)
        assert after[: len(before)] == before and len(after) == len(before) + 1
    else:  # the small table and the next write merge: still what git does
        start, _end = fc.next
        git(repo, "update-ref", "refs/heads/next", "HEAD")
        after = tables_list(repo)
        assert after[:start] == before[:start] and len(after) == start + 1


async def _summarized(pilot):
    """The stack view once every table's summary is read, and its live feed."""
    screen = pilot.app.screen
    await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
    return screen, screen.query_one("#stack-feed", RowsView)


async def test_live_feed_follows_append_compaction_and_locks(stack_repo: Path) -> None:
    app = _stack_host(stack_repo, follow=True)
    async with app.run_test(size=(150, 45)) as pilot:
        screen, feed = await _summarized(pilot)
        git_noauto(stack_repo, "update-ref", "-m", "live", "refs/heads/live", "HEAD")
        new_name = tables_list(stack_repo)[-1]
        await wait_for(pilot, lambda: any("appended" in r for r in _rows(feed)))
        await wait_for(pilot, lambda: len(screen.summaries) == 6 and screen.summaries[-1].ref_records >= 0)
        line = next(r for r in _rows(feed) if "appended" in r)
        assert new_name in line and "1 ref record (0 tombstones), 1 log records" in line
        assert new_name in screen.tables_view.flashing
        # a deletion then a full compaction: the tombstone is dropped when the base table is merged
        git_noauto(stack_repo, "update-ref", "-d", "refs/heads/topic/0001")
        await wait_for(pilot, lambda: len(screen.summaries) == 7)
        git(stack_repo, "pack-refs", "--all")
        await wait_for(pilot, lambda: any("compacted" in r for r in _rows(feed)))
        line = next(r for r in _rows(feed) if "compacted" in r)
        assert "compacted 7 tables" in line and "tombstones dropped 1" in line
        assert [s.name for s in screen.summaries] == tables_list(stack_repo)
        # someone holds tables.list.lock
        lock = stack_repo / ".git/reftable/tables.list.lock"
        lock.write_bytes(b"")
        await wait_for(pilot, lambda: any("tables.list.lock taken" in r for r in _rows(feed)))
        lock.unlink()
        await wait_for(pilot, lambda: any("tables.list.lock released after" in r for r in _rows(feed)))


async def test_enter_opens_the_table_view_with_blocks_and_records(stack_repo: Path) -> None:
    app = _stack_host(stack_repo)
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, TableScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.table.name == tables_list(stack_repo)[0]
        kinds = [chr(b.type) for _s, b in screen.blocks]
        assert kinds[0] == "r" and "g" in kinds and "i" in kinds
        # every ref record of the table, block after block, is the set git lists (+ HEAD), in order
        names = []
        for i, (_s, blk) in enumerate(screen.blocks):
            if chr(blk.type) == "r":
                screen.show_block(i)
                names += [r.record.name for r in screen.records]
        assert names[0] == b"HEAD"
        listed = [n for n, *_ in for_each_ref(stack_repo) if not n.startswith(b"refs/heads/small/")]
        assert names[1:] == listed
        # prefix compression and restart points are visible: restarts have prefix 0, others share a prefix
        screen.show_block(0)
        rows = _rows(screen.records_view)
        assert rows[0].split()[1] == "R" and rows[0].split()[2] == "0"
        assert any(r.split()[1] != "R" and int(r.split()[1]) > 0 for r in rows)
        info = str(screen.query_one("#table-info").render())
        assert "CRC-32 0x" in info and "log @" in info
        await pilot.press("escape")
        assert isinstance(app.screen, StackScreen)


async def test_compaction_action_shows_report_and_before_after(stack_repo: Path) -> None:
    refs_before = for_each_ref(stack_repo)
    before = tables_list(stack_repo)
    app = _stack_host(stack_repo, follow=False)
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
        now = forecast(screen.tables, factor=2).now
        assert now is not None
        await pilot.press("c")
        await wait_for(pilot, lambda: app.screen is not screen)
        await pilot.press("n")  # declined: nothing happens
        await wait_for(pilot, lambda: app.screen is screen)
        await app.workers.wait_for_complete()
        assert tables_list(stack_repo) == before and screen.last_report is None
        await pilot.press("c")
        await wait_for(pilot, lambda: app.screen is not screen)  # the yes/no dialog
        assert "Merge tables #1..#4 (4 tables" in str(app.screen.query_one("#dialog-question").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.last_report is not None)
        await wait_for(pilot, lambda: [s.name for s in screen.summaries] == tables_list(stack_repo))
        after = tables_list(stack_repo)
        assert after[: now[0]] == before[: now[0]] and len(after) == now[0] + 1
        assert _range(after[-1]) == (_range(before[now[0]])[0], _range(before[now[1] - 1])[1])
        report = str(screen.query_one("#stack-report").render())
        assert f"native compaction of #{now[0]}..#{now[1] - 1}" in report
        assert "syscalls (fake)" in report  # the app's meter adopted the engine's report
        assert all(n in report for n in before) and after[-1] in report
    assert for_each_ref(stack_repo) == refs_before
    assert git(stack_repo, "fsck", "--no-progress") == b""


async def test_table_view_obj_and_index_blocks(tmp_path: Path, git_bin: str) -> None:
    from tests.support.git import init_repo

    repo = init_repo(tmp_path / "repo", fmt="reftable")
    git(repo, "config", "reftable.blockSize", "512")  # several ref blocks: git writes an index and obj blocks
    oids = [
        git(repo, "hash-object", "-w", "--stdin", input=f"blob {i}\n".encode()).strip() for i in range(60)
    ]
    git(
        repo,
        "update-ref",
        "--stdin",
        input=b"".join(b"create refs/blobs/%04d %s\n" % t for t in enumerate(oids)),
    )
    table = open_store(repo).snapshot().tables[-1]
    app = Host(lambda: TableScreen(table))
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers))
        kinds = [chr(b.type) for _s, b in screen.blocks]
        assert kinds == ["r"] * kinds.count("r") + ["i", "o", "g"] and kinds.count("r") >= 2
        ref_blocks = {}
        for i, (_s, blk) in enumerate(screen.blocks):
            if chr(blk.type) == "r":
                screen.show_block(i)
                ref_blocks[blk.offset] = [r.record for r in screen.records]
        # index block: one record per ref block, its last key and its position
        screen.show_block(kinds.index("i"))
        assert [(r.record.last_key, r.record.position) for r in screen.records] == [
            (recs[-1].name, off) for off, recs in sorted(ref_blocks.items())
        ]
        # obj block: abbreviated ids (2 bytes here) and the ref blocks holding refs with those ids
        screen.show_block(kinds.index("o"))
        rows = _rows(screen.records_view)
        expected = {}
        for off, recs in ref_blocks.items():
            for r in recs:
                if r.value is not None:
                    expected.setdefault(r.value[:4].decode(), set()).add(off)
        assert len(rows) == len(expected)
        for row in rows:
            m = re.search(r"\s([0-9a-f]{4})\s+(\d+) blocks?: (.*)$", row)
            assert m is not None, row
            positions = {int(p) for p in m.group(3).split(",")}
            assert positions == expected[m.group(1)] and int(m.group(2)) == len(positions)


async def test_big_tables_count_log_records_on_demand(
    stack_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from refscope.app.tui.models import stack_rows as stack_model

    stack_model._cache.clear()
    monkeypatch.setattr(stack_model, "DEEP_LIMIT", 0)  # every table counts as big here
    app = _stack_host(stack_repo)
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
        assert all(s.log_records == -2 for s in screen.summaries)
        assert all("a: count" in r for r in _rows(screen.tables_view))
        assert screen.summaries[0].ref_records == len(for_each_ref(stack_repo)) - 4 + 1
        await pilot.press("a")
        await wait_for(pilot, lambda: all(s.log_records >= 0 for s in screen.summaries))
        assert [s.log_records for s in screen.summaries[1:]] == [1, 1, 1, 1]
    stack_model._cache.clear()


async def test_live_burst_of_writes_ends_on_the_stack_git_left(stack_repo: Path) -> None:
    app = _stack_host(stack_repo, follow=True)
    async with app.run_test(size=(150, 45)) as pilot:
        screen, feed = await _summarized(pilot)
        for i in range(12):  # git auto-compacts as it goes
            git(stack_repo, "update-ref", f"refs/heads/burst/{i}", "HEAD")
        final = tables_list(stack_repo)
        await wait_for(pilot, lambda: [s.name for s in screen.summaries] == final)
        await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
        rows = [r for r in _rows(feed) if ".lock " not in r]  # the poller may also catch git's locks
        assert rows and all(("appended" in r) or ("compacted" in r) for r in rows)
        assert final[-1] in " ".join(rows)  # the newest table is accounted for in the feed
