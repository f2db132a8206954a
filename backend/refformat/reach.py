"""Reachability for ``--merged``, ``--no-merged``, ``--contains`` and ``--no-contains``: which ref tips
the named commits reach, and which tips reach them.

Parents come from the commit-graph when it has the commit (no object is inflated), else from the
commit's own ``parent`` lines. Each walk is iterative and visits a commit once, so the cost is the
history's size once, whatever the number of refs.
"""

from __future__ import annotations

from ..errors import RefscopeError
from .values import Objects, object_headers


class Graph:
    def __init__(self, objects: Objects, commit_graph=None) -> None:
        self.objects = objects
        self.cg = commit_graph
        self._parents: dict[bytes, tuple[bytes, ...]] = {}

    def commit_of(self, oid: bytes) -> bytes | None:
        """lookup_commit_reference_gently: the commit ``oid`` is or peels to, or None."""
        for _ in range(64):
            got = self.objects.read(oid)
            if got is None:
                return None
            if got[0] == "commit":
                return oid
            if got[0] != "tag":
                return None
            try:
                _, _, oid = object_headers("tag", got[1], oid, b"")
            except RefscopeError:
                return None
        return None

    def parents(self, oid: bytes) -> tuple[bytes, ...]:
        hit = self._parents.get(oid)
        if hit is not None:
            return hit
        if self.cg is not None:
            pos = self.cg.position(bytes.fromhex(oid.decode()))
            if pos is not None:
                _, ps, _ = self.cg.commit(pos)
                hit = tuple(self.cg.oid(p).hex().encode() for p in ps)
                self._parents[oid] = hit
                return hit
        got = self.objects.read(oid)
        if got is None or got[0] != "commit":
            raise RefscopeError(None, f"unable to parse commit {oid.decode()}")
        _, parents = object_headers("commit", got[1], oid, b"")
        hit = self._parents[oid] = tuple(parents)
        return hit

    def ancestors(self, tips: list[bytes]) -> set[bytes]:
        """Every commit reachable from ``tips``, themselves included."""
        seen: set[bytes] = set()
        todo = list(tips)
        while todo:
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            todo.extend(p for p in self.parents(c) if p not in seen)
        return seen

    def containing(self, targets: set[bytes], tips: list[bytes]) -> set[bytes]:
        """The commits of ``tips`` from which some commit of ``targets`` is reachable."""
        known: dict[bytes, bool] = {t: True for t in targets}
        for tip in tips:
            if tip in known:
                continue
            stack = [(tip, iter(self.parents(tip)))]
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
                    for n, _ in stack:
                        on_path.discard(n)
                    stack.clear()
                    break
                if got is None and nxt not in on_path:
                    stack.append((nxt, iter(self.parents(nxt))))
                    on_path.add(nxt)
        return {t for t in tips if known.get(t)}
