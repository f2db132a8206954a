"""The ``refscope delete --stdin`` line format, ``REF [OLD_OID]``: one parser and one writer for it.

The CLI reads it from stdin; the TUI exports its queue in it and loads such a file back, so a queue saved
from the TUI is exactly what ``refscope delete --no-deref --stdin`` (the TUI's own kind of transaction: a
queued symref is deleted itself) commits. Names are raw bytes, one per line, as git's own stdin formats
take them; a line is split on ASCII blanks and ends at LF (a CR before it is dropped).
"""

from __future__ import annotations

import os

from .errors import BadLine, RefscopeError
from .model import HASH_HEXSZ
from .refname import check_old_oid

_BLANKS = (b" ", b"\t", b"\r", b"\v", b"\f")
DEFAULT_NAME = "refscope-queue.txt"


def parse_lines(data: bytes, file: str | None = None) -> list[tuple[bytes, bytes | None]]:
    """(name, old oid or None) of every non-blank line of ``data``; BadLine for a line of more than two
    fields. Names and oids are not checked here (the transaction checks them, with git's wording)."""
    if not any(c in data for c in _BLANKS):  # names only (no OLD_OID, no blanks): one C-level split
        return [(line, None) for line in data.split(b"\n") if line]
    out = []
    for number, line in enumerate(data.split(b"\n"), 1):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) > 2:
            raise BadLine(file, f"line {number}: expected 'REF [OLD_OID]', found {len(parts)} fields", line)
        out.append((parts[0], parts[1] if len(parts) == 2 else None))
    return out


def format_lines(pairs) -> bytes:
    """``REF OLD_OID`` (or ``REF`` alone when the old value is None) per pair, LF-terminated, raw bytes."""
    return b"".join(name + b" " + old + b"\n" if old else name + b"\n" for name, old in pairs)


def read_file(path: str, hash_name: str) -> list[tuple[bytes, bytes | None]]:
    """The pairs of the queue file ``path``, every name and oid checked as git checks them: the first bad
    line is refused with its number (``<path>: line N: ...``); an unreadable file with the OS's reason."""
    from .display import escape_name
    from .fileio import read_regular
    from .refname import check_refname, is_safe_refname

    try:
        data, _st = read_regular(path)
    except (FileNotFoundError, NotADirectoryError) as err:
        raise RefscopeError(path, f"couldn't read: {err.strerror}") from None
    # (read_regular types every other OSError: UnreadableFile "couldn't read: ...")
    pairs = parse_lines(data, path)
    lines = [i for i, line in enumerate(data.split(b"\n"), 1) if line.strip()] if pairs else []
    hexsz = HASH_HEXSZ.get(hash_name, HASH_HEXSZ["sha1"])
    for (name, old), number in zip(pairs, lines, strict=False):
        why = check_refname(name)
        if why is not None or not is_safe_refname(name):
            raise BadLine(path, f"line {number}: bad ref name '{escape_name(name)}'")
        problem = None if old is None else check_old_oid(old, hexsz)
        if problem == "invalid":
            raise BadLine(
                path, f"line {number}: bad old oid '{escape_name(old)}' (expected {hexsz} hex digits)"
            )
        if problem == "zero":
            raise BadLine(path, f"line {number}: zero old oid for '{escape_name(name)}'")
    return [(name, None if old is None else old.lower()) for name, old in pairs]


def write_file(path: str, pairs) -> int:
    """Write the queue file ``path`` (created or truncated; a FIFO or device is refused, never waited on).
    Returns the bytes written. Errors: ``RefscopeError(path, "couldn't write: <why>")``."""
    data = format_lines(pairs)
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        raise RefscopeError(path, f"couldn't write: {err.strerror or err}") from None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefscopeError(path, "couldn't write: not a regular file")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as err:
        raise RefscopeError(path, f"couldn't write: {err.strerror or err}") from None
    finally:
        os.close(fd)
    return len(data)
