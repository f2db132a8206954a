"""No background job of the TUI hides a failure; a crash exits 1 with the one line (issue 13, items 7 and 1).

Every worker is declared with ``app/tui/workers.py``'s ``work`` (checked over the source), and each kind of
job is made to fail for real on disk — a file replaced by a directory, a damaged table, a full tmpfs, a
store the process may not read — with the message asserted where the job shows its result, and the app
asserted still usable afterwards. The expected line is what ``workers.failure_line`` makes of the error the
backend raises for the same fault, so the tests hold whether that error is typed or not yet.
"""

from __future__ import annotations

import ast
import logging
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from refscope.app.tui.screens.dialogs import ConfirmCommit
from refscope.app.tui.screens.dialogs import Message as MessageDialog
from refscope.app.tui.screens.main import MainScreen
from refscope.app.tui.workers import failure_line
from refscope.backend.errors import RefscopeError

from tests.support.git import ROOT, for_each_ref, git_env, tree_bytes
from tests.support.tui import make_app, make_repo, set_filter, wait_for

pytestmark = pytest.mark.anyio
TUI = ROOT / "app" / "tui"


# ---- the class: one error path ---------------------------------------------------------------------------
def test_every_worker_goes_through_the_one_error_path() -> None:
    """No module of the TUI uses Textual's ``work`` or ``run_worker`` (whose errors stay in the worker
    object) and only the views' follower starts threads (its failures go to ``workers.report``)."""
    offenders = []
    threads = set()
    for path in sorted(TUI.rglob("*.py")):
        rel = str(path.relative_to(TUI))
        tree = ast.parse(path.read_text(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "textual" and rel != "workers.py":
                offenders += [f"{rel}: from textual import work" for a in node.names if a.name == "work"]
            if isinstance(node, ast.Attribute) and node.attr == "run_worker":
                offenders.append(f"{rel}:{node.lineno}: run_worker")
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "work"
                and getattr(node.value, "id", "") == "textual"
            ):
                offenders.append(f"{rel}:{node.lineno}: textual.work")
            if isinstance(node, ast.Attribute) and node.attr == "Thread":
                threads.add(rel)
    assert offenders == []
    assert threads == {"live.py"}
    assert "report(self.screen, Failure(" in (TUI / "live.py").read_text()


# ---- each kind of job, failing for real ------------------------------------------------------------------
def as_directory(path: Path) -> None:
    """Replace the file ``path`` by a directory (kept aside as ``path.aside``)."""
    path.rename(path.with_name(path.name + ".aside"))
    path.mkdir()


def put_back(path: Path) -> None:
    path.rmdir()
    path.with_name(path.name + ".aside").rename(path)


def expected_line(about: str | None, call) -> str:
    """The line for the error ``call()`` raises, about ``about`` when it names no file itself."""
    with pytest.raises(Exception) as caught:
        call()
    return failure_line(caught.value, about)


def status_text(app) -> str:
    return str(app.screen.query_one("#status").render())


async def test_refresh_failure_shown_in_place(tmp_path: Path, ref_format: str, caplog) -> None:
    """``r`` (the refresh worker) on a store whose ``packed-refs`` / ``tables.list`` became a directory:
    the status line says so, the app keeps answering, and the next good refresh clears it."""
    caplog.set_level(logging.INFO, logger="refscope.tui")
    path = make_repo(tmp_path / "r", ref_format, n=3)
    target = path / ".git" / ("packed-refs" if ref_format == "files" else "reftable/tables.list")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.is_ready())
        as_directory(target)
        with pytest.raises(Exception) as caught:
            app.store.refresh(app.snapshot)
        line = failure_line(caught.value, app.repo.gitdir)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.store_error is not None)
        assert app.store_error == line and "⚠ " + line in status_text(app)
        logged = [
            r for r in caplog.records if r.name == "refscope.tui" and r.getMessage().startswith("refresh")
        ]
        # a typed error is logged as a note; anything else with its traceback
        assert logged and (logged[0].exc_info is None) == isinstance(caught.value, RefscopeError)
        await pilot.press("slash")  # still running, still responding
        assert app.screen.query_one("#filter").has_focus
        await pilot.press("enter")
        put_back(target)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.store_error is None)
        assert "⚠" not in status_text(app)


async def test_index_failure_shown_in_place(tmp_path: Path) -> None:
    """The index worker over a stack whose newest table is damaged: the count stops saying "counting…"
    and the status line says which table and what is wrong."""
    path = make_repo(tmp_path / "r", "reftable", n=3)
    damage_newest_table(path)
    app = make_app(path)
    line = expected_line(app.repo.gitdir, lambda: len(app.store.snapshot()))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.store_error is not None)
        assert app.store_error == line and "⚠ " + line in status_text(app)
        assert "refs unreadable" in status_text(app)


def damage_newest_table(path: Path) -> Path:
    reftable = path / ".git" / "reftable"
    table = reftable / (reftable / "tables.list").read_text().split()[-1]
    data = bytearray(table.read_bytes())
    data[30:60] = b"\xff" * 30
    table.write_bytes(bytes(data))
    return table


async def test_stack_view_failure_shown_in_its_status(tmp_path: Path) -> None:
    """The stack view's summaries worker over a damaged table (it used to keep its error to itself)."""
    from refscope.app.tui.models.stack_rows import full_summary

    path = make_repo(tmp_path / "r", "reftable", n=3)
    damage_newest_table(path)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        snapshot = app.snapshot
        line = expected_line(None, lambda: [full_summary(t, None) for t in snapshot.tables])
        await pilot.press("s")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "StackScreen")
        status = app.screen.query_one("#view-status")
        await wait_for(pilot, lambda: "failed" in str(status.render()))
        assert str(status.render()) == f"summarize tables failed: {line}"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))


async def test_packed_view_reload_failure_shown_in_its_status(tmp_path: Path) -> None:
    """``r`` in the packed-refs view after packed-refs became a directory (it used to raise on the UI
    thread and end the app): the view says why and keeps its records."""
    path = make_repo(tmp_path / "r", "files", n=3)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "PackedScreen")
        view = app.screen
        status = view.query_one("#view-status")
        await wait_for(pilot, lambda: "records" in str(status.render()))
        as_directory(path / ".git" / "packed-refs")
        line = expected_line(None, lambda: app.store.refresh(view.snapshot))
        await pilot.press("r")
        await wait_for(pilot, lambda: "failed" in str(status.render()))
        assert str(status.render()) == f"reload failed: {line}"
        assert view.index is not None and view.index.count > 0
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 6 MiB tmpfs of our own, unmounted afterwards."""
    from tests.support.faults import small_tmpfs

    with small_tmpfs(tmp_path / "disk", "6m") as mount:
        yield mount


def fill(disk: Path) -> None:
    """Write zeros until the tmpfs has no byte left."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (65536, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                continue
    finally:
        os.close(fd)


async def test_commit_on_a_full_disk_says_what_happened(small_disk: Path, ref_format: str) -> None:
    """The commit worker on a full tmpfs: a dialog with the file and "No space left on device" (it used to
    show only the "committing…" toast), the hold released, and the list and queue as git sees the disk."""
    path = make_repo(small_disk / "r", ref_format, n=40)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await set_filter(pilot, app, "refs/heads/topic/0")
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.queue) == 40)
        main = app.screen
        fill(small_disk)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog), timeout=30)
        assert app.screen.title_text in ("commit failed", "commit refused")
        body = str(app.screen.body)
        assert "No space left on device" in body
        assert body.startswith(app.repo.gitdir + ": ") or "/.git/" in body.splitlines()[0]
        assert not app.commit_running and main.active_bindings["c"].enabled
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is main)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not main.query_one("#commit-bar").display
        truth = {n for n, *_ in for_each_ref(path)}
        assert {n for n, e in app.queue.items() if e.stale != "gone"} == truth & set(app.queue)


# ---- the crash path: the `refscope` command ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("fmt", "unreadable"), [("files", "packed-refs"), ("reftable", "tables.list"), ("reftable", "table")]
)
def test_unreadable_store_exits_with_one_line(tmp_path: Path, fmt: str, unreadable: str) -> None:
    """``refscope`` (the TUI) where the store may not be read (mode 000; root made to obey modes): exit 1,
    one line ``refscope: <file>: ...Permission denied`` on stderr once the terminal is restored, nothing
    written. Headless Textual driver, stdout a pty (the TUI wants a terminal)."""
    path = make_repo(tmp_path / "r", fmt, n=3)
    gitdir = path / ".git"
    if fmt == "files":
        target = gitdir / unreadable
    else:
        reftable = gitdir / "reftable"
        names = (reftable / "tables.list").read_text().split()
        target = reftable / (unreadable if unreadable == "tables.list" else names[-1])
    target.chmod(0)
    before = tree_bytes(gitdir)
    env = dict(git_env(), TEXTUAL_DRIVER="textual.drivers.headless_driver:HeadlessDriver")
    from tests.support.faults import unprivileged

    argv = unprivileged()
    argv += [sys.executable, "-m", "refscope.app", "-C", str(path), "--no-watch"]
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.PIPE, env=env, timeout=60
        )
    finally:
        os.close(follower)
        os.close(leader)
    lines = done.stderr.decode().splitlines()
    assert (done.returncode, len(lines)) == (1, 1), done.stderr.decode()
    assert lines[0].startswith(f"refscope: {target}: ") and lines[0].endswith("Permission denied")
    assert tree_bytes(gitdir) == before
