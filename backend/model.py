"""Small immutable records shared by every store and view.

Named tuples, not dataclasses: ``import dataclasses`` pulls in ``inspect`` and costs ~6 ms on the CLI path;
built with ``collections.namedtuple`` (not ``typing.NamedTuple``) so that modules on the CLI path need not
import ``typing`` (~5 ms with the ``re`` it pulls in) for them.
Names are bytes (git's names are bytes; display goes through ``display.escape_name`` only).
Object ids are lowercase hex as ASCII ``bytes`` (the form packed-refs, loose files and JSON all want).
"""

from __future__ import annotations

from collections import namedtuple

# Where a ref's effective value lives.
LOOSE = "loose"
PACKED = "packed"
TABLE = "table"

# refs.c: resolving a name reads at most this many refs, so a chain of symrefs resolves only when a ref
# that is not a symref comes within those reads (at most SYMREF_MAXDEPTH - 1 hops); a longer chain is "too
# many levels" (ELOOP) and for-each-ref does not list the name. Every store's resolver uses this one rule.
SYMREF_MAXDEPTH = 5


class Location(namedtuple("Location", "kind file offset update_index", defaults=(-1, -1))):
    """Where a ref's value was read from (``offset`` and ``update_index`` default to -1).

    kind: LOOSE (file = path of the loose ref), PACKED (file = packed-refs path, offset = record offset),
    TABLE (file = table file name, offset = block offset of the record, update_index = record's index).
    """

    __slots__ = ()


class Ref(namedtuple("Ref", "name oid peeled target location")):
    """One effective ref: ``name`` (bytes), ``oid``/``peeled``/``target`` (bytes or None), ``location``
    (Location). Exactly one of ``oid`` / ``target`` is set (a symref has ``target``)."""

    __slots__ = ()


class LogEntry(namedtuple("LogEntry", "old new name email time tz message update_index", defaults=(-1,))):
    """One reflog entry, as ``git reflog`` would show it (newest first in lists).

    ``old``/``new``: hex bytes; ``name``: committer name; ``email``: without <>; ``time``: seconds since the
    epoch; ``tz``: minutes east of UTC (+0200 -> 120); ``message``: bytes; ``update_index``: reftable only
    (-1 otherwise)."""

    __slots__ = ()


# The hash functions of extensions.objectFormat: the width of an object id, raw and as hex. Every reader,
# writer and check takes its widths from here, so that a third hash is one line.
HASH_RAWSZ = {"sha1": 20, "sha256": 32}
HASH_HEXSZ = {"sha1": 40, "sha256": 64}

# refs.c is_per_worktree_ref: refs under these prefixes live with each worktree, not in the common dir.
PER_WORKTREE_PREFIXES = (b"refs/bisect/", b"refs/worktree/", b"refs/rewritten/")

# A tag of a tag of ... this deep is a loop in a hostile repository: every peel stops here (git follows a
# chain without a bound; a real one is a handful of tags).
TAG_CHAIN_MAX = 64
