"""Ownership as git judges it: a repository git refuses to work in ("dubious ownership") is an error."""

from __future__ import annotations

import os

from ..repo import ownership_ok
from .findings import ERROR, Finding


def check_ownership(repo, env=None) -> Finding | None:
    """git's ``ensure_valid_ownership`` (as ``repo.py`` implements it): the worktree and git dir must be
    ours unless ``safe.directory`` in protected config allows them. None when git would accept it."""
    env = os.environ if env is None else env
    if ownership_ok(None, repo.worktree, repo.gitdir, env):
        return None
    top = repo.worktree or repo.gitdir
    try:
        owner = os.stat(top).st_uid
    except OSError:
        owner = -1
    return Finding(
        top,
        None,
        ERROR,
        f"detected dubious ownership in repository at '{top}' (owner uid {owner}, running as uid "
        f"{os.geteuid()}): safe.directory does not allow it, so git refuses to work here "
        f"(git config --global --add safe.directory {top})",
    )
