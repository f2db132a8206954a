"""``git for-each-ref`` over refscope's listing: filter, sort, count and print, as builtin/for-each-ref.c
and ref-filter.c do.

The caller gives the refs git would list for the patterns (refscope's listing: the same set, in name
order) and the repository's lookups; objects are read only when an atom, a sort key or a filter needs
them, once per object id.
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, repeat
from operator import and_, is_not

from ..config import parse_bool
from ..errors import RefscopeError
from ..model import TAG_CHAIN_MAX, Ref
from . import bulk, tipreads
from .context import Columns, Listing, columns_of, refs_of
from .fields import object_headers
from .order import sort_order
from .reach import Graph
from .revision import RULES
from .settings import DEFAULTS, Settings
from .spec import Atom, Format, parse_format, parse_sort, sorts_as_number
from .values import Evaluator, Objects

DEFAULT_FORMAT = b"%(objectname) %(objecttype)\t%(refname)"


class Plan(namedtuple("Plan", "format atoms keys sorted", defaults=(True,))):
    """A parsed ``--format`` and ``--sort``: checked before any ref is read, so a bad key costs nothing.
    ``sorted``: a ``--sort`` was given (git's own refname order is not one: see ``streams``)."""

    __slots__ = ()


def plan(fmt: bytes | None, sort: list[str]) -> Plan:
    atoms: list[Atom] = []
    f = parse_format(DEFAULT_FORMAT if fmt is None else fmt, atoms)
    keys = parse_sort(sort or ["refname"], atoms)
    return Plan(f, atoms, keys, bool(sort))


def shortener(
    exists: Callable[[bytes], bool], strict: Callable[[], bool] = lambda: True
) -> Callable[[bytes], bytes]:
    """refs_shorten_unambiguous_ref: the shortest rule's name that no other rule resolves (strict mode,
    core.warnAmbiguousRefs on, git's default), or none of the rules before its own (off); ``strict()``
    is asked at the first name shortened, as git reads the setting."""
    mode: list[bool] = []

    def shorten(name: bytes) -> bytes:
        if not mode:
            mode.append(strict())
        for i in range(len(RULES) - 1, 0, -1):
            prefix, _, suffix = RULES[i].partition(b"%s")
            if (
                not name.startswith(prefix)
                or not name.endswith(suffix)
                or len(name) < len(prefix) + len(suffix)
            ):
                continue
            short = name[len(prefix) : len(name) - len(suffix)]
            rules = RULES if mode[0] else RULES[:i]
            if any(j != i and exists(rule.replace(b"%s", short)) for j, rule in enumerate(rules)):
                continue
            return short
        return name

    return shorten


class Filters(namedtuple("Filters", "points_at merged no_merged contains no_contains", defaults=((),) * 5)):
    """Object ids (hex bytes): ``points_at`` any object; the others commits."""

    __slots__ = ()


NO_FILTERS = Filters()


def streams(p: Plan, filters: Filters) -> bool:
    """Does git print each ref as it finds it (ref-filter.c's can_do_iterative_format: no ``--sort``,
    no ``--merged``/``--no-merged``, no ``%(ahead-behind)``)? Only then are the refs past ``--count``
    never evaluated. Otherwise git gathers them all and sorts, and sorting two or more refs computes
    every atom of every one (populate_value), so an atom git cannot make for any ref (a date it cannot
    show, a missing object) fails the run even when that ref would not be printed."""
    return not (
        p.sorted or filters.merged or filters.no_merged or any(a.name == "ahead-behind" for a in p.atoms)
    )


def for_each_ref(
    p: Plan,
    refs: Iterable[Ref] | Columns | Listing,
    odb,
    *,
    head: bytes | None = None,
    worktrees: dict[bytes, bytes] | None = None,
    exists: Callable[[bytes], bool] = lambda name: False,
    filters: Filters = NO_FILTERS,
    count: int | None = None,
    omit_empty: bool = False,
    commit_graph=None,
    escape: Callable[[bytes], bytes] | None = None,
    bases: dict[str, bytes] | None = None,
    keep: list | None = None,
    streamed: bool | None = None,
    settings: Settings = DEFAULTS,
) -> Iterator[bytes]:
    """The lines ``git for-each-ref`` prints, each with its LF; ``escape``: how atom values are shown (a
    terminal: through the display function; the format's own text is the user's and stays as written);
    ``bases``: the commit each ``%(ahead-behind:<committish>)`` names, by its committish. ``refs`` as
    ``Columns`` (names and ids alone) may go the bulk way (``bulk``), a chunk of many lines at a time;
    as a ``Listing`` (``Columns`` to come), a sort by tip keys forks its tip reader on the listing's text.
    ``keep``: a list that takes the run's big structures (a million refs' names, ids and groups), for a
    caller that leaves by ``os._exit``: freeing them object by object costs a good part of a second.
    ``streamed``: ``streams(p, filters)`` as the caller worked it out before it applied filters itself
    (None: worked out here). ``settings``: the repository's core.abbrev and core.warnAmbiguousRefs."""
    if streamed is None:
        streamed = streams(p, filters)
    objects = Objects(odb)
    numeric = [sorts_as_number(a) for a in p.atoms]
    shown = {k for k in p.format.pieces if not isinstance(k, bytes)}
    shown.update(k for k, _, version in p.keys if version or not numeric[k])
    abbrev = odb.abbreviator(settings.abbrev)  # core.abbrev: where :short starts (short=N: its own)
    ev = Evaluator(p.atoms, objects, head=head, worktrees=worktrees or {},
                   shorten=shortener(exists, settings.strict), abbrev=abbrev,
                   numbers_only=frozenset(range(len(p.atoms))) - shown)  # fmt: skip
    bulky = bulk.fits(p.format, p.atoms, p.keys, omit_empty, escape is not None)
    finish = None
    by_name = p.keys == [(_index_of(p.atoms, "refname"), False, False)]  # the listing's own order
    whole = isinstance(refs, Listing) and bulky and count is None and filters == NO_FILTERS
    if whole and by_name and bulk.names_only(p.format, p.atoms):  # each chunk made into lines as it comes
        yield from refs.text(bulk.name_lines(p.format, p.atoms))
        return
    if isinstance(refs, Listing):
        text = refs.text()
        if bulky and count is None and filters == NO_FILTERS and not bulk.by_name(p.atoms, p.keys):
            finish = tipreads.tip_columns_of_text(ev, text)
        refs = columns_of(text)
    if isinstance(refs, Columns):
        names, oids = _filter_columns(refs, objects, filters, commit_graph)
        if keep is not None:
            keep.append((refs, names, oids))
        filters = NO_FILTERS
        if bulky:
            out = bulk.lines(p.format, p.atoms, p.keys, numeric, names, oids, ev, count, keep, finish,
                             read_all=not streamed)  # fmt: skip
            if out is not None:
                yield from out
                return
        refs = refs_of(names, oids)
    selected = _filter(list(refs), objects, filters, commit_graph)
    if by_name and count is not None and streamed:
        selected = selected[:count]  # the listing is in name order already and git reads no further
    ev.prefetch(selected)
    (strs, nums), failed = _table(ev, selected, streamed)
    walked = [k for k, a in enumerate(p.atoms) if a.name == "ahead-behind"]
    if walked:
        from .aheadbehind import columns

        wanted = [(bases or {})[p.atoms[k].arg] for k in walked]
        for k, col in zip(walked, columns(Graph(objects, commit_graph), wanted, selected), strict=True):
            strs[k] = col
    order = None if by_name else sort_order(len(selected), strs, nums, p.keys, numeric, settings.suffixes)
    if count is not None:
        order = list(range(min(count, len(selected)))) if order is None else order[:count]
    yield from _lines(p.format, strs, order, omit_empty, escape)
    if failed is not None:
        raise failed


def _table(ev: Evaluator, refs: list[Ref], streamed: bool) -> tuple[tuple[list, list], RefscopeError | None]:
    """``ev.table(refs)``, and None. A run that git streams (``streams``: it prints each ref as it finds
    it, in name order) and that fails at a ref: the table of the refs before it, and the error, raised
    once they are printed -- the first ref that fails, the refs before it being made again (an object
    atom can fail at a ref before one a ``*`` atom failed at)."""
    end, failed = len(refs), None
    while True:
        try:
            return ev.table(refs if end == len(refs) else refs[:end]), failed
        except RefscopeError as err:
            at = getattr(err, "ref_index", None)
            if not streamed or at is None:
                raise
            end, failed = at, err


def _index_of(atoms: list[Atom], text: str) -> int:
    for k, a in enumerate(atoms):
        if a.text == text:
            return k
    return -1


def _lines(
    f: Format, strs: list[list[bytes]], order: list[int] | None, omit_empty: bool, escape
) -> Iterator[bytes]:
    """The output lines in ``order`` (None: as listed), a chunk at a time. The columns are put in order
    first, then joined by C-level calls: a format whose atoms are all parted by the same text is one
    ``join`` per line, any other one ``%`` template (the text with ``%`` doubled) filled per line."""
    used = [piece for piece in f.pieces if not isinstance(piece, bytes)]
    cols = []
    for k in used:
        col = strs[k] if order is None else list(map(strs[k].__getitem__, order))
        cols.append(col if escape is None else [escape(x) for x in col])
    texts = [b""]
    for piece in f.pieces:
        if isinstance(piece, bytes):
            texts[-1] += piece
        else:
            texts.append(b"")
    head, tail, seps = texts[0], texts[-1] + b"\n", set(texts[1:-1])
    n = len(strs[0]) if order is None and strs else len(order or ())
    step = 1 << 14
    if cols and len(seps) <= 1 and not omit_empty:
        sep = seps.pop() if seps else b""
        rows = cols[0] if len(cols) == 1 else list(map(sep.join, zip(*cols, strict=True)))
        glue = tail + head
        for lo in range(0, len(rows), step):
            yield head + glue.join(rows[lo : lo + step]) + tail
        return
    if not cols:
        lines = [texts[0] + b"\n"] * n  # one text, both head and tail: not twice
    else:
        template = b"%s".join(t.replace(b"%", b"%%") for t in texts[:-1]) + b"%s" + tail.replace(b"%", b"%%")
        lines = list(map(template.__mod__, zip(*cols, strict=True)))
    if omit_empty:
        lines = [ln for ln in lines if ln != b"\n"]
    for lo in range(0, len(lines), step):
        yield b"".join(lines[lo : lo + step])


def _filter(refs: list[Ref], objects: Objects, f: Filters, commit_graph) -> list[Ref]:
    if f.points_at:
        names = [r.name for r in refs]
        refs = list(
            compress(refs, points_at_mask(names, [r.oid for r in refs], f.points_at, objects, commit_graph))
        )
    if not (f.merged or f.no_merged or f.contains or f.no_contains):
        return refs
    oids_of = [r.oid for r in refs]
    kept = _kept(oids_of, objects, f, commit_graph)
    return list(compress(refs, map(kept.__contains__, oids_of)))


def filter_columns(cols: Columns, odb, f: Filters, commit_graph) -> Columns:
    """The refs of ``cols`` the filters of ``f`` keep, as columns: what ``for_each_ref`` does first, for
    a caller that filters parts of the refs apart (``command``)."""
    return Columns(*_filter_columns(cols, Objects(odb), f, commit_graph))


def _filter_columns(cols: Columns, objects: Objects, f: Filters, commit_graph) -> tuple[list, list]:
    """``_filter`` over columns: the names and ids of the refs kept."""
    names, oids = cols
    if f.points_at:
        mask = points_at_mask(names, oids, f.points_at, objects, commit_graph)
        names, oids = list(compress(names, mask)), list(compress(oids, mask))
    if not (f.merged or f.no_merged or f.contains or f.no_contains):
        return names, oids
    kept = _kept(oids, objects, f, commit_graph)
    if not kept:
        return [], []
    mask = list(map(kept.__contains__, oids))
    return list(compress(names, mask)), list(compress(oids, mask))


def _kept(oids_of: list[bytes], objects: Objects, f: Filters, commit_graph) -> set[bytes]:
    """The tips (of the refs' ids ``oids_of``) the reachability filters keep: worked out once per
    distinct tip (refs share them) by C-level passes over the tips, each ref then kept by one look-up
    in the set (small when few are kept, as for a stale-branch query)."""
    graph = Graph(objects, commit_graph)
    oids = list(dict.fromkeys(oids_of))
    nodes = graph.nodes_of(oids)  # per distinct tip: its walk name, or None when it is no commit
    keep = list(map(is_not, nodes, repeat(None)))
    if f.contains or f.no_contains:
        tips = list(dict.fromkeys(compress(nodes, keep)))
        for targets, want in ((f.contains, True), (f.no_contains, False)):
            if targets:
                hit = graph.containing(list(targets), tips)
                keep = list(
                    map(and_, keep, map(hit.__contains__, nodes) if want else map(_not_in(hit), nodes))
                )
    for targets, want in ((f.merged, True), (f.no_merged, False)):
        if targets:
            hit = graph.ancestors(list(targets))
            keep = list(map(and_, keep, map(hit.__contains__, nodes) if want else map(_not_in(hit), nodes)))
    return set(compress(oids, keep))


def _not_in(hit: set):
    """``x not in hit`` as a C-level callable (``hit.__contains__`` negated)."""
    return lambda x: x not in hit


def points_at_mask(
    names: list[bytes], oids: list[bytes], points_at, objects: Objects, commit_graph
) -> list[bool]:
    """match_points_at of each ref (its object, or a tag on the way down from it, is one of
    ``points_at``), worked out once per distinct object and read as git reads it there
    (PARSE_OBJECT_SKIP_HASH_CHECK): a commit the commit-graph holds is not read (unless
    GIT_COMMIT_GRAPH_PARANOIA), a blob only has its type looked up, anything else is read and a tag
    followed. The first ref whose object cannot be read fails, naming it, as git dies there."""
    wanted = set(points_at)
    verdict: dict[bytes, bool | str | None] = dict.fromkeys(wanted, True)
    todo = [o for o in dict.fromkeys(oids) if o not in verdict]
    if todo and commit_graph is not None and not parse_bool(os.environ.get("GIT_COMMIT_GRAPH_PARANOIA", "0")):
        positions = Graph(objects, commit_graph).positions(todo)
        verdict.update((o, False) for o, at in zip(todo, positions, strict=True) if at is not None)
        todo = [o for o, at in zip(todo, positions, strict=True) if at is None]
    from ..parallel import both, may_fork

    if len(todo) >= tipreads.FORK_MIN and may_fork():  # the ids from 8... read by a second process
        for got in both(
            lambda: _read_verdicts([o for o in todo if o < b"8"], wanted, objects),
            lambda: _read_verdicts([o for o in todo if o >= b"8"], wanted, objects),
        ):
            verdict.update(got)
    elif todo:
        verdict.update(_read_verdicts(todo, wanted, objects))
    mask = list(map(verdict.__getitem__, oids))
    failed = {o for o, v in verdict.items() if v is None or isinstance(v, str)}
    if failed:
        at = next(i for i, o in enumerate(oids) if o in failed)
        why = verdict[oids[at]]
        raise RefscopeError(None, why or f"malformed object at '{names[at].decode('utf-8', 'replace')}'")
    return mask


def _read_verdicts(todo: list[bytes], wanted: set[bytes], objects: Objects) -> dict[bytes, bool | str | None]:
    """``points_at_mask``'s verdict on each of the objects ``todo`` that it reads: a blob's from its
    type alone, any other's from the object, read in one pass over each pack in offset order; the
    error's text for one that will not read (a child hands back only what marshal carries)."""
    verdict: dict[bytes, bool | str | None] = {}
    try:
        kinds = objects.odb.types(todo)
    except (RefscopeError, ValueError):  # one will not read: each looked up alone, to say which
        kinds = {}
        for o in todo:
            try:
                kinds.update(objects.odb.types([o]))
            except (RefscopeError, ValueError) as err:
                verdict[o] = str(err)
    verdict.update((o, False) for o in todo if kinds.get(o) == "blob")
    todo = [o for o in todo if o not in verdict]
    objects.prefetch(todo)
    for o in todo:
        try:
            verdict[o] = _tag_points_at(o, wanted, objects)
        except (RefscopeError, ValueError) as err:  # it does not read: said for the first ref it is at
            verdict[o] = str(err)
    return verdict


def _tag_points_at(oid: bytes, wanted: set[bytes], objects: Objects) -> bool | None:
    """match_points_at past the ref's own object (read, and parsed as git parses it): does a tag on
    the way down name one of ``wanted``. What a tag names is read only when its header says it is a
    tag too (git follows ``tag->tagged``, parsing tags only). None: an object on the way does not
    read or parse, or is no tag where a tag said it would be."""
    got = objects.read(oid)
    for _ in range(TAG_CHAIN_MAX):
        if got is None:
            return None
        kind, content = got
        if kind == "commit":  # (what parse_commit_buffer refuses first, as object_headers does)
            return None if not content.startswith(b"tree ") else False
        if kind != "tag":
            return False
        try:
            _, tagged, oid = object_headers(kind, content, oid, b"")
        except RefscopeError:
            return None
        if oid in wanted:
            return True
        if tagged != b"tag":
            return False
        got = objects.read(oid)
        if got is not None and got[0] != "tag":
            return None
    return False
