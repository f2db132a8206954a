"""``refscope list`` with for-each-ref's options: the revisions the filters name, the object database,
the context, then ``run.for_each_ref`` to fd 1.

The revisions the options name are read by ``revision.resolve_rev`` (ids, ref names, ``~``, ``^`` and
``^{type}``); what it does not read is refused in one line rather than guessed.
"""

from __future__ import annotations

import os

from ..errors import RefscopeError
from ..model import HASH_HEXSZ
from .context import Columns, context, listed_for
from .revision import resolve_rev
from .run import NO_FILTERS, Filters, Plan, for_each_ref, streams

_LEFT: list = []  # what a run keeps for the process's ``os._exit`` to drop (``for_each_ref``'s ``keep``)


def _base_commit(snap, hexsz: int, graph, arg: str, odb) -> bytes:
    """The commit ``%(ahead-behind:arg)`` counts against, refused in git's words when there is none."""
    try:
        commit = graph.commit_of(resolve_rev(snap, hexsz, arg, odb))
    except RefscopeError as err:
        if "unsupported revision syntax" in str(err):
            raise
        commit = None
    if commit is None:
        raise RefscopeError(None, f"failed to find '{arg}'")
    return commit


def run(repo, snap, p: Plan, patterns: list[bytes], *, revs: dict[str, list[str]], count: int | None,
        omit_empty: bool, escape) -> None:  # fmt: skip
    """Print ``snap``'s refs matching ``patterns`` as ``git for-each-ref`` would, with ``revs`` the
    values of --points-at, --merged, --no-merged, --contains and --no-contains.

    The cycle collector is off meanwhile: a run makes millions of small tuples and lists that hold no
    cycle, and each collection would walk them all again (a good part of the run's time at 1M refs)."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        _run(repo, snap, p, patterns, revs=revs, count=count, omit_empty=omit_empty, escape=escape)
    finally:
        if was:
            gc.enable()


def _resolved(snap, hexsz: int, text: str, odb, key: str) -> bytes:
    """``resolve_rev`` for the option ``key``: git's --points-at (parse_opt_object_name) quotes the name
    it cannot find, the reachability options do not."""
    try:
        return resolve_rev(snap, hexsz, text, odb)
    except RefscopeError as err:
        if key == "points_at" and err.what == f"malformed object name {text}":
            raise RefscopeError(None, f"malformed object name '{text}'") from None
        raise


def shallow_commits(repo) -> frozenset[bytes]:
    """The commits of ``shallow`` (a shallow clone's boundary), which git reads as having no parents
    (and, with any, uses no commit-graph)."""
    from ..fileio import read_prefix

    try:
        data = read_prefix(os.path.join(repo.commondir, "shallow"), 1 << 30)
    except (OSError, ValueError):
        return frozenset()
    return frozenset(line.strip().lower() for line in data.split(b"\n") if line.strip())


def _not_a_commit(key: str, text: str) -> str:
    """git's words for a filter's revision that is no commit: ``--merged`` and ``--no-merged`` are read
    by parse_opt_merge_filter, ``--contains`` and ``--no-contains`` by parse_opt_commits, which word it
    differently."""
    if key in ("contains", "no_contains"):
        return f"no such commit {text}"
    return f"option `{key.replace('_', '-')}' must point to a commit"


def _run(repo, snap, p: Plan, patterns: list[bytes], *, revs: dict[str, list[str]], count: int | None,
         omit_empty: bool, escape) -> None:  # fmt: skip
    from ..objects.commitgraph import open_commit_graph
    from ..objects.odb import Odb, objects_dir
    from .replace import refuse_replaced
    from .settings import settings

    config = settings(repo.config)  # git reads it first: a bad value fails every format
    refuse_replaced(repo, snap, p.atoms, any(revs.values()))
    hexsz = HASH_HEXSZ[repo.hash_name]
    odb = Odb.of(repo)
    odb.grafted = shallow_commits(repo)
    directory = objects_dir(repo)
    named = {k: tuple(_resolved(snap, hexsz, v, odb, k) for v in vs) for k, vs in revs.items()}
    graph = None
    walks = [a.arg for a in p.atoms if a.name == "ahead-behind"]
    bases: dict[str, bytes] = {}
    if walks or any(named.get(k) for k in ("merged", "no_merged", "contains", "no_contains")):
        from .reach import Graph
        from .values import Objects

        graph = None if odb.grafted else open_commit_graph(directory, odb.rawsz)  # git: none when shallow
        check = Graph(Objects(odb), graph)
        for arg in walks:
            bases[arg] = _base_commit(snap, hexsz, check, arg, odb)
        for key in ("merged", "no_merged", "contains", "no_contains"):
            for oid, text in zip(named.get(key, ()), revs.get(key, ()), strict=True):
                if check.commit_of(oid) is None:
                    raise RefscopeError(None, _not_a_commit(key, text))
        named = {k: tuple(check.commit_of(o) if k != "points_at" else o for o in v) for k, v in named.items()}
    elif named.get("points_at") and not odb.grafted:  # (match_points_at reads no commit the graph holds)
        graph = open_commit_graph(directory, odb.rawsz)
    ctx = context(repo, snap)
    filters = Filters(**named)
    streamed = streams(p, filters)  # before the filters are applied apart
    refs = None
    if filters != NO_FILTERS:
        refs = _filtered_over_two(snap, patterns, p, odb, filters, graph)
        if refs is not None:
            filters = NO_FILTERS
    elif count is not None and streamed:
        refs = _first_refs(snap, patterns, p, count)
    lines = for_each_ref(
        p,
        listed_for(snap, patterns, p.atoms) if refs is None else refs,
        odb,
        head=ctx.head,
        worktrees=ctx.worktrees,
        exists=ctx.exists,
        filters=filters,
        count=count,
        omit_empty=omit_empty,
        commit_graph=graph,
        escape=escape,
        bases=bases,
        keep=_LEFT,
        streamed=streamed,
        settings=config,
    )
    chunk: list[bytes] = []
    size = 0
    try:
        for line in lines:
            chunk.append(line)
            size += len(line)
            if size >= 1 << 16:
                _write(b"".join(chunk))
                chunk, size = [], 0
    except RefscopeError:  # what was made before a ref that fails is printed first, as git prints it
        if chunk:
            _write(b"".join(chunk))
        raise
    if chunk:
        _write(b"".join(chunk))


def _first_refs(snap, patterns: list[bytes], p: Plan, count: int) -> list:
    """(--count without --sort or a filter) the first ``count`` refs, streamed from the store a ref at
    a time (``locations``: the per-ref iteration, no batch read ahead): git prints each ref as it finds
    it and stops there, so neither lists the rest, nor meets what is wrong in it (a dangerous name
    further on fails git's full listing, not its first refs)."""
    from itertools import islice

    from .context import listed_refs

    return list(islice(listed_refs(snap, patterns, locations=True), count))


def _filtered_over_two(snap, patterns: list[bytes], p: Plan, odb, filters: Filters, graph) -> Columns | None:
    """(--merged, --contains, --points-at and the rest over a big packed-refs file) the refs kept,
    listed and filtered half here and half in a forked child at the same time: listing a million refs
    and looking each one's tip up is per-ref work, the walk from the named commits is not, and what
    comes back is only the refs kept. The walk is done on both sides (without a commit-graph, by
    reading the commits: its CPU twice, its wall time once). A child that fails has its half done here
    after all, so an error surfaces as in one process (the first half's first). None: no split (a
    format that needs more than the refs' names and ids, a small file, patterns, reftable, one core):
    the caller goes the one-process way."""
    from ..parallel import both, may_fork
    from .context import column_split, interval_columns, wants_columns
    from .run import filter_columns

    if not wants_columns(p.atoms) or not may_fork():
        return None
    if graph is None and filters == Filters(points_at=filters.points_at):
        return None  # (--points-at reads every tip the graph does not hold: both halves would read all)
    mid = column_split(snap, patterns)
    if mid is None:
        return None

    first, (names, oids) = both(
        lambda: filter_columns(interval_columns(snap, b"", mid), odb, filters, graph),
        lambda: tuple(filter_columns(interval_columns(snap, mid, None), odb, filters, graph)),
    )
    _LEFT.append((first, names, oids))
    return Columns(first.names + names, first.oids + oids)


def _write(data: bytes) -> None:
    from ..fileio import write_all

    write_all(1, data)
