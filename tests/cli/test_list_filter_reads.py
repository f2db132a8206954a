"""What the filters of ``refscope list`` read, against ``git for-each-ref``.

``--points-at`` is git's match_points_at, worked out once per distinct object and reading what git reads
(PARSE_OBJECT_SKIP_HASH_CHECK): a commit the commit-graph holds is not read, a blob only has its type
looked up, a tag's target is read only when the tag says it is a tag. So a repository with missing
objects fails exactly where git fails. ``--contains`` / ``--no-contains`` stop walking at a commit whose
commit-graph level is not above the targets' (as git's generation numbers do): the answers must be git's
over a history of merges, with targets inside the graph, outside it, and both.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, run_git


def same_as_git(repo: Path, *args: str, env: dict | None = None) -> bytes:
    """Both outputs (and exit statuses) equal; a failure is git's one line, word for word (git prints
    the refs before the one it dies at; refscope checks them all first and prints none)."""
    env = git_env() if env is None else env
    ours = refscope("-C", str(repo), "list", *args, env=env)
    theirs = run_git(repo, "for-each-ref", *args, env=env)
    assert (ours.returncode == 0) == (theirs.returncode == 0), (args, ours.stderr, theirs.stderr)
    if theirs.returncode:
        want = theirs.stderr.decode().strip().removeprefix("fatal: ")
        assert ours.stderr.decode().strip() == f"refscope: {want}", args
        assert ours.stdout == b"", args
        return b""
    assert ours.stdout == theirs.stdout, args
    return ours.stdout


def _drop_object(repo: Path, oid: str) -> None:
    """Remove one loose object (the repository keeps its objects loose here)."""
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()


@pytest.fixture
def odd_tips(tmp_path: Path) -> Path:
    """Refs to a blob, a tree, tags of a tag, a tag whose commit is missing, and two commits."""
    repo = init_repo(tmp_path / "r")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"a blob\n").strip().decode()
    tree = git(repo, "rev-parse", "main^{tree}").strip().decode()
    git(repo, "update-ref", "refs/tags/blob", blob)
    git(repo, "update-ref", "refs/tags/tree", tree)
    git(repo, "tag", "-a", "-m", "t1", "t1", "main~1")
    git(repo, "tag", "-a", "-m", "t2", "t2", "t1")
    lost = git(repo, "commit-tree", "-m", "lost", tree).strip().decode()
    git(repo, "tag", "-a", "-m", "to a lost commit", "tlost", lost)
    _drop_object(repo, lost)
    return repo


@pytest.mark.parametrize("graph", [False, True])
def test_points_at_reads_what_git_reads(odd_tips: Path, graph: bool) -> None:
    repo = odd_tips
    if graph:
        git(repo, "commit-graph", "write", "--reachable")
    for target in ("main", "main~1", "t1", "refs/tags/blob", "refs/tags/tree"):
        same_as_git(repo, f"--points-at={target}", "--format=%(refname)")
    assert same_as_git(repo, "--points-at=main~1", "--format=%(refname)") == b"refs/tags/t1\nrefs/tags/t2\n"


def test_points_at_missing_objects_fail_where_git_fails(odd_tips: Path) -> None:
    """A tip that is a commit the graph holds is not read, so its missing object goes unnoticed, by git
    too, unless GIT_COMMIT_GRAPH_PARANOIA; without the graph (or with it, paranoid) both fail, naming
    the first ref whose object does not read."""
    repo = odd_tips
    side = git(repo, "commit-tree", "-m", "side", "-p", "main", "main^{tree}").strip().decode()
    git(repo, "update-ref", "refs/heads/side", side)
    git(repo, "commit-graph", "write", "--reachable")
    _drop_object(repo, side)
    before = {p: p.read_bytes() for p in (repo / ".git").rglob("*") if p.is_file()}
    assert same_as_git(repo, "--points-at=main", "--format=%(refname)") == b"refs/heads/main\n"
    paranoid = {**git_env(), "GIT_COMMIT_GRAPH_PARANOIA": "1"}
    same_as_git(repo, "--points-at=main", "--format=%(refname)", env=paranoid)
    os.unlink(repo / ".git" / "objects" / "info" / "commit-graph")
    same_as_git(repo, "--points-at=main", "--format=%(refname)")
    assert b"refs/heads/side" in refscope("-C", str(repo), "list", "--points-at=main").stderr
    del before[repo / ".git" / "objects" / "info" / "commit-graph"]
    assert {p: p.read_bytes() for p in before} == before


def _merges(repo: Path, n: int, seed: int) -> list[str]:
    """``n`` commits on 12 lines of history, a third of them merges of two or three lines, made by
    fast-import; a branch at every tip and at every tenth commit. The commit ids in order."""
    rng = random.Random(seed)
    heads: dict[int, int] = {}
    out = []
    for i in range(1, n + 1):
        line = rng.randrange(12)
        msg = f"c{i}\n"
        out.append(f"commit refs/heads/l{line}\nmark :{i}\ncommitter C <c@x> {1600000000 + i} +0000\n")
        out.append(f"data {len(msg)}\n{msg}")
        if line in heads:
            out.append(f"from :{heads[line]}\n")
        if heads and rng.random() < 0.33:
            for other in rng.sample(sorted(heads), min(len(heads), rng.choice((1, 2)))):
                if other != line and heads[other] != heads.get(line):
                    out.append(f"merge :{heads[other]}\n")
        out.append("\n")
        heads[line] = i
        if i % 10 == 0:
            out.append(f"reset refs/heads/at/{i:04d}\nfrom :{i}\n\n")
    git(repo, "fast-import", "--quiet", input="".join(out).encode())
    return git(repo, "rev-list", "--reverse", "--topo-order", "--all").decode().split()


def _more(repo: Path, n: int, seed: int) -> list[str]:
    """``n`` commits on top of random branches (merges of two among them), each under a new branch."""
    rng = random.Random(seed)
    tips = git(repo, "for-each-ref", "--format=%(objectname)", "refs/heads/").decode().split()
    made = []
    for i in range(n):
        parents = rng.sample(tips, rng.choice((1, 1, 2)))
        args = [a for p in parents for a in ("-p", p)]
        c = git(repo, "commit-tree", "-m", f"more {i}", *args, "main^{tree}").strip().decode()
        git(repo, "update-ref", f"refs/heads/more/{i:03d}", c)
        tips.append(c)
        made.append(c)
    return made


@pytest.mark.parametrize("graph", ["none", "all", "older"])
def test_contains_over_merges_matches_git(tmp_path: Path, graph: str) -> None:
    """Targets old and new, on merged and unmerged lines, inside the graph and (``older``: the graph
    written first, then more history) outside it."""
    repo = init_repo(tmp_path / "r")
    commits = _merges(repo, 300, seed=7)
    if graph != "none":
        git(repo, "commit-graph", "write", "--reachable")
    if graph == "older":
        commits += _more(repo, 40, seed=8)
    rng = random.Random(3)
    targets = [commits[0], commits[-1], commits[len(commits) // 2], *rng.sample(commits, 8)]
    for t in targets:
        same_as_git(repo, f"--contains={t}", "--format=%(refname)")
        same_as_git(repo, f"--no-contains={t}", "--format=%(refname)")
    same_as_git(repo, f"--contains={targets[2]}", f"--contains={targets[3]}", "--format=%(refname)")
    same_as_git(repo, f"--no-contains={targets[4]}", f"--merged={targets[1]}", "--format=%(refname)")
