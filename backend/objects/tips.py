"""What a ref's tip is: its object's type, the commit a tag peels to, and that commit's committer time,
author and subject -- what the TUI's columns and ``list --format`` show.

One ``Tips`` per object database caches per object id: the refs of a hosting repository share their
tips heavily (every ``refs/pull/N/head`` and ``merge`` of one branch), so each object is read once.
Nothing is read until asked (``tip`` of the visible rows first, a background scan for the rest).
"""

from __future__ import annotations

import contextlib
from collections import namedtuple

from ..model import TAG_CHAIN_MAX
from .odb import Odb
from .parse import parse_object, split_ident


class Tip(namedtuple("Tip", "kind peeled peeled_kind committer author subject")):
    """``kind``: the object's type name, or None when the object is missing; ``peeled``: the id a tag
    chain ends at (the object itself when not a tag; None if a link is missing); ``peeled_kind``: its
    type; ``committer``/``author``: ``parse.Ident`` of the commit it peels to (None otherwise);
    ``subject``: that commit's (or the tag's, if it peels to no commit) first paragraph, lines joined by
    spaces, as ``%(subject)``."""

    __slots__ = ()


MISSING = Tip(None, None, None, None, None, None)


def subject_of(message: bytes) -> bytes:
    """``%(subject)``: the message's first paragraph (after leading blank lines), its line breaks as
    spaces, a CR before LF dropped (ref-filter.c's find_subpos and copy_subject)."""
    i = 0
    while message[i : i + 1] == b"\n":
        i += 1
    body = message[i:]
    end = body.find(b"\n\n")
    crlf = body.find(b"\r\n\r\n")
    if end < 0 or 0 <= crlf < end:
        end = crlf
    para = body if end < 0 else body[:end]
    para = para.rstrip(b"\r\n")
    return para.replace(b"\r\n", b" ").replace(b"\n", b" ")


class Tips:
    """``tip(oid)`` with a cache; thread-compatible (one reader at a time)."""

    def __init__(self, odb: Odb) -> None:
        self.odb = odb
        self._cache: dict[bytes, Tip] = {}

    def tip(self, oid: bytes) -> Tip:
        hit = self._cache.get(oid)
        if hit is None:
            hit = self._cache[oid] = self._read(oid)
        return hit

    def cached(self, oid: bytes) -> Tip | None:
        """The tip of ``oid`` if read already, else None (never reads: safe on a UI thread)."""
        return self._cache.get(oid)

    def fill(self, oids) -> None:
        """Read the tips of many ids at once: their objects in one pass over each pack, then the objects
        their tags point at the same way."""
        todo = [o for o in dict.fromkeys(oids) if o not in self._cache]
        if not todo:
            return
        got = self.odb.read_many(todo)
        tags = [o for o, v in got.items() if v is not None and v[0] == "tag"]
        if tags:
            more = [t for t in (parse_object(got[o][1]).first(b"object") for o in tags) if t and t not in got]
            with contextlib.suppress(ValueError):  # a malformed target id: read one by one below
                got.update(self.odb.read_many(more))
        for o in todo:
            self._cache[o] = self._read(o, got)

    def _read(self, oid: bytes, got_many: dict | None = None) -> Tip:
        def read(o: bytes):
            if got_many is None:
                return self.odb.read(o)
            if o in got_many:
                return got_many[o]
            try:
                return self.odb.read(o)
            except ValueError:  # (a tag naming a malformed id, in a bulk read: the tag's link is missing)
                return None

        got = read(oid)
        if got is None:
            return MISSING
        kind, data = got
        peeled, pkind, pdata = oid, kind, data
        hops = 0
        while pkind == "tag":
            target = parse_object(pdata).first(b"object")
            hops += 1
            if target is None or hops > TAG_CHAIN_MAX:
                return Tip(kind, None, None, None, None, None)
            peeled = target
            got = read(target)
            if got is None:
                return Tip(kind, None, None, None, None, None)
            pkind, pdata = got
        if pkind != "commit":
            subject = subject_of(parse_object(data).message) if kind == "tag" else None
            return Tip(kind, peeled, pkind, None, None, subject)
        p = parse_object(pdata)
        author = p.first(b"author")
        committer = p.first(b"committer")
        return Tip(
            kind,
            peeled,
            pkind,
            None if committer is None else split_ident(committer),
            None if author is None else split_ident(author),
            subject_of(p.message),
        )
