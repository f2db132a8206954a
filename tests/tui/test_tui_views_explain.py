"""Views that explain themselves, columns sized to their content, copy and open (issue 15's TUI items).

Pilot against real git repositories of both formats; every wait polls a condition with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest
from refscope.app.tui.models.table_rows import RecordSource, _value_text, decode_block
from refscope.app.tui.screens.operations import BenchScreen
from refscope.app.tui.screens.reflog import ReflogScreen
from refscope.app.tui.widgets import columns
from refscope.app.tui.widgets.headline import HeadLine
from refscope.backend.engines.git import git_binary
from rich.text import Text

from tests.support.git import git, init_repo
from tests.support.tui import Host, make_app, make_repo, open_store, wait_for

pytestmark = pytest.mark.anyio


def _line(ref_list, y: int) -> str:
    return "".join(seg.text for seg in ref_list.render_line(y))


@contextlib.asynccontextmanager
async def _running(path: Path, size):
    """(app, pilot) of an app over ``path``, run until its list is ready."""
    app = make_app(path)
    async with app.run_test(size=size) as pilot:
        await _ready(pilot, app)
        yield app, pilot


async def _ready(pilot, app) -> None:
    await wait_for(pilot, lambda: app.screen.is_ready())
    await pilot.pause()


async def test_reflog_of_a_ref_without_one_says_so(repo: Path, ref_format: str) -> None:
    git(repo, "tag", "plain-tag")  # git writes no reflog for tags
    store = open_store(repo)
    app = Host(lambda: ReflogScreen(store.snapshot(), b"refs/tags/plain-tag"))
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded)
        view = screen.query_one("#reflog-rows")
        assert screen.entries == []
        assert view.source.row_text(0).plain.startswith("no reflog for refs/tags/plain-tag ")
        assert str(screen.query_one("#view-status").render()) == "no reflog for refs/tags/plain-tag"


async def test_head_is_shown_and_its_reflog_reachable_with_l(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    git(path, "commit", "-q", "--allow-empty", "-m", "second")
    want = git(path, "reflog", "show", "--format=%H", "HEAD").split()
    async with _running(path, (120, 40)) as (app, pilot):
        head = app.screen.query_one(HeadLine)
        assert str(head.render()).startswith("HEAD → refs/heads/main  symref")
        await pilot.press("k")  # ↑ from the first row reaches HEAD's line
        assert app.screen.focused is head
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, ReflogScreen) and app.screen.loaded)
        screen = app.screen
        assert screen.ref_name == b"HEAD"
        assert [e.new.decode() for e in screen.entries] == [w.decode() for w in want]
        await pilot.press("escape")
        await pilot.press("j")  # back down into the list
        assert app.screen.focused is app.screen.ref_list


async def test_detached_head_is_shown_with_its_oid(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    git(path, "checkout", "-q", "--detach")
    oid = git(path, "rev-parse", "HEAD").strip().decode()
    async with _running(path, (120, 40)) as (app, pilot):
        assert str(app.screen.query_one(HeadLine).render()).startswith(f"HEAD {oid[:12]}  detached")


async def test_location_column_is_labelled(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    async with _running(path, (200, 50)) as (app, pilot):
        ref_list = app.screen.ref_list
        header = str(app.screen.query_one("#list-header").render())
        assert (
            "upd = the record's update index" if ref_format == "reftable" else "packed@byte offset"
        ) in header
        ref = ref_list._ref_at(1)
        loc = ref.location
        if ref_format == "reftable":
            lo, hi = (int(x, 16) for x in os.path.basename(loc.file).split("-")[:2])
            want = f"table {lo}-{hi} upd {loc.update_index}"
        else:
            want = f"packed@{loc.offset}"
        assert want in _line(ref_list, 1)
        assert "#" not in _line(ref_list, 1)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_columns_fit_content_and_terminal(tmp_path: Path, ref_format: str, size) -> None:
    path = make_repo(tmp_path / "r", ref_format)  # has refs/remotes/origin/HEAD -> refs/remotes/origin/main
    async with _running(path, size) as (app, pilot):
        screen = app.screen
        screen.apply_filter("refs/remotes/")
        await wait_for(pilot, lambda: len(screen.ref_list.view) == 2)
        await pilot.pause()
        ref_list = screen.ref_list
        width = ref_list.scrollable_content_region.width
        lines = [_line(ref_list, y) for y in range(2)]
        symref = next(line for line in lines if "→" in line)
        assert "→ refs/remotes/origin/main " in symref  # the target whole
        header = str(screen.query_one("#list-header").render())
        # the header's columns are the rows' columns: the value column starts where "oid" does
        value_at = header.index("oid")
        assert symref.index("→") == value_at
        assert lines[0].index("refs/remotes/origin/") == header.index("name")
        name_w = value_at - columns.MARK_W
        assert name_w == len("refs/remotes/origin/HEAD") + 1  # sized to the names, not the terminal
        assert all(len(line) == width for line in lines)


async def test_collapsing_panels_gives_the_list_their_rows(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    async with _running(path, (80, 24)) as (app, pilot):
        ref_list = app.screen.ref_list
        before = ref_list.size.height
        assert before >= 13  # a short terminal gives the panels fewer rows
        await pilot.press("z")
        await wait_for(pilot, lambda: ref_list.size.height > before)
        assert ref_list.size.height == before + 5
        assert not app.screen.query_one("#panels").display
        status = str(app.screen.query_one("#status").render())
        assert status.endswith("○ off") and "native" in status  # the compact status line, whole
        await pilot.press("z")
        await wait_for(pilot, lambda: ref_list.size.height == before)


async def _only(pilot, app, name: str):
    """The main screen, ready, its list filtered to the one ref ``name``."""
    await _ready(pilot, app)
    screen = app.screen
    screen.apply_filter(name)
    await wait_for(pilot, lambda: len(screen.ref_list.view) == 1)
    return screen


async def test_copy_name_and_oid(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _only(pilot, app, "refs/remotes/origin/HEAD")
        await pilot.press("y")
        assert app.clipboard == "refs/remotes/origin/HEAD"
        await pilot.press("Y")  # a symref's oid: what it resolves to
        assert app.clipboard == git(path, "rev-parse", "refs/remotes/origin/main").strip().decode()
        await pilot.press("k", "y")  # HEAD's line
        assert app.clipboard == "HEAD"


async def test_git_log_command_for_the_ref(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _only(pilot, app, "refs/tags/v1.0")
        cmd = screen.git_log_command()
    assert cmd == [
        os.fsencode(git_binary()), b"-C", os.fsencode(str(path)), b"log", b"--decorate",
        b"--end-of-options", b"refs/tags/v1.0", b"--",
    ]  # fmt: skip
    # the same command line, run by git (its pager off here): the log of the tag
    out = subprocess.run(cmd, capture_output=True, check=True, env={**os.environ, "GIT_PAGER": "cat"})
    assert git(path, "rev-parse", "refs/tags/v1.0^{commit}").strip() in out.stdout


async def test_bench_dialog_never_wraps_its_table(git_bin: str) -> None:
    lines = ["refscope bench: delete " + "x" * 140, "  " + "y" * 150, "engine  wall ms  " + "z" * 120]
    app = Host(lambda: BenchScreen(Text("\n".join(lines), no_wrap=True)))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        result = app.screen.query_one("#bench-result")
        assert result.size.height == len(lines)
        assert result.size.width >= max(map(len, lines))


def test_table_view_keys_align_with_long_names(tmp_path: Path, git_bin: str) -> None:
    repo = init_repo(tmp_path / "r", fmt="reftable")
    long = "refs/heads/" + "a-very-long-branch-name/" * 3 + "end"
    git(repo, "update-ref", long, "HEAD")
    git(repo, "update-ref", "refs/heads/b", "HEAD")
    git(repo, "pack-refs", "--all")
    table = open_store(repo).snapshot().tables[0]
    blk = next(blk for _section, blk in table.iter_blocks() if chr(blk.type) == "r")
    src = RecordSource(blk, decode_block(blk, table.min_update_index))
    starts = set()
    for i in range(len(src)):
        row = src.row_text(i).plain
        value = _value_text(src.records[i].record, "r", 0).plain
        assert row.endswith(value)
        starts.add(len(row) - len(value))
    assert len(starts) == 1 and src.header.plain.index("vt") == starts.pop()
    assert src.key_w >= len(long)


async def test_palette_commands_copy_and_head_reflog(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    async with _running(path, (120, 40)) as (app, pilot):
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        assert {"Copy ref name", "Copy ref oid", "Open in git log", "Toggle panels", "Reflog of HEAD"} <= set(
            commands
        )
        name = app.screen.ref_list.current_name().decode()
        commands["Copy ref name"]()
        assert app.clipboard == name
        commands["Reflog of HEAD"]()
        await wait_for(pilot, lambda: isinstance(app.screen, ReflogScreen) and app.screen.loaded)
        assert app.screen.ref_name == b"HEAD" and app.screen.entries


def test_o_hands_the_terminal_to_git_log(tmp_path: Path, git_bin: str) -> None:
    """The whole app on a pseudo-terminal: ``o`` suspends it and runs git log, whose pager (here one that
    saves what it is given) gets the ref's log; then the app takes the terminal back and ``q`` quits."""
    import contextlib
    import pty
    import select
    import sys
    import time

    path = make_repo(tmp_path / "r", "files")
    marker = tmp_path / "pager-got"
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "GIT_PAGER": f"cat > '{marker}'",
        "REFSCOPE_METER_LINGER": "0",
    }
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "refscope.app", "-C", str(path)],
        stdin=slave, stdout=slave, stderr=slave, env=env,
        # the pty as the app's controlling terminal (a session of its own), as a shell would give it:
        # Textual resumes application mode only on a terminal it controls
        preexec_fn=lambda: (os.setsid(), fcntl.ioctl(0, termios.TIOCSCTTY, 0)),
    )  # fmt: skip
    os.close(slave)
    out = bytearray()

    def pump(until, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if until():
                return True
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    out.extend(os.read(master, 65536))
                except OSError:  # EIO: nobody holds the terminal (the app is exiting): wait for it
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                    return until()
        return until()

    try:
        assert pump(lambda: b"47" in out and b"shown" in out), bytes(out[-2000:])  # the list is indexed
        os.write(master, b"o")
        assert pump(lambda: marker.exists() and b"commit " in marker.read_bytes()), bytes(out[-3000:])
        head = git(path, "rev-parse", "refs/heads/main").strip()
        assert head in marker.read_bytes()  # the first ref of the list: refs/heads/main
        os.write(master, b"q")
        exited = pump(lambda: proc.poll() is not None)
        assert exited and proc.returncode == 0, (proc.poll(), bytes(out[-3000:]))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
