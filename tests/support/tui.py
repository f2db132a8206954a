"""Shared helpers for the storage-view tests (TUI-VIEWS): a host app, store opening, deterministic repos.

The host app pushes one view screen over a blank screen, as TUI-MAIN's app does with its keys. Stores are the
real backend stores (``open_store(discover(path))``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from textual.app import App

from tests.support.git import git, git_binary, git_env, init_repo


class Host(App[None]):
    """Pushes ``make_screen()`` on mount; records what the screen was dismissed with."""

    def __init__(self, make_screen) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.dismissed: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.make_screen(), self.dismissed.append)


async def until(pilot, condition, timeout: float = 10.0) -> None:
    """Poll ``condition()`` (with the app running) until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)
        await asyncio.sleep(0)


# ---- stores --------------------------------------------------------------------------------------------
def open_store(path: Path):
    """The backend's store of the repository at ``path``."""
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store as real_open

    return real_open(discover(str(path)))


# ---- deterministic repositories ------------------------------------------------------------------------
def create_refs(repo: Path, names: list[str], rev: str = "HEAD") -> None:
    git(repo, "update-ref", "--stdin", input="".join(f"create {n} {rev}\n" for n in names).encode())


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


def git_noauto(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    """git with reftable auto-compaction off (git has no config for that, only this test variable)."""
    env = git_env()
    env["GIT_TEST_REFTABLE_AUTOCOMPACTION"] = "0"
    proc = subprocess.run(
        [git_binary(), *args], cwd=repo, input=input, capture_output=True, env=env, check=True
    )
    return proc.stdout


def stacked_repo(path: Path, big: int = 200, small: int = 4) -> Path:
    """A reftable repo whose stack is one big table then ``small`` one-ref tables (auto-compaction off)."""
    repo = init_repo(path, fmt="reftable")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    create_refs(repo, [f"refs/heads/topic/{i:04d}" for i in range(big)])
    git(repo, "pack-refs", "--all")
    for i in range(small):
        git_noauto(repo, "update-ref", "-m", f"small write {i}", f"refs/heads/small/{i}", "HEAD")
    return repo


def tables_list(repo: Path) -> list[str]:
    return (repo / ".git" / "reftable" / "tables.list").read_text().split()
