"""Which paths matter: the directories to watch, the filter for file events, and the storage locks.

git replaces ``packed-refs`` and ``tables.list`` by renaming a lock over them, so files are never watched
themselves, only the directories git writes through (see the package's docstring).
"""

from __future__ import annotations

import os

from ..repo import worktree_gitdirs


def watch_dirs(commondir: str) -> tuple[list[str], list[str]]:
    """(non-recursive dirs, recursive dirs) to watch for one repository, all existing right now."""
    nonrec = [commondir]
    rec: list[str] = []
    refs = os.path.join(commondir, "refs")
    if os.path.isdir(refs):
        rec.append(refs)
    rt = os.path.join(commondir, "reftable")
    if os.path.isdir(rt):
        nonrec.append(rt)
    wt = os.path.join(commondir, "worktrees")
    if os.path.isdir(wt):
        nonrec.append(wt)
        for gd in worktree_gitdirs(commondir):
            nonrec.append(gd)
            if os.path.isdir(os.path.join(gd, "refs")):
                rec.append(os.path.join(gd, "refs"))
            if os.path.isdir(os.path.join(gd, "reftable")):
                nonrec.append(os.path.join(gd, "reftable"))
    return nonrec, rec


def relevant(commondir: str, path: str) -> bool:
    """The filter: does a file event at ``path`` concern ref storage? (Never drops ``.git`` paths.)"""
    prefix = commondir.rstrip("/") + "/"
    if not path.startswith(prefix):
        return False
    rel = path[len(prefix) :]
    if rel in ("packed-refs", "packed-refs.lock", "HEAD", "HEAD.lock", "refs", "reftable", "worktrees"):
        return True
    if rel.startswith(("refs/", "reftable/")):
        return True
    if rel.startswith("worktrees/"):
        parts = rel.split("/")
        if len(parts) == 2:
            return True  # a worktree came or went
        return parts[2] in ("HEAD", "HEAD.lock", "refs", "reftable")
    return False


def is_structural(commondir: str, path: str) -> bool:
    """Does this path's appearance/disappearance change the set of directories to watch?"""
    rel = path[len(commondir.rstrip("/")) + 1 :]
    parts = rel.split("/")
    if rel in ("refs", "reftable", "worktrees"):
        return True
    return parts[0] == "worktrees" and (
        len(parts) == 2 or (len(parts) == 3 and parts[2] in ("refs", "reftable"))
    )


def relevant_paths(commondir: str, raw: set) -> set[str]:
    """The paths of a raw batch that concern ref storage, without the per-ref lock files under the
    common ``refs/`` (a files transaction of 700k refs creates and removes 700k of them: they change no
    ref and are not tracked, so they are dropped by the cheapest test first)."""
    ref_locks = commondir.rstrip("/") + "/refs/"
    return {
        p for _, p in raw if not (p.endswith(".lock") and p.startswith(ref_locks)) and relevant(commondir, p)
    }


def is_store_lock(commondir: str, path: str) -> bool:
    """A lock in a storage directory (``packed-refs.lock``, ``HEAD.lock``, ``reftable/*.lock``), not
    one of the per-ref locks under ``refs/`` a files transaction takes (one per ref it touches)."""
    rel = path[len(commondir.rstrip("/")) + 1 :]
    parts = rel.split("/")
    if parts[0] == "worktrees":
        parts = parts[2:]
    return bool(parts) and parts[0] != "refs"


def current_locks(commondir: str) -> set[str]:
    """Lock files present now in the places git locks refs (no deep walk of refs/: loose-ref locks are short)."""
    out = set()
    for d in (commondir, os.path.join(commondir, "reftable")):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out.update(os.path.join(d, n) for n in names if n.endswith(".lock"))
    return out
