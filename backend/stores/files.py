"""The files backend: ``packed-refs`` plus loose refs, merged as git merges them (loose wins).

Why this shape: ``packed-refs`` can hold a million records and is mapped, never parsed whole at open;
loose refs are usually few and are read eagerly (one small read each), so a snapshot is cheap to make
and immutable once made. Rows are the merged, visible refs in name order: a loose entry shadows the
packed record of the same name (even a broken loose file does, as in git's overlay iterator), and what
git hides stays hidden (names failing check_refname, unparsable loose files, null oids, symrefs that do
not resolve). Random access by row maps through the packed row index plus a short table of where the
loose refs fall, so ``row(i)`` costs one bisect.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator

from ..errors import CorruptStore
from ..formats.loose import (
    BROKEN,
    OID,
    SYMREF,
    LooseRef,
    fs_clock_ns,
    read_loose_file,
    read_loose_refs,
    read_reflog,
    reflog_path,
    same_value,
    still_valid,
)
from ..formats.packed import PackedRecord, PackedRefs
from ..model import HASH_HEXSZ, LOOSE, PACKED, SYMREF_MAXDEPTH, Location, LogEntry, Ref
from ..refname import check_refname, is_safe_refname, is_valid_refname
from ..refpattern import prefix_successor
from ..repo import Repo
from .seq import next_read_seq

# How many names ``iter_names`` streams from the records before it builds the row index: a record read
# costs a few times a row's, and a pass over a million-record file to build the index ~0.3 s.
STREAMED_NAMES = 4096


def _same_file(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    """Same (dev, inode, size, mtime, ctime), or both missing."""
    if a is None or b is None:
        return a is None and b is None
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (
        b.st_dev,
        b.st_ino,
        b.st_size,
        b.st_mtime_ns,
        b.st_ctime_ns,
    )


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


class FilesStore:
    """A files-backend ref store of one worktree of a repository."""

    format = "files"

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.gitdir = repo.gitdir
        self.commondir = repo.commondir
        self.packed_path = os.path.join(repo.commondir, "packed-refs")
        self.hexlen = HASH_HEXSZ[repo.hash_name]

    def snapshot(self) -> FilesSnapshot:
        seq = next_read_seq()
        packed = PackedRefs.open(self.packed_path, self.repo.hash_name)
        loose = read_loose_refs(self.gitdir, self.commondir, self.hexlen)
        head = self._read_head()
        snap = FilesSnapshot(self.repo, packed, loose, head)
        snap.read_seq = seq
        return snap

    def refresh(self, previous: FilesSnapshot) -> FilesSnapshot:
        """A snapshot of now, reusing the mapped packed-refs and every loose file whose (dev, inode,
        size, mtime, ctime) did not change, unless the file is racily clean (written no earlier than it
        was read: ext4 reuses a freed inode at once and its mtime ticks every few ms, so a rewrite can
        keep all four). A racy file is read again; when it reads the same, the entry is kept (its read
        time renewed in place). ``previous`` itself when nothing changed."""
        if previous is None or previous.format != "files":
            return self.snapshot()
        seq = next_read_seq()
        packed = previous.packed
        if not packed.still_valid(_stat_or_none(self.packed_path)):
            fresh = PackedRefs.open(self.packed_path, self.repo.hash_name)
            if _same_file(fresh.stat, packed.stat) and packed.same_bytes(fresh):
                packed.read_ns = fresh.read_ns  # racy but unchanged: keep the mapping and its caches
                fresh.close()
            else:
                fresh.follow(packed)  # its row index can then be derived from packed's (time ~ the change)
                packed = fresh
        loose = read_loose_refs(self.gitdir, self.commondir, self.hexlen, previous=previous.loose)
        head = self._read_head(previous)
        if (
            packed is previous.packed
            and head == previous.head_file
            and len(loose) == len(previous.loose)
            and all(previous.loose.get(k) is v for k, v in loose.items())
        ):
            return previous
        snap = FilesSnapshot(self.repo, packed, loose, head)
        snap.read_seq = seq
        return snap

    def _read_head(self, prev_snap: FilesSnapshot | None = None) -> LooseRef | None:
        """HEAD's file; the previous snapshot's entry when the file surely did not change (as loose
        refs: identity plus the racy-git rule; a racy re-read of the same value renews it in place)."""
        path = os.path.join(self.gitdir, "HEAD")
        previous = prev_snap.head_file if prev_snap is not None else None
        read_ns = fs_clock_ns()
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if previous is not None and st is not None and still_valid(previous, st, path):
            return previous
        if st is None:
            return None
        lr = read_loose_file(path, b"HEAD", self.hexlen, st, read_ns)
        if previous is not None and lr is not None and same_value(previous, lr):
            prev_snap.head_file = lr
        return lr


class FilesSnapshot:
    """An immutable merged view of packed + loose refs (see the module docstring)."""

    format = "files"

    def __init__(self, repo: Repo, packed: PackedRefs, loose: dict[bytes, LooseRef], head: LooseRef | None):
        self.repo = repo
        self.hash_name = repo.hash_name
        self.gitdir = repo.gitdir
        self.commondir = repo.commondir
        self.packed = packed
        self.loose = loose
        self.head_file = head
        self.hexlen = HASH_HEXSZ[repo.hash_name]
        self.loose_names = sorted(loose)
        # visible loose refs, in name order
        self._loose_refs: list[Ref] = []
        for name in self.loose_names:
            ref = self._loose_visible(loose[name])
            if ref is not None:
                self._loose_refs.append(ref)
        self._loose_vis_names = [r.name for r in self._loose_refs]
        self.read_seq = 0  # set by the store (seq.next_read_seq) before anyone sees the snapshot
        self._merge: tuple[list[int], list[int], list[int]] | None = None  # see _merge_table
        self._len: int | None = None

    # -- loose values ------------------------------------------------------------------------------
    def _loose_visible(self, lr: LooseRef) -> Ref | None:
        """The Ref a loose entry shows in listings, or None when git hides it."""
        if lr.bad_name or lr.kind == BROKEN:
            return None
        loc = Location(LOOSE, lr.path)
        if lr.kind == OID:
            if not lr.value.strip(b"0"):
                return None  # null oid: git treats it as broken
            return Ref(lr.name, lr.value, None, None, loc)
        # symref: shown when it resolves to an object id that is not null (git marks a loose entry
        # resolving to the null oid broken, even through a packed null record, which itself is listed)
        oid = self.resolve(lr.name)
        if oid is None or not oid.strip(b"0"):
            return None
        return Ref(lr.name, None, None, lr.value, loc)

    def loose_value(self, name: bytes) -> LooseRef | None:
        """The loose file entry of ``name`` (any kind, hidden or not), or None."""
        return self.loose.get(name)

    def resolve(self, name: bytes) -> bytes | None:
        """The oid ``name`` finally points at (symrefs followed as git does), or None."""
        r = self.resolve_full(name)
        return None if r is None else r[0]

    def resolve_full(self, name: bytes) -> tuple[bytes, bytes] | None:
        """(oid, final ref name) following symrefs as git's resolve_ref (at most ``SYMREF_MAXDEPTH``
        reads); None if unresolvable."""
        for _ in range(SYMREF_MAXDEPTH):
            lr = self.head_file if name == b"HEAD" else self.loose.get(name)
            if lr is not None:
                if lr.kind == OID:
                    return None if not lr.value.strip(b"0") else (lr.value, name)
                if lr.kind == BROKEN:
                    return None
                target = lr.value
                if check_refname(target) is not None:
                    return None
                name = target
                continue
            if not name.startswith(b"refs/"):
                return None
            rec = self._packed_lookup(name)
            if rec is None:
                return None
            return rec.oid, name
        return None

    # -- packed helpers ----------------------------------------------------------------------------
    def packed_visible(self, rec: PackedRecord) -> bool:
        """Does git list this packed record (a name failing check_refname is hidden; a dangerous one
        raises CorruptStore, as git dies)? Shadowing by loose refs is the caller's."""
        if is_valid_refname(rec.name):
            return True
        if not is_safe_refname(rec.name):
            raise CorruptStore(
                self.packed.path,
                f"packed refname is dangerous: {rec.name.decode('utf-8', 'replace')}",
                rec.offset,
            )
        return False

    def _packed_lookup(self, name: bytes) -> PackedRecord | None:
        rec = self.packed.lookup(name)
        if rec is None or not self.packed_visible(rec):
            return None
        return rec

    def packed_ref(self, rec: PackedRecord) -> Ref:
        """The Ref a packed record stands for (its location the record's offset)."""
        return Ref(rec.name, rec.oid, rec.peeled, None, Location(PACKED, self.packed.path, rec.offset))

    # -- the Snapshot interface --------------------------------------------------------------------
    def split_name(self, min_size: int = 1 << 20) -> bytes | None:
        """The name of the packed record nearest the middle of packed-refs, so a bulk reader can list
        ``< name + NUL`` and ``>=`` it separately (as ``ReftableSnapshot.split_name``); None for a file
        smaller than ``min_size`` bytes, not in name order, or whose middle record does not read cleanly
        (the listing then goes one way and reports it)."""
        packed = self.packed
        if packed.size < min_size or not packed.in_name_order:
            return None
        try:
            name = packed.name_at(packed.middle_record())
        except CorruptStore:
            return None
        return name if name.startswith(b"refs/") else None

    def lookup(self, name: bytes) -> Ref | None:
        lr = self.loose.get(name)
        if lr is not None:
            i = bisect.bisect_left(self._loose_vis_names, name)
            if i < len(self._loose_vis_names) and self._loose_vis_names[i] == name:
                return self._loose_refs[i]
            return None
        rec = self._packed_lookup(name)
        return None if rec is None else self.packed_ref(rec)

    def iter_from(self, start: bytes = b"") -> Iterator[Ref]:
        loose = self.loose
        lnames = self._loose_vis_names
        lrefs = self._loose_refs
        li = bisect.bisect_left(lnames, start)
        ln = len(lnames)
        packed_ok = self.packed_visible
        packed_ref = self.packed_ref
        for rec in self.packed.iter_from(start):
            name = rec.name
            while li < ln and lnames[li] < name:
                yield lrefs[li]
                li += 1
            if name in loose:
                continue  # shadowed by a loose entry (visible or not)
            if packed_ok(rec):
                yield packed_ref(rec)
        while li < ln:
            yield lrefs[li]
            li += 1

    def iter_names(self, start: bytes = b"") -> Iterator[bytes]:
        """The names of the rows from the first name >= ``start``: row by row from the row index, which
        a caller that reads only a few names (is anything under a prefix?) must not pay a pass over
        the whole file for. Until the index is built, the first ``STREAMED_NAMES`` come from the
        records themselves (``iter_from``); a caller that goes on then gets the index's speed."""
        if not self.packed.indexed:
            for n, ref in enumerate(self.iter_from(start), 1):
                yield ref.name
                if n == STREAMED_NAMES:
                    break
            else:
                return
            start = ref.name + b"\0"  # the least name after it
        name_at = self.name_at
        for i in range(self._position(start), len(self)):
            yield name_at(i)

    def iter_bulk(self, start: bytes = b"", chunk: int = 1024) -> Iterator[tuple[None, tuple]]:
        """``iter_from(start)`` as column batches (the protocol's general form; ``refscope list`` reads
        packed-refs its own way)."""
        from .batches import ref_batches

        return ref_batches(self.iter_from(start), chunk)

    def __iter__(self) -> Iterator[Ref]:
        return self.iter_from(b"")

    def _merge_table(self) -> tuple[list[int], list[int], list[int]]:
        """(sorted packed rows that are not rows here: shadowed by any loose entry or hidden by name;
        for each of them, how many packed rows before it are rows here; merged row of each visible
        loose ref). Needs the packed row index."""
        m = self._merge
        if m is not None:
            return m
        packed = self.packed
        packed.starts()
        excl = set(packed.hidden_rows())
        for name in self.loose_names:
            span = packed.locate(name)
            if span is not None:
                excl.add(packed.row_of_offset(span[0]))
        excluded = sorted(excl)
        kept_before = [s - t for t, s in enumerate(excluded)]
        lrows = []
        for k, name in enumerate(self._loose_vis_names):
            p = packed.row_of_offset(packed.seek(name))
            lrows.append(p - bisect.bisect_left(excluded, p) + k)
        self._merge = m = (excluded, kept_before, lrows)
        return m

    def __len__(self) -> int:
        """Counted without the row index: packed records, minus hidden ones and those a loose entry
        shadows (each once), plus the visible loose refs."""
        n = self._len
        if n is None:
            packed = self.packed
            n_excl = len(packed.hidden_rows())
            for name, lr in self.loose.items():
                if not lr.bad_name and packed.locate(name) is not None:
                    n_excl += 1  # (a bad name's packed record is among the hidden already)
            n = self._len = len(packed) - n_excl + len(self._loose_refs)
        return n

    def _locate_row(self, i: int) -> tuple[Ref | None, int]:
        """Row i is either a visible loose ref (returned) or packed row j (returned as the int)."""
        if i < 0:
            i += len(self)
        packed = self.packed
        if not self.loose and not packed.hidden_rows():
            starts = packed.starts()
            if not 0 <= i < len(starts):
                raise IndexError(i)
            return None, i
        excluded, kept_before, lrows = self._merge_table()
        if not 0 <= i < len(self):
            raise IndexError(i)
        k = bisect.bisect_left(lrows, i)
        if k < len(lrows) and lrows[k] == i:
            return self._loose_refs[k], -1
        r = i - k  # the r-th packed row that is a row here
        return None, r + bisect.bisect_right(kept_before, r)

    def row(self, i: int) -> Ref:
        ref, j = self._locate_row(i)
        if ref is not None:
            return ref
        return self.packed_ref(self.packed.record_at(self.packed.starts()[j]))

    def row_oids(self, lo: int, hi: int) -> list[bytes | None]:
        """The object ids of rows ``lo..hi-1`` (None for a symref), without a ``Ref`` per row: the bulk
        path of the TUI's tip columns (``refformat.tip_table``): each id sliced from packed-refs (or taken
        from the loose ref), all checked as hex at once; a chunk with an id that is not goes row by row,
        which reports the damaged record as the store does."""
        packed = self.packed
        hi = min(hi, len(self))
        if lo >= hi:
            return []
        starts = packed.starts()
        buf, n = packed.buf, self.hexlen
        if not self.loose and not packed.hidden_rows():
            # read (pread), not sliced from the mapping: a pass over every row then leaves no page of
            # packed-refs resident (all of it counted in the RSS)
            base = starts[lo]
            data = packed.read(base, starts[hi] if hi < len(starts) else packed.size)
            oids = [data[s - base : s - base + n] for s in starts[lo:hi]]
            if not b"".join(oids).translate(None, b"0123456789abcdef"):
                return oids
        else:  # loose refs among them: each row located (a bisection), packed ids sliced
            locate = self._locate_row
            oids = []
            for i in range(lo, hi):
                ref, j = locate(i)
                oids.append(ref.oid if ref is not None else buf[starts[j] : starts[j] + n])
            if not b"".join(o for o in oids if o is not None).translate(None, b"0123456789abcdef"):
                return oids
        return [self.row(i).oid for i in range(lo, hi)]

    def name_at(self, i: int) -> bytes:
        ref, j = self._locate_row(i)
        if ref is not None:
            return ref.name
        return bytes(self.packed.name_at(self.packed.starts()[j]))

    def _position(self, name: bytes) -> int:
        """Merged row of the first ref whose name is >= ``name``."""
        packed = self.packed
        p = packed.row_of_offset(packed.seek(name))
        if not self.loose and not packed.hidden_rows():
            return p
        excluded, _kept, _lrows = self._merge_table()
        return p - bisect.bisect_left(excluded, p) + bisect.bisect_left(self._loose_vis_names, name)

    def prefix_range(self, prefix: bytes) -> range:
        if not prefix:
            return range(0, len(self))
        lo = self._position(prefix)
        succ = prefix_successor(prefix)
        hi = len(self) if succ is None else self._position(succ)
        return range(lo, hi)

    def head(self) -> Ref | None:
        lr = self.head_file
        if lr is None or lr.kind == BROKEN:
            return None
        loc = Location(LOOSE, lr.path)
        if lr.kind == SYMREF:
            return Ref(b"HEAD", None, None, lr.value, loc)
        return Ref(b"HEAD", lr.value, None, None, loc)

    def reflog(self, name: bytes) -> list[LogEntry]:
        return read_reflog(reflog_path(self.gitdir, self.commondir, name), self.hexlen)

    def files(self) -> dict[str, tuple[int, int, int]]:
        out: dict[str, tuple[int, int, int]] = {}
        ident = self.packed.identity()
        if ident is not None:
            out[self.packed.path] = ident[:3]
        for lr in self.loose.values():
            out[lr.path] = lr.ident[:3]
        if self.head_file is not None:
            out[self.head_file.path] = self.head_file.ident[:3]
        return out

    # -- for ``refscope stack`` ----------------------------------------------------------------------
    def summary(self) -> dict:
        """The packed-refs summary; ``traits`` stay bytes (display and JSON go through ``display``)."""
        p = self.packed
        return {
            "format": "files",
            "path": p.path,
            "exists": p.stat is not None,
            "size": p.size,
            "records": len(p),
            "traits": list(p.traits),
            "sorted": p.sorted,
            "peeled": p.peeled_trait,
            "header_end": p.header_end,
            "loose": len(self.loose),
            "loose_visible": len(self._loose_refs),
            "hash": self.hash_name,
        }
