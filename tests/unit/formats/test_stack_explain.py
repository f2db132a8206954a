"""The stack's counts and the compaction forecast, checked against the tables' records and against git.

One set of counts (``Table.counts``) feeds ``refscope stack`` (text and JSON) and the TUI's stack view, and
equals what ``refscope dump`` lists record by record. The forecast of the next small write is the backend's
(``forecast_write``) and is checked against the ``tables.list`` a real ``git update-ref`` then leaves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.screens.stack import StackScreen
from refscope.backend.formats.reftable.policy import forecast_write

from tests.support.cli import refscope
from tests.support.git import create_refs, git, git_noauto, init_repo
from tests.support.tui import Host, open_store, tables_list, wait_for

pytestmark = pytest.mark.anyio


def _cli(repo: Path, *args: str) -> str:
    return refscope(*args, cwd=repo, check=True).stdout.decode()


def _dump_counts(path: Path) -> dict[str, int]:
    """Counts from ``refscope dump --json``'s records: the table as it is on disk."""
    info = json.loads(_cli(path.parent, "dump", "--json", str(path)))
    c = {"refs": 0, "tombstones": 0, "logs": 0, "log_deletions": 0}
    for blk in info["blocks"]:
        for rec in blk.get("records", []):
            if blk["type"] == "r":
                c["tombstones" if rec["value_type"] == 0 else "refs"] += 1
            elif blk["type"] == "g":
                c["logs" if rec["log_type"] else "log_deletions"] += 1
    return c


@pytest.fixture
def deleting_repo(tmp_path: Path, git_bin: str) -> Path:
    """A base table of 30 branches with reflogs, then one table deleting 12 of them (ref tombstones and
    log deletions, as git writes a deletion)."""
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    names = [f"refs/heads/gone/{i:02d}" for i in range(12)] + [f"refs/heads/kept/{i:02d}" for i in range(18)]
    create_refs(repo, names)
    git(repo, "pack-refs", "--all")
    lines = "".join(f"delete {n}\n" for n in names[:12])
    git_noauto(repo, "update-ref", "--stdin", input=lines.encode())
    return repo


async def test_one_set_of_counts_cli_json_tui_and_records(deleting_repo: Path) -> None:
    repo = deleting_repo
    d = repo / ".git" / "reftable"
    names = tables_list(repo)
    want = [_dump_counts(d / n) for n in names]
    assert want[-1]["tombstones"] == 12 and want[-1]["refs"] == 0 and want[-1]["log_deletions"] >= 12
    js = json.loads(_cli(repo, "stack", "--json"))
    got_json = [{k: t[k] for k in want[0]} for t in js["stacks"][0]["tables"]]
    assert got_json == want
    text = _cli(repo, "stack").splitlines()[1:]
    for line, w in zip(text, want, strict=True):
        assert (
            f"refs {w['refs']}  tombstones {w['tombstones']}  logs {w['logs']}  "
            f"log-deletions {w['log_deletions']}  " in line
        )
    store = open_store(repo)
    app = Host(lambda: StackScreen(store, store.snapshot(), FakeMeter(), follow=False))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: all(s.log_deletions >= 0 for s in screen.summaries))
        got_tui = [
            {"refs": s.ref_records, "tombstones": s.tombstones, "logs": s.log_records,
             "log_deletions": s.log_deletions}
            for s in screen.summaries
        ]  # fmt: skip
        assert got_tui == want
        header = screen.tables_view.source.header.plain
        assert "log del" in header
        row = screen.tables_view.source.row_text(len(names) - 1).plain.split()
        w = want[-1]
        assert [str(w["refs"]), str(w["tombstones"]), str(w["logs"]), str(w["log_deletions"])] == row[
            7:11
        ]  # (size is "N B")


def _shape(path: Path, tables: list[int]) -> Path:
    """A reftable repository whose stack holds one table per entry of ``tables`` (its ref count), written
    with git's auto-compaction off so the shape stays as asked."""
    repo = init_repo(path, fmt="reftable")
    git(repo, "config", "maintenance.auto", "false")
    head = git(repo, "rev-parse", "HEAD").strip().decode()
    git(repo, "pack-refs", "--all")
    first = True
    for k, count in enumerate(tables):
        lines = "".join(f"create refs/heads/s{k}/{i:05d} {head}\n" for i in range(count))
        git_noauto(repo, "update-ref", "--stdin", input=lines.encode())
        if first:  # the base: HEAD's branch and the first batch in one table
            git_noauto(repo, "pack-refs", "--all")
            first = False
    return repo


@pytest.mark.parametrize(
    "shape",
    [
        [5000],  # one big table (the case): a small write only adds its table
        [5000, 1],  # a small table after it: the write's table and the small one merge
        [5000, 300, 1],  # geometric but for the newest: two merge, the middle stays
        [5000, 1, 1, 1, 1],  # a run of small tables (auto-compaction was off): all of them merge
        [2000, 900, 400, 150, 60, 20],  # geometric all along: the write's table is merged with the 20
        [40, 3, 30, 1, 2, 9, 1],
    ],
    ids=lambda s: "-".join(map(str, s)),
)
def test_write_forecast_is_what_git_leaves(tmp_path: Path, git_bin: str, shape: list[int]) -> None:
    repo = _shape(tmp_path / "r", shape)
    store = open_store(repo)
    snap = store.snapshot()
    before = tables_list(repo)
    fc = forecast_write(snap.tables, snap.hash_name, store.repo.config.reftable_geometric_factor())
    git(repo, "update-ref", "-m", "a small write", "refs/heads/the-next-write", "HEAD")  # auto-compacts
    after = tables_list(repo)
    assert len(after) == fc.tables_after()
    if fc.segment is None:
        assert after[:-1] == before
    else:
        start, end = fc.segment
        extended = before + ["<the write's table>"]
        assert after[:start] == before[:start]
        assert after[start + 1 :] == extended[end:]
        lo = int(before[start][2:14], 16)
        assert int(after[start][2:14], 16) == lo


def test_forecast_reads_geometric_factor_as_git_does(tmp_path: Path, git_bin: str) -> None:
    """``reftable.geometricFactor`` goes through the backend's config (git's integers: ``0x40`` is 64, a
    ``k`` suffix multiplies by 1024, and git refuses a factor above 255)."""
    from refscope.app.tui.screens.stack import _config

    repo = _shape(tmp_path / "r", [5000, 300])
    git(repo, "config", "reftable.geometricFactor", "1k")
    assert _config(open_store(repo)) == (2, True, "reftable geometric factor cannot exceed 255")
    before = tables_list(repo)
    assert git(repo, "update-ref", "refs/heads/x", "HEAD", check=False) == b""  # git dies: nothing written
    assert tables_list(repo) == before
    git(repo, "config", "reftable.geometricFactor", "0x40")
    store = open_store(repo)
    assert _config(store) == (64, True, None)
    snap = store.snapshot()
    fc = forecast_write(snap.tables, snap.hash_name, _config(store)[0])
    git(repo, "update-ref", "refs/heads/the-next-write", "HEAD")
    assert len(tables_list(repo)) == fc.tables_after() == 1  # everything merges under a factor of 64


async def test_stack_view_forecast_on_one_table_stack(tmp_path: Path, git_bin: str) -> None:
    """The issue's case: one big table. The view says a small write compacts nothing, and git agrees."""
    repo = _shape(tmp_path / "r", [5000])
    store = open_store(repo)
    app = Host(lambda: StackScreen(store, store.snapshot(), FakeMeter(), follow=False))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one("#stack-forecast").render())
    assert text.startswith("next write: no compaction")
    assert "a typical small write: git update-ref of one ref" in text
    git(repo, "update-ref", "refs/heads/the-next-write", "HEAD")
    assert len(tables_list(repo)) == 2
