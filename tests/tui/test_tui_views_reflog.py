"""The reflog view on both ref formats, against ``git reflog`` (TUI-VIEWS)."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.screens.reflog import ReflogScreen

from tests.support.git import git
from tests.support.tui import Host, open_store, wait_for

pytestmark = pytest.mark.anyio


async def test_reflog_view_lists_entries_newest_first(repo: Path, ref_format: str) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "update-ref", "-m", "moved back", "refs/heads/main", "HEAD~1")
    git(repo, "update-ref", "-m", "odd \x1b[31mname\x1b[0m [b]markup[/b]", "refs/heads/main", "HEAD@{1}")
    expected = git(repo, "reflog", "show", "--format=%H%x00%gs%x00%gn <%ge>", "refs/heads/main").splitlines()
    store = open_store(repo)
    app = Host(lambda: ReflogScreen(store.snapshot(), b"refs/heads/main"))
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReflogScreen)
        await wait_for(pilot, lambda: screen.loaded)
        view = screen.query_one("#reflog-rows")
        rows = [view.source.row_text(i).plain for i in range(len(view.source))]
        assert len(rows) == len(expected) == 4
        for i, (row, line) in enumerate(zip(rows, expected, strict=True)):
            new, message, who = line.split(b"\0")
            assert row.startswith(f"@{{{i}}}")
            assert new.decode()[:12] in row
            assert who.decode() in row
            assert "Tue Nov 14 22:13:20 2023 +0000" in row
            assert row.rstrip().endswith(message.decode().replace("\x1b", "\\x1b"))
        assert rows[-1].split()[1] == "0" * 12  # the branch's creation: old is the null oid
        await pilot.press("escape")
        assert app.dismissed == [None]
