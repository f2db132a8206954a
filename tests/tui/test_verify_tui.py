"""The TUI on broken and hostile repositories: it starts, reports the damage in place (no traceback, no
crash while scrolling through what can be read), never changes a byte, and shows hostile names escaped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import corruptions
from tests.support.git import git, init_repo, tree_bytes
from tests.support.tui import make_app

pytestmark = pytest.mark.anyio

# One table damaged where only reading the rows finds it, one packed-refs line git dies on (time budget:
# the whole corpus runs through the CLI in test_corrupt_stores.py; the TUI shares the same backend).
CASES = ["reftable-flip-restart-offset-r1-first", "packed-bad-hex"]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tui-bases")
    return {kind: corruptions.build_base(root / kind, kind) for kind in ("files", "reftable")}


async def settle(pilot, app) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("case_id", CASES)
async def test_tui_reports_corruption_in_place(tmp_path, bases, case_id):
    (case,) = [c for c in corruptions.all_cases() if c.id == case_id]
    repo = tmp_path / "repo"
    shutil.copytree(bases[case.base], repo, symlinks=True)
    damaged = case.apply(repo, bases)
    before = tree_bytes(repo)
    app = make_app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for key in ("end", "home", "pagedown", "pagedown"):
            await pilot.press(key)
            await settle(pilot, app)
        assert app.return_code is None  # still running: no crash
        assert app.store_error is not None and damaged.name in app.store_error
    assert tree_bytes(repo) == before


HOSTILE = [
    b"refs/heads/csi-\x9b31m-raw",
    "refs/heads/bidi-\u202egnp.exe".encode(),
    "refs/heads/c1-\u009b".encode(),
]


async def test_tui_shows_hostile_names_escaped(tmp_path):
    repo = init_repo(tmp_path / "r", fmt="reftable")
    oid = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "--stdin", input=b"".join(b"create " + n + b" " + oid + b"\n" for n in HOSTILE))
    app = make_app(repo)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        screen = app.export_screenshot()
    for raw in ("\x9b", "\u202e", "\u009b"):
        assert raw not in screen
    assert "csi-\\x9b31m-raw" in screen
    assert "bidi-\\u202egnp.exe" in screen
