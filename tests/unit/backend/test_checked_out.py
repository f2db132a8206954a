"""Which branches a deletion must not touch, decided as git's branch_checked_out does: the HEAD of every
worktree that is not bare. A bare repository's HEAD names no checkout (``git clone --bare`` then deleting
its default branch is allowed by git), while linked worktrees of a bare repository protect their branches.
The oracle is ``git worktree list --porcelain`` (a ``bare`` entry has nothing checked out) and git's own
``git branch -D`` refusal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from refscope.backend.repo import checked_out_branches, discover

from tests.support.cli import refscope
from tests.support.git import git, git_binary, git_env, init_repo, ref_storage


def git_checked_out(cwd: Path) -> set[bytes]:
    """The branches git reports checked out: ``branch`` lines of worktrees without a ``bare`` line."""
    out = set()
    for entry in git(cwd, "worktree", "list", "--porcelain").split(b"\n\n"):
        lines = entry.splitlines()
        if b"bare" not in lines:
            out.update(line[7:] for line in lines if line.startswith(b"branch "))
    return out


@pytest.fixture
def bare(tmp_path: Path, ref_format: str) -> Path:
    """``git clone --bare`` of a repository with master checked out and two more branches."""
    src = init_repo(tmp_path / "src", fmt=ref_format)
    git(src, "branch", "-m", "master")
    git(src, "branch", "side")
    git(src, "branch", "other")
    git(tmp_path, "clone", "-q", "--bare", "src", "b.git")
    return tmp_path / "b.git"


def test_bare_clone_deletes_its_head_branch(bare: Path) -> None:
    assert git_checked_out(bare) == set()
    assert checked_out_branches(discover(str(bare), git_env())) == []
    proc = refscope("delete", "refs/heads/master", cwd=bare)
    assert proc.returncode == 0, proc.stderr
    assert git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/master") == b""
    git(bare, "refs", "verify")
    proc = refscope("delete", "-C", "b.git", "refs/heads/side", cwd=bare.parent)  # -C finds it the same way
    assert proc.returncode == 0, proc.stderr
    assert git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/side") == b""
    git(bare, "refs", "verify")


@pytest.mark.parametrize("relative", [False, True])
@pytest.mark.parametrize("where", ["bare", "linked"])
def test_linked_worktree_of_bare_protects_its_branch(bare: Path, where: str, relative: bool) -> None:
    if relative:  # the worktree's gitdir file then names it relative to the git dir: shown absolute
        git(bare, "config", "worktree.useRelativePaths", "true")
    git(bare, "worktree", "add", "-q", "../wt", "side")
    wt = bare.parent / "wt"
    cwd = bare if where == "bare" else wt
    gitdir = discover(str(cwd), git_env()).gitdir
    assert git_checked_out(cwd) == {b"refs/heads/side"}
    assert {b for _gd, b in checked_out_branches(discover(str(cwd), git_env()))} == {b"refs/heads/side"}
    # git refuses the same deletion (and changes nothing), in the same words
    probe = subprocess.run(
        [git_binary(), "branch", "-D", "side"], cwd=cwd, capture_output=True, env=git_env()
    )
    assert probe.returncode == 1
    assert probe.stderr == f"error: cannot delete branch 'side' used by worktree at '{wt}'\n".encode()
    before = ref_storage(bare)
    proc = refscope("delete", "refs/heads/side", cwd=cwd)
    assert proc.returncode == 1
    assert proc.stderr.decode() == (
        f"refscope: {gitdir}: cannot delete branch 'side' used by worktree at '{wt}'\n"
    )
    assert proc.stdout == b""
    assert ref_storage(bare) == before
    # the bare main worktree's HEAD protects nothing, from either side
    proc = refscope("delete", "refs/heads/master", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert (
        git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/")
        == b"refs/heads/other\nrefs/heads/side\n"
    )
    git(bare, "refs", "verify")


def test_linked_worktree_of_bare_is_not_bare(bare: Path) -> None:
    """Setup ignores the common config's core.bare in a linked worktree: it has its working tree."""
    git(bare, "worktree", "add", "-q", "../wt", "side")
    wt = bare.parent / "wt"
    repo = discover(str(wt), git_env())
    assert git(wt, "rev-parse", "--is-bare-repository") == b"false\n"
    assert not repo.bare and repo.worktree == os.path.realpath(wt)
    assert git(wt, "rev-parse", "--show-toplevel").strip().decode() == repo.worktree


def test_non_bare_main_still_protected(tmp_path: Path, ref_format: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    git(repo, "branch", "side")
    git(repo, "worktree", "add", "-q", "wt", "side")
    assert git_checked_out(repo) == {b"refs/heads/main", b"refs/heads/side"}
    assert {b for _gd, b in checked_out_branches(discover(str(repo / "wt"), git_env()))} == git_checked_out(
        repo
    )
    before = ref_storage(repo / ".git")
    for cwd in (repo, repo / "wt"):
        gitdir = discover(str(cwd), git_env()).gitdir
        proc = refscope("delete", "refs/heads/main", cwd=cwd)
        assert proc.returncode == 1
        assert (
            proc.stderr.decode()
            == f"refscope: {gitdir}: cannot delete branch 'main' used by worktree at '{repo}'\n"
        )
    assert ref_storage(repo / ".git") == before
