"""backend.refformat.tips_view: what the TUI's columns, sorts and tip filters ask, against git."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.refformat import tips_view
from refscope.backend.refformat.tips_view import Age, TipFacts, parse_age, show_ident_date
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
    test = tips_view.tester(facts, snap, parse("!merged >90d").conditions, "refs/heads/main")
    assert [r.name for r, ok in zip(refs, test(refs), strict=True) if ok] == [
        b"refs/heads/stale/a",
        b"refs/heads/stale/b",
    ]


def test_date_order_in_runs_is_gits(tips: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tips_view, "SORT_RUN", 3)  # the merge of sorted runs, as at 1M rows
    repo = discover(str(tips))
    snap = open_store(repo).snapshot()
    order = TipFacts(repo).order(snap, list(range(len(snap))), "date")
    want = git(tips, "for-each-ref", "--sort=-committerdate", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in order] == want
    version = TipFacts(repo).order(snap, list(range(len(snap))), "version")
    want = git(tips, "for-each-ref", "--sort=version:refname", "--format=%(refname)").split()
    assert [snap.name_at(i) for i in version] == want
