"""An in-memory Snapshot for the TUI-main tests, and the refs to fill it.

The in-memory snapshot implements ``backend/stores/base.py``'s Snapshot over a sorted list, so widget
behaviour (filtering counts, marking, escaping) can be tested without disk; the workflows that write
(commit through both engines) run against real git repositories instead.
"""

from __future__ import annotations

from bisect import bisect_left

from refscope.backend.formats.loose import OID, SYMREF, LooseRef
from refscope.backend.formats.packed import PackedRefs
from refscope.backend.model import LOOSE, PACKED, SYMREF_MAXDEPTH, Location, Ref


class MemSnapshot:
    """A files-format snapshot: ``packed`` holds the rows located in packed-refs, ``loose`` the loose ones
    (rows located elsewhere are only rows), as the protocol says a files snapshot has them."""

    format = "files"
    hash_name = "sha1"
    gitdir = "/mem/.git"
    commondir = "/mem/.git"
    read_seq = 0  # no store numbered it: never older than another snapshot

    def __init__(self, refs: list[Ref], head: bytes | None = b"refs/heads/main") -> None:
        self.refs = sorted(refs, key=lambda r: r.name)
        self.names = [r.name for r in self.refs]
        self._head = head
        lines = [b"# pack-refs with: peeled fully-peeled sorted \n"]
        self.loose: dict[bytes, LooseRef] = {}
        for r in self.refs:
            if r.location.kind == PACKED and r.oid is not None:
                lines.append(b"%s %s\n" % (r.oid, r.name))
                if r.peeled is not None:
                    lines.append(b"^%s\n" % r.peeled)
            elif r.location.kind == LOOSE:
                kind, value = (SYMREF, r.target) if r.target is not None else (OID, r.oid)
                self.loose[r.name] = LooseRef(r.name, kind, value, r.location.file, (1, 2, 41, 0))
        self.packed = PackedRefs.from_bytes(b"".join(lines), "/mem/.git/packed-refs", self.hash_name)

    def __len__(self) -> int:
        return len(self.refs)

    def row(self, i: int) -> Ref:
        return self.refs[i]

    def name_at(self, i: int) -> bytes:
        return self.names[i]

    def prefix_range(self, prefix: bytes) -> range:
        lo = bisect_left(self.names, prefix)
        hi = lo
        n = len(self.names)
        # upper bound: first name not starting with prefix
        step = 1
        while hi < n and self.names[hi].startswith(prefix):
            hi = min(n, hi + step)
            step *= 2
        lo2, hi2 = lo, hi
        while lo2 < hi2:
            mid = (lo2 + hi2) // 2
            if self.names[mid].startswith(prefix):
                lo2 = mid + 1
            else:
                hi2 = mid
        return range(lo, lo2)

    def lookup(self, name: bytes) -> Ref | None:
        i = bisect_left(self.names, name)
        return self.refs[i] if i < len(self.names) and self.names[i] == name else None

    def iter_from(self, start: bytes = b""):
        return iter(self.refs[bisect_left(self.names, start) :])

    def iter_names(self, start: bytes = b""):
        return (r.name for r in self.iter_from(start))

    def __iter__(self):
        return iter(self.refs)

    def iter_bulk(self, start: bytes = b"", chunk: int = 1024):
        refs = list(self.iter_from(start))
        for i in range(0, len(refs), chunk):
            part = refs[i : i + chunk]
            peeled = [r.peeled for r in part]
            targets = [r.target for r in part]
            yield (
                None,
                (
                    [r.name for r in part],
                    [r.oid for r in part],
                    peeled if any(p is not None for p in peeled) else None,
                    targets if any(t is not None for t in targets) else None,
                ),
            )

    def row_oids(self, lo: int, hi: int) -> list[bytes | None]:
        return [r.oid if r.target is None else None for r in self.refs[lo:hi]]

    def split_name(self, min_size: int = 1 << 20) -> bytes | None:
        return None

    def resolve_full(self, name: bytes) -> tuple[bytes, bytes] | None:
        for _ in range(SYMREF_MAXDEPTH):
            ref = self.head() if name == b"HEAD" else self.lookup(name)
            if ref is None:
                return None
            if ref.target is None:
                return (ref.oid, name) if ref.oid is not None else None
            name = ref.target
        return None

    def resolve(self, name: bytes) -> bytes | None:
        r = self.resolve_full(name)
        return None if r is None else r[0]

    def head(self) -> Ref | None:
        if self._head is None:
            return None
        return Ref(b"HEAD", None, None, self._head, Location(LOOSE, "/mem/.git/HEAD"))

    def reflog(self, name: bytes) -> list:
        return []

    def files(self) -> dict:
        return {"/mem/.git/packed-refs": (1, 2, 1234)}


def oid(n: int) -> bytes:
    return f"{n:040x}".encode()


def packed(name: bytes, n: int, offset: int = 0, peeled: bytes | None = None) -> Ref:
    return Ref(name, oid(n), peeled, None, Location(PACKED, "/mem/.git/packed-refs", offset))


def sample(n_branches: int = 50, n_tags: int = 20) -> MemSnapshot:
    refs = [packed(f"refs/heads/feature/{i:04d}".encode(), i, i * 60) for i in range(n_branches)]
    refs += [
        packed(f"refs/tags/v1.{i}".encode(), 1000 + i, 9000 + i * 60, oid(5000 + i)) for i in range(n_tags)
    ]
    refs.append(packed(b"refs/heads/main", 7, 10))
    refs.append(
        Ref(b"refs/remotes/origin/HEAD", None, None, b"refs/remotes/origin/main", Location(LOOSE, "x"))
    )
    refs.append(packed(b"refs/remotes/origin/main", 7, 20))
    return MemSnapshot(refs)
