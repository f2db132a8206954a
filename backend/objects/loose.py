"""Loose objects: ``objects/xx/yyyy…``, one zlib stream of ``<type> <size>\\0<content>``.

The header is inflated first and checked before the content is, so a loose object that claims 2 GB
is refused (or only its type and size are read) without inflating it.
"""

from __future__ import annotations

import os
import zlib

from ..errors import CorruptStore
from ..fileio import read_regular
from .pack import MAX_INFLATE, TYPE_NAMES

_KINDS = {name.encode(): kind for kind, name in TYPE_NAMES.items()}
_HEADER_MAX = 32  # "commit 18446744073709551615\0" fits


def path_of(objects_dir: str, hexoid: str) -> str:
    return os.path.join(objects_dir, hexoid[:2], hexoid[2:])


def read_loose(path: str, header_only: bool = False) -> tuple[int, int, bytes | None] | None:
    """(type, size, content) of the loose object at ``path`` (content None with ``header_only``), or
    None when there is no such file."""
    try:
        raw, _ = read_regular(path, MAX_INFLATE + 4096 if not header_only else 4096)
    except (FileNotFoundError, NotADirectoryError):
        return None
    d = zlib.decompressobj()
    try:
        head = d.decompress(raw, _HEADER_MAX)
        nul = head.find(b"\0")
        if nul < 0:
            raise CorruptStore(path, "bad loose object header", 0)
        kind_name, _, size_s = head[:nul].partition(b" ")
        kind = _KINDS.get(kind_name)
        if kind is None or not size_s.isdigit() or (len(size_s) > 1 and size_s[:1] == b"0"):
            raise CorruptStore(path, "bad loose object header", 0)
        size = int(size_s)
        if header_only:
            return kind, size, None
        if size > MAX_INFLATE:
            raise CorruptStore(path, f"object too large to read ({size} bytes)", 0)
        body = head[nul + 1 :] + d.decompress(d.unconsumed_tail, max(1, size + 1 - (len(head) - nul - 1)))
    except zlib.error as err:
        raise CorruptStore(path, f"bad zlib stream: {err}", 0) from None
    if len(body) != size or not d.eof:
        raise CorruptStore(path, "loose object size does not match its header", 0)
    return kind, size, body
