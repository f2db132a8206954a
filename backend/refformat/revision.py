"""Revisions as the ref filters take them (``--merged``, ``--contains``, ``--points-at``,
``%(ahead-behind:...)``, the TUI's ``merged:`` filter), read as git's get_oid reads the part of its syntax
that names one object without a reflog, an index or a path.

A revision is a base -- a full object id, a ref name as rev-parse's rules complete it (``main``,
``tags/v1``, ``origin``), ``@`` for HEAD, or an abbreviated object id no ref name takes (get_oid_basic's
order: refs first, then get_short_oid) -- followed by any number of suffixes: ``~<n>`` (the n-th first
parent; ``~`` is ``~1``), ``^<n>`` (the n-th parent; ``^`` is ``^1``, ``^0`` the commit itself),
``^{}`` (the tag chain peeled) and ``^{commit}``/``^{tag}``/``^{tree}``/``^{blob}``/``^{object}``. A ref
name holds neither ``~`` nor ``^`` (check_refname_format), so the base ends at the first of them.

What git reads and this does not (``@{...}``, ``:path``, ``^{/text}``) is refused in one line naming
it, not guessed; what git refuses is refused in git's words (``malformed object name X``).
"""

from __future__ import annotations

import os
import re

from ..errors import RefscopeError
from ..model import TAG_CHAIN_MAX
from ..refname import REV_PARSE_RULES as RULES
from .fields import object_headers

_HEX = b"0123456789abcdef"
_SUFFIX = re.compile(rb"\^\{(commit|tag|tree|blob|object|)\}|~([0-9]*)|\^([0-9]*)")
_UNSUPPORTED = (b"@{", b":", b"^{/")


def resolve_rev(snap, hexsz: int, text: str, odb=None) -> bytes:
    """The object id ``text`` names; abbreviated ids and suffixes only with ``odb`` to read objects in
    (without one, a suffix is refused as unsupported)."""
    raw = os.fsencode(text)
    for mark in _UNSUPPORTED:
        if mark in raw:
            raise _unsupported(text)
    cut = min((i for i in (raw.find(b"~"), raw.find(b"^")) if i >= 0), default=len(raw))
    base, suffixes = raw[:cut], raw[cut:]
    if suffixes and odb is None:
        raise _unsupported(text)
    malformed = RefscopeError(None, f"malformed object name {text}")
    oid = _base(snap, hexsz, b"HEAD" if base == b"@" else base, text, odb)
    if oid is None:
        raise malformed
    at = 0
    while at < len(suffixes):
        m = _SUFFIX.match(suffixes, at)
        if m is None:
            raise malformed
        at = m.end()
        kind, nth, parent = m.groups()
        if kind is not None:
            oid = _peeled(odb, oid, kind.decode() or None)
        elif parent is not None:
            oid = _parent(odb, oid, int(parent) if parent else 1)
        else:  # (``~0`` too is the commit the object peels to)
            oid = _parent(odb, oid, 0)
            for _ in range(int(nth) if nth else 1):
                if oid is None:
                    break
                oid = _parent(odb, oid, 1)
        if oid is None:
            raise malformed
    return oid


def _unsupported(text: str) -> RefscopeError:
    return RefscopeError(
        None, f"unsupported revision syntax: {text} (reflogs, paths and ^{{/text}} are not read)"
    )


def _base(snap, hexsz: int, raw: bytes, text: str, odb) -> bytes | None:
    """The object a revision's base names: a full id, a ref by rev-parse's rules, else an abbreviated
    id (ambiguous: git's one line); None when it names nothing."""
    if len(raw) == hexsz and not raw.lower().translate(None, _HEX):
        return raw.lower()
    if raw:
        for rule in RULES:
            oid = snap.resolve(rule.replace(b"%s", raw))
            if oid is not None:
                return oid
    if odb is not None and 4 <= len(raw) < hexsz and not raw.lower().translate(None, _HEX):
        found = odb.with_prefix(raw.lower())
        if len(found) > 1:
            raise RefscopeError(None, f"short object ID {os.fsdecode(raw)} is ambiguous")
        if found:
            return found[0]
    return None


def _read(odb, oid: bytes) -> tuple[str, bytes] | None:
    try:
        return odb.read(oid)
    except (RefscopeError, ValueError):  # (a damaged object names nothing git would accept)
        return None


def _peeled(odb, oid: bytes, kind: str | None) -> bytes | None:
    """``oid^{kind}`` (``kind`` None: ``^{}``, the tag chain peeled): the tags followed until an object
    of that kind (a commit's tree for ``tree``); None when the chain ends elsewhere or breaks."""
    for _ in range(TAG_CHAIN_MAX):
        got = _read(odb, oid)
        if got is None:
            return None
        have, data = got
        if kind in (have, "object") or (kind is None and have != "tag"):
            return oid
        if have == "commit" and kind == "tree":
            try:
                return object_headers("commit", data, oid, b"")[0].lower()
            except RefscopeError:
                return None
        if have != "tag":
            return None
        try:
            oid = object_headers("tag", data, oid, b"")[2].lower()
        except RefscopeError:
            return None
    return None


def _parent(odb, oid: bytes, n: int) -> bytes | None:
    """``oid^n``: the n-th parent of the commit ``oid`` peels to (``^0``: that commit); None when there
    is no such parent (a shallow clone's boundary has none, as git reads it)."""
    commit = _peeled(odb, oid, "commit")
    if commit is None or n == 0:
        return commit
    if commit in getattr(odb, "grafted", ()):
        return None
    got = _read(odb, commit)
    try:
        parents = object_headers("commit", got[1], commit, b"")[1]
    except RefscopeError:
        return None
    return parents[n - 1].lower() if n <= len(parents) else None
