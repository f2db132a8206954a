"""Opening repository files for reading: the one way every reader does it.

Why one module: a reader that calls ``os.open`` itself sees every errno the kernel can return, and each
one it forgets (EACCES, ELOOP, EIO, EINVAL from mmap on a directory...) escaped as a traceback; a FIFO
named ``packed-refs`` blocked the open forever. Here a file is opened non-blocking (a FIFO never
waits for a writer), checked with ``fstat`` to be a regular file, and every failure other than "not
there" becomes ``UnreadableFile(path, "couldn't read: <why>")`` -- git's ``couldn't read <path>: <why>``
in refscope's ``<file>: <what>`` form. "Not there" (ENOENT, ENOTDIR) stays a plain
``FileNotFoundError``/``NotADirectoryError``: for most readers a missing file is normal (no
packed-refs, a table compacted away meanwhile) and each decides what it means.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat as _stat

from .errors import TransactionRefused, UnreadableFile, os_reason

_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
_MISSING = (FileNotFoundError, NotADirectoryError)


def unreadable(path: str, err: BaseException) -> UnreadableFile:
    """The typed error for ``err`` (an OSError, or MemoryError) met while reading ``path``."""
    if isinstance(err, MemoryError):
        return UnreadableFile(path, os.strerror(errno.ENOMEM), errno.ENOMEM)
    return UnreadableFile(path, os_reason(err), getattr(err, "errno", None))


def open_fd(path: str, follow: bool = True) -> int:
    """A read-only, non-blocking descriptor of ``path`` (a FIFO opens at once), not yet known to be a
    regular file: callers check with ``check_regular`` (``open_regular`` does both)."""
    try:
        return os.open(path, _FLAGS if follow else _FLAGS | os.O_NOFOLLOW)
    except _MISSING:
        raise
    except OSError as err:
        raise unreadable(path, err) from None


def check_regular(fd: int, path: str) -> os.stat_result:
    """fstat of ``fd``; UnreadableFile unless it is a regular file (the caller closes ``fd``)."""
    try:
        st = os.fstat(fd)
    except OSError as err:
        raise unreadable(path, err) from None
    if not _stat.S_ISREG(st.st_mode):
        if _stat.S_ISDIR(st.st_mode):
            raise UnreadableFile(path, os.strerror(errno.EISDIR), errno.EISDIR)
        raise UnreadableFile(path, "not a regular file")
    return st


def open_regular(path: str, follow: bool = True) -> tuple[int, os.stat_result]:
    """(descriptor, fstat) of the regular file ``path``, opened read-only without blocking (``follow``
    False: a symlink is refused with ELOOP, as ``O_NOFOLLOW``).

    ``FileNotFoundError`` / ``NotADirectoryError`` propagate unchanged; anything else that keeps the file
    from being read, including it being a directory, FIFO, socket or device, raises ``UnreadableFile``.
    The caller closes the descriptor."""
    fd = open_fd(path, follow)
    try:
        return fd, check_regular(fd, path)
    except BaseException:
        os.close(fd)
        raise


def read_fd(fd: int, path: str, size: int, limit: int | None = None) -> bytes:
    """The content of the open file ``fd`` (``size``: its fstat size, a hint), at most ``limit`` bytes
    when given. A short read is the end of a regular file: a small file costs one read."""
    want = size if limit is None else min(size, limit)
    chunks = []
    got = 0
    try:
        while limit is None or got < limit:
            n = max(want - got, 4096)
            if limit is not None:
                n = min(n, limit - got)
            chunk = os.read(fd, n)
            if chunk:
                chunks.append(chunk)
                got += len(chunk)
            if len(chunk) < n:
                break
    except (OSError, MemoryError) as err:
        raise unreadable(path, err) from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_prefix(path: str, limit: int, follow: bool = True) -> bytes:
    """At most the first ``limit`` bytes of the regular file ``path`` (small files: HEAD, gitfiles; a
    symlink refused with ELOOP unless ``follow``).
    A read that ends short is the end of a regular file and costs no fstat; an empty or full read is
    checked to come from a regular file (a device never ends, a FIFO reads empty)."""
    fd = open_fd(path, follow)
    try:
        data = read_fd(fd, path, 0, limit)
        if not 0 < len(data) < limit:
            check_regular(fd, path)
        return data
    finally:
        os.close(fd)


def read_regular(path: str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """(content, fstat) of the regular file ``path`` (at most ``limit`` bytes when given), with the
    errors of ``open_regular``."""
    fd, st = open_regular(path)
    try:
        return read_fd(fd, path, st.st_size, limit), st
    finally:
        os.close(fd)


def map_fd(fd: int, path: str, size: int) -> mmap.mmap:
    """A read-only mapping of the first ``size`` bytes of the open regular file ``fd``."""
    try:
        return mmap.mmap(fd, size, prot=mmap.PROT_READ)
    except (OSError, ValueError, OverflowError, MemoryError) as err:
        raise unreadable(path, err) from None


def map_regular(path: str):
    """The whole regular file ``path``, mapped read-only (b"" when empty: an empty file cannot be
    mapped); the descriptor is closed at once. For files read at random: pack indexes, packs, graphs."""
    fd, st = open_regular(path)
    try:
        return map_fd(fd, path, st.st_size) if st.st_size else b""
    finally:
        os.close(fd)


def refused_write(path: str, err: OSError) -> TransactionRefused:
    """The refusal for ``err`` met while a native commit wrote ``path`` (ENOSPC, EDQUOT, EIO, EROFS...):
    git's ``error writing to <path>: <why>``. Raised only after the writer removed what it created, so
    the repository is as it was."""
    return TransactionRefused(path, f"error writing: {err.strerror or err}")


def write_all(fd: int, data: bytes, done=None) -> None:
    """``data`` through ``fd``, short writes continued (the next write says why: ENOSPC...); ``done``
    (a reflog journal's entry) counts the bytes that reached the file, so a failed append can be cut back."""
    n = os.write(fd, data)
    if done is not None:
        done.written = n
    if n == len(data):
        return
    view = memoryview(data)[n:]
    while view:
        n = os.write(fd, view)
        if done is not None:
            done.written += n
        view = view[n:]


__all__ = [
    "write_all",
    "check_regular",
    "map_fd",
    "map_regular",
    "open_fd",
    "open_regular",
    "read_fd",
    "read_prefix",
    "read_regular",
    "refused_write",
    "unreadable",
]


def read_small(path: str, limit: int = 4096, follow: bool = True) -> bytes | None:
    """The first ``limit`` bytes of a small file (HEAD, ``commondir``, a gitfile), or None when it cannot
    be read: missing, not a regular file, unreadable, or (``follow`` False) a symlink. For callers to whom
    an unreadable file means "not there" (discovery looks on; the watcher sees no HEAD); a FIFO never
    blocks (``read_prefix``)."""
    try:
        return read_prefix(path, limit, follow)
    except (OSError, UnreadableFile):
        return None


__all__.append("read_small")
