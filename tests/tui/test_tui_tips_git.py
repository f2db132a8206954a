"""The main list's tip columns, sorts and tip filters against git on generated repositories (issue 16):
what the columns show is what ``git for-each-ref`` prints, the date and version orders are git's
``--sort``, ``merged`` is ``--merged``, the age filters follow the committer dates git prints, and "mark
all shown" queues exactly what a filter shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from tests.support.git import git
from tests.support.tui import TIPS_NOW, make_app, set_filter, tips_loaded, tips_repo, wait_for

pytestmark = pytest.mark.anyio
SIZE = (160, 40)


@pytest.fixture
def tips(tmp_path: Path, git_bin: str, ref_format: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(TIPS_NOW))
    return tips_repo(tmp_path / "repo", fmt=ref_format)


def git_lines(repo: Path, *args: str) -> list[bytes]:
    out = git(repo, "for-each-ref", *args, env={"GIT_TEST_DATE_NOW": str(TIPS_NOW)})
    return [line for line in out.split(b"\n") if line]


def shown(app) -> list[bytes]:
    ref_list = app.screen.ref_list
    return [ref_list._name_at(i) for i in range(ref_list.row_count)]


async def shown_by_date(pilot, app) -> list[bytes]:
    """Sort by committer date (``S`` from the version order) and wait for every tip: the rows shown."""
    screen = app.screen
    screen.sort = "version"
    screen.action_cycle_sort()
    await wait_for(pilot, lambda: screen.sort == "date")
    await tips_loaded(pilot, app)
    return shown(app)


async def filtered(pilot, app, text: str) -> list[bytes]:
    await set_filter(pilot, app, text)
    await wait_for(pilot, lambda: app.screen.ref_list.preview is None)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return shown(app)


async def test_columns_show_gits_values(tips: Path) -> None:
    # a tag shows the commit it peels to (``%(*...)``); tags of a blob or tree have no commit columns
    pick = "%(if)%(*objectname)%(then)%(*{0})%(else)%({0})%(end)"
    fmt = "%00".join(
        ["%(refname)", "%(if)%(*objecttype)%(then)%(*objecttype)%(else)%(objecttype)%(end)"]
        + [pick.format(a) for a in ("committerdate:relative", "authorname", "subject", "committerdate:iso")]
    )
    want = {}
    for line in git_lines(tips, f"--format={fmt}"):
        name, kind, rel, author, subject, iso = line.split(b"\0")
        if kind == b"commit":
            want[name] = (rel.decode(), author.decode(), subject.decode(), iso.decode())
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        ref_list = app.screen.ref_list
        snap = ref_list.snapshot
        got = {}
        for i in range(len(snap)):
            ref = snap.row(i)
            if ref.name in want:
                cells = ref_list.cells_of(ref)
                got[ref.name] = (cells.date, cells.author, cells.subject)
        assert got == {n: w[:3] for n, w in want.items()}
        await pilot.press("d")
        await pilot.pause()
        iso = {n: ref_list.cells_of(snap.lookup(n)).date for n in want}
        assert iso == {n: w[3] for n, w in want.items()}
        # the screen shows them too: the first row's subject is on its line
        first = ref_list.render_line(0).text
        assert want[ref_list._name_at(0)][0] not in first  # (iso now)
        assert want[ref_list._name_at(0)][3] in first
        assert want[ref_list._name_at(0)][2][:10] in first


async def test_marks_head_branch_and_worktrees(tips: Path) -> None:
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        marks = app.screen.ref_list.branch_marks
        assert marks == {b"refs/heads/main": "*", b"refs/heads/mid": "+"}
        screen = app.screen
        screen.jump_to(b"refs/heads/mid")
        await pilot.pause()
        y = screen.ref_list.cursor - screen.ref_list.scroll_offset.y
        assert screen.ref_list.render_line(y).text.startswith(" +refs/heads/mid")
        await wait_for(pilot, lambda: "behind main" in str(screen.query_one("#detail").render()))
        detail = str(screen.query_one("#detail").render())
        assert "0 ahead, 10 behind main" in detail
        left, right = git(tips, "rev-list", "--left-right", "--count", "stale/b...main").split()
        screen.jump_to(b"refs/heads/stale/b")
        await wait_for(pilot, lambda: "1 ahead" in str(screen.query_one("#detail").render()))
        assert f"{int(left)} ahead, {int(right)} behind main" in str(screen.query_one("#detail").render())


async def test_sorts_equal_gits(tips: Path) -> None:
    by_version = git_lines(tips, "--sort=version:refname", "--format=%(refname)")
    by_date = git_lines(tips, "--sort=-committerdate", "--format=%(refname)")
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        await pilot.press("S")
        await wait_for(pilot, lambda: not app.screen.ref_list.by_name)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert shown(app) == by_version
        await pilot.press("S")
        await wait_for(pilot, lambda: app.screen.sort == "date")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert shown(app) == by_date
        # a filter keeps the order: git's sorted list of the same refs
        assert await filtered(pilot, app, "refs/heads/") == git_lines(
            tips, "--sort=-committerdate", "--format=%(refname)", "refs/heads/"
        )
        await pilot.press("S")
        await wait_for(pilot, lambda: app.screen.sort == "name")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert shown(app) == git_lines(tips, "--format=%(refname)", "refs/heads/")


async def test_merged_filters_equal_gits(tips: Path) -> None:
    fmt = "--format=%(refname)"
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        assert await filtered(pilot, app, "merged") == git_lines(tips, fmt, "--merged=main")
        assert await filtered(pilot, app, "!merged") == git_lines(tips, fmt, "--no-merged=main")
        assert await filtered(pilot, app, "merged:mid") == git_lines(tips, fmt, "--merged=mid")
        for rev in (
            "main~1",
            "main^",
            "mid~1^0",
            "main^{commit}~2",
        ):  # (revision suffixes, as git reads them)
            assert await filtered(pilot, app, f"merged:{rev}") == git_lines(tips, fmt, f"--merged={rev}"), rev
        assert await filtered(pilot, app, "refs/heads/ !merged") == git_lines(
            tips, fmt, "--no-merged=main", "refs/heads/"
        )
        assert await filtered(pilot, app, "!merged stale") == [b"refs/heads/stale/a", b"refs/heads/stale/b"]


async def test_age_filters(tips: Path) -> None:
    rows = git_lines(tips, "--format=%(refname) %(committerdate:unix) %(*committerdate:unix)")
    when = {}
    for line in rows:
        name, own, peeled = (line.split(b" ") + [b""])[:3]
        t = peeled or own
        if t:
            when[name] = int(t)
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        older = [n for n, t in when.items() if TIPS_NOW - t > 90 * 86400]
        assert await filtered(pilot, app, ">90d") == sorted(older)
        assert older == [b"refs/heads/stale/a", b"refs/heads/stale/b"]
        newer = [n for n, t in when.items() if TIPS_NOW - t < 2 * 7 * 86400]
        assert await filtered(pilot, app, "<2w") == sorted(newer)
        assert b"refs/heads/fresh/c" in newer
        assert await filtered(pilot, app, "refs/heads/ !>90d !<2w") == sorted(
            n for n in when if n.startswith(b"refs/heads/") and n not in older and n not in newer
        )


async def test_mark_all_shown_queues_the_filtered_set(tips: Path) -> None:
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        names = await filtered(pilot, app, "refs/heads/ !merged >30d")
        want = [
            n for n in git_lines(tips, "--format=%(refname)", "--no-merged=main", "refs/heads/") if n in names
        ]
        assert names == want and names
        app.screen.set_focus(app.screen.ref_list)
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.queue) == len(names))
        await app.workers.wait_for_complete()
        assert sorted(app.queue) == sorted(names)
        assert app.screen.query_one("#filter", Input).value == "refs/heads/ !merged >30d"


def repo_bytes(repo: Path) -> dict[str, bytes]:
    """Every file of the repository's git directory but the index: a refused filter changes none."""
    out = {}
    for p in sorted((repo / ".git").rglob("*")):
        if p.is_file() and p.name != "index":
            out[str(p.relative_to(repo))] = p.read_bytes()
    return out


@pytest.mark.parametrize(
    ("text", "bar"),
    [
        ("!merged", "/"),
        ("merged", "/"),
        (">90d !<2w", "/"),
        ("merged:mid", "/"),
        ("stale !merged", "/ substring"),
        ("!refs/heads/ >1d", "/ not prefix"),
        ("refs/heads/*", "/ glob"),
    ],
)
async def test_filter_bar_shows_the_pattern_once(tips: Path, text: str, bar: str) -> None:
    # the bar is the mode's label, then the field with what was typed: a condition never twice
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        await filtered(pilot, app, text)
        label = str(app.screen.query_one("#filter-label").render())
        assert label == bar
        assert app.screen.query_one("#filter", Input).value == text
        for term in text.split():
            assert term not in label
        count = str(app.screen.query_one("#count").render())
        # the count line does not show the field: it names the whole filter, conditions as typed
        conditions = [t for t in text.split() if t.lstrip("!")[0] in "<>m"]
        assert all(t in count for t in conditions)
        assert (bar[2:] or conditions[0]) in count


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("merged:nosuch", "filter merged:nosuch: no ref or object id nosuch"),
        ("refs/heads/ !merged:nosuch", "filter !merged:nosuch: no ref or object id nosuch"),
        ("merged:refs/tags/tblob", "does not point to a commit"),
        ("merged:no~1", "filter merged:no~1: no such revision no~1"),
        ("merged:main~99", "filter merged:main~99: no such revision main~99"),
        ("merged:main@{1}", "filter merged:main@{1}: unsupported revision syntax"),
    ],
)
async def test_bad_merged_ref_is_a_filter_error(tips: Path, text: str, line: str) -> None:
    before = repo_bytes(tips)
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        kept = await filtered(pilot, app, "refs/heads/")
        assert kept
        await filtered(pilot, app, text)
        count = str(app.screen.query_one("#count").render())
        assert line in count and "\n" not in count
        assert app.store_error is None  # not a store error: the status line says nothing
        assert shown(app) == kept  # the list stays as it was
        # a good filter clears it
        assert await filtered(pilot, app, "merged:mid") == git_lines(
            tips, "--format=%(refname)", "--merged=mid"
        )
        assert "filter" not in str(app.screen.query_one("#count").render())
    assert repo_bytes(tips) == before


@pytest.mark.parametrize("text", ["merged", "refs/heads/ !merged >1d"])
async def test_damaged_objects_refuse_the_filter(tips: Path, text: str) -> None:
    """A condition whose objects are damaged (every object of the one pack corrupt: git dies on the
    walk) refuses the filter in one line naming the pack; the refs are sound, so the list keeps its
    rows and the status line names no store error."""
    git(tips, "repack", "-a", "-d", "-q")
    (pack,) = (tips / ".git/objects/pack").glob("*.pack")
    data = bytearray(pack.read_bytes())
    for i in range(12, len(data) - 20, 5):
        data[i] ^= 0x5A
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    before = repo_bytes(tips)
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.ref_list.preview is None)
        kept = await filtered(pilot, app, "refs/heads/")
        assert kept == git_lines(tips, "--format=%(refname)", "refs/heads/")
        await filtered(pilot, app, text)
        count = str(app.screen.query_one("#count").render())
        terms = "merged" if text == "merged" else "!merged"
        assert count.startswith(f"filter {terms}") and str(pack) in count and "\n" not in count
        assert app.screen.query_one("#filter", Input).size.width >= 20  # what was typed stays in view
        assert app.store_error is None
        assert shown(app) == kept
    assert repo_bytes(tips) == before


def git_expected(repo: Path, merged: bool | None, older: int | None, newer: int | None) -> set[bytes]:
    """What git says a tip filter selects: --merged / --no-merged main (None: either), and committer
    dates (a tag's: the commit it peels to) older / newer than so many days before TIPS_NOW."""
    fmt = "--format=%(refname) %(committerdate:unix) %(*committerdate:unix)"
    when = {}
    for line in git_lines(repo, fmt):
        name, own, peeled = (line.split(b" ") + [b""])[:3]
        if peeled or own:
            when[name] = int(peeled or own)
    names = set(git_lines(repo, "--format=%(refname)"))
    if merged is not None:
        names &= set(
            git_lines(repo, "--format=%(refname)", "--merged=main" if merged else "--no-merged=main")
        )
    if older is not None:
        names = {n for n in names if n in when and TIPS_NOW - when[n] > older * 86400}
    if newer is not None:
        names = {n for n in names if n in when and TIPS_NOW - when[n] >= newer * 86400}
    return names


@pytest.mark.parametrize(
    ("text", "merged", "older", "newer"),
    [
        ("!merged >30d", False, 30, None),
        ("merged !<2w", True, None, 14),  # (not newer than two weeks: at least that old)
        (">35d", None, 35, None),
        ("!merged", False, None, None),
    ],
)
async def test_mark_all_shown_is_exactly_gits_set(
    tips: Path, text: str, merged: bool | None, older: int | None, newer: int | None
) -> None:
    want = git_expected(tips, merged, older, newer)
    assert want  # (each filter selects something here)
    app = make_app(tips)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        names = await filtered(pilot, app, text)
        assert set(names) == want
        app.screen.set_focus(app.screen.ref_list)
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.queue) == len(want))
        await app.workers.wait_for_complete()
        assert set(app.queue) == want


async def test_broken_objects_say_so_in_their_rows(tmp_path: Path, git_bin: str) -> None:
    # a ref naming no object shows "(missing object)"; a commit whose pack entry is garbled shows
    # "(unreadable: ...)" with the pack offset; every other row reads, and the app runs on
    from tests.support.git import init_repo

    path = init_repo(tmp_path / "r")
    for i in range(5):
        (path / "f").write_text(f"{i}\n" * (i + 1))
        git(path, "add", "f")
        git(path, "commit", "-q", "-m", f"work {i}")
        git(path, "branch", f"b{i}")
    git(path, "repack", "-adq")
    git(path, "pack-refs", "--all")
    (path / ".git/refs/heads/gone").write_text("1234567890" * 4 + "\n")
    bad = git(path, "rev-parse", "b2").strip()
    idx = next((path / ".git/objects/pack").glob("*.idx"))
    offsets = {
        ln.split()[1]: int(ln.split()[0])
        for ln in git(path, "show-index", input=idx.read_bytes()).splitlines()
    }
    pack = idx.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    for k in range(offsets[bad] + 3, offsets[bad] + 20):
        data[k] ^= 0xA5
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await tips_loaded(pilot, app)
        ref_list = app.screen.ref_list
        snap = ref_list.snapshot
        cells = {n: ref_list.cells_of(snap.lookup(n)) for n in shown(app)}
        assert cells[b"refs/heads/gone"].subject == "(missing object)"
        assert cells[b"refs/heads/b2"].subject.startswith("(unreadable: ")
        assert str(offsets[bad]) in cells[b"refs/heads/b2"].subject
        for i in (0, 1, 3, 4):
            assert cells[f"refs/heads/b{i}".encode()].subject == f"work {i}"
        lines = [ref_list.render_line(y).text for y in range(ref_list.row_count)]
        assert any("(missing object)" in line for line in lines)
        assert any("(unreadable: " in line for line in lines)
        # b4's history runs through the garbled commit: its ahead/behind is said on the detail line,
        # in one line, and no notice pops up each time the cursor rests there
        screen = app.screen
        notices = len(app._notifications)
        for _ in range(2):
            screen.jump_to(b"refs/heads/b4")
            await wait_for(pilot, lambda: "ahead/behind" in str(screen.query_one("#detail").render()))
            screen.jump_to(b"refs/heads/b0")
            await pilot.pause(0.3)
        screen.jump_to(b"refs/heads/b4")
        await wait_for(pilot, lambda: "ahead/behind" in str(screen.query_one("#detail").render()))
        detail = str(screen.query_one("#detail").render())
        assert "ahead/behind master: " in detail or "ahead/behind main: " in detail, detail
        assert len(app._notifications) == notices
        assert app.is_running


SMALL = (160, 12)  # a few rows on screen: the rest of the tips is left to the children


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.parametrize("when", ["after the scan", "right away"])
async def test_child_processes_read_gits_values_and_date_order(
    tips: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # the tips read in other processes (``tip_child``; every table, however small, here) and taken into
    # the table: the columns and the date order are git's, without a commit-graph to take dates from
    from refscope.backend.refformat import tip_children, tips_view

    assert not list((tips / ".git" / "objects" / "info").glob("commit-graph*"))
    monkeypatch.setattr(tip_children, "CHILD_MIN", 1)
    by_date = git_lines(tips, "--sort=-committerdate", "--format=%(refname)")
    app = make_app(tips)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.is_ready())
        if when == "after the scan":
            await tips_loaded(pilot, app)
        assert await shown_by_date(pilot, app) == by_date
        facts = screen.facts
        assert facts.child_failed is None and facts.child_read > 0
        # every tip as this process reads it (whose columns ``test_columns_show_gits_values`` checks)
        here = tips_view.TipFacts(facts.repo)
        monkeypatch.setattr(tip_children, "CHILD_MIN", 1 << 60)
        here.read_slots([here.table.slot(o) for o in facts.table.oids])
        assert here.child_read == 0
        assert [facts.peek(o) for o in facts.table.oids] == [here.peek(o) for o in facts.table.oids]
        assert {facts.peek(o).kind for o in facts.table.oids} == {"commit", "tag"}
        assert not any("tip reader" in n for n in notices(app))


async def test_children_date_only_what_the_commit_graph_did_not(
    tips: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with a commit-graph the commits have their dates before the children start: the children are
    # asked to date the rest only (the tags here), and the columns and the date order stay git's
    from refscope.backend.refformat import tip_children

    git(tips, "commit-graph", "write", "--reachable")
    monkeypatch.setattr(tip_children, "CHILD_MIN", 1)
    by_date = git_lines(tips, "--sort=-committerdate", "--format=%(refname)")
    app = make_app(tips)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.is_ready())
        await tips_loaded(pilot, app)
        facts = screen.facts
        table = facts.table
        assert facts.child_failed is None and facts.child_read > 0
        outside = sum(table.pos[s] < 0 for s in range(len(table)))  # (the tags, and tips read here)
        assert 0 < facts.child_dated <= outside < len(table)
        assert await shown_by_date(pilot, app) == by_date


def test_a_child_says_how_far_it_read(tips: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # after each chunk of whole tips a child says how many it has read (the scan's progress line moves
    # while it reads); its answers around those words are the same
    from refscope.backend.objects.odb import objects_dir
    from refscope.backend.refformat import tip_child, tip_children, tips_view
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    monkeypatch.setattr(tip_child, "CHUNK", 2)
    repo = discover(str(tips))
    snap = open_store(repo).snapshot()
    oids = sorted({tips_view.target_oid(snap, r) for r in snap} - {None})
    child = tip_child.Child(objects_dir(repo), repo.hash_name, oids)
    assert len(oids) > 4 and child.progress == 0
    dates = child.dates()
    assert isinstance(dates, tip_child.Dates) and len(dates.times) == len(oids)
    cols = child.result()
    assert isinstance(cols, tip_child.Columns) and child.progress == len(oids)
    here = tips_view.TipFacts(repo)
    monkeypatch.setattr(tip_children, "CHILD_MIN", 1 << 60)
    here.fill(oids)
    assert cols.subject == [here.peek(o).subject for o in oids]


FAILING_CHILDREN = [
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "tip reader failed (killed by signal 9)"),
    ("import sys; sys.stdin.buffer.read(); sys.exit(4)", "tip reader failed (exit status 4)"),
    ("import sys; sys.stdin.buffer.read(); print('columns')", "tip reader failed: malformed answer"),
    (None, "tip reader did not start"),
]


@pytest.mark.parametrize(("code", "line"), FAILING_CHILDREN)
async def test_a_failing_child_leaves_the_reads_here_with_a_notice(
    tips: Path, monkeypatch: pytest.MonkeyPatch, code: str | None, line: str
) -> None:
    import sys

    from refscope.backend.refformat import tip_child, tip_children

    monkeypatch.setattr(tip_children, "CHILD_MIN", 1)
    command = (sys.executable, "-c", code) if code else (str(tips / "no-such-interpreter"),)
    monkeypatch.setattr(tip_child, "COMMAND", command)
    by_date = git_lines(tips, "--sort=-committerdate", "--format=%(refname)")
    app = make_app(tips)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.is_ready())
        assert await shown_by_date(pilot, app) == by_date
        assert screen.facts.child_failed.startswith(line)
        assert screen.facts.child_read == 0
        said = [n for n in notices(app) if "tip reader" in n]
        assert (
            len(said) == 1 and said[0].startswith(line) and said[0].endswith("reading the tips here (slower)")
        )


ODD_COMMITTERS = [
    b"committer A <a@x> 1700000000 +0000\n",  # plain
    b"committer A> 5 +0000 <a@x> 1700000007 +0000\n",  # a '> ' before the '<'
    b"committer A <a@x>  1700000001 +0000\n",  # two spaces
    b"committer A <a@x> 01700000002 +0000\n",  # a leading zero
    b"committer\ncommitter A <a@x> 1700000003 +0000\n",  # a bare key first
    b"committer A <a@x> 1700000004 +0000\n continued 9 +0000\n",  # a continued line
    b"committer no email 1700000005 +0000\n",  # no <...>
    b"committer A <a@x>\nx 1 > 1700000006 +0000\n",  # no time on the line, one after it
    b"committer A <a@x> 1700000008 +0000",  # the last line, no newline (and no message)
]


@pytest.mark.parametrize("line", ODD_COMMITTERS)
def test_child_date_pass_reads_committer_time(tmp_path: Path, git_bin: str, line: bytes) -> None:
    # the children's column-wise date pass (``tip_child.date_columns``, C-level passes over a chunk)
    # gives what ``committer_time`` reads one object at a time, for a chunk of plain commits holding one
    # odd committer line; the plain commits' times are git's
    from refscope.backend.objects.odb import Odb
    from refscope.backend.refformat import tip_child
    from refscope.backend.refformat.tip_table import NO_TIME

    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    tree = git(repo, "mktree", input=b"").strip()
    head = b"tree " + tree + b"\nauthor A <a@x> 1 +0000\n"
    bodies = [head + f"committer C <c@x> {1600000000 + k} +0100\n\nplain {k}\n".encode() for k in range(3)]
    bodies.insert(1, head + line + (b"\nodd\n" if line.endswith(b"\n") else b""))
    oids = [
        git(repo, "hash-object", "-t", "commit", "--literally", "-w", "--stdin", input=b).strip()
        for b in bodies
    ]
    odb = Odb(str(repo / ".git" / "objects"), "sha1")
    contents = [odb.read(o)[1] for o in oids]
    want = [tip_child.committer_time(c) for c in contents]
    assert tip_child.date_columns(["commit"] * 4, contents) == [
        [1] * 4,
        [NO_TIME if t is None else t for t in want],
    ]
    plain = [oids[k] for k in (0, 2, 3)]
    unix = git(repo, "show", "-s", "--format=%ct", *plain).split()
    assert [want[k] for k in (0, 2, 3)] == list(map(int, unix))
    assert tip_child.date_columns(["commit"] * 3, [contents[k] for k in (0, 2, 3)])[1] == list(map(int, unix))


async def test_children_started_early_are_reaped_when_the_tips_are_few(
    tips: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the children are started with the row slots' build (``prestart``, enough rows); with fewer tips
    # than a child is worth they are killed at once, none left waiting for ids, and the tips are git's
    from refscope.backend.refformat import tip_children, tips_view

    head = git(tips, "rev-parse", "HEAD").strip().decode()
    for k in range(5):  # (rows sharing a tip: fewer tips than rows)
        git(tips, "update-ref", f"refs/heads/same/{k}", head)
    rows = len(git_lines(tips, "--format=%(refname)"))
    started: list = []
    real = tips_view.TipFacts.prestart

    def prestart(self, n: int) -> None:
        real(self, n)
        started.extend(self._spare)

    monkeypatch.setattr(tips_view.TipFacts, "prestart", prestart)
    monkeypatch.setattr(tip_children, "CHILD_MIN", rows)  # rows enough, distinct tips too few
    by_date = git_lines(tips, "--sort=-committerdate", "--format=%(refname)")
    app = make_app(tips)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.is_ready())
        assert await shown_by_date(pilot, app) == by_date
        assert len(screen.facts.table) < rows and started
        assert all(c.proc.returncode is not None for c in started) and not screen.facts._spare
        assert screen.facts.child_read == 0


async def test_replace_refs_are_said_once(tips: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # git shows a replaced tip through its replacement, which this reader does not follow: a notice says
    # so, once; with replacements off (as git then) nothing is said
    git(tips, "replace", "-f", git(tips, "rev-parse", "main").decode().strip(), "main~1")
    for off in (False, True):
        if off:
            monkeypatch.setenv("GIT_NO_REPLACE_OBJECTS", "1")
        app = make_app(tips)
        async with app.run_test(size=SMALL) as pilot:
            await tips_loaded(pilot, app)
            said = [n for n in notices(app) if "replace refs" in n]
            assert said == ([] if off else [
                "replace refs (refs/replace/*): the columns, sorts and filters read the objects themselves,"
                " where git reads their replacements"
            ])  # fmt: skip
