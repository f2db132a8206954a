"""``for-each-ref`` at scale over two columns: the refs' names and ids in name order, as the listing
gives them, and a format whose every atom is the refname or depends on the object id alone.

At a million refs the cost is in what is done per ref, not per object (a hosting server's refs share
their tips), and a pass over a million refs costs about as much as the memory it touches. So: each ref
is touched by a few C-level calls and no Python code -- its name is appended to its tip's group (one
dict lookup), or in name order its tip's line prefix is looked up through the ref that first had the
id. Everything else -- reading objects, making values, sorting -- is done per distinct tip: each line
is ``prefix + name + suffix``, the prefix and suffix made once per tip; the sort orders the tips by
their keys (a stable sort per key, least significant first), and the refs of tips whose keys all tie
are merged by name, which is git's last word (compare_refs: ``strcmp`` of the refnames; a name holds no
NUL, so that is the order of bytes).
"""

from __future__ import annotations

from collections import defaultdict, deque
from itertools import chain, islice
from operator import eq

from . import tipreads
from .fields import cstr
from .spec import Atom, Format
from .values import tip_atom

_FORK_MIN = 200_000  # refs below which the lines are made in one process


def fits(f: Format, atoms: list[Atom], keys, omit_empty: bool, escaped: bool) -> bool:
    """Can this format and sort go the bulk way? At most one ``%(refname)`` in the format, every other
    atom a tip's; the sort the refname alone (either way) or tip atoms compared as numbers or bytes."""
    if omit_empty or escaped:
        return False
    names = 0
    for piece in f.pieces:
        if isinstance(piece, bytes):
            continue
        a = atoms[piece]
        if _is_refname(a):
            names += 1
        elif not tip_atom(a):
            return False
    if names > 1:
        return False
    if len(keys) == 1 and _is_refname(atoms[keys[0][0]]) and not keys[0][2]:
        return True
    return all(tip_atom(atoms[k]) and not version for k, _, version in keys)


def _is_refname(a: Atom) -> bool:
    return a.name == "refname" and a.arg is None and not a.deref


def names_only(f: Format, atoms: list[Atom]) -> bool:
    """Is every atom of the format the refname (no tip is looked up for its lines)?"""
    return all(isinstance(piece, bytes) or _is_refname(atoms[piece]) for piece in f.pieces)


def name_lines(f: Format, atoms: list[Atom]):
    """(a format ``names_only``) listing text (``oid SP name LF`` lines) -> the format's lines of those
    names: each chunk of the listing is turned into output as it is made, so neither a million names
    nor the listing's own text are ever held."""
    from .context import columns_of

    return lambda data: _names_text(f, atoms, columns_of([data]).names)


def _names_text(f: Format, atoms: list[Atom], names: list[bytes]) -> bytes:
    """(a format ``names_only``) the lines of the refs ``names``: one join."""
    if not names:
        return b""
    (head,), tails = _affixes(f, atoms, [], 1)
    return head * len(names) if tails is None else head + (tails[0] + head).join(names) + tails[0]


def by_name(atoms: list[Atom], keys) -> bool:
    """Is the sort the refname alone (the refs keep the listing's order: no tip is grouped)?"""
    return len(keys) == 1 and _is_refname(atoms[keys[0][0]])


def lines(f: Format, atoms: list[Atom], keys, numeric: list[bool], names: list[bytes], oids: list[bytes],
          ev, limit: int | None, keep: list | None = None, finish=None, *,
          read_all: bool = True) -> list[bytes] | None:  # fmt: skip
    """The output (chunks of whole lines) for the refs ``names``/``oids``; None when a tip's object is
    missing or refused (``tipreads.tip_columns``): the per-ref path then reports it as git does. ``keep``
    takes the groups and columns (see ``run.for_each_ref``); ``finish``: a child's reads begun on the
    listing's text (``tipreads.tip_columns_of_text``; a sort by tip keys without a limit only).
    ``read_all``: every ref's tip is evaluated even past ``limit``, as git does when it sorts
    (``run.streams``)."""
    if by_name(atoms, keys):
        return _in_name_order(f, atoms, names, oids, ev, keys[0][1], limit, read_all)
    if finish is None and limit is None:
        finish = tipreads.tip_columns_early(ev, oids)  # a child reads tips while the refs are grouped
    groups: defaultdict[bytes, list[bytes]] = defaultdict(list)
    deque(map(list.append, map(groups.__getitem__, oids), names), maxlen=0)
    if keep is not None:
        keep.append(groups)
    cols = tipreads.tip_columns(ev, list(groups)) if finish is None else finish(list(groups))
    if cols is None:
        return None
    tips, strs, nums = cols
    heads, tails = _affixes(f, atoms, strs, len(tips))
    order = list(range(len(tips)))
    key_cols = []
    for k, reverse, _ in reversed(keys):
        col = nums[k] if numeric[k] else [s if b"\0" not in s else cstr(s) for s in strs[k]]
        order.sort(key=col.__getitem__, reverse=reverse)
        key_cols.append(col)
    key = key_cols[0] if len(key_cols) == 1 else list(zip(*key_cols, strict=True))
    members = list(map(groups.__getitem__, tips))
    run = _Run(order, key, members, heads, tails)
    if keep is not None:
        keep.append((cols, run))
    if limit is not None or len(names) < _FORK_MIN:
        return [run.text(0, len(order), limit)]
    from ..parallel import both, may_fork

    mid = run.boundary(len(order) // 2)
    if not may_fork() or mid >= len(order):
        return [run.text(0, len(order), None)]
    # the second half's lines made by a child meanwhile
    return list(both(lambda: run.text(0, mid, None), lambda: run.text(mid, len(order), None)))


class _Run:
    """The sorted tips and what their lines are made of, turned into text a range of tips at a time."""

    __slots__ = ("order", "key", "members", "heads", "tails")

    def __init__(self, order: list[int], key: list, members: list, heads: list, tails: list | None) -> None:
        self.order = order
        self.key = key
        self.members = members
        self.heads = heads
        self.tails = tails

    def boundary(self, i: int) -> int:
        """The first place at or after ``i`` that does not cut a run of tied tips."""
        order, key = self.order, self.key
        while 0 < i < len(order) and key[order[i]] == key[order[i - 1]]:
            i += 1
        return i

    def text(self, lo: int, hi: int, limit: int | None) -> bytes:
        """The lines of the tips ``order[lo:hi]`` (at most ``limit`` of them). Without a limit, each
        stretch of tips with no tie is made by C-level calls alone (one join per tip, one for them
        all); a tied run goes through ``_lines``."""
        if limit is not None:
            return b"".join(self._lines(lo, hi, limit))
        key = self.key
        ks = list(map(key.__getitem__, self.order[lo:hi]))
        ties = list(map(eq, ks, islice(ks, 1, None)))  # ties[i]: the tip at lo + i ties with the next
        out: list[bytes] = []
        i = lo
        while i < hi:
            try:
                t = ties.index(True, i - lo) + lo
            except ValueError:
                t = hi
            if t > i:
                out.append(self._untied(i, t))
            if t >= hi:
                break
            j = self.boundary(t + 1)
            out.extend(self._lines(t, min(j, hi), None))
            i = j
        return b"".join(out)

    def _untied(self, lo: int, hi: int) -> bytes:
        order = self.order[lo:hi]
        heads = list(map(self.heads.__getitem__, order))
        groups = map(self.members.__getitem__, order)
        if self.tails is None:  # no %(refname): one line per ref, the same for all
            return b"".join(map(bytes.__mul__, heads, map(len, groups)))
        tails = list(map(self.tails.__getitem__, order))
        bodies = map(bytes.join, map(bytes.__add__, tails, heads), groups)
        return b"".join(chain.from_iterable(zip(heads, bodies, tails, strict=True)))

    def _lines(self, lo: int, hi: int, limit: int | None) -> list[bytes]:
        order, key, members, heads, tails = self.order, self.key, self.members, self.heads, self.tails
        out: list[bytes] = []
        left = sum(map(len, map(members.__getitem__, order[lo:hi]))) if limit is None else limit
        i = lo
        while i < hi and left > 0:
            t = order[i]
            j = i + 1
            kt = key[t]
            while j < hi and key[order[j]] == kt:
                j += 1
            if j == i + 1:
                group = members[t]
                if len(group) > left:
                    group = group[:left]
                left -= len(group)
                out.append(_chunk(heads, tails, t, group))
            else:  # tips tied on every key: their refs by name, each line with its own tip's text
                tied = sorted((name, u) for u in order[i:j] for name in members[u])[:left]
                left -= len(tied)
                out.extend(_chunk(heads, tails, u, [name]) for name, u in tied)
            i = j
        return out


def _chunk(heads: list[bytes], tails: list[bytes] | None, t: int, group: list[bytes]) -> bytes:
    """The lines of the refs ``group`` (names) of tip ``t``."""
    head = heads[t]
    if tails is None:  # no %(refname): one line per ref, the same for all
        return head * len(group)
    tail = tails[t]
    return head + (tail + head).join(group) + tail


def _affixes(f: Format, atoms: list[Atom], strs: list, n: int) -> tuple[list[bytes], list[bytes] | None]:
    """Per tip, the line's text before ``%(refname)`` and after it (with the LF); without one, the
    whole line and None."""
    before: list = []
    after: list = []
    side = before
    for piece in f.pieces:
        if isinstance(piece, bytes):
            side.append(piece)
        elif _is_refname(atoms[piece]):
            side = after
        else:
            side.append(strs[piece])
    has_name = side is after
    side.append(b"\n")
    return _joined(before, n), (_joined(after, n) if has_name else None)


def _joined(parts: list, n: int) -> list[bytes]:
    """Per tip, its pieces (literal bytes, or a column of values per tip) joined."""
    cols = [p for p in parts if not isinstance(p, bytes)]
    if not cols:
        return [b"".join(parts)] * n
    texts = [b""]
    for p in parts:
        if isinstance(p, bytes):
            texts[-1] += p
        else:
            texts.append(b"")
    if len(cols) == 1:
        head, tail = texts
        return [head + v + tail for v in cols[0]] if head or tail else list(cols[0])
    template = b"%s".join(t.replace(b"%", b"%%") for t in texts)
    return list(map(template.__mod__, zip(*cols, strict=True)))


def _in_name_order(f: Format, atoms: list[Atom], names: list[bytes], oids: list[bytes], ev, reverse: bool,
                   limit: int | None, read_all: bool) -> list[bytes] | None:  # fmt: skip
    """``--sort=refname`` (or ``-refname``): the refs as listed; each ref's prefix and suffix looked up
    by its id (one dict pass over the ids). With ``read_all`` and a limit,
    every tip is evaluated first, so that one git cannot evaluate fails here as it fails git's sort."""
    if (
        limit is not None
        and read_all
        and len(names) > 1
        and tipreads.tip_columns(ev, list(dict.fromkeys(oids))) is None
    ):
        return None
    if limit is not None:
        names, oids = (names[:limit], oids[:limit]) if not reverse else (names[-limit:], oids[-limit:])
    if not names:
        return []
    if names_only(f, atoms):  # the name alone: no tip is looked up, nor a line made per ref
        return [_names_text(f, atoms, names[::-1] if reverse else names)]
    cols = tipreads.tip_columns(ev, list(dict.fromkeys(oids)))
    if cols is None:
        return None
    tips, strs, _ = cols
    heads, tails = _affixes(f, atoms, strs, len(tips))
    if reverse:
        names, oids = names[::-1], oids[::-1]
    head_col = list(map(dict(zip(tips, heads, strict=True)).__getitem__, oids))  # each ref's tip's text
    if tails is None:
        return [b"".join(head_col)]
    if all(t is tails[0] or t == tails[0] for t in tails):
        tail = tails[0]
        return [tail.join(map(bytes.__add__, head_col, names)) + tail]
    tail_col = list(map(dict(zip(tips, tails, strict=True)).__getitem__, oids))
    return [b"".join(map(b"".join, zip(head_col, names, tail_col, strict=True)))]
