"""``refscope list`` against ``git for-each-ref`` on a real repository's refs and objects: refscope's own
history (hundreds of commits by people, real subjects and bodies, a pack full of deltas), cloned in both ref
formats, with and without a commit-graph, through alternates, with annotated and nested tags added.

The generated repositories of tests/unit/objects cover every atom's corner; this covers what generated
histories do not: delta chains git's own repack chose, real messages, and many distinct tips.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_binary, git_env

ROOT = Path(__file__).resolve().parents[2]
NOW = "1790000000"

FORMATS = [
    "%(objectname) %(objecttype) %(objectsize) %(refname)",
    "%(*objectname) %(*objecttype) %(refname:short) %(tree) %(parent) %(numparent)",
    "%(authorname)|%(authoremail)|%(authordate:iso8601)|%(committername)|%(committerdate:unix)",
    "%(creatordate:rfc2822)|%(committerdate:relative)|%(taggername)|%(taggerdate:short)",
    "%(subject)|%(contents:size)|%(*subject)",
    "[%(body)]",
    "%(ahead-behind:refs/heads/at/0010) %(ahead-behind:v1.0) %(refname)",
]
SORTS = [[], ["-committerdate"], ["creatordate", "-refname"], ["version:refname"], ["authordate"]]


def _checkout() -> Path:
    proc = subprocess.run(
        [git_binary(), "-C", str(ROOT), "rev-parse", "--git-common-dir"],
        capture_output=True,
        env=git_env(),
    )
    assert proc.returncode == 0, "these tests read the repository refscope's tests are checked out from"
    common = Path(proc.stdout.decode().strip())
    return common if common.is_absolute() else ROOT / common


@pytest.fixture(scope="module", params=["files", "reftable"])
def real_repo(request, tmp_path_factory):
    fmt = request.param
    base = tmp_path_factory.mktemp(f"real-{fmt}")
    repo = base / "clone.git"
    git(
        base,
        "clone",
        "-q",
        "--mirror",
        "--no-local",
        f"--ref-format={fmt}",
        str(_checkout()),
        str(repo),
    )
    git(repo, "config", "gc.auto", "0")
    # a spread of ref kinds over the real history: branches at every 7th commit, annotated and nested tags
    commits = git(repo, "rev-list", "--all").decode().split()
    feed = "".join(f"create refs/heads/at/{i:04d} {c}\n" for i, c in enumerate(commits[::7]))
    git(repo, "update-ref", "--stdin", input=feed.encode())
    git(repo, "tag", "-a", "-m", "release\n\nwith a body", "v1.0", commits[len(commits) // 2])
    git(repo, "tag", "-a", "-m", "tag of a tag", "v1.0-signed", "v1.0")
    git(repo, "tag", "v1.10", commits[3])
    git(repo, "tag", "v1.9", commits[4])
    blob = git(repo, "rev-parse", f"{commits[0]}:README.md").decode().strip()
    git(repo, "tag", "-a", "-m", "a blob", "readme", blob)
    return repo


def _compare(repo: Path, env_extra: dict | None = None) -> None:
    env = git_env()
    env["GIT_TEST_DATE_NOW"] = NOW
    if env_extra:
        env.update(env_extra)
    for fmt in FORMATS:
        for sort in SORTS:
            args = [f"--format={fmt}", *[f"--sort={s}" for s in sort]]
            theirs = subprocess.run(
                [git_binary(), "for-each-ref", *args], cwd=repo, capture_output=True, env=env
            )
            assert theirs.returncode == 0, theirs.stderr
            ours = refscope("list", *args, cwd=repo, env=env)
            assert (ours.returncode, ours.stderr) == (0, b""), args
            assert ours.stdout == theirs.stdout, args


def test_every_atom_matches_git_on_a_real_history(real_repo):
    _compare(real_repo)


def test_with_a_commit_graph_and_merged_filters(real_repo):
    git(real_repo, "commit-graph", "write", "--reachable")
    try:
        _compare(real_repo)
        env = git_env()
        base = "refs/heads/at/0040"
        for args in (
            [f"--merged={base}", "--format=%(refname)"],
            [f"--no-merged={base}", "--format=%(refname)"],
            [f"--contains={base}", "--format=%(refname)"],
            ["--points-at=v1.0", "--format=%(refname)"],
            ["--format=%(ahead-behind:refs/heads/at/0010) %(refname)"],
        ):
            theirs = subprocess.run(
                [git_binary(), "for-each-ref", *args], cwd=real_repo, capture_output=True, env=env
            )
            ours = refscope("list", *args, cwd=real_repo, env=env)
            assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args
    finally:
        (real_repo / "objects" / "info" / "commit-graph").unlink()


def test_objects_through_alternates(real_repo, tmp_path):
    """A repository with no object of its own: every value read through objects/info/alternates."""
    borrower = tmp_path / "borrower.git"
    git(tmp_path, "init", "-q", "--bare", str(borrower))
    (borrower / "objects" / "info" / "alternates").write_text(str(real_repo / "objects") + "\n")
    feed = git(real_repo, "for-each-ref", "--format=create %(refname) %(objectname)")
    git(borrower, "update-ref", "--stdin", input=feed)
    _compare(borrower)
