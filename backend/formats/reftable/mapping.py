"""The bytes of one reftable file: read or mapped, holding no file descriptor wherever that is possible.

(``table_contents``; the Table decodes whatever it returns: an mmap, bytes, or a ``_Mapping``.)
"""

# ruff: noqa: SIM105  (contextlib pulls in functools and types: ~1.5 ms on every reftable CLI run)
from __future__ import annotations

import mmap
import os
import sys

from ...errors import CorruptStore
from ...fileio import unreadable

READ_UP_TO = 256 * 1024  # tables up to this size are read, not mapped (see table_contents)
_TRACKFD = sys.version_info >= (3, 13)  # mmap.mmap(trackfd=False): a mapping without a descriptor


def table_contents(fd: int, size: int, path: str):
    """The bytes of the table open at ``fd`` (an mmap, bytes or a ``_Mapping``), holding no descriptor
    of their own wherever that is possible: a stack of any length must open where git's does.

    Why: ``mmap.mmap`` before Python 3.13 keeps a dup of the descriptor for the mapping's life, so a stack
    of a thousand tables held a thousand descriptors and failed with EMFILE (git, mapping in C, holds none).
    Small tables, nearly every table of a long stack, are read with one pread: faster to open than a
    mapping, and small in memory. Larger ones are mapped: without a descriptor on 3.13+; before that by
    ``mmap.mmap`` only while this process uses under half of its descriptor limit, which leaves the other
    half to lock files, pipes, the TUI and the watcher (the lowest free descriptor tells: every lower one
    is open; ``fd`` itself is closed and reused for the next table, the dups pile up above it); beyond
    that by libc's own mmap through ctypes (lazy like any mapping, no descriptor), or read outright where
    ctypes cannot map."""
    if size <= READ_UP_TO:
        return _read(fd, size, path)
    if _TRACKFD:
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ, trackfd=False)
    try:
        low = os.dup(fd)  # the lowest free descriptor (every lower one is open), where mmap's dup would go
        os.close(low)
    except OSError:
        low = -1  # none free at all
    limit = os.sysconf("SC_OPEN_MAX")
    if low >= 0 and (limit < 0 or 2 * low < limit):
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as e:
            from errno import EMFILE, ENFILE

            if e.errno not in (EMFILE, ENFILE):
                raise
    got = _Mapping.of(fd, size)
    return got if got is not None else _read(fd, size, path)


def _read(fd: int, size: int, path: str) -> bytes:
    """The first ``size`` bytes of ``fd`` (a table is never rewritten in place: a short read is damage)."""
    try:
        data = os.pread(fd, size, 0)
        while len(data) < size:
            more = os.pread(fd, size - len(data), len(data))
            if not more:
                raise CorruptStore(
                    path, f"file shrank while being read ({len(data)} of {size} bytes)", len(data)
                )
            data += more
    except OSError as e:
        raise unreadable(path, e) from None
    return data


class _Mapping:
    """A read-only shared mapping made by libc's mmap, which keeps no descriptor. Indexes and slices as an
    mmap does (an int; bytes, copied): nothing outside refers to the memory, so it is unmapped by
    ``close`` or when this object is collected without use-after-unmap."""

    __slots__ = ("_view", "_addr", "_size")
    _libc = None  # (mmap, munmap) of libc, set up once

    @classmethod
    def of(cls, fd: int, size: int) -> _Mapping | None:
        """The whole file mapped, or None when ctypes or the mapping is not available."""
        try:
            import ctypes
        except ImportError:
            return None
        if cls._libc is None:
            libc = ctypes.CDLL(None, use_errno=True)
            mm, unmap = libc.mmap, libc.munmap
            mm.restype = ctypes.c_void_p
            mm.argtypes = (
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_long,
            )
            unmap.restype = ctypes.c_int
            unmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
            cls._libc = (mm, unmap)
        addr = cls._libc[0](None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if not addr or addr == ctypes.c_void_p(-1).value:  # MAP_FAILED
            return None
        self = cls.__new__(cls)
        self._addr = addr
        self._size = size
        self._view = memoryview((ctypes.c_ubyte * size).from_address(addr)).cast("B")
        return self

    def __getitem__(self, key):
        got = self._view[key]
        return got if key.__class__ is int else got.tobytes()

    def __len__(self) -> int:
        return self._size

    def close(self) -> None:
        """Unmap. Safe: no view of the memory ever leaves this object (``__getitem__`` copies)."""
        view = self._view
        if view is not None:
            view.release()
            self._view = None
            self._libc[1](self._addr, self._size)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit ctypes may be gone: the process unmaps it anyway
            pass
