"""What deleting some refs would do beyond them, as a confirmation warns of it before the commit: the
branches checked out in a worktree (a no-deref transaction refuses them) and the symrefs left dangling.

Apart from ``txn`` (which refuses a checked-out branch itself, reading the same worktrees) because only
the TUI's confirmation asks these questions, over the whole queue at once and off the UI thread.
"""

from __future__ import annotations

import os

from .model import SYMREF_MAXDEPTH


def worktree_path(gitdir: str) -> str:
    """The working tree of a git dir: ``<gitdir>/gitdir`` names a linked one's ``.git`` file (relative to
    that git dir under ``worktree.useRelativePaths``; shown absolute, as git shows it)."""
    try:
        with open(os.path.join(gitdir, "gitdir"), "rb") as f:
            dotgit = os.path.normpath(os.path.join(gitdir, os.fsdecode(f.read().strip())))
            return os.path.dirname(dotgit)
    except OSError:
        return os.path.dirname(gitdir.rstrip("/")) if gitdir.rstrip("/").endswith(".git") else gitdir


def checked_out_worktrees(repo) -> list[tuple[bytes, str]]:
    """(branch, working tree path) of every branch checked out in a worktree of ``repo``: what the
    transaction's guard protects, with the path a user recognises (not the worktree's git dir)."""
    from .repo import checked_out_branches

    return [(branch, worktree_path(gitdir)) for gitdir, branch in checked_out_branches(repo)]


def checked_out_among(repo, names) -> list[tuple[bytes, str]]:
    """(branch, working tree path) for each of ``names`` checked out in a worktree of ``repo``: the
    deletions a no-deref transaction refuses unless ``allow_checked_out`` (what a confirmation warns of)."""
    queued = names if isinstance(names, (set, frozenset, dict)) else set(names)
    return [(branch, path) for branch, path in checked_out_worktrees(repo) if branch in queued]


def snapshot_symrefs(snapshot) -> dict[bytes, bytes]:
    """name -> target of every symref of ``snapshot`` (HEAD included), as the snapshot resolves names.

    Cheap where the store knows where symrefs can be: in a files repository only loose files (and HEAD)
    hold them, packed-refs cannot; a reftable block says how many it holds, and the blocks the row index
    found listed whole hold none, so only the others are decoded. Any other snapshot is streamed."""
    out: dict[bytes, bytes] = {}
    head = snapshot.head()
    if head is not None and head.target is not None:
        out[b"HEAD"] = head.target
    if snapshot.format == "files":
        from .formats.loose import SYMREF

        for name, lr in snapshot.loose.items():
            if lr.kind == SYMREF and not lr.bad_name:
                out[name] = lr.value
        return out
    if snapshot.format == "reftable":
        candidates: set[bytes] = set()
        for t in (*snapshot.tables, *snapshot.worktree_tables):
            listed = t.listed_cache
            for off, blk in t.iter_ref_offsets():
                if off in listed:
                    continue
                rb = t.decode_ref(blk or t.block_at(off))
                if rb.symrefs:
                    meta = rb.meta
                    candidates.update(rb.names[j] for j in range(len(meta)) if meta[j] & 7 == 3)
        for name in sorted(candidates):
            ref = snapshot.head() if name == b"HEAD" else snapshot.lookup(name)  # the newest record wins
            if ref is not None and ref.target is not None:
                out[name] = ref.target
        return out
    for ref in snapshot:
        if ref.target is not None:
            out[ref.name] = ref.target
    return out


def dangling_symrefs(snapshot, names) -> list[tuple[bytes, bytes]]:
    """(symref, queued ref) for every symref of ``snapshot`` that is not among ``names`` and whose chain
    reaches one of them: deleting ``names`` leaves it pointing at nothing. Sorted by symref name."""
    queued = names if isinstance(names, (set, frozenset, dict)) else set(names)
    symrefs = snapshot_symrefs(snapshot)
    out = []
    for name in sorted(symrefs):
        if name in queued:
            continue
        target = symrefs[name]
        hops = 1
        while target not in queued and target in symrefs and hops < SYMREF_MAXDEPTH:
            target = symrefs[target]
            hops += 1
        if target in queued:
            out.append((name, target))
    return out
