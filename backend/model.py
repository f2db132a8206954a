"""Small immutable records shared by every store and view.

NamedTuples, not dataclasses: ``import dataclasses`` pulls in ``inspect`` and costs ~6 ms on the CLI path.
Names are bytes (git's names are bytes; display goes through ``display.escape_name`` only).
Object ids are lowercase hex as ASCII ``bytes`` (the form packed-refs, loose files and JSON all want).
"""

from __future__ import annotations

from typing import NamedTuple

# Where a ref's effective value lives.
LOOSE = "loose"
PACKED = "packed"
TABLE = "table"


class Location(NamedTuple):
    """Where a ref's value was read from.

    kind: LOOSE (file = path of the loose ref), PACKED (file = packed-refs path, offset = record offset),
    TABLE (file = table file name, offset = block offset of the record, update_index = record's index).
    """

    kind: str
    file: str
    offset: int = -1
    update_index: int = -1


class Ref(NamedTuple):
    """One effective ref. Exactly one of ``oid`` / ``target`` is set (a symref has ``target``)."""

    name: bytes
    oid: bytes | None
    peeled: bytes | None
    target: bytes | None
    location: Location


class LogEntry(NamedTuple):
    """One reflog entry, as ``git reflog`` would show it (newest first in lists)."""

    old: bytes  # hex
    new: bytes  # hex
    name: bytes  # committer name
    email: bytes  # without <>
    time: int  # seconds since the epoch
    tz: int  # minutes east of UTC, e.g. +0200 -> 120
    message: bytes
    update_index: int = -1  # reftable only
