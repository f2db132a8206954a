"""SVG snapshots of the main screen and its dialogs (fixed size, watchers off, fake meter, in-memory refs).

Update with ``pytest tests/tui/test_tui_main_snapshots.py --snapshot-update`` after a deliberate layout change.
"""

from __future__ import annotations

from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.backend.model import LOOSE, PACKED, TABLE, Location, Ref
from textual.widgets import Input

from tests.support.memsnapshot import MemSnapshot, oid, sample
from tests.support.tui import settle_snapshot as settle
from tests.support.tui import wait_for

SIZE = (100, 30)


def evil_snapshot() -> MemSnapshot:
    refs = [
        Ref(b"refs/heads/\xe2\x80\xaeevil", oid(1), None, None, Location(PACKED, "p", 0)),
        Ref(b"refs/heads/c1\xc2\x9b31m", oid(2), None, None, Location(PACKED, "p", 60)),
        Ref(b"refs/heads/[bold]x[/]", oid(3), None, None, Location(LOOSE, "l")),
        Ref(b"refs/heads/raw\x9bbyte", oid(4), None, None, Location(TABLE, "0x01-0x04-abcd.ref", 40, 3)),
        Ref(b"refs/tags/v1", oid(5), oid(6), None, Location(TABLE, "0x01-0x04-abcd.ref", 80, 4)),
    ]
    return MemSnapshot(refs)


def make_app(snapshot=None, engine: str = "native") -> RefscopeApp:
    app = RefscopeApp(
        None,
        repo_path="/srv/demo",
        snapshot=snapshot or sample(),
        meter=FakeMeter(),
        watch=False,
        engine=engine,
    )
    return app


def test_main_screen(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("down", "down", "space", "space", "down", "space")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_main_screen_80x24_filtered(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await pilot.press("slash")
        pilot.app.screen.query_one("#filter", Input).value = "refs/tags/v1.1"
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(make_app(engine="git"), terminal_size=(80, 24), run_before=run_before)


def test_escaped_names(snap_compare) -> None:
    assert snap_compare(make_app(evil_snapshot()), terminal_size=SIZE, run_before=settle)


async def confirm_dialog(pilot) -> None:
    """``c`` with the queue as it is, until the confirmation shows."""
    app = pilot.app
    app.store = object()  # a stand-in: the dialog is shown before anything touches the store
    await pilot.press("c")
    await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ConfirmCommit")
    await pilot.pause()


def test_commit_confirmation_with_warnings(snap_compare) -> None:
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot)
        for name in (
            b"refs/heads/main",
            b"refs/remotes/origin/HEAD",
            b"refs/tags/v1.3",
            b"refs/heads/feature/0007",
        ):
            app.queue.add(app.snapshot.lookup(name))
        await confirm_dialog(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_commit_confirmation_leave_out(snap_compare) -> None:
    """A stale entry (the d choice and the key line) and a symref the commit would leave dangling."""

    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot)
        for name in (b"refs/remotes/origin/main", b"refs/heads/feature/0001", b"refs/tags/v1.2"):
            app.queue.add(app.snapshot.lookup(name))
        entry = app.queue[b"refs/heads/feature/0001"]
        app.queue[entry.name] = entry._replace(stale="gone")
        await confirm_dialog(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, press=["question_mark"])


def test_operation_breakdown(snap_compare) -> None:
    async def run_before(pilot) -> None:
        app = pilot.app
        app.record_op(app.meter.report("open"))
        await pilot.press("slash")
        app.screen.query_one("#filter", Input).value = "refs/heads/"
        await settle(pilot)
        app.screen.query_one("#ops-list").focus()
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "OperationScreen")

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_refusal_message(snap_compare) -> None:
    async def run_before(pilot) -> None:
        from refscope.backend.errors import StaleValue

        app = pilot.app
        await settle(pilot)
        await pilot.press("space")
        err = StaleValue(
            "/srv/demo/.git",
            "cannot lock ref 'refs/heads/feature/0000': is at 1111111111111111111111111111111111111111 "
            "but expected 0000000000000000000000000000000000000000",
        )
        app.screen._commit_refused(err)
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "Message")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_mark_all_confirmation(snap_compare) -> None:
    from refscope.app.tui.screens import marking as main  # (where the constant lives)

    async def run_before(pilot) -> None:
        main.MARK_ALL_CONFIRM = 10
        await settle(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "Confirm")
        await pilot.pause()

    old = main.MARK_ALL_CONFIRM
    try:
        assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)
    finally:
        main.MARK_ALL_CONFIRM = old
