"""Reachability for ``--merged``, ``--no-merged``, ``--contains`` and ``--no-contains``: which ref tips
the named commits reach, and which tips reach them.

A commit in the commit-graph is walked by its position there (parents are positions: no object is
inflated, no id is converted); one outside it (newer than the graph, or no graph at all) by its id, from
its own ``parent`` lines. Each walk is iterative and visits a commit once, so the cost is the history's
size once, whatever the number of refs.
"""

from __future__ import annotations

from binascii import unhexlify

from ..errors import RefscopeError
from ..model import TAG_CHAIN_MAX
from .fields import object_headers
from .values import Objects

# ids looked up at once from which a map of every commit-graph id beats a binary search each (the map
# costs a hexlify and a dict entry per commit of the graph)
MAP_MIN = 2048


class Graph:
    def __init__(self, objects: Objects, commit_graph=None) -> None:
        self.objects = objects
        self.cg = commit_graph
        self._parents: dict = {}
        self._positions: dict[bytes, int] | None = None
        self._kinds: dict[bytes, str | None] = {}  # type names learnt by ``prefetch``

    def _position(self, oid: bytes) -> int | None:
        if self.cg is None:
            return None
        if self._positions is None:  # (a few look-ups: a binary search each, no map of the whole graph)
            try:
                raw = unhexlify(oid)
            except ValueError:  # (binascii.Error: not an id, so in no graph, as the map would say)
                return None
            return self.cg.position(raw) if len(raw) == self.cg.rawsz else None
        return self._positions.get(oid.lower())

    def positions(self, oids: list[bytes]) -> list[int | None]:
        """The commit-graph position of each of ``oids`` (None: not there): by C-level passes over a
        map of the whole graph when they are many, by a binary search each when few."""
        if self.cg is None:
            return [None] * len(oids)
        if self._positions is None and len(oids) < MAP_MIN:
            return list(map(self._position, oids))
        return list(map(self._position_map().get, map(bytes.lower, oids)))

    def prefetch(self, oids: list[bytes]) -> None:
        """Learn in bulk the types of those of ``oids`` the commit-graph does not hold (all of them
        without one), from the pack entries' headers: ``commit_of`` then inflates only tags."""
        todo = [o for o in oids if self._position(o) is None and o not in self._kinds]
        if todo:
            self._kinds.update(self.objects.odb.types(todo))

    def nodes_of(self, oids: list[bytes]) -> list:
        """``node(commit_of(oid))`` of each of ``oids`` (None where it is no commit), in bulk: a commit
        the graph holds is its position (one dict look-up), the others' types come from the pack
        entries' headers and only tags are inflated."""
        got = self.positions(oids)
        if None not in got:
            return got
        todo = [o for o, p in zip(oids, got, strict=True) if p is None and o not in self._kinds]
        if todo:
            self._kinds.update(self.objects.odb.types(todo))
        kinds = self._kinds
        return [
            pos
            if pos is not None
            else oid
            if kinds.get(oid) == "commit"
            else self._peeled_node(oid)
            if kinds.get(oid) == "tag"
            else None
            for oid, pos in zip(oids, got, strict=True)
        ]

    def _peeled_node(self, oid: bytes):
        c = self.commit_of(oid)
        return None if c is None else self.node(c)

    def _position_map(self) -> dict[bytes, int]:
        if self._positions is None:
            self._positions = self.cg.hex_positions()
        return self._positions

    def node(self, oid: bytes):
        """The walk's name for commit ``oid``: its commit-graph position, else the id itself."""
        pos = self._position(oid)
        return oid if pos is None else pos

    def commit_of(self, oid: bytes) -> bytes | None:
        """lookup_commit_reference_gently: the commit ``oid`` is or peels to, or None."""
        for _ in range(TAG_CHAIN_MAX):
            if self._position(oid) is not None:
                return oid  # the graph holds commits only
            kind = self._kinds.get(oid, False)
            if kind is False:
                got = self.objects.read(oid)
                kind = None if got is None else got[0]
            if kind == "commit":
                return oid
            if kind != "tag":
                return None
            got = self.objects.read(oid)
            if got is None:
                return None
            try:
                _, _, oid = object_headers("tag", got[1], oid, b"")
            except RefscopeError:
                return None
        return None

    def parents(self, node) -> tuple:
        hit = self._parents.get(node)
        if hit is not None:
            return hit
        if isinstance(node, int):
            hit = self.cg.commit(node)[1]
        else:
            got = self.objects.read(node)
            if got is None or got[0] != "commit":
                raise RefscopeError(None, f"unable to parse commit {node.decode()}")
            _, parents = object_headers("commit", got[1], node, b"")
            if node in getattr(self.objects.odb, "grafted", ()):  # a shallow boundary: git walks no further
                parents = ()
            hit = tuple(self.node(p) for p in parents)
        self._parents[node] = hit
        return hit

    def ancestors(self, tips: list[bytes]) -> set:
        """The walk names of every commit reachable from ``tips``, themselves included."""
        seen: set = set()
        todo = [self.node(t) for t in tips]
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            todo.extend(p for p in self.parents(c) if p not in seen)
        return seen

    def generation(self, node) -> int:
        """The commit-graph's topological level of a walk name (0: unknown, a commit outside the
        graph or a graph written without levels)."""
        return self.cg.commit(node)[2] if isinstance(node, int) else 0

    def _level_cut(self, targets) -> int | None:
        """The level at or below which a graph commit reaches none of the walk names ``targets``: the
        lowest target's (every graph commit when no target is in the graph); None when the levels
        cannot say (no graph, or a target of level 0)."""
        if self.cg is None:
            return None
        levels = [self.generation(t) for t in targets if isinstance(t, int)]
        if not levels:
            return 1 << 62
        return None if 0 in levels else min(levels)

    def containing(self, targets: list[bytes], nodes: list) -> set:
        """Those of the walk names ``nodes`` from which some commit of ``targets`` is reachable.

        A commit the graph holds reaches none of the targets when its topological level is not above
        every target's (a commit's level exceeds each of its ancestors'; the graph holds its commits'
        parents, so it reaches no commit outside it), so the walk stops there, as git's does with
        generation numbers: asking which of a thousand branches contain a new commit walks no old
        history. Levels of 0 (a graph written without them) stop nothing."""
        known: dict = {self.node(t): True for t in targets}
        cut = self._level_cut(known)
        next_of = self.parents
        if cut is not None:
            generation, parents = self.generation, self.parents

            def prune(node) -> None:
                if isinstance(node, int) and node not in known and 0 < generation(node) <= cut:
                    known[node] = False

            def next_of(node):  # (a graph commit at or below the cut is known False before it is walked)
                for p in parents(node):
                    prune(p)
                    yield p

            for tip in nodes:
                prune(tip)
        for tip in nodes:
            if tip in known:
                continue
            stack = [(tip, iter(next_of(tip)))]
            on_path = {tip}
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    stack.pop()
                    on_path.discard(node)
                    known.setdefault(node, False)
                    continue
                got = known.get(nxt)
                if got is True:
                    for n, _ in stack:
                        known[n] = True
                    stack.clear()
                    break
                if got is None and nxt not in on_path:
                    stack.append((nxt, iter(next_of(nxt))))
                    on_path.add(nxt)
        return {t for t in nodes if known.get(t)}
