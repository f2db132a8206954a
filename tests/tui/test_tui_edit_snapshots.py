"""SVG snapshots of a queue holding edits (issue 17): the queue panel with every kind, and the commit
dialog of a mixed queue (fixed size, watchers off, fake meter, in-memory refs).

Update with ``pytest tests/tui/test_tui_edit_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.widgets.queue import CREATE, MOVE, RENAME, Entry

from tests.support.memsnapshot import sample
from tests.support.tui import settle_snapshot as settle
from tests.support.tui import wait_for

SIZE = (100, 36)  # (tall enough for the full queue panel)
NEW = b"1a2b3c4d" * 5  # values whose first digits differ, as the panel shows them
OTHER = b"5e6f7a8b" * 5


def make_app(engine: str = "native") -> RefscopeApp:
    return RefscopeApp(
        None, repo_path="/srv/demo", snapshot=sample(), meter=FakeMeter(), watch=False, engine=engine
    )


def queue_mix(app) -> None:
    """One of each kind, and a stale create (its name appeared since it was queued)."""
    snap = app.snapshot
    q = app.queue
    q.add_edit(Entry(b"refs/heads/topic/new", None, kind=CREATE, new=NEW))
    q.add_edit(
        Entry(b"refs/heads/feature/0002", snap.lookup(b"refs/heads/feature/0002"), kind=MOVE, new=OTHER)
    )
    q.add_edit(
        Entry(
            b"refs/heads/feature/0003",
            snap.lookup(b"refs/heads/feature/0003"),
            kind=RENAME,
            new_name=b"refs/heads/renamed",
        )
    )
    q.add(snap.lookup(b"refs/tags/v1.3"))
    q.add(snap.lookup(b"refs/heads/feature/0005"))
    q.add_edit(Entry(b"refs/tags/v2.0", None, stale="exists now at 5e6f7a8b", kind=CREATE, new=NEW))


def test_queue_with_edits(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        queue_mix(pilot.app)
        pilot.app.screen.query_one("#queue").sync()
        pilot.app.screen.ref_list.refresh_rows()
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_commit_dialog_with_edits(snap_compare) -> None:
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot)
        queue_mix(app)
        app.screen.query_one("#queue").sync()
        app.store = object()  # a stand-in: the dialog is shown before anything touches the store
        await pilot.press("c")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ConfirmCommit")
        await pilot.pause()

    assert snap_compare(make_app(engine="git"), terminal_size=SIZE, run_before=run_before)
