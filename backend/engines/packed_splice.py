"""Rewriting packed-refs without a deleted record: a splice of the old file's bytes, one ``writev``.

git (with the 2026 fwrite patch) copies every unchanged record through stdio: ~1,600 ``write`` calls for
100k refs. Here the new file is the standard header followed by the byte ranges of the old mapping that
survive, handed to the kernel in one ``os.writev`` per 1,024 ranges (IOV_MAX). Unchanged records and their
``^peeled`` lines are byte-identical by construction.

The file is read by the one packed-refs reader (``formats.packed.PackedRefs``): the engine uses the mapping
the snapshot already holds when the file is unchanged, so a commit re-reads nothing.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os

from ..fileio import refused_write
from ..lockfile import create_temp, discard
from .crashpoint import step

HEADER = b"# pack-refs with: peeled fully-peeled sorted \n"
IOV_MAX = 1024


def identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def kept_ranges(packed, dropped: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte ranges of every record of ``packed`` (a PackedRefs) not in ``dropped``, in name order,
    adjacent ranges merged. Every record stays, broken names included, as git's rewrite keeps them."""
    size = packed.size
    if packed.sorted:
        out: list[tuple[int, int]] = []
        pos = packed.header_end
        for start, end in sorted(dropped):
            if start > pos:
                out.append((pos, start))
            pos = end
        if pos < size:
            out.append((pos, size))
        return out
    gone = set(dropped)
    out = []
    for rec in packed.iter_from():  # an unsorted file: its records in name order (git writes them sorted)
        s, e = rec.offset, rec.offset + rec.length
        if (s, e) in gone:
            continue
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def write_spliced(new_path: str, buf, kept: list, do_fsync: bool) -> None:
    """Create ``new_path`` (O_EXCL, as git's tempfile) holding the header + ``kept`` ranges of ``buf``
    (an item that is ``bytes`` is written as it is)."""
    step("create packed-refs.new")
    try:
        fd = create_temp(new_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC)
    except OSError as err:
        raise refused_write(new_path, err) from None
    try:
        mv = memoryview(buf) if kept else None
        iov = [HEADER]
        total = len(HEADER)
        for item in kept:
            if type(item) is bytes:  # a record inserted (a nested rename's new name: update/nested.py)
                iov.append(item)
                total += len(item)
                continue
            s, e = item
            iov.append(mv[s:e])
            total += e - s
        step("write packed-refs.new")
        written = 0
        for i in range(0, len(iov), IOV_MAX):
            chunk = iov[i : i + IOV_MAX]
            n = os.writev(fd, chunk)
            want = sum(len(c) for c in chunk)
            while n < want:  # short write (rare: signals, huge files): finish this chunk by hand
                rest = b"".join(bytes(c) for c in chunk)[n:]
                n += os.write(fd, rest)
            written += want
        del iov
        if mv is not None:
            mv.release()
        if written != total:
            raise OSError(5, "short write")
        if do_fsync:
            step("fsync packed-refs.new")
            os.fsync(fd)
    except BaseException as err:
        os.close(fd)
        discard(new_path)
        if isinstance(err, OSError):  # disk full, quota, I/O error: refused, nothing left behind
            raise refused_write(new_path, err) from None
        raise
    try:
        os.close(fd)  # (a network file system may report a failed write only here)
    except OSError as err:
        discard(new_path)
        raise refused_write(new_path, err) from None
