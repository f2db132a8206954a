"""The packed-refs view on real git repositories: records as they are in the file, shadows, jumps, live
rewrites (TUI-VIEWS)."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.screens.packed import PackedScreen
from refscope.app.tui.widgets.rows import RowsView

from tests.support.git import create_refs, git, init_repo
from tests.support.tui import Host, file_records, open_store, wait_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def packed_repo(tmp_path: Path, git_bin: str) -> Path:
    repo = init_repo(tmp_path / "repo", fmt="files")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    create_refs(repo, [f"refs/heads/topic/{i:04d}" for i in range(40)])
    git(repo, "pack-refs", "--all")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")  # main becomes loose again: shadows its record
    return repo


def _rows(view: RowsView) -> list[str]:
    return [view.source.row_text(i).plain for i in range(len(view.source))]


def _host(repo: Path, focus: bytes | None = None, follow: bool = False) -> Host:
    store = open_store(repo)
    return Host(lambda: PackedScreen(store.snapshot(), focus, store=store, follow=follow))


async def _loaded(pilot, screen: PackedScreen) -> None:
    await wait_for(
        pilot, lambda: screen.index is not None and screen.index.done and screen.index.peeled_count >= 0
    )
    await wait_for(pilot, lambda: not any(w.is_running for w in screen.app.workers))


async def _loaded_rows(pilot) -> tuple[PackedScreen, list[str]]:
    """The view once loaded, and the text of its rows."""
    screen = pilot.app.screen
    await _loaded(pilot, screen)
    return screen, _rows(screen.records)


async def test_records_in_file_order_with_peeled_lines_and_shadows(packed_repo: Path) -> None:
    records = file_records(packed_repo / ".git/packed-refs")
    app = _host(packed_repo)
    async with app.run_test(size=(160, 40)) as pilot:
        screen, rows = await _loaded_rows(pilot)
        assert len(rows) == len(records) == 42
        for row, (offset, length, oid, name, peeled) in zip(rows, records, strict=True):
            cols = row.split()
            assert cols[:2] == [str(offset), str(length)]
            assert oid.decode() in cols and name.decode() in cols
            if peeled is not None:
                assert "^" + peeled.decode() in cols
            else:
                assert "^" not in row
        main_row = next(r for r in rows if " refs/heads/main" in r)
        new_main = git(packed_repo, "rev-parse", "main").decode().strip()
        assert main_row.split()[2] == "L" and f"shadowed by loose {new_main[:12]}" in main_row
        assert sum(" L " in r for r in rows) == 1
        assert screen.records.marked == {b"refs/heads/main"}
        info = str(screen.query_one("#packed-info").render())
        size = (packed_repo / ".git/packed-refs").stat().st_size
        assert "header  # pack-refs with: peeled fully-peeled sorted" in info
        assert f"({size:,} bytes), 42 records, 1 with ^peeled" in info
        assert "sorted (as the header promises)" in info
        assert "1 packed records shadowed by loose refs" in info


async def test_jump_to_record_and_back(packed_repo: Path) -> None:
    app = _host(packed_repo, b"refs/heads/topic/0007")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        await _loaded(pilot, screen)
        row = screen.records.cursor
        assert screen.index.record(row).name == b"refs/heads/topic/0007"
        await pilot.press("down")
        await pilot.press("escape")
    assert app.dismissed == [b"refs/heads/topic/0008"]  # back to the ref the cursor is on now


async def test_jump_to_a_ref_that_is_not_packed(packed_repo: Path) -> None:
    git(packed_repo, "update-ref", "refs/heads/topic/0010x", "HEAD")
    app = _host(packed_repo, b"refs/heads/topic/0010x")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        await _loaded(pilot, screen)
        assert screen.index.record(screen.records.cursor).name == b"refs/heads/topic/0011"
        assert "has no packed record" in str(screen.query_one("#view-status").render())


async def test_follows_packed_refs_rewrites_live(packed_repo: Path) -> None:
    app = _host(packed_repo, follow=True)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        feed = screen.query_one("#packed-feed", RowsView)
        await _loaded(pilot, screen)
        create_refs(packed_repo, ["refs/heads/new/a", "refs/heads/new/b"])
        git(packed_repo, "pack-refs", "--all")  # rewrites packed-refs: two records appear, main's changes
        await wait_for(pilot, lambda: any("rewritten" in r for r in _rows(feed)))
        line = next(r for r in _rows(feed) if "rewritten" in r)
        assert "packed-refs rewritten: 42 → 44 records  +2 −0 ~1" in line
        assert "appeared: refs/heads/new/a, refs/heads/new/b" in line and "changed: refs/heads/main" in line
        assert {b"refs/heads/new/a", b"refs/heads/new/b"} <= screen.records.flashing
        assert any("no longer shadow (refs/heads/main)" in r for r in _rows(feed))
        assert len(screen.records.source) == 44
        git(packed_repo, "update-ref", "-d", "refs/heads/topic/0001")  # a packed ref: git rewrites the file
        await wait_for(pilot, lambda: len(screen.records.source) == 43)
        await wait_for(pilot, lambda: any("vanished: refs/heads/topic/0001" in r for r in _rows(feed)))
        git(packed_repo, "update-ref", "refs/heads/topic/0002", "HEAD")  # a loose ref now shadows a record
        await wait_for(
            pilot, lambda: any("now shadow packed records (refs/heads/topic/0002)" in r for r in _rows(feed))
        )


async def test_unsorted_file_is_shown_in_file_order(tmp_path: Path, git_bin: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt="files")
    oid = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git/packed-refs").write_bytes(
        b"# pack-refs with: peeled \n"
        + b"".join(oid + b" refs/tags/" + n + b"\n" for n in (b"b", b"a", b"c"))
    )
    app = _host(repo)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        await _loaded(pilot, screen)
        assert [r.split()[-1] for r in _rows(screen.records)] == ["refs/tags/b", "refs/tags/a", "refs/tags/c"]
        info = str(screen.query_one("#packed-info").render())
        assert "NOT sorted: record 1 is out of order (git sorts it in memory)" in info
        assert "traits  peeled" in info


async def test_storage_screen_per_format_and_empty_packed_refs(repo: Path, ref_format: str) -> None:
    from refscope.app.tui.screens.stack import StackScreen, storage_screen

    store = open_store(repo)
    app = Host(lambda: storage_screen(store, store.snapshot(), None, follow=False))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        if ref_format == "reftable":
            assert isinstance(screen, StackScreen)
            await wait_for(pilot, lambda: all(s.ref_records >= 0 for s in screen.summaries))
            assert [s.name for s in screen.summaries] == (
                repo / ".git/reftable/tables.list"
            ).read_text().split()
        else:
            assert isinstance(screen, PackedScreen)  # a fresh repository has no packed-refs file at all
            await _loaded(pilot, screen)
            assert len(screen.records.source) == 0
            assert "0 bytes), 0 records" in str(screen.query_one("#packed-info").render())


async def test_sha256_records(tmp_path: Path, git_bin: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt="files", hash_name="sha256")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    git(repo, "pack-refs", "--all")
    records = file_records(repo / ".git/packed-refs")
    app = _host(repo)
    async with app.run_test(size=(200, 40)) as pilot:
        _screen, rows = await _loaded_rows(pilot)
        assert [r.split()[2:4] for r in rows] == [[o.decode(), n.decode()] for _s, _l, o, n, _p in records]
        assert rows[-1].split()[-1] == "^" + records[-1][4].decode() and len(records[-1][4]) == 64
