"""``%(ahead-behind:<committish>)``: for each ref, how many commits its tip has that the base has not, and
how many the base has that the tip has not (``git rev-list --left-right --count base...tip``, reversed).

git counts every pair in one walk (commit-reach.c ahead_behind): each commit carries the set of starting
commits that reach it, children before parents, and a commit every start reaches ends the walk there
because it can count for no pair. The same here, the set an int used as a bit array: the bases are the
low bits, each distinct tip commit one bit above them, so refs sharing a tip share a bit and the cost is
one pass over the history the starts reach, whatever the number of refs.
"""

from __future__ import annotations

from ..model import Ref
from .reach import Graph


def columns(graph: Graph, bases: list[bytes], refs: list[Ref]) -> list[list[bytes]]:
    """One column per commit of ``bases``: ``b"<ahead> <behind>"`` per ref, ``b""`` for a ref whose
    object is no commit (git prints nothing for it)."""
    tip_of: dict[bytes, object] = {}
    for r in refs:
        if r.oid not in tip_of:
            c = graph.commit_of(r.oid)
            tip_of[r.oid] = None if c is None else graph.node(c)
    tips = list(dict.fromkeys(n for n in tip_of.values() if n is not None))
    starts = [graph.node(b) for b in bases]
    counts = _walk(graph, starts, tips)
    out = []
    for j in range(len(starts)):
        per_tip = {t: b"%d %d" % counts(j, i) for i, t in enumerate(tips)}
        per_tip[None] = b""
        out.append([per_tip[tip_of[r.oid]] for r in refs])
    return out


def _walk(graph: Graph, starts: list, tips: list):
    """Walk from every start (bases first, then tips), children before parents; returns ``counts(j,
    i)`` -> (ahead, behind) of tip ``i`` against base ``j``."""
    k = len(starts)
    nodes = starts + tips
    full = (1 << len(nodes)) - 1
    mask: dict = {}
    for i, n in enumerate(nodes):
        mask[n] = mask.get(n, 0) | (1 << i)
    order = _children_first(graph, list(dict.fromkeys(nodes)))
    t = len(tips)
    with_base = [0] * k  # commits the base reaches (and not every start)
    both = [[0] * t for _ in range(k)]  # per tip: commits both reach
    ahead = [[0] * t for _ in range(k)]  # per tip: commits the tip reaches and the base does not
    for node in order:
        m = mask.pop(node, 0)
        if m == full:
            for p in graph.parents(node):
                mask[p] = full
            continue
        reached = []  # the tips reaching this commit
        b = m >> k
        while b:
            low = b & -b
            reached.append(low.bit_length() - 1)
            b ^= low
        for j in range(k):
            if m >> j & 1:
                with_base[j] += 1
                where = both[j]
            else:
                where = ahead[j]
            for i in reached:
                where[i] += 1
        for p in graph.parents(node):
            mask[p] = mask.get(p, 0) | m

    def counts(j: int, i: int) -> tuple[int, int]:
        return ahead[j][i], with_base[j] - both[j][i]

    return counts


def _children_first(graph: Graph, starts: list) -> list:
    """Every commit reachable from ``starts``, each before all of its parents (a reversed post-order of
    an iterative depth-first walk)."""
    post: list = []
    seen: set = set()
    for s in starts:
        if s in seen:
            continue
        seen.add(s)
        stack = [(s, iter(graph.parents(s)))]
        while stack:
            node, it = stack[-1]
            for p in it:
                if p not in seen:
                    seen.add(p)
                    stack.append((p, iter(graph.parents(p))))
                    break
            else:
                stack.pop()
                post.append(node)
    post.reverse()
    return post
