"""Driving the TUI under Pilot: a host app for one screen, the one wait, the app over a real repository.

The host app pushes one view screen over a blank screen, as the main app does with its keys. Stores are the
real backend stores (``open_store(discover(path))``). Every wait polls a condition with a deadline, never a
fixed sleep. The repositories built here are deterministic (git's dates are fixed by ``git_env``; table
names can be renamed to fixed random parts for SVG snapshots).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

from textual.app import App

from tests.support.git import create_refs, git, git_noauto, init_repo


class Host(App[None]):
    """Pushes ``make_screen()`` on mount; records what the screen was dismissed with."""

    def __init__(self, make_screen) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.dismissed: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(), self.dismissed.append)


async def wait_for(pilot, condition, timeout: float = 10.0) -> None:
    """Wait on a condition (workers, messages), never a fixed sleep; fail loudly at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause()
        await asyncio.sleep(0.01)


# ---- stores and apps -----------------------------------------------------------------------------------
async def settle_snapshot(pilot) -> None:
    """Before a snapshot: no blinking cursor in any Input, every worker done, the screen refreshed."""
    from textual.widgets import Input

    app = pilot.app
    for inp in app.screen.query(Input):
        inp.cursor_blink = False
    await app.workers.wait_for_complete()
    await pilot.pause()


def open_store(path: Path):
    """The backend's store of the repository at ``path``."""
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store as real_open

    return real_open(discover(str(path)))


def make_app(path: Path, watch: bool = False, engine: str = "native"):
    """The main app over the repository at ``path`` with the fake meter (watcher off unless asked)."""
    from refscope.app.tui.app import RefscopeApp
    from refscope.app.tui.fake_meter import FakeMeter
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store as real_open

    repo = discover(str(path))
    return RefscopeApp(
        real_open(repo), repo=repo, repo_path=str(path), meter=FakeMeter(), watch=watch, engine=engine
    )


@contextlib.asynccontextmanager
async def live_app(path: Path, size: tuple[int, int] = (160, 30)):
    """(app, pilot) of an app over ``path`` with its watcher on, run until it shows the store live."""
    app = make_app(path, watch=True)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.live == "live" and app.screen.is_ready())
        yield app, pilot


async def set_filter(pilot, app, text: str) -> None:
    """Type ``text`` into the main list's filter, wait for the filtering worker, and leave the input."""
    await pilot.press("slash")
    app.screen.query_one("#filter").value = text
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.press("enter")


# ---- deterministic repositories ------------------------------------------------------------------------
def make_repo(path: Path, fmt: str, n: int = 40) -> Path:
    """``n`` topic branches, an annotated tag, a remote branch with its symbolic HEAD; files: packed, with
    one loose ref over the packed ones."""
    init_repo(path, fmt=fmt)
    head = git(path, "rev-parse", "HEAD").strip().decode()
    lines = "".join(f"create refs/heads/topic/{i:03d} {head}\n" for i in range(n))
    git(path, "update-ref", "--stdin", input=lines.encode())
    git(path, "tag", "-a", "-m", "release", "v1.0")
    git(path, "update-ref", "refs/remotes/origin/main", head)
    git(path, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    if fmt == "files":
        git(path, "pack-refs", "--all")
        git(path, "update-ref", "refs/heads/topic/loose", head)  # one loose ref over the packed ones
    return path


def fixed_table_names(repo: Path) -> list[str]:
    """Rename every table to a deterministic random part (git accepts any valid name), for SVG snapshots."""
    d = repo / ".git" / "reftable"
    names = (d / "tables.list").read_text().split()
    new = []
    for i, n in enumerate(names):
        fixed = n[: -len("12345678.ref")] + f"{0xC0FFEE00 + i:08x}.ref"
        os.rename(d / n, d / fixed)
        new.append(fixed)
    (d / "tables.list").write_text("".join(f"{n}\n" for n in new))
    return new


def stacked_repo(path: Path, big: int = 200, small: int = 4) -> Path:
    """A reftable repo whose stack is one big table then ``small`` one-ref tables (auto-compaction off)."""
    repo = init_repo(path, fmt="reftable")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    create_refs(repo, [f"refs/heads/topic/{i:04d}" for i in range(big)], "HEAD")
    git(repo, "pack-refs", "--all")
    for i in range(small):
        git_noauto(repo, "update-ref", "-m", f"small write {i}", f"refs/heads/small/{i}", "HEAD")
    return repo


def tables_list(repo: Path) -> list[str]:
    return (repo / ".git" / "reftable" / "tables.list").read_text().split()


def file_records(path: Path) -> list[tuple[int, int, bytes, bytes, bytes | None]]:
    """(offset, length, oid, name, peeled) of every record of a packed-refs file, read from its bytes in
    file order."""
    data = path.read_bytes()
    out: list[list] = []
    pos = 0
    for line in data.split(b"\n")[:-1]:
        if line.startswith(b"#"):
            pass
        elif line.startswith(b"^"):
            out[-1][1] += len(line) + 1
            out[-1][4] = line[1:]
        else:
            oid, name = line.split(b" ", 1)
            out.append([pos, len(line) + 1, oid, name, None])
        pos += len(line) + 1
    return [tuple(r) for r in out]


# ---- a repository for the tip columns, sorts and filters ---------------------------------------------
TIPS_NOW = 1702600000  # GIT_TEST_DATE_NOW of the tip tests: ~30 days after the history's commits


def tips_repo(path: Path, fmt: str = "files") -> Path:
    """The generated history (``history``: main, side, annotated and nested tags, tags of a blob and a
    tree) plus branches merged into main or not, of fixed ages relative to TIPS_NOW, and one branch
    checked out in a second worktree."""
    from tests.support.history import history

    init_repo(path, fmt=fmt)
    history(path, 40)
    git(path, "branch", "old", "main~30")
    git(path, "branch", "mid", "main~10")
    tree = git(path, "rev-parse", "main^{tree}").strip().decode()
    for name, parent, age_days, who in (
        ("stale/a", "main~30", 200, "Stale Author"),
        ("stale/b", "main", 100, "Other Person"),
        ("fresh/c", "main", 1, "Fresh Face"),
        ("v1.10", "main~2", 40, "Rel Eng"),
        ("v1.9", "main~3", 41, "Rel Eng"),
    ):
        when = f"{TIPS_NOW - age_days * 86400} +0100"
        env = {"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_AUTHOR_NAME": who}
        oid = git(path, "commit-tree", tree, "-p", parent, "-m", f"work on {name}", env=env).strip()
        git(path, "update-ref", f"refs/heads/{name}", oid.decode())
    git(path, "worktree", "add", "-q", str(path.parent / "second"), "mid")
    if fmt == "files":
        git(path, "pack-refs", "--all")
    return path


async def tips_loaded(pilot, app) -> None:
    """Wait until the main screen is indexed and the background tip scan has read every row."""
    screen = app.screen
    await wait_for(pilot, lambda: screen.is_ready())
    await wait_for(
        pilot, lambda: screen.tips_scanned is not None and screen.tips_scanned[0] >= screen.tips_scanned[1]
    )
    await app.workers.wait_for_complete()
    await pilot.pause()
