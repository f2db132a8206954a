"""The one small interface both ref stores (files, reftable) implement.

A Snapshot is immutable: it maps the files it was built from and decodes rows on demand. Row order is
git's order (bytewise by name), the same set ``git for-each-ref`` prints (HEAD and other pseudo/root refs
outside ``refs/`` are not rows; ``head()`` reads HEAD).

Opening must be cheap (a 1M-ref snapshot ready to show its first rows in < 50 ms): work proportional
to the number of refs (e.g. building a row index for random access) happens lazily, on first need,
and is cached inside the snapshot. ``iter_from`` never needs the row index.

What every snapshot has is below. What one store's snapshots have besides, a caller reaches after testing
``snap.format`` (never by probing with getattr/hasattr):

- ``format == "files"`` (stores/files.py ``FilesSnapshot``): ``packed`` (the ``PackedRefs`` it read; an
  empty one when there is no file), ``loose`` (name -> ``LooseRef`` of every loose file under refs/),
  ``head_file`` (HEAD's ``LooseRef`` or None), ``repo``.
- ``format == "reftable"`` (stores/reftable ``ReftableSnapshot``): ``stack`` and ``worktree_stack`` (the
  common stack and the worktree's, or None), ``tables`` and ``worktree_tables`` (their ``Table`` lists,
  oldest first), ``tables_list_stat``, ``stacks`` (stack dir -> tables), ``store``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..model import LogEntry, Ref


class Snapshot(Protocol):
    format: str  # "files" or "reftable"
    hash_name: str  # "sha1" or "sha256"
    gitdir: str  # the per-worktree git dir this snapshot was opened for
    commondir: str  # where the shared refs live
    read_seq: int  # when the store started reading (stores/seq.py); 0 for a snapshot no store numbered

    def __len__(self) -> int:
        """Number of effective refs (may build the row index on first call)."""

    def row(self, i: int) -> Ref:
        """The i-th effective ref in name order (IndexError outside 0..len-1)."""

    def name_at(self, i: int) -> bytes:
        """Just the name of row i: the cheap path for rendering and bisecting."""

    def prefix_range(self, prefix: bytes) -> range:
        """Rows whose names start with ``prefix``, by binary search (no scan)."""

    def lookup(self, name: bytes) -> Ref | None:
        """The effective ref of that exact name, or None. Does not need the row index."""

    def iter_from(self, start: bytes = b"") -> Iterator[Ref]:
        """Refs in name order from the first name >= ``start``: streaming, no row index needed."""

    def __iter__(self) -> Iterator[Ref]: ...

    def iter_names(self, start: bytes = b"") -> Iterator[bytes]:
        """Just the names of ``iter_from(start)``: the cheap streaming path for rendering and filtering."""

    def iter_bulk(self, start: bytes = b"", chunk: int = 1024) -> Iterator[tuple[list | None, tuple | None]]:
        """The rows of ``iter_from(start)`` a batch at a time, for bulk output (``refscope list``): each
        batch is ``(pairs, None)`` or ``(None, columns)``. ``pairs`` = ``[oid0, name0, oid1, name1, ...]``
        of plain refs (one oid, no peeled value, not a symref) whose names pass check_refname and are
        printable ASCII without '"' (output can be formatted from them with one ``%`` per batch);
        ``columns`` = ``(names, oids, peeled, targets)``, lists of equal length (``peeled``/``targets``
        None when every entry would be None; a symref has oid None)."""

    def row_oids(self, lo: int, hi: int) -> list[bytes | None]:
        """The object ids of rows ``lo..hi-1`` (None for a symref) without a ``Ref`` per row, for a
        caller that wants every row's id (the TUI's tip columns)."""

    def split_name(self, min_size: int = 1 << 20) -> bytes | None:
        """A ref name near the middle of the listing, so a bulk reader can list ``< name + NUL`` and ``>=``
        it in two processes; None when the store is smaller than ``min_size`` bytes or cannot tell
        cheaply (the listing then goes one way)."""

    def resolve(self, name: bytes) -> bytes | None:
        """The oid ``name`` finally points at, following symrefs as git does (at most
        ``model.SYMREF_MAXDEPTH`` reads); None when it does not resolve."""

    def resolve_full(self, name: bytes) -> tuple[bytes, bytes] | None:
        """``resolve`` with the name it ends at: (oid, final ref name), as git's %(objectname) and
        %(symref) show a symref; None when it does not resolve."""

    def head(self) -> Ref | None:
        """HEAD of this snapshot's worktree (symref or detached), or None if missing."""

    def reflog(self, name: bytes) -> list[LogEntry]:
        """The reflog of ``name`` newest first, as ``git reflog show`` lists it; [] when none."""

    def files(self) -> dict[str, tuple[int, int, int]]:
        """Identity of every file this snapshot read: path -> (st_dev, st_ino, st_size).

        Refresh compares these to reuse unchanged parts; the watcher uses them to classify changes.
        """
