"""What ``for-each-ref`` knows of the repository beyond each ref: the ref HEAD resolves to (``%(HEAD)``),
the branch each worktree has checked out and where (``%(worktreepath)``), and whether a name resolves
(``%(refname:short)``'s ambiguity check) -- read once per run from the repository and a snapshot.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ..fileio import read_prefix
from ..model import SYMREF_MAXDEPTH
from ..repo import Repo, list_worktrees


class Columns(namedtuple("Columns", "names oids")):
    """Refs of names and ids alone (no symref target, no peeled value), as two lists in name order."""

    __slots__ = ()


class Listing(namedtuple("Listing", "snap patterns")):
    """The refs of ``snap`` for ``patterns`` as ``Columns``, not listed yet: a run that reads their tips
    can fork a child on the listing's text (``text``) before the columns are made of it (``columns_of``),
    so neither process touches the other's million names and ids (``tipreads.tip_columns_early``)."""

    __slots__ = ()

    def text(self, transform=None) -> list[bytes]:
        """The listing's output lines (``oid SP name LF``), in chunks of whole lines; ``transform``:
        what is kept of each chunk instead (bytes -> bytes), made as the listing makes it."""
        from ..listing import Out, list_refs

        out = Out(keep=True, transform=transform)
        list_refs(self.snap, self.patterns, False, False, out=out)
        return out.parts


class Context(namedtuple("Context", "head worktrees exists")):
    """``head``: the name HEAD resolves to (``b"HEAD"`` when detached, None when it resolves to nothing);
    ``worktrees``: {branch: worktree path}; ``exists``: name -> whether it resolves."""

    __slots__ = ()


def _strip_git(path: str) -> str:
    for suffix in ("/.git", "/."):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return path


def worktree_path(repo: Repo, gitdir: str) -> str | None:
    """The working tree of the worktree whose git dir is ``gitdir``, as git's worktree list names it."""
    if os.path.realpath(gitdir) == os.path.realpath(repo.commondir):
        return _strip_git(os.path.realpath(repo.commondir))
    try:
        data = read_prefix(os.path.join(gitdir, "gitdir"), 1 << 16)
    except (OSError, ValueError):
        return None
    path = os.fsdecode(data).rstrip()
    if not path:
        return None
    path = _strip_git(path)
    if not os.path.isabs(path):
        path = os.path.realpath(os.path.join(gitdir, path))
    return path


def context(repo: Repo, snap) -> Context:
    head = snap.head()
    name = None
    hops = 0
    while head is not None and head.target is not None and hops < SYMREF_MAXDEPTH:
        name = head.target
        head = snap.lookup(head.target)
        hops += 1
    if head is None or head.target is not None:
        name = None
    elif name is None:
        name = b"HEAD"
    worktrees: dict[bytes, bytes] = {}
    for gitdir, branch in list_worktrees(repo):
        if branch:
            path = worktree_path(repo, gitdir)
            if path is not None:
                worktrees.setdefault(branch, os.fsencode(path))
    return Context(name, worktrees, Exists(snap))


class Exists:
    """Does a ref name resolve (refs_ref_exists): what ``%(refname:short)`` asks of up to five other
    names for every ref it shortens. A look-up each at first; from ``BULK_MIN`` names under ``refs/``
    on, one set of every name the store lists (what for-each-ref lists is exactly what resolves: a
    dangling symref, a broken or badly named ref are hidden from both), so a million refs cost a listing
    of the store, not five million binary searches of packed-refs."""

    BULK_MIN = 4096

    def __init__(self, snap) -> None:
        self.snap = snap
        self.asked = 0
        self.names: set[bytes] | None = None

    def __call__(self, name: bytes) -> bool:
        if name.startswith(b"refs/"):
            if self.names is None:
                self.asked += 1
                if self.asked >= self.BULK_MIN:
                    self.names = set(listed_columns(self.snap, []).names)
            if self.names is not None:
                return name in self.names
        return self.snap.resolve(name) is not None


def resolved(snap, ref):
    """``ref`` as for-each-ref sees it: a symref carries the id its chain ends at, the name of the ref
    that holds it (``%(symref)`` is the end of the chain, not the next hop) and that ref's location
    (git's REF_ISPACKED describes where the value was read); None when the chain ends nowhere (git skips
    such a ref)."""
    if ref.target is None:
        return ref
    cur = ref
    for _ in range(SYMREF_MAXDEPTH):
        nxt = snap.lookup(cur.target)
        if nxt is None:
            return None
        if nxt.target is None:
            return ref._replace(oid=nxt.oid, peeled=None, target=cur.target, location=nxt.location)
        cur = nxt
    return None


def listed_refs(snap, patterns: list[bytes], locations: bool = False, plain: bool = False):
    """The refs ``refscope list PATTERN...`` prints (git's for-each-ref set, in its order), each
    ``resolved``: the input of a format. The store's own iteration decides what is hidden, as for the
    listing; a pattern's glob is matched here with the one matcher. Read in the store's batches unless
    ``locations`` are wanted (``%(flag)``: packed or not), which only the per-ref iteration carries.
    ``plain``: names and ids are all the format needs (no symref target, no recorded peeled value): then
    they are the listing's own output, its fast paths and all, split back into columns."""

    from ..model import Ref
    from ..refpattern import ForEachRefPatterns
    from ..stores.bulk import cut_before

    if plain and not locations:
        yield from refs_of(*listed_columns(snap, patterns))
        return

    pats = ForEachRefPatterns(patterns) if patterns else None
    intervals = pats.intervals() if pats is not None else [(b"", None)]
    match = pats.match if pats is not None and pats.globs else None
    for lo, hi in intervals:
        if locations:
            for ref in snap.iter_from(lo):
                if hi is not None and ref.name >= hi:
                    break
                if match is not None and not match(ref.name):
                    continue
                got = resolved(snap, ref)
                if got is not None:
                    yield got
            continue
        for pairs, cols in snap.iter_bulk(lo):
            if pairs is not None:
                names, oids, peeled, targets = pairs[1::2], pairs[0::2], None, None
            else:
                names, oids, peeled, targets = cols
            done = False
            if hi is not None and names and names[-1] >= hi:
                names, oids, peeled, targets = cut_before(hi, names, oids, peeled, targets)
                done = True
            if peeled is None and targets is None and match is None:
                yield from refs_of(names, oids)
            else:
                for j, name in enumerate(names):
                    if match is not None and not match(name):
                        continue
                    ref = Ref(
                        name, oids[j], peeled[j] if peeled else None, targets[j] if targets else None, None
                    )
                    got = resolved(snap, ref) if ref.target is not None else ref
                    if got is not None:
                        yield got
            if done:
                break


def listed_for(snap, patterns: list[bytes], atoms):
    """What a format of ``atoms`` reads the refs as: a ``Listing`` (``Columns`` to come) when names and
    ids are all it needs (no symref target, no tag's target, no ``%(flag)``), else ``listed_refs``'
    records."""
    if wants_columns(atoms):
        return Listing(snap, patterns)
    locations = any(a.name == "flag" for a in atoms)
    plain = not any(a.deref or a.name == "symref" for a in atoms)
    return listed_refs(snap, patterns, locations=locations, plain=plain)


def wants_columns(atoms) -> bool:
    """Does ``listed_for`` read the refs of a format of ``atoms`` as ``Columns``?"""
    return not any(a.deref or a.name in ("symref", "flag") for a in atoms)


def listed_columns(snap, patterns: list[bytes]) -> Columns:
    """(names, ids) of the refs ``listed_refs(..., plain=True)`` gives, as two lists: the listing's own
    output, its fast paths and all, split back into columns by C-level calls (a listed name holds no
    space; when the spaces say otherwise, line by line)."""
    return columns_of(Listing(snap, patterns).text())


def column_split(snap, patterns: list[bytes]) -> bytes | None:
    """Where a listing of every ref of a big packed-refs file as columns can be cut in two (the names
    below it, the others: ``interval_columns``), for two processes that each list and filter one part;
    None without such a cut (patterns, reftable, loose refs only, a small or unsorted file)."""
    if patterns or snap.format != "files" or not snap.packed.in_name_order:
        return None
    from ..listing import SPLIT_MIN

    split = snap.split_name(SPLIT_MIN)
    return None if split is None else split + b"\x00"


def interval_columns(snap, lo: bytes, hi: bytes | None) -> Columns:
    """``listed_columns(snap, [])`` of the names from ``lo`` up to (not with) ``hi`` (None: the end)
    only, of a files store whose packed-refs is in name order (``column_split``)."""
    from ..listing import Lister, Out

    out = Out(keep=True)
    Lister(snap, False, out, None).files([(lo, hi)])
    return columns_of(out.parts)


COLUMNS_BATCH = 1 << 20


def columns_of(chunks: list[bytes]) -> Columns:
    """The listing's output lines (``chunks``, emptied as they are split: a million refs' text is
    ~60 MB) split into two columns. The chunks are taken from the end of the reversed list (taking
    the first of a million one-line chunks, as a listing ref by ref makes them, moved all the others
    each time), small ones joined to about ``COLUMNS_BATCH`` bytes first."""
    names: list[bytes] = []
    oids: list[bytes] = []
    pending = b""
    chunks.reverse()
    while chunks:  # about a batch at a time, each let go once split
        batch = [pending, chunks.pop()]
        size = len(batch[1])
        while chunks and size < COLUMNS_BATCH:
            batch.append(chunks.pop())
            size += len(batch[-1])
        data = b"".join(batch)
        if not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            data, pending = data[:cut], data[cut:]
        else:
            pending = b""
        parts = data.split()  # (one pass: a listed name passes check_refname_format, so holds no space)
        if len(parts) == 2 * data.count(b"\n"):
            names += parts[1::2]
            oids += parts[0::2]
        else:
            for line in data.split(b"\n")[:-1]:
                oid, _, name = line.partition(b" ")
                names.append(name)
                oids.append(oid)
        if pending and not chunks:  # (the listing ends every line: not met)
            chunks.append(pending + b"\n")
            pending = b""
    return Columns(names, oids)


def refs_of(names: list[bytes], oids: list[bytes]):
    """Refs of names and ids alone, made by ``tuple.__new__`` straight from C (a namedtuple's own
    ``__new__`` is a Python call per ref)."""
    from itertools import repeat

    from ..model import Ref

    none = repeat(None)
    return map(
        tuple.__new__, repeat(Ref), zip(names, oids, none, none, none, strict=False)
    )  # endless repeats
