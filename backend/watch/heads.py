"""Every worktree's HEAD as the watcher sees it: which ones a batch may have moved, and their values.

HEAD is not a ref of the listing (the snapshot's diff does not show it), so the watcher keeps its own view
of each worktree's HEAD beside the snapshot and reports a ``head-moved`` change when one differs.
"""

from __future__ import annotations

import os

from ..fileio import read_small
from ..repo import worktree_gitdirs
from .paths import is_structural


def touched_gitdirs(
    commondir: str, gitdir: str, fmt: str, known: dict[str, bytes | None], paths: set[str], own_stack: bool
) -> list[str]:
    """Worktree git dirs whose HEAD may have moved in this batch (all of them, and every one in ``known``,
    when worktrees came or went: their files may have been written before the new directories were
    watched). ``own_stack``: this worktree's HEAD is in a reftable stack just refreshed (a cheap seek)."""
    out = set()
    if any(is_structural(commondir, p) for p in paths):
        out.update(worktree_gitdirs(commondir))
        out.update(known)
    if fmt == "reftable" and own_stack:
        out.add(gitdir)
    for p in paths:
        d, base = os.path.split(p)
        if base in ("HEAD", "HEAD.lock") and fmt == "files":
            out.add(d)
        elif base in ("tables.list", "tables.list.lock") and os.path.basename(d) == "reftable":
            out.add(os.path.dirname(d))
        elif os.path.dirname(d) == os.path.join(commondir, "worktrees"):
            out.add(d)  # a worktree came or went
        elif p == os.path.join(commondir, "worktrees", base):
            out.add(p)
    return sorted(out)


def head_value(repo, fmt: str, gitdir: str, own_gitdir: str, snap) -> bytes | None:
    """HEAD of the worktree whose git dir is ``gitdir``: b"ref: <target>", an oid, or None. ``snap`` (the
    snapshot of the worktree whose git dir is ``own_gitdir``, or None) answers for that one."""
    if not os.path.isdir(gitdir):
        return None
    if fmt == "files":
        data = read_small(os.path.join(gitdir, "HEAD"), follow=False)
        if data is None:
            return None
        return data.rstrip(b"\n")
    if gitdir == own_gitdir and snap is not None:
        ref = snap.head()
    else:
        from ..store import open_store

        try:
            ref = open_store(repo._replace(gitdir=gitdir)).snapshot().head()
        except Exception:
            return None
    if ref is None:
        return None
    return b"ref: " + ref.target if ref.target is not None else ref.oid
