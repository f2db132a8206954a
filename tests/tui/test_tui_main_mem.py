"""Pilot tests of the main screen over an in-memory snapshot: filtering, marking, escaping."""

from __future__ import annotations

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.widgets.ref_list import RefList

from tests.support.memsnapshot import sample
from tests.support.tui import wait_for

pytestmark = pytest.mark.anyio


def make_app(snapshot=None) -> RefscopeApp:
    return RefscopeApp(None, repo_path="/mem", snapshot=snapshot or sample(), meter=FakeMeter(), watch=False)


async def test_first_screen_and_count() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reflist = app.screen.query_one(RefList)
        assert len(reflist.view) == 73
        assert "73 of 73 shown" in str(app.screen.query_one("#count").render())


def count_text(app) -> str:
    return str(app.screen.query_one("#count").render())


async def type_filter(pilot, app, text: str) -> None:
    """Focus the filter with ``/`` and enter ``text`` (one Changed event), then wait for any scan."""
    from textual.widgets import Input

    await pilot.press("slash")
    app.screen.query_one("#filter", Input).value = text
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_typing_is_never_blocked_by_a_scan() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash", "o", "r", "i", "g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.query_one("#filter").value == "orig"
        assert "2 of 73 shown (substring)" in count_text(app)


FILTERS = [
    ("refs/heads/", 51, "prefix"),
    ("refs/heads/feature/001", 10, "prefix"),
    ("refs/t", 20, "prefix"),
    ("origin", 2, "substring"),
    ("v1.1", 11, "substring"),
    ("refs/tags/v1.1?", 10, "glob"),
    ("*/00[12]*", 20, "glob"),
    ("nothing-matches", 0, "substring"),
    ("!refs/heads/", 22, "not prefix"),
    ("!v1.1", 62, "not substring"),
    ("!refs/tags/v1.1?", 63, "not glob"),
]


async def test_filter_exact_counts() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        for text, expected, kind in FILTERS:
            await type_filter(pilot, app, text)
            reflist = app.screen.query_one(RefList)
            assert len(reflist.view) == expected, text
            assert f"{expected:,} of 73 shown ({kind})" in count_text(app)
            names = [app.snapshot.name_at(i) for i in reflist.view]
            assert names == sorted(names)


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_find_row_in_a_sorted_view_is_its_index(chunk: int) -> None:
    # a sorted view's cursor row is found in the worker a chunk at a time: the same answer as one
    # ``index``, chunk ends included, and 0 for a name not shown
    from array import array

    from refscope.app.tui.models import filtering

    snap = sample()
    rows = list(range(len(snap)))
    view = array("I", rows[1::2][::-1] + rows[::2])
    for k, row in enumerate(view):
        assert filtering.find_row(snap, view, snap.name_at(row), chunk) == k
    assert filtering.find_row(snap, view[:3], snap.name_at(view[5]), chunk) == 0
    assert filtering.find_row(snap, range(2, 5), snap.name_at(3), chunk) == 1


@pytest.mark.parametrize(("text", "expected", "kind"), FILTERS)
def test_filter_views_match_brute_force(text: str, expected: int, kind: str) -> None:
    from refscope.app.tui.models import filtering
    from refscope.backend.refpattern import ForEachRefPatterns

    snap = sample()
    pattern = filtering.parse(text)
    assert pattern.label == kind
    view = filtering.compute(snap, pattern)
    names = [snap.name_at(i) for i in view]
    body = text.removeprefix("!").encode()
    if pattern.kind == "prefix":
        want = [n for n in snap.names if n.startswith(body)]
    elif pattern.kind == "substring":
        want = [n for n in snap.names if body in n]
    else:  # the one matcher `refscope list` uses (checked against git in test_tui_filter_git.py)
        glob = body if body.startswith(b"refs/") else b"**/" + body
        want = [n for n in snap.names if ForEachRefPatterns([glob]).match(n)]
    if pattern.negated:
        want = [n for n in snap.names if n not in want]
    assert names == want and len(names) == expected
    seen = []
    assert filtering.compute(snap, pattern, lambda: True) in (None, view)  # cancelled scans return None
    filtering.compute(snap, pattern, progress=lambda done, total: seen.append((done, total)))
    if kind in ("substring", "glob", "not substring", "not glob"):
        assert seen[-1][0] == seen[-1][1]


async def test_engine_switch_help_and_palette_jump() -> None:
    from refscope.app.tui.screens.help import HelpScreen

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("e")
        assert app.engine == "git"
        assert " git " in str(app.screen.query_one("#status").render())
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        for key in ["v", "1", "full_stop", "1", "5"]:
            await pilot.press(key)
        await wait_for(
            pilot,
            lambda: (
                "jump: refs/tags/v1.15"
                in str(app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "MainScreen")
        reflist = app.screen.query_one(RefList)
        assert reflist.current_name() == b"refs/tags/v1.15"


async def test_escape_clears_filter_and_enter_focuses_list() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_filter(pilot, app, "origin")
        await pilot.press("enter")
        assert isinstance(app.focused, RefList)
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "73 of 73 shown" in count_text(app)


async def test_mark_unmark_and_queue_survives_filter() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("space", "space")  # marks rows 0 and 1 (cursor moves down after each)
        assert list(app.queue) == [b"refs/heads/feature/0000", b"refs/heads/feature/0001"]
        assert app.queue[b"refs/heads/feature/0000"].seen.oid == app.snapshot.row(0).oid
        await type_filter(pilot, app, "refs/tags/")
        assert len(app.queue) == 2
        await pilot.press("escape")
        await pilot.pause()
        reflist = app.screen.query_one(RefList)
        reflist.move_to(0)
        await pilot.press("space")  # unmark
        assert list(app.queue) == [b"refs/heads/feature/0001"]


async def test_mark_all_shown_and_unmark_all() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_filter(pilot, app, "refs/tags/")
        await pilot.press("enter", "a")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(app.queue) == 20
        assert all(n.startswith(b"refs/tags/") for n in app.queue)
        await pilot.press("u")  # undo: the entry of the ref under the cursor (or the last one)
        assert len(app.queue) == 19
        await pilot.press("U")  # unmark everything
        assert len(app.queue) == 0


async def test_mark_all_above_threshold_asks_with_count() -> None:
    from refscope.app.tui.screens import marking as main  # (where the constant lives)
    from refscope.app.tui.screens.dialogs import Confirm

    old = main.MARK_ALL_CONFIRM
    main.MARK_ALL_CONFIRM = 10
    try:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, Confirm))
            assert "Mark all 73 refs" in str(app.screen.question)
            await pilot.press("n")
            await app.workers.wait_for_complete()
            assert len(app.queue) == 0
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.press("y")
            await wait_for(pilot, lambda: len(app.queue) == 73)
    finally:
        main.MARK_ALL_CONFIRM = old


async def test_queue_panel_remove_entry() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("space", "space", "space")
        await pilot.press("tab")
        from refscope.app.tui.widgets.queue import QueuePanel

        assert isinstance(app.focused, QueuePanel)
        await pilot.press("down", "x")
        assert list(app.queue) == [b"refs/heads/feature/0000", b"refs/heads/feature/0002"]
        row0 = app.screen.query_one(RefList).render_line(0).text
        assert row0.startswith("● refs/heads/feature/0000")
        row1 = app.screen.query_one(RefList).render_line(1).text
        assert row1.startswith("  refs/heads/feature/0001")


async def test_names_are_escaped_never_markup() -> None:
    from refscope.backend.model import PACKED, Location, Ref

    evil = [
        b"refs/heads/\xe2\x80\xaeevil",  # U+202E right-to-left override
        b"refs/heads/c1\xc2\x9b31m",  # U+009B: a C1 CSI
        b"refs/heads/[bold]x[/]",
        b"refs/heads/raw\x9bbyte",  # invalid UTF-8 byte 0x9b
    ]
    refs = [Ref(n, b"a" * 40, None, None, Location(PACKED, "p", i)) for i, n in enumerate(evil)]
    from tests.support.memsnapshot import MemSnapshot

    app = make_app(MemSnapshot(refs))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        lines = [app.screen.query_one(RefList).render_line(y).text for y in range(4)]
        # bytewise order: "[" (0x5b) < "c" < "r" < 0xe2
        assert lines[0].startswith("  refs/heads/[bold]x[/] ")
        assert lines[1].startswith("  refs/heads/c1\\u009b31m ")
        assert lines[2].startswith("  refs/heads/raw\\x9bbyte ")
        assert lines[3].startswith("  refs/heads/\\u202eevil ")
        strip = app.screen.query_one(RefList).render_line(0)
        assert not any(seg.style and seg.style.bold and seg.text == "x" for seg in strip)
        svg = app.export_screenshot()
        assert "\u202e" not in svg and "\x9b" not in svg


def post_burst(app, keys: list[str]) -> None:
    """Queue keys all at once, as a terminal delivers a fast burst (Pilot.press waits between keys)."""
    from textual import events
    from textual.keys import _character_to_key

    for key in keys:
        if len(key) == 1:
            app.post_message(events.Key(_character_to_key(key), key))
        else:
            app.post_message(events.Key(key, None))


BURSTS = [
    # (keys, filter value, focus on the filter afterwards)
    (["/", *"refs/heads/martinvonz", *["backspace"] * 21, *"refs/pull/50"], "refs/pull/50", True),
    (["/", *"abc", "backspace", "backspace", *"xy"], "axy", True),
    (["/", *"refs/tags/v1", "home", "delete", *"R", "end", *".1"], "Refs/tags/v1.1", True),
    (["/", *"refs/tags/v1.1", "enter", *"jj"], "refs/tags/v1.1", False),  # j moves the list, types nothing
]


@pytest.mark.parametrize(("keys", "value", "in_filter"), BURSTS)
async def test_filter_burst_applies_in_order(keys: list[str], value: str, in_filter: bool) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        post_burst(app, keys)
        field = app.screen.query_one("#filter")
        await wait_for(pilot, lambda: field.value == value and (app.screen.focused is field) == in_filter)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert type(app.screen).__name__ == "MainScreen"  # no list binding ran (s: stack, r: refresh)
        assert field.value == value
        if not in_filter:
            await wait_for(pilot, lambda: app.screen.query_one(RefList).cursor == 2)
