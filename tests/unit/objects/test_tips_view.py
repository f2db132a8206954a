"""backend.refformat.tips_view: what the TUI's columns, sorts and tip filters ask, against git."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from refscope.backend.refformat import row_order, tip_filters, tips_view
from refscope.backend.refformat.tip_filters import Age, parse_age
from refscope.backend.refformat.tips_view import TipFacts, show_ident_date
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.git import git
from tests.support.tui import TIPS_NOW, tips_repo


@pytest.fixture
def tips(tmp_path: Path, git_bin: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(TIPS_NOW))
    return tips_repo(tmp_path / "repo")


def test_parse_age() -> None:
    assert parse_age(">90d") == Age(True, 90 * 86400)
    assert parse_age("<2w") == Age(False, 14 * 86400)
    assert parse_age("<3m") == Age(False, 90 * 86400)
    assert parse_age("90d") is None
    assert parse_age(">d") is None
    assert parse_age(">9x") is None


def test_ahead_behind_is_rev_list_left_right(tips: Path) -> None:
    repo = discover(str(tips))
    facts = TipFacts(repo)
    snap = open_store(repo).snapshot()
    main = facts.resolve(snap, "main")
    for other in ("stale/a", "stale/b", "mid", "side", "t2"):
        left, right = git(tips, "rev-list", "--left-right", "--count", f"{other}^{{commit}}...main").split()
        assert facts.ahead_behind(facts.resolve(snap, other), main) == (int(left), int(right))


def test_tips_and_dates_are_gits(tips: Path) -> None:
    repo = discover(str(tips))
    facts = TipFacts(repo)
    snap = open_store(repo).snapshot()
    refs = list(snap)
    oids = facts.fill_rows(snap, refs)
    out = git(tips, "for-each-ref", "--format=%(committerdate:relative)%00%(committerdate:iso)%00%(objecttype)",
              env={"GIT_TEST_DATE_NOW": str(TIPS_NOW)})  # fmt: skip
    for line, oid in zip(out.split(b"\n"), oids, strict=False):
        rel, iso, kind = line.decode().split("\0")
        tip = facts.peek(oid)
        assert tip.kind == kind
        if kind == "commit":
            assert show_ident_date(tip.committer, "relative") == rel
            assert show_ident_date(tip.committer, "iso") == iso


def test_tester_merged_and_age(tips: Path) -> None:
    from refscope.app.tui.models.filtering import parse

    repo = discover(str(tips))
    facts = TipFacts(repo)
    snap = open_store(repo).snapshot()
    refs = list(snap)
    test = tip_filters.tester(facts, snap, parse("!merged >90d").conditions, "refs/heads/main")
    rows = list(range(len(refs)))
    assert [r.name for r, ok in zip(refs, test(rows), strict=True) if ok] == [
        b"refs/heads/stale/a",
        b"refs/heads/stale/b",
    ]


@pytest.mark.parametrize(
    ("term", "head", "line"),
    [
        ("merged", "HEAD", "filter merged: HEAD has no commit"),
        ("!merged", "refs/heads/unborn", "filter !merged: HEAD's branch refs/heads/unborn has no commit"),
        ("merged:nope", "refs/heads/main", "filter merged:nope: no ref or object id nope"),
    ],
)
def test_merged_naming_no_commit_is_one_line(
    tips: Path, tmp_path: Path, term: str, head: str, line: str
) -> None:
    """A ``merged`` term whose ref names no commit -- HEAD unborn (the app passes HEAD itself), HEAD's
    branch unborn, a name that is nothing -- is refused at once in one line naming what is missing."""
    from refscope.app.tui.models.filtering import parse
    from refscope.backend.errors import BadFilter

    from tests.support.git import copy_repo, git

    unborn = copy_repo(tips, tmp_path / "unborn")
    git(unborn, "symbolic-ref", "HEAD", "refs/heads/unborn")
    repo = discover(str(unborn))
    with pytest.raises(BadFilter) as e:
        tip_filters.tester(TipFacts(repo), open_store(repo).snapshot(), parse(term).conditions, head)
    assert e.value.what == line


@pytest.mark.parametrize("graph", [False, True], ids=["no-graph", "graph"])
def test_merged_in_a_shallow_clone_is_gits(tmp_path: Path, git_bin: str, graph: bool) -> None:
    # the boundary commits of ``shallow`` have no parents, as git reads them (the clone lacks theirs:
    # a walk past them failed), and a commit-graph is not used there, as git uses none
    from tests.support.git import init_repo

    origin = init_repo(tmp_path / "origin")
    for i in range(6):
        git(origin, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=3", "--single-branch", "--no-tags", f"file://{origin}", str(clone))
    git(clone, "branch", "b1", "main~1")
    git(clone, "branch", "b2", "main~2")  # (the boundary)
    if graph:
        git(clone, "commit-graph", "write", "--reachable")
    repo = discover(str(clone))
    snap = open_store(repo).snapshot()
    from refscope.app.tui.models.filtering import parse

    names = [r.name for r in snap]
    for base in ("main", "b2"):
        test = tip_filters.tester(TipFacts(repo), snap, parse(f"merged:{base}").conditions, b"main")
        got = [n for n, ok in zip(names, test(list(range(len(names)))), strict=True) if ok]
        assert got == git(clone, "for-each-ref", f"--merged={base}", "--format=%(refname)").split(), base
    facts = TipFacts(repo)
    left, right = git(clone, "rev-list", "--left-right", "--count", "b2...main").split()
    assert facts.ahead_behind(facts.resolve(snap, "b2"), facts.resolve(snap, "main")) == (
        int(left),
        int(right),
    )


def test_date_order_is_gits(tips: Path) -> None:
    repo = discover(str(tips))
    snap = open_store(repo).snapshot()
    order = TipFacts(repo).order(snap, list(range(len(snap))), "date")
    want = git(tips, "for-each-ref", "--sort=-committerdate", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in order] == want
    version = TipFacts(repo).order(snap, list(range(len(snap))), "version")
    want = git(tips, "for-each-ref", "--sort=version:refname", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in version] == want


@pytest.mark.parametrize("chunk", [2, 3, 1 << 13])
def test_version_order_is_gits(
    tmp_path: Path, git_bin: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # versions git orders by their digit runs (longer runs, leading zeros, fractional parts, ties of
    # equal versions broken by name), sorted a chunk at a time and merged; a subset of the rows too
    from tests.support.git import init_repo

    monkeypatch.setattr(row_order, "ROWS_CHUNK", chunk)
    path = init_repo(tmp_path / "r")
    git(path, "commit", "-q", "--allow-empty", "-m", "c")
    names = ["v1.2", "v1.10", "v1.9", "v01.2", "v1.02", "v1.002", "v10", "v9", "v1.2a", "v1.2-rc1", "v0",
             "v00", "v000", "x", "v1.2.3", "v1.2.10", "va", "v1.0", "v1.00"]  # fmt: skip
    for name in names:
        git(path, "tag", name)
    repo = discover(str(path))
    snap = open_store(repo).snapshot()
    want = git(path, "for-each-ref", "--sort=version:refname", "--format=%(refname)").split()
    got = row_order.version_order(snap, range(len(snap)))
    assert [snap.name_at(i) for i in got] == want
    some = [i for i in range(len(snap)) if i % 3]
    got = row_order.version_order(snap, some)
    shown = {snap.name_at(i) for i in some}
    assert [snap.name_at(i) for i in got] == [w for w in want if w in shown]
    assert row_order.version_order(snap, range(len(snap)), lambda: True) is None  # (cancelled)


@pytest.mark.parametrize("suffixes", [["-rc"], ["-rc", "-beta", "-alpha"], ["-b", "-bfoo", "0"]])
def test_version_order_takes_the_prerelease_suffixes(
    tmp_path: Path, git_bin: str, suffixes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # versionsort.suffix as git's for-each-ref takes it (no byte key then: versioncmp itself), chunked
    from tests.support.git import init_repo

    monkeypatch.setattr(row_order, "ROWS_CHUNK", 3)
    path = init_repo(tmp_path / "r")
    git(path, "commit", "-q", "--allow-empty", "-m", "c")
    for tag in [
        "v1.0",
        "v1.0-rc1",
        "v1.0-rc2",
        "v1.0-beta",
        "v1.0-alpha2",
        "v1.0-bfoo",
        "v1.0.1",
        "v2.0-rc1",
    ]:
        git(path, "tag", tag)
    for suffix in suffixes:
        git(path, "config", "--add", "versionsort.suffix", suffix)
    repo = discover(str(path))
    snap = open_store(repo).snapshot()
    want = git(path, "for-each-ref", "--sort=version:refname", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in TipFacts(repo).order(snap, range(len(snap)), "version")] == want
    plain = row_order.version_order(snap, range(len(snap)))  # (without them: another order)
    assert [snap.name_at(i) for i in plain] != want


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_row_oids_are_each_rows(tmp_path: Path, git_bin: str, fmt: str, monkeypatch) -> None:
    # the bulk path (files: sliced from packed-refs, loose refs among them; reftable: its batches)
    # gives each row's id as its Ref does, a symref's the one its chain ends at
    from refscope.backend.refformat.tip_table import row_oid_chunks

    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(TIPS_NOW))
    path = tips_repo(tmp_path / "repo", fmt=fmt)
    git(path, "branch", "loose/after-pack", "main~1")  # (files: a loose ref among the packed ones)
    git(path, "symbolic-ref", "refs/heads/link", "refs/heads/mid")
    snap = open_store(discover(str(path))).snapshot()
    want = [tips_view.target_oid(snap, snap.row(i)) for i in range(len(snap))]
    for chunk in (1, 3, 1000):
        got = [o for part in row_oid_chunks(snap, chunk) for o in part]
        assert got == want
    names = [r.name for r in snap]
    assert want[names.index(b"refs/heads/link")] == snap.resolve(b"refs/heads/mid") is not None


def test_table_gives_back_each_tip(tips: Path) -> None:
    # a tip through the columns is the tip objects.tips read: commits, annotated and nested tags,
    # tags of a blob and a tree, a missing object
    from refscope.backend.objects.tips import MISSING, Tips

    repo = discover(str(tips))
    facts = TipFacts(repo)
    snap = open_store(repo).snapshot()
    oids = sorted({tips_view.target_oid(snap, r) for r in snap} - {None}) + [b"0" * 39 + b"1"]
    facts.fill(oids)
    direct = Tips(facts.odb)
    for oid in oids:
        assert facts.peek(oid) == direct.tip(oid)
    assert facts.peek(b"0" * 39 + b"1") == MISSING
    kinds = {facts.peek(o).kind for o in oids}
    assert kinds == {"commit", "tag", None}


@pytest.mark.parametrize("chunk", [2, 3, 1 << 14])
def test_times_from_the_commit_graph_sort_as_the_objects(
    tips: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the date order before the objects are read (the commit-graph's times) is the order after; every
    # pass over the slots and rows goes a chunk at a time (chunks of 2 and 3 end everywhere)
    monkeypatch.setattr(tips_view, "ROWS_CHUNK", chunk)
    monkeypatch.setattr(row_order, "ROWS_CHUNK", chunk)
    git(tips, "commit-graph", "write", "--reachable")
    repo = discover(str(tips))
    snap = open_store(repo).snapshot()
    early = TipFacts(repo)
    order = list(early.order(snap, range(len(snap)), "date"))
    assert sum(early.table.state[s] == 1 for s in range(len(early.table))) >= 5  # (graph, not read)
    want = git(tips, "for-each-ref", "--sort=-committerdate", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in order] == want
    read = TipFacts(repo)
    read.fill([tips_view.target_oid(snap, r) for r in snap])  # (every object read first)
    assert list(read.order(snap, range(len(snap)), "date")) == order


@pytest.mark.parametrize("shown", ["some", "every"])
def test_date_order_of_chunks_is_one_sort(monkeypatch: pytest.MonkeyPatch, shown: str) -> None:
    # ties, rows naming no object (slot -1), a time as far in the future as 64 bits hold, and a subset
    # of the rows or every row (a range: its own path): the chunked order is one stable sort by
    # descending time
    from array import array

    monkeypatch.setattr(row_order, "ROWS_CHUNK", 3)
    times = array("q", [5, 9, 5, 0, (1 << 63) - 1, 7, 9, 1])
    per_row = array("i", [k % 9 - 1 for k in range(40)])
    rows = [k for k in range(40) if k % 5 != 2] if shown == "some" else range(40)
    got = list(row_order.date_order(times, per_row, rows))
    when = [0, *times]  # (slot -1: date 0)
    assert got == sorted(rows, key=lambda r: -when[per_row[r] + 1])


def test_damaged_object_is_its_rows_finding(tmp_path: Path, git_bin: str) -> None:
    # a commit whose pack entry is garbled reads as an unreadable tip (saying why); the others of the
    # same batch read as before, and a ref naming no object is missing
    from tests.support.git import init_repo

    path = init_repo(tmp_path / "r")
    for i in range(6):
        (path / "f").write_text(f"{i}\n" * (i + 1))
        git(path, "add", "f")
        git(path, "commit", "-q", "-m", f"c{i}")
        git(path, "branch", f"b{i}")
    git(path, "repack", "-adq")
    bad = git(path, "rev-parse", "b3").strip()
    idx = next((path / ".git/objects/pack").glob("*.idx"))
    offsets = dict(
        (line.split()[1], int(line.split()[0]))
        for line in git(path, "show-index", input=idx.read_bytes()).splitlines()
    )
    pack = idx.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    at = offsets[bad]
    for k in range(at + 3, at + 20):
        data[k] ^= 0xA5
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    repo = discover(str(path))
    facts = TipFacts(repo)
    oids = [git(path, "rev-parse", f"b{i}").strip() for i in range(6)] + [b"1" * 40]
    facts.fill(oids)
    tip = facts.peek(bad)
    assert tip.kind is None and tip.subject.startswith(b"unreadable: ")
    assert str(offsets[bad]) in tip.subject.decode()
    for i, oid in enumerate(oids[:6]):
        if oid != bad:
            assert facts.peek(oid).subject == f"c{i}".encode()
    assert facts.peek(b"1" * 40).kind is None and facts.peek(b"1" * 40).subject is None


def test_stand_aside_waits_for_the_work_the_user_waits_for(tips: Path) -> None:
    # the detail line's walk waits while a sort or a filter runs (``first``), and goes on after it
    import threading

    facts = TipFacts(discover(str(tips)))
    done = threading.Event()
    facts.stand_aside()  # (nothing runs: at once)
    with facts.first():
        waiter = threading.Thread(target=lambda: (facts.stand_aside(), done.set()))
        waiter.start()
        assert not done.wait(0.2)
        facts.stand_aside(lambda: True)  # (a cancelled waiter does not wait)
    ended = time.monotonic()
    assert done.wait(10)
    # ... and for PAINT_GRACE after it ended, while the UI paints its result
    assert time.monotonic() - ended >= tips_view.PAINT_GRACE * 0.9
    waiter.join()
    assert not facts.urgent()


def test_replaced_says_a_bad_use_replace_refs_in_one_line(tmp_path: Path, git_bin: str) -> None:
    # git dies on the value; the TUI's scan goes on and says git's line (the notice), no exception
    from tests.support.git import init_repo, run_git

    path = init_repo(tmp_path / "r")
    git(path, "commit", "-q", "--allow-empty", "-m", "c")
    repo = discover(str(path))
    snap = open_store(repo).snapshot()
    assert TipFacts(repo).replaced(snap) is None
    git(path, "config", "core.useReplaceRefs", "maybe")
    theirs = run_git(path, "for-each-ref", "--format=%(subject)")
    repo = discover(str(path))
    line = TipFacts(repo).replaced(open_store(repo).snapshot())
    assert theirs.stderr.decode().strip() == f"fatal: {line}"
