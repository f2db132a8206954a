"""Loose refs and reflogs of the files backend, read as refs/files-backend.c reads them.

Why these rules: ``git for-each-ref`` is the oracle, and it skips directory entries starting with ``.``
or ending in ``.lock``, follows symlinked files and directories, treats a symlink whose target starts
with ``refs/`` and is a valid name as a symref, reads a file's first line(s) right-trimmed (``ref:``
plus whitespace then the target, or a hex oid optionally followed by whitespace and anything), and
hides names that fail ``check_refname`` (dying on unsafe ones). Per-worktree refs (``refs/bisect/``,
``refs/worktree/``, ``refs/rewritten/``) are listed from the worktree's git dir, the rest from the
common dir, exactly as git's loose ref cache substitutes those three directories.
"""

from __future__ import annotations

import errno
import os
import stat as _stat
import time
from collections import namedtuple

from ..errors import CorruptStore, UnreadableFile
from ..fileio import check_regular, open_fd, read_fd, read_regular
from ..model import PER_WORKTREE_PREFIXES, LogEntry
from ..refname import check_refname, is_safe_refname

_HEX = b"0123456789abcdefABCDEF"
_WS = b" \t\n\r\v\f"
MAX_CONTENT = 1 << 16  # bytes of a loose ref file read before its value is decided (see read_contents)

# kinds of loose values
OID = "oid"
SYMREF = "symref"
BROKEN = "broken"  # unreadable or unparsable content: git hides the ref (REF_ISBROKEN)


class LooseRef(
    namedtuple("LooseRef", "name kind value path ident bad_name ctime_ns read_ns", defaults=(False, 0, 0))
):
    """One loose ref file: its value and the identity of the file it came from.

    ``kind``: OID | SYMREF | BROKEN; ``value``: oid hex (lowercase) for OID, target name for SYMREF;
    ``ident``: (dev, ino, size, mtime_ns) from lstat; ``bad_name``: fails check_refname (git hides it);
    ``ctime_ns``: st_ctime_ns from the same lstat; ``read_ns``: file-system clock (coarse) just before the
    lstat (see is_racy)."""

    __slots__ = ()


# The clock file systems stamp mtime/ctime with (the kernel's coarse wall clock, 5 on Linux): a file
# written after we read this clock gets a timestamp >= it. The fine clock runs ahead by up to a tick.
_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5) if hasattr(time, "clock_gettime_ns") else None


def fs_clock_ns() -> int:
    """Now, on the clock file systems use for timestamps (never ahead of any timestamp written later)."""
    if _COARSE is not None:
        try:
            return time.clock_gettime_ns(_COARSE)
        except OSError:
            pass
    return time.time_ns() - 10_000_000


def is_racy(st: os.stat_result, read_ns: int) -> bool:
    """git's racy-git rule for a file whose identity looks unchanged since it was read at ``read_ns``.

    ext4 hands a freed inode straight back and its timestamps tick every few ms, so a file rewritten
    (lock + rename, twice) after the read can keep (dev, inode, size, mtime). Only a file whose mtime
    and ctime are both strictly older than the read is known to hold what was read; anything else is
    "racily clean" and must be read again. Whole-second timestamps (coarse file systems) widen the
    window to 2 s, others to 10 ms (sub-tick rounding). Files written long ago never qualify, so an
    unchanged refresh stays one lstat per file.
    """
    t = max(st.st_mtime_ns, st.st_ctime_ns)
    slack = 2_000_000_000 if t % 1_000_000_000 == 0 else 10_000_000
    return t + slack >= read_ns


def parse_contents(data: bytes, hexlen: int) -> tuple[str, bytes | None]:
    """git's parse_loose_ref_contents over the right-trimmed file content."""
    data = data.rstrip(_WS)
    if data.startswith(b"ref:"):
        return SYMREF, data[4:].lstrip(_WS)
    oid = data[:hexlen]
    if len(oid) != hexlen or oid.translate(None, _HEX) or (len(data) > hexlen and data[hexlen] not in _WS):
        return BROKEN, None
    return OID, oid.lower()


def read_contents(path: str, follow: bool = True) -> bytes:
    """The bytes of the loose ref file ``path`` that decide its value: a huge file is not read whole.

    Its value is a hex oid followed by whitespace or nothing (the first ``MAX_CONTENT`` bytes decide), or
    ``ref:`` and a target, right-trimmed: past ``MAX_CONTENT`` only whether the rest is all whitespace
    matters (then it is trimmed away); when it is not, the target is longer than any path, git could
    never resolve it and hides the ref: the bounded prefix is returned with a NUL, which parses as broken.
    Errors are ``fileio``'s: FileNotFoundError / NotADirectoryError, else UnreadableFile (``follow``
    False: a symlink is one, with ELOOP)."""
    fd = open_fd(path, follow)
    try:
        data = read_fd(fd, path, 0, MAX_CONTENT)
        if not 0 < len(data) < MAX_CONTENT:
            check_regular(fd, path)  # only now: a short read ends a regular file (one syscall less)
        if len(data) == MAX_CONTENT and data.startswith(b"ref:"):
            while chunk := read_fd(fd, path, 1 << 20, 1 << 20):
                if chunk.translate(None, _WS):
                    return data + b"\0"  # cut: a NUL keeps the (never resolvable) target broken
    finally:
        os.close(fd)
    return data


def _ident(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_loose_file(
    path: str, name: bytes, hexlen: int, st: os.stat_result | None = None, read_ns: int | None = None
) -> LooseRef | None:
    """Read one loose ref file (None when it vanished or is a directory). ``read_ns``: ``fs_clock_ns()``
    taken before ``st`` was (taken here when both are None)."""
    if read_ns is None:
        read_ns = fs_clock_ns() if st is None else 0
    try:
        if st is None:
            st = os.lstat(path)
        if _stat.S_ISLNK(st.st_mode):
            target = os.fsencode(os.readlink(path))
            if target.startswith(b"refs/") and check_refname(target) is None and b"/" in target:
                return LooseRef(name, SYMREF, target, path, _ident(st), False, st.st_ctime_ns, read_ns)
            st2 = os.stat(path)
            if _stat.S_ISDIR(st2.st_mode):
                return None
        elif _stat.S_ISDIR(st.st_mode):
            return None
        data = read_contents(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except (OSError, UnreadableFile):  # unreadable, a FIFO...: git hides it as broken
        if st is None:
            return LooseRef(name, BROKEN, None, path, (0, 0, 0, 0))
        return LooseRef(name, BROKEN, None, path, _ident(st), False, st.st_ctime_ns, read_ns)
    kind, value = parse_contents(data, hexlen)
    return LooseRef(name, kind, value, path, _ident(st), False, st.st_ctime_ns, read_ns)


def still_valid(old: LooseRef, st: os.stat_result, path: str) -> bool:
    """May ``old`` (read earlier) stand for the file ``path`` whose lstat is now ``st``?"""
    return (
        old.path == path
        and old.ident == _ident(st)
        and old.ctime_ns == st.st_ctime_ns
        and not is_racy(st, old.read_ns)
    )


def same_value(a: LooseRef, b: LooseRef) -> bool:
    """Same file, same identity, same content: ``b`` (a re-read) can replace ``a`` in place."""
    return a[:6] == b[:6] and a.ctime_ns == b.ctime_ns


def _scan_dir(
    base: str, prefix: bytes, out: list[tuple[bytes, str, os.stat_result | None]], skip_top: bool
) -> None:
    """Walk ``base`` (the directory of names ``prefix``...), collecting (name, path, lstat) of files."""
    try:
        it = os.scandir(base)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as err:
        raise CorruptStore(base, f"cannot read directory: {err.strerror}") from None
    subdirs: list[tuple[str, bytes]] = []  # walked once this directory is closed (one fd at a time)
    with it:  # streamed, lock files dropped by their str name first: a files transaction of 700k refs
        for entry in it:  # keeps 700k ``*.lock`` files here while the watcher refreshes
            ename = entry.name
            if ename[:1] == "." or ename.endswith(".lock"):
                continue
            name = prefix + os.fsencode(ename)
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                continue
            if is_dir:
                sub = name + b"/"
                if not (skip_top and sub in PER_WORKTREE_PREFIXES):  # those: from the worktree's git dir
                    subdirs.append((entry.path, sub))
                continue
            try:
                if not entry.is_file(follow_symlinks=True):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            out.append((name, entry.path, st))
    for path, sub in subdirs:
        _scan_dir(path, sub, out, False)


def list_loose_files(gitdir: str, commondir: str) -> list[tuple[bytes, str, os.stat_result | None]]:
    """Every loose ref file under ``refs/``: shared ones from the common dir, per-worktree ones from the
    worktree's git dir (for the main worktree both are the same directory). Sorted by name."""
    out: list[tuple[bytes, str, os.stat_result | None]] = []
    _scan_dir(os.path.join(commondir, "refs"), b"refs/", out, True)
    for d in PER_WORKTREE_PREFIXES:
        _scan_dir(os.path.join(gitdir, os.fsdecode(d[:-1])), d, out, False)
    out.sort(key=lambda t: t[0])
    return out


def read_loose_refs(
    gitdir: str,
    commondir: str,
    hexlen: int,
    previous: dict[bytes, LooseRef] | None = None,
) -> dict[bytes, LooseRef]:
    """All loose refs by name. A file of ``previous`` is not re-read when its (dev, inode, size, mtime,
    ctime) are unchanged and it is not racily clean (``is_racy``). A racy file re-read to the same value
    replaces its entry IN ``previous`` (an equal value with a newer read time: callers comparing
    entries by identity still see "unchanged", and the file stops being racy once the clock moves on).

    Names failing check_refname are kept with ``bad_name`` set (git hides them); an unsafe one raises
    CorruptStore with git's "loose refname is dangerous".
    """
    read_ns = fs_clock_ns()  # before any lstat: a file written after this has a timestamp >= it
    out: dict[bytes, LooseRef] = {}
    for name, path, st in list_loose_files(gitdir, commondir):
        if st is None:
            continue
        old = previous.get(name) if previous else None
        if old is not None and still_valid(old, st, path):
            out[name] = old
            continue
        ref = read_loose_file(path, name, hexlen, st, read_ns)
        if ref is None:
            continue
        if check_refname(name) is not None:
            if not is_safe_refname(name):
                raise CorruptStore(path, f"loose refname is dangerous: {name.decode('utf-8', 'replace')}")
            ref = ref._replace(bad_name=True)
        if old is not None and same_value(old, ref):
            previous[name] = ref  # type: ignore[index]
        out[name] = ref
    return out


def reflog_path(gitdir: str, commondir: str, name: bytes) -> str:
    if name.startswith(PER_WORKTREE_PREFIXES) or not name.startswith(b"refs/"):
        return os.path.join(gitdir, "logs", os.fsdecode(name))
    return os.path.join(commondir, "logs", os.fsdecode(name))


def _tz_minutes(tz: bytes) -> int:
    sign = -1 if tz[:1] == b"-" else 1
    digits = tz[1:5]
    return sign * (int(digits[:2]) * 60 + int(digits[2:4]))


def parse_reflog_line(line: bytes, hexlen: int) -> LogEntry | None:
    """One ``old new Name <email> time tz\\tmessage`` line; None when git would skip it as corrupt."""
    if not line.endswith(b"\n"):
        return None
    old, new = line[:hexlen], line[hexlen + 1 : 2 * hexlen + 1]
    if (
        len(line) < 2 * hexlen + 2
        or line[hexlen : hexlen + 1] != b" "
        or line[2 * hexlen + 1 : 2 * hexlen + 2] != b" "
        or old.translate(None, _HEX)
        or new.translate(None, _HEX)
    ):
        return None
    p = 2 * hexlen + 2
    email_end = line.find(b">", p)
    if email_end < 0 or line[email_end + 1 : email_end + 2] != b" ":
        return None
    ident = line[p : email_end + 1]
    rest = line[email_end + 2 :]
    i = 0
    while i < len(rest) and 0x30 <= rest[i] <= 0x39:
        i += 1
    if i == 0:
        return None
    timestamp = int(rest[:i])
    if timestamp == 0:
        return None
    msg = rest[i:]
    if (
        len(msg) < 6
        or msg[:1] != b" "
        or msg[1:2] not in (b"+", b"-")
        or not all(0x30 <= c <= 0x39 for c in msg[2:6])
    ):
        return None
    tz = _tz_minutes(msg[1:6])
    message = msg[7:] if msg[6:7] == b"\t" else msg[6:]
    if message.endswith(b"\n"):
        message = message[:-1]
    lt = ident.find(b"<")
    name = ident[:lt].rstrip(b" ") if lt >= 0 else ident
    email = ident[lt + 1 : -1] if lt >= 0 else b""
    return LogEntry(old.lower(), new.lower(), name, email, timestamp, tz, message)


def read_reflog(path: str, hexlen: int) -> list[LogEntry]:
    """The reflog file at ``path``, newest first (as ``git reflog show``); [] when there is none."""
    try:
        data = read_regular(path)[0]
    except (FileNotFoundError, NotADirectoryError):
        return []
    except UnreadableFile as err:
        if err.errno == errno.EISDIR:
            return []
        raise
    out = []
    for line in reversed(data.splitlines(keepends=True)):
        ent = parse_reflog_line(line, hexlen)
        if ent is not None:
            out.append(ent)
    return out
