"""Landing where the user points, and one set of keys in every list (issue 15, the TUI).

Enter on a ref opens its storage view with the visible cursor on the ref's own record (the packed-refs
record at the ref's offset; the reftable block holding it and its record there); the palette's jump keeps a
filter that shows the ref; j/k/g/G and ``/`` + n/N behave the same in the main list and in the packed-refs,
table and reflog views. Real git repositories throughout; conditions are polled with deadlines.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from refscope.app.tui.screens.help import HelpScreen, help_table
from refscope.app.tui.screens.packed import PackedScreen
from refscope.app.tui.screens.reflog import ReflogScreen
from refscope.app.tui.screens.table import TableScreen
from refscope.app.tui.widgets.ref_list import RefList
from refscope.app.tui.widgets.rows import RowsView
from rich.console import Console

from tests.support.git import create_refs, for_each_ref, git, init_repo
from tests.support.tui import Host, file_records, make_app, open_store, wait_for

pytestmark = pytest.mark.anyio

N_REFS = 2000  # enough for a packed-refs list many screens long and a reftable of many ref blocks
TARGET = b"refs/heads/topic/1500"
SIZE = (120, 40)


def build_repo(path: Path, fmt: str) -> Path:
    init_repo(path, fmt=fmt)
    head = git(path, "rev-parse", "HEAD").strip().decode()
    lines = "".join(f"create refs/heads/topic/{i:04d} {head}\n" for i in range(N_REFS))
    git(path, "update-ref", "--stdin", input=lines.encode())
    if fmt == "files":
        git(path, "pack-refs", "--all")
    return path


@pytest.fixture(scope="module")
def repos(tmp_path_factory, git_bin: str) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("landing")
    return {fmt: build_repo(root / fmt, fmt) for fmt in ("files", "reftable")}


def visible(view, row: int) -> bool:
    """``row`` is on the screen of ``view`` (below a RowsView's header line)."""
    top = round(view.scroll_y)
    height = view.scrollable_content_region.height
    if isinstance(view, RowsView) and view.header_rows:
        height -= 1
    return top <= row < top + height


async def ready(pilot, app) -> None:
    await wait_for(pilot, lambda: app.screen.is_ready())


async def filter_list(pilot, app, text: str) -> None:
    await pilot.press("slash", *text, "enter")
    await wait_for(pilot, lambda: app.screen.pattern.text == text)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def settled(pilot, app) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


# ---- landing ---------------------------------------------------------------------------------------------
async def test_enter_lands_on_the_packed_record(repos: dict[str, Path]) -> None:
    path = repos["files"]
    offsets = {name: offset for offset, _len, _oid, name, _peeled in file_records(path / ".git/packed-refs")}
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await filter_list(pilot, app, TARGET.decode())
        ref = app.screen.ref_list.current_ref()
        assert ref.name == TARGET and ref.location.offset == offsets[TARGET]
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PackedScreen))
        screen = app.screen
        await wait_for(pilot, lambda: screen.index is not None and screen.index.done)
        await settled(pilot, app)
        view = screen.records
        record = screen.index.record(view.cursor)
        assert (record.offset, record.name) == (offsets[TARGET], TARGET)
        assert visible(view, view.cursor) and view.has_focus
        await pilot.press("down")  # the first ↓ moves one record, not from the top of the file
        assert screen.index.record(view.cursor).name == b"refs/heads/topic/1501"
        assert visible(view, view.cursor)


async def test_enter_lands_on_the_reftable_block_and_record(repos: dict[str, Path]) -> None:
    path = repos["reftable"]
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await filter_list(pilot, app, TARGET.decode())
        ref = app.screen.ref_list.current_ref()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TableScreen))
        screen = app.screen
        await wait_for(pilot, lambda: screen._shown_block >= 0)
        await settled(pilot, app)
        ref_blocks = [blk for section, blk in screen.blocks if section == "ref" and chr(blk.type) == "r"]
        assert len(ref_blocks) > 3  # the ref is not in the first block: block 0 would be wrong
        blocks, records = screen.blocks_view, screen.records_view
        _section, blk = screen.blocks[blocks.cursor]
        assert blk.offset == ref.location.offset and blocks.cursor == screen._shown_block
        assert blk.offset != ref_blocks[0].offset
        raw = screen.records[records.cursor]
        assert raw.key == TARGET
        assert raw.record.update_index == ref.location.update_index
        assert visible(records, records.cursor) and visible(blocks, blocks.cursor)
        await pilot.press("down")
        assert screen.records[records.cursor].key == b"refs/heads/topic/1501"


async def test_table_opened_by_name_finds_the_block(repos: dict[str, Path]) -> None:
    """Without the Location's offset (a table opened by name) the block is found by the table's index."""
    store = open_store(repos["reftable"])
    snapshot = store.snapshot()
    ref = snapshot.lookup(b"refs/heads/topic/0777")
    table = next(t for t in snapshot.tables if t.name == ref.location.file)
    app = Host(lambda: TableScreen(table, ref.name))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen._shown_block >= 0)
        await wait_for(pilot, lambda: not any(w.is_running for w in app.workers))
        await pilot.pause()
        assert screen.blocks[screen.blocks_view.cursor][1].offset == ref.location.offset
        records = screen.records_view
        assert screen.records[records.cursor].key == ref.name and visible(records, records.cursor)


@pytest.mark.parametrize("ref_format", ["files", "reftable"])
async def test_palette_jump_keeps_a_filter_that_shows_the_ref(
    repos: dict[str, Path], ref_format: str
) -> None:
    app = make_app(repos[ref_format])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await filter_list(pilot, app, "topic/1")  # a substring scan: 1,000 rows, many screens
        ref_list = app.screen.query_one(RefList)
        assert len(ref_list.view) == 1000
        await pilot.press("ctrl+p", *TARGET.decode())
        await wait_for(pilot, lambda: _palette_offers(app, TARGET))
        await pilot.press("enter")
        await wait_for(pilot, lambda: ref_list.current_name() == TARGET)
        await settled(pilot, app)
        assert app.screen.query_one("#filter").value == "topic/1"
        assert len(ref_list.view) == 1000
        assert visible(ref_list, ref_list.cursor) and ref_list.has_focus
        # a filter that hides the ref is cleared (and the notice says so), the cursor still lands
        await filter_list(pilot, app, "topic/0")
        app.jump_to(b"refs/heads/topic/1999")
        await settled(pilot, app)
        assert app.screen.query_one("#filter").value == ""
        assert ref_list.current_name() == b"refs/heads/topic/1999"
        assert visible(ref_list, ref_list.cursor)
        assert any("cleared" in str(n.message) for n in app._notifications)


def _palette_offers(app, name: bytes) -> bool:
    from textual.command import CommandPalette

    palette = app.screen
    if not isinstance(palette, CommandPalette):
        return False
    hits = palette.query("CommandList Option")
    return any(name.decode() in str(getattr(o, "prompt", "")) for o in hits) or bool(
        palette.query_one("CommandList").option_count
    )


# ---- one set of keys -------------------------------------------------------------------------------------
KEYS = ["j", "j", "j", "k", "G", "k", "g", "k", "down", "end", "home", "up"]


def expected_rows(n: int, head_line: bool = False) -> list[int]:
    """What the main list does with KEYS over ``n`` rows (checked against it below). ``head_line``: the
    main list, where up from the first row selects HEAD's line above it (the cursor stays on row 0) and
    down from there comes back to row 0; the views have no such line."""
    row, out, on_head = 0, [], False
    for key in KEYS:
        if on_head and key in ("j", "down"):
            on_head = False
        elif key in ("j", "down"):
            row = min(row + 1, n - 1)
        elif key in ("k", "up"):
            on_head = head_line and row == 0
            row = max(row - 1, 0)
        elif key in ("G", "end"):
            row = n - 1
        else:
            row = 0
        out.append(row)
    return out


async def cursor_walk(pilot, view) -> list[int]:
    rows = []
    for key in KEYS:
        await pilot.press(key)
        rows.append(view.cursor)
        assert visible(view, view.cursor)
    return rows


async def test_main_list_moves_as_the_model(repos: dict[str, Path]) -> None:
    app = make_app(repos["files"])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        ref_list = app.screen.query_one(RefList)
        assert await cursor_walk(pilot, ref_list) == expected_rows(len(ref_list.view), head_line=True)


def reflog_repo(path: Path, fmt: str) -> Path:
    init_repo(path, fmt=fmt)
    for i in range(60):
        git(path, "commit", "-q", "--allow-empty", "-m", f"step-{i:02d}")
    return path


def reflog_messages(path: Path) -> list[str]:
    return git(path, "reflog", "show", "--format=%gs", "refs/heads/main").decode().splitlines()


VIEWS = ["packed", "table-records", "table-blocks", "reflog-files", "reflog-reftable"]


def open_view(kind: str, repos: dict[str, Path], tmp_path: Path) -> Host:
    """An app showing one of VIEWS."""
    if kind == "packed":
        store = open_store(repos["files"])
        app = Host(lambda: PackedScreen(store.snapshot(), None, store=store, follow=False))
    elif kind.startswith("table"):
        store = open_store(repos["reftable"])
        table = store.snapshot().tables[-1]
        app = Host(lambda: TableScreen(table))
    else:
        path = reflog_repo(tmp_path / kind, kind.split("-")[1])
        store = open_store(path)
        app = Host(lambda: ReflogScreen(store.snapshot(), b"refs/heads/main"))
    return app


async def loaded_view(pilot, app, kind: str) -> RowsView:
    screen = app.screen
    if kind == "packed":
        await wait_for(pilot, lambda: screen.index is not None and screen.index.done)
        view = screen.records
    elif kind.startswith("table"):
        await wait_for(pilot, lambda: screen._shown_block >= 0 and len(screen.records))
        view = screen.records_view if kind == "table-records" else screen.blocks_view
        if kind == "table-records":
            await pilot.press("tab")
    else:
        await wait_for(pilot, lambda: screen.loaded)
        view = screen.query_one("#reflog-rows", RowsView)
    await wait_for(pilot, lambda: not any(w.is_running for w in app.workers))
    await pilot.pause()
    assert view.has_focus and view.cursor == 0
    return view


@pytest.mark.parametrize("kind", VIEWS)
async def test_view_moves_as_the_main_list(kind: str, repos: dict[str, Path], tmp_path: Path) -> None:
    app = open_view(kind, repos, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await loaded_view(pilot, app, kind)
        n = view.row_count
        assert n > 20  # more than one screen: G and g have to scroll
        assert await cursor_walk(pilot, view) == expected_rows(n)


@pytest.mark.parametrize("kind", ["packed", "table-records", "reflog-files", "reflog-reftable"])
async def test_view_search_lands_on_the_first_match_and_n_cycles(
    kind: str, repos: dict[str, Path], tmp_path: Path
) -> None:
    app = open_view(kind, repos, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await loaded_view(pilot, app, kind)
        screen = app.screen
        if kind == "packed":
            names = [name for _o, _l, _oid, name, _p in file_records(repos["files"] / ".git/packed-refs")]
            needle = "topic/12"
        elif kind == "table-records":
            names = [raw.key for raw in screen.records]
            needle = names[len(names) // 2][:-1].decode()  # names of this block: ten share it
        else:
            names = [m.encode() for m in reflog_messages(Path(screen.snapshot.commondir).parent)]
            needle = "step-1"
        want = [i for i, name in enumerate(names) if needle.encode() in name]
        assert 2 <= len(want) < len(names)
        # one burst: "/", the text, enter, then n goes to the list (not into the field)
        await pilot.press("slash", *needle, "enter")
        await wait_for(pilot, lambda: view.search is not None and view.search.done)
        await pilot.pause()
        assert view.cursor == want[0] and visible(view, view.cursor) and view.has_focus
        assert list(view.search.matches) == want
        assert "match 1 of" in str(screen.query_one("#view-status").render())
        await pilot.press("n")
        assert view.cursor == want[1]
        await pilot.press("N", "N")  # back to the first, then wrapped round to the last
        assert view.cursor == want[-1] and visible(view, view.cursor)
        await pilot.press("n")
        assert view.cursor == want[0]


async def test_packed_search_is_a_git_glob(repos: dict[str, Path]) -> None:
    """``*`` stops at ``/`` as in ``git for-each-ref``: the matches are exactly git's refs, in file order."""
    path = repos["files"]
    names = [name for _o, _l, _oid, name, _p in file_records(path / ".git/packed-refs")]
    pattern = "refs/heads/topic/19*"
    want = [names.index(row[0]) for row in for_each_ref(path, pattern)]
    assert len(want) == 100
    store = open_store(path)
    app = Host(lambda: PackedScreen(store.snapshot(), None, store=store, follow=False))
    async with app.run_test(size=SIZE) as pilot:
        view = await loaded_view(pilot, app, "packed")
        await pilot.press("slash", *pattern, "enter")
        await wait_for(pilot, lambda: view.search is not None and view.search.done)
        await pilot.pause()
        assert list(view.search.matches) == want and view.cursor == want[0]
        await pilot.press("slash", *"refs/*", "enter")  # one component: no ref matches
        await wait_for(pilot, lambda: view.search.text == "refs/*" and view.search.done)
        await pilot.pause()
        assert list(view.search.matches) == [] and view.cursor == want[0]
        assert "no match" in str(app.screen.query_one("#view-status").render())


async def test_n_is_next_shadowed_until_a_search(tmp_path: Path, git_bin: str) -> None:
    """In the packed-refs view n/N step through shadowed records until a search gives them its matches;
    escape in the search field leaves the field, a second escape leaves the view."""
    repo = init_repo(tmp_path / "repo", fmt="files")
    create_refs(repo, (b"refs/heads/b%02d" % i for i in range(30)))
    git(repo, "pack-refs", "--all")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "update-ref", "refs/heads/b20", "HEAD")  # loose again: shadows its record
    store = open_store(repo)
    app = Host(lambda: PackedScreen(store.snapshot(), None, store=store, follow=False))
    async with app.run_test(size=SIZE) as pilot:
        view = await loaded_view(pilot, app, "packed")
        screen = app.screen
        await pilot.press("n")
        assert screen.current_name() == b"refs/heads/b20"
        await pilot.press("slash", *"b0", "enter")
        await wait_for(pilot, lambda: view.search is not None and view.search.done)
        await pilot.press("n")
        assert screen.current_name() == b"refs/heads/b01"
        await pilot.press("slash", "escape")
        assert view.has_focus and isinstance(app.screen, PackedScreen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.dismissed)


async def test_help_and_footer_list_the_keys(repos: dict[str, Path]) -> None:
    console = Console(width=120, record=True, file=io.StringIO())  # (recorded, not printed)
    console.print(help_table())
    text = console.export_text()
    for keys in ("↑ ↓ j k", "PgUp PgDn", "Home End g G", "/ (views)", "n N (views)"):
        assert keys in text
    app = make_app(repos["files"])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        shown = Console(width=120, record=True, file=io.StringIO())  # (recorded, not printed)
        shown.print(app.screen.query_one("#help-text").content)
        assert "Home End g G" in shown.export_text()
        await pilot.press("escape", "p")
        await wait_for(pilot, lambda: isinstance(app.screen, PackedScreen))
        footer_keys = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert "slash" in footer_keys
