"""Pilot: the header says "live" only when the screen shows the disk's current state (issue 13, item 5).

While the watcher refreshes (a long diff after a huge transaction) it says "refreshing" with the phase and
how long it has taken; while our own commit holds the watcher, "behind"; a snapshot older than the one
shown (a slow refresh finishing after a quicker one, e.g. ``r``) is never swapped in; a watcher that
fell back to polling says so.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support.git import git
from tests.support.tui import live_app, make_repo, wait_for

pytestmark = pytest.mark.anyio


def header(app) -> str:
    return str(app.screen.query_one("#status").render())


async def test_header_says_refreshing_then_live(tmp_path: Path, ref_format: str, monkeypatch) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=30)
    async with live_app(path) as (app, pilot):
        screen = app.screen
        assert "● live" in header(app)
        gate, entered = threading.Event(), threading.Event()
        orig = app.store.refresh

        def slow(prev):
            new = orig(prev)
            if threading.current_thread().name == "refscope-watch" and not gate.is_set():
                entered.set()
                gate.wait(10)
            return new

        monkeypatch.setattr(app.store, "refresh", slow)
        head = git(path, "rev-parse", "HEAD").strip().decode()
        git(path, "update-ref", "refs/heads/late", head)
        try:
            await wait_for(pilot, lambda: entered.is_set() and app.live.startswith("refreshing"))
            text = header(app)
            assert "○ refreshing" in text and "● live" not in text and " s · " in text
        finally:
            gate.set()
        await wait_for(pilot, lambda: app.live == "live" and screen.is_ready())
        assert app.snapshot.lookup(b"refs/heads/late") is not None
        assert "● live" in header(app)


async def test_header_says_behind_while_our_commit_holds_the_watcher(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=30)
    async with live_app(path) as (app, pilot):
        screen = app.screen
        with app.own_transaction() as adopt:
            await wait_for(pilot, lambda: app.live.startswith("behind: own commit"))
            assert "○ behind: own commit running" in header(app)
            head = git(path, "rev-parse", "HEAD").strip().decode()
            git(path, "update-ref", "refs/heads/during", head)
            await pilot.pause(0.3)
            assert app.snapshot.lookup(b"refs/heads/during") is None  # held: not refreshed yet
            adopt(None)
        await wait_for(pilot, lambda: app.snapshot.lookup(b"refs/heads/during") is not None)
        await wait_for(pilot, lambda: app.live == "live" and screen.is_ready())


async def test_an_older_snapshot_never_replaces_a_newer_one(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format, n=30)
    async with live_app(path) as (app, pilot):
        screen = app.screen
        older = app.store.snapshot()  # a refresh that started first ...
        head = git(path, "rev-parse", "HEAD").strip().decode()
        git(path, "update-ref", "refs/heads/newer", head)
        newer = app.store.snapshot()  # ... and one that started later, finishing first
        await wait_for(pilot, lambda: app.snapshot.lookup(b"refs/heads/newer") is not None)
        assert app.set_snapshot(newer, "refresh") or app.snapshot.read_seq >= newer.read_seq
        assert not app.set_snapshot(older, "watch")  # the late one is refused
        assert app.snapshot.lookup(b"refs/heads/newer") is not None
        assert app.watcher.snapshot.read_seq >= newer.read_seq  # the watcher refreshes from it
        await wait_for(pilot, lambda: app.live == "live" and screen.is_ready())
        assert screen.ref_list.snapshot is app.snapshot


async def test_header_says_polling_when_file_events_failed(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r", "files", n=5)
    async with live_app(path) as (app, pilot):
        name = b"refs/heads/caf\xe9".decode("utf-8", "surrogateescape")
        head = git(path, "rev-parse", "HEAD").strip().decode()
        for _ in range(2):  # watchfiles cannot decode the name: restarted, then polling
            git(path, "update-ref", name, head)
            git(path, "update-ref", "-d", name)
            await pilot.pause(0.3)
        await wait_for(pilot, lambda: app.live == "live (polling)")
        assert "● live (polling)" in header(app)
        git(path, "update-ref", "refs/heads/heard", head)
        await wait_for(pilot, lambda: app.snapshot.lookup(b"refs/heads/heard") is not None)
