"""The headers of commits and tags, as git's own parsers read them: what ``for-each-ref`` and the
TUI's columns show of a tip.

A header line is ``key SP value LF``; continuation lines (a ``gpgsig`` or ``mergetag``) start with a
space and belong to the previous key. The message starts after the first empty line. Idents are split
the way git splits them (``split_ident_line``): a name, an email between the last ``<`` before the
first ``>``, then a timestamp and a timezone, either of which may be missing on a malformed line.
"""

from __future__ import annotations

from collections import namedtuple


class Ident(namedtuple("Ident", "name email time tz")):
    """``name``/``email`` bytes (email without ``<>``); ``time`` seconds or None; ``tz`` bytes such as
    ``b"+0130"`` or None, as they stand in the object."""

    __slots__ = ()


class Parsed(namedtuple("Parsed", "headers message")):
    """``headers``: (key, value) pairs in order, continuation lines joined with LF; ``message``: bytes
    after the first empty line (b"" when there is none)."""

    __slots__ = ()

    def first(self, key: bytes) -> bytes | None:
        for k, v in self.headers:
            if k == key:
                return v
        return None

    def all(self, key: bytes) -> list[bytes]:
        return [v for k, v in self.headers if k == key]


def parse_object(data: bytes) -> Parsed:
    """The headers and message of a commit or tag object."""
    end = data.find(b"\n\n")
    if data.startswith(b"\n"):
        end = -1 if not data else 0
    head = data if end < 0 else data[:end]
    message = b"" if end < 0 else data[end + 2 :]
    headers: list[tuple[bytes, bytes]] = []
    for line in head.split(b"\n") if head else ():
        if line.startswith(b" ") and headers:
            k, v = headers[-1]
            headers[-1] = (k, v + b"\n" + line[1:])
            continue
        key, _, value = line.partition(b" ")
        headers.append((key, value))
    return Parsed(tuple(headers), message)


def split_ident(line: bytes) -> Ident | None:
    """An ident line ``Name <email> 1700000000 +0100``; None when it has no ``<…>`` at all."""
    lt = line.find(b"<")
    if lt < 0:
        return None
    gt = line.find(b">", lt + 1)
    if gt < 0:
        return None
    name = line[:lt].rstrip(b" ")
    email = line[lt + 1 : gt]
    rest = line[gt + 1 :].split()
    when = None
    tz = None
    if rest and rest[0].isdigit():
        when = int(rest[0])
        if len(rest) > 1 and len(rest[1]) == 5 and rest[1][:1] in b"+-" and rest[1][1:].isdigit():
            tz = rest[1]
    return Ident(name, email, when, tz)
