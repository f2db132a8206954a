"""The TUI's glob filter selects exactly what ``git for-each-ref`` selects with the same glob (and what
``refscope list`` prints): one matcher, git's wildmatch rules, in both ref formats; ``!`` negates."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.models import filtering
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.cli import refscope
from tests.support.git import create_refs, git, init_repo

NAMES = [  # beside init_repo's refs/heads/main
    "refs/heads/feat/a",
    "refs/heads/feat/b/c",
    "refs/heads/feat-x",
    "refs/heads/fix-1",
    "refs/pull/1/head",
    "refs/pull/1/merge",
    "refs/pull/22/head",
    "refs/tags/v1.0",
    "refs/tags/v1.0.1",
    "refs/tags/v2/rc",
]

GLOBS = [
    "refs/pull/*",  # fnmatch would select every pull ref; git selects none
    "refs/pull/*/head",
    "refs/pull/**",
    "refs/**/head",
    "refs/heads/feat*",
    "refs/heads/feat/**",
    "refs/tags/v1.?",
    "refs/tags/v[12]*",
    "refs/tags/v[!1]*",
    "refs/heads/fix\\-?",
    "refs/*",
]
# not starting with refs/: the trailing components, as git's "**/" + glob
SHORT_GLOBS = ["pull/*/head", "feat*", "*/rc", "v1.*", "*"]


@pytest.fixture(scope="module", params=["files", "reftable"])
def glob_repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = init_repo(tmp_path_factory.mktemp(request.param) / "r", fmt=request.param)
    create_refs(path, [n.encode() for n in NAMES])
    if request.param == "files":
        git(path, "pack-refs", "--all")
    return path


def git_selects(path: Path, glob: str) -> list[bytes]:
    return git(path, "for-each-ref", "--format=%(refname)", glob).splitlines()


def tui_selects(path: Path, text: str) -> list[bytes]:
    snap = open_store(discover(str(path))).snapshot()
    return [snap.name_at(i) for i in filtering.compute(snap, filtering.parse(text))]


@pytest.mark.parametrize("glob", GLOBS)
def test_glob_selects_what_git_selects(glob_repo: Path, glob: str) -> None:
    assert filtering.parse(glob).kind == "glob"
    want = git_selects(glob_repo, glob)
    assert tui_selects(glob_repo, glob) == want
    listed = refscope("list", "-C", str(glob_repo), glob, check=True).stdout
    assert [line.split(b" ", 1)[1] for line in listed.splitlines()] == want


@pytest.mark.parametrize("glob", SHORT_GLOBS)
def test_short_glob_matches_trailing_components(glob_repo: Path, glob: str) -> None:
    want = git_selects(glob_repo, "**/" + glob)
    assert want, glob  # each case selects something
    assert tui_selects(glob_repo, glob) == want


@pytest.mark.parametrize("text", ["!refs/pull/*/head", "!refs/heads/", "!feat", "!pull/*/merge"])
def test_negation_is_the_complement(glob_repo: Path, text: str) -> None:
    everything = git_selects(glob_repo, "refs/")
    chosen = set(tui_selects(glob_repo, text[1:]))
    assert chosen  # the positive pattern selects something
    assert tui_selects(glob_repo, text) == [n for n in everything if n not in chosen]
    assert filtering.parse(text).label == "not " + filtering.parse(text[1:]).kind


def test_pull_star_selects_nothing_like_git(glob_repo: Path) -> None:
    assert git_selects(glob_repo, "refs/pull/*") == []
    assert tui_selects(glob_repo, "refs/pull/*") == []


@pytest.mark.parametrize(
    "text", ["refs/heads/ ", "  refs/heads/", "refs/heads/ !", "refs/heads/ !m", "! refs/heads/"]
)
def test_a_term_being_typed_keeps_the_name_pattern(glob_repo: Path, text: str) -> None:
    """On the way to ``refs/heads/ !merged >1y`` the list shows what ``refs/heads/`` shows at every key:
    a space, a ``!`` not followed by a term yet, a second name (ignored) change nothing."""
    want = git_selects(glob_repo, "refs/heads/")
    assert want
    assert tui_selects(glob_repo, text) == want
    assert filtering.parse(text).kind == "prefix"
