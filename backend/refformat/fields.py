"""How ref-filter.c reads one field of a commit or tag: find_wholine, the ident parts, grab_date's
numbers (strtoumax and strtol as C reads them), find_subpos's subject, body and signature, and the
header lines parse_commit_buffer and parse_tag_buffer insist on. Each returns what git prints, with git's
edge cases: a NUL ends the text, a missing line is empty.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import add

from ..errors import RefscopeError
from . import dates
from .dates import SAFE_HI, SAFE_LO


class Value:
    """One atom's value: ``s`` the bytes printed, ``v`` the number sorted by (or None: compare ``s``)."""

    __slots__ = ("s", "v")

    def __init__(self, s: bytes, v: int | None = None) -> None:
        self.s = s
        self.v = v


EMPTY = Value(b"")


_SIGNATURES = (
    b"-----BEGIN PGP SIGNATURE-----",
    b"-----BEGIN PGP MESSAGE-----",
    b"-----BEGIN SIGNED MESSAGE-----",
    b"-----BEGIN SSH SIGNATURE-----",
)
_TIME_MAX = (1 << 64) - 1


def cstr(data: bytes) -> bytes:
    nul = data.find(b"\0")
    return data if nul < 0 else data[:nul]


def wholine(who: bytes, buf: bytes) -> bytes | None:
    """find_wholine: the rest of the buffer after ``who `` at a header line's start (None: not in the
    header, which ends at the first empty line). Like git, the result runs to the end of the buffer; each
    reader stops where git's does. Two C-level searches: the first line start holding ``who `` and the
    first empty line (a match after it is in the message)."""
    key = who + b" "
    if buf.startswith(key):
        return buf[len(key) :]
    pos = buf.find(b"\n" + key)
    if pos < 0:
        return None
    end = buf.find(b"\n\n")
    if 0 <= end < pos:
        return None
    return buf[pos + 1 + len(key) :]


def first_line(buf: bytes) -> bytes:
    eol = buf.find(b"\n")
    return buf if eol < 0 else buf[:eol]


def ident_name(buf: bytes) -> bytes:
    line = first_line(buf)
    cut = line.find(b" <")
    return b"" if cut < 0 else line[:cut]


def ident_email(buf: bytes, arg: str | None) -> bytes:
    lt = buf.find(b"<")
    if lt < 0:
        return b""
    opts = set((arg or "").split(",")) - {""}
    start = lt + 1 if opts & {"trim", "localpart"} else lt
    if "localpart" in opts:
        end = buf.find(b"@", start)
        if end < 0:
            end = buf.find(b">", start)
    elif "trim" in opts:
        end = buf.find(b">", start)
    else:
        end = buf.find(b">", start)
        if end >= 0:
            end += 1
    return b"" if end < 0 else buf[start:end]


def _strtoumax(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, end) of strtoumax(buf + pos, &end, 10): leading space, a sign, digits; a minus wraps."""
    n = len(buf)
    i = pos
    while i < n and buf[i] in b" \t\n\v\f\r":
        i += 1
    neg = False
    if i < n and buf[i] in b"+-":
        neg = buf[i] == 0x2D
        i += 1
    j = i
    while j < n and 48 <= buf[j] <= 57:
        j += 1
    if j == i:
        return 0, pos
    v = int(buf[i:j])
    if v > _TIME_MAX:
        return _TIME_MAX, j
    return ((-v) & _TIME_MAX if neg else v), j


def _strtol(buf: bytes, pos: int) -> int:
    n = len(buf)
    i = pos
    while i < n and buf[i] in b" \t\n\v\f\r":
        i += 1
    sign = 1
    if i < n and buf[i] in b"+-":
        sign = -1 if buf[i] == 0x2D else 1
        i += 1
    j = i
    while j < n and 48 <= buf[j] <= 57:
        j += 1
    if j == i:
        return 0
    return max(min(sign * int(buf[i:j]), (1 << 63) - 1), -(1 << 63))


_MODES: dict[str, str] = {}
# a timestamp of at most 19 digits (below the 2^64-1 that means overflow), one space and a zone of a sign
# and four digits, each digit run maximal: strtoumax and strtol read exactly these numbers from it
_WELL_FORMED = re.compile(rb"(\d{1,19}) ([+-]\d{4})(?!\d)")
_PLAIN_TIME = re.compile(rb"(0|[1-9]\d{0,18}) [+-]\d{4}(?!\d)").match  # _WELL_FORMED, %d's digits


def date_mode(arg: str | None) -> str:
    if arg is None:
        return "default"
    mode = _MODES.get(arg)
    if mode is None:
        mode = _MODES[arg] = dates.parse_mode(arg)
    return mode


def when(buf: bytes) -> tuple[int, int] | None:
    """grab_date's reading: the timestamp after the first ``> `` and the zone after it, or None where git
    shows nothing."""
    gt = buf.find(b"> ")
    if gt < 0:
        return None
    m = _WELL_FORMED.match(buf, gt + 2)
    if m is not None:  # what strtoumax and strtol read from such a line, without their loops
        return int(m[1]), int(m[2])
    when, zone = _strtoumax(buf, gt + 2)
    if when == _TIME_MAX:
        return None
    tz = _strtol(buf, zone)
    if not -(1 << 31) <= tz < (1 << 31):
        return None
    return when, tz


def commit_when(content: bytes, key: bytes) -> tuple[int, int] | None:
    """``when(wholine(who, cstr(content)))`` with ``key`` = who + SP, found by position in the object
    rather than through copies of its tail (what a million tips' dates cost)."""
    nul = content.find(b"\0")
    buf = content if nul < 0 else content[:nul]
    if buf.startswith(key):
        start = len(key)
    else:
        pos = buf.find(b"\n" + key)
        if pos < 0 or buf.find(b"\n\n", 0, pos + 1) >= 0:  # not in the header (it ends at an empty line)
            return None
        start = pos + 1 + len(key)
    gt = buf.find(b"> ", start)
    if gt < 0:
        return None
    m = _WELL_FORMED.match(buf, gt + 2)
    if m is not None:
        return int(m[1]), int(m[2])
    return when(buf[start:])


def dates_reader(plan, other):
    """(type name, content) -> (text, number, text, number...) of the date atoms of ``plan`` (each
    (line key, date modifier, whether only the number is wanted)) for a commit, each line read once
    (``committerdate:unix`` shown and ``committerdate`` sorted by: one); ``other(type name, content)``
    for any other object. A modifier is parsed when a date is shown, as git does."""
    modes: dict = {}
    shapes = [("unix" if arg == "unix" else "number" if number else "") for _, arg, number in plan]
    if len({key for key, _, _ in plan}) == 1 and shapes in (["unix", "number"], ["number"], ["unix"]):
        # the sort by date (the number) shown as a unix time: no loop, no dict per commit
        key = plan[0][0]
        none = (b"", 0) * len(plan)
        both = shapes == ["unix", "number"]
        unix = shapes == ["unix"]

        def quick(kind, content):
            if kind != "commit":
                return other(kind, content)
            w = commit_when(content, key)
            if w is None:
                return none
            if not unix and not (SAFE_LO <= w[0] <= SAFE_HI and -9999 <= w[1] <= 9999):
                dates.check(w[0], w[1])  # the sorted-by date is formatted by git all the same
            if both:
                return b"%d" % w[0], 0, b"", w[0]
            return (b"%d" % w[0], 0) if unix else (b"", w[0])

        return quick

    def read(kind, content):
        if kind != "commit":
            return other(kind, content)
        seen: dict = {}
        out: tuple = ()
        for key, arg, number in plan:
            w = seen.get(key, False)
            if w is False:
                w = seen[key] = commit_when(content, key)
            if w is None:
                out += (b"", 0)
            elif number:
                dates.check(w[0], w[1])  # git formats the date it only sorts by: it fails where that fails
                out += (b"", w[0])
            elif arg == "unix":
                out += (b"%d" % w[0], 0)
            else:
                mode = modes.get(arg)
                if mode is None:
                    mode = modes[arg] = date_mode(arg)
                out += (dates.show(w[0], w[1], mode).encode(), 0 if arg else w[0])
        return out

    return read


def dates_columns(plan, other):
    """``dates_reader(plan, other)`` column-wise: (type names, contents) of many objects -> one column
    per value (texts, numbers, texts, numbers...). For the sort by date shown as a unix time a chunk of
    commits is read as ``commit_when`` reads one, each step a C-level pass over the chunk (``map`` of a
    ``find``, of a regex match), no Python code per commit: the line is the first ``\n<key>`` (the
    object not starting with the key), no empty line before it, the time after the first ``> `` from
    there. Only the plain case goes this way -- no NUL in the object, a time without a leading zero (so
    its digits are what ``%d`` prints) and a well-formed zone -- and a chunk with any other object goes
    through ``dates_reader`` object by object."""
    read = dates_reader(plan, other)
    width = 2 * len(plan)

    def slow(kinds: list[str], contents: list[bytes]) -> list[list]:
        rows = list(map(read, kinds, contents))
        return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]

    shapes = [("unix" if arg == "unix" else "number" if number else "") for _, arg, number in plan]
    if len({key for key, _, _ in plan}) != 1 or shapes not in (["unix", "number"], ["number"], ["unix"]):
        return slow
    key = plan[0][0]

    def columns(kinds: list[str], contents: list[bytes]) -> list[list]:
        n = len(contents)
        if (
            not n
            or kinds.count("commit") != n
            or b"\0" in b"".join(contents)
            or any(map(bytes.startswith, contents, repeat(key)))
        ):
            return slow(kinds, contents)
        got = plain_times(contents, key)
        if got is None:
            return slow(kinds, contents)
        digits = got[2]
        if shapes == ["unix"]:
            return [digits, [0] * n]
        nums = list(map(int, digits))
        if min(nums) < SAFE_LO or max(nums) > SAFE_HI:  # a time git may refuse to show: one by one
            return slow(kinds, contents)
        return [[b""] * n, nums] if shapes == ["number"] else [digits, [0] * n, [b""] * n, nums]

    return columns


def plain_times(contents: list[bytes], key: bytes) -> tuple[list[int], list[int], list[bytes]] | None:
    """For commits none of which starts with ``key`` (``b"committer "``) nor holds a NUL: (where each
    one's ``\n<key>`` line is, where the first ``> `` from there is, the digits of the time after it),
    each a C-level pass over the column; None unless every one is plain (the line found, no empty line
    before it, a well-formed time). What ``dates_columns`` reads; the TUI's tip reader
    (``tip_child``) too, which checks a little more on top."""
    line = b"\n" + key
    find = bytes.find
    at = list(map(find, contents, repeat(line)))
    if min(at) < 0 or max(map(find, contents, repeat(b"\n\n"), repeat(0), map(add, at, repeat(1)))) >= 0:
        return None
    gt = list(map(find, contents, repeat(b"> "), at))
    if min(gt) < 0:
        return None
    found = list(map(_PLAIN_TIME, contents, map(add, gt, repeat(2))))
    if None in found:
        return None
    return at, gt, list(map(re.Match.group, found, repeat(1)))


def date(buf: bytes, arg: str | None) -> Value:
    """grab_date; a date format makes the value sort as text (git turns the atom into a string field)."""
    got = when(buf)
    if got is None:
        return Value(b"", None if arg else 0)
    return Value(dates.show(got[0], got[1], date_mode(arg)).encode(), None if arg else got[0])


def message(buf: bytes) -> bytes:
    """The message of a commit or tag as find_subpos finds it: after the header's lines and the empty
    lines that follow them (``%(contents)`` is this, signature included)."""
    pos = 0
    n = len(buf)
    while pos < n and buf[pos] != 0x0A:
        eol = buf.find(b"\n", pos)
        pos = n if eol < 0 else eol + 1
    while pos < n and buf[pos] == 0x0A:
        pos += 1
    return buf[pos:]


def subpos(buf: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """find_subpos: (subject, body with signature, body without it, signature)."""
    rest = message(buf)
    sig = len(rest)
    at = 0
    while at < len(rest):
        if rest.startswith(_SIGNATURES, at):
            sig = at
        eol = rest.find(b"\n", at)
        at = len(rest) if eol < 0 else eol + 1
    eol = rest.find(b"\n\n")
    if eol < 0:
        eol = rest.find(b"\r\n\r\n")
    end = min(eol, sig) if eol >= 0 else sig
    sub = rest[:end].rstrip(b"\r\n") if end else b""
    b = end
    while b < len(rest) and rest[b] in b"\r\n":
        b += 1
    return sub, rest[b:], rest[b:sig] if b <= sig else b"", rest[sig:]


def subject_line(sub: bytes) -> bytes:
    """copy_subject: LF as a space, the CR of a CRLF dropped."""
    return sub.replace(b"\r\n", b" ").replace(b"\n", b" ")


def object_headers(kind: str, content: bytes, oid: bytes, refname: bytes):
    """(tree, parents) of a commit or (tag, type, object) of a tag, as parse_commit_buffer and
    parse_tag_buffer accept them; a refused object is git's ``parse_object_buffer failed`` error."""
    fail = RefscopeError(
        None, f"parse_object_buffer failed on {oid.decode()} for {refname.decode('utf-8', 'replace')}"
    )
    if kind == "commit":
        if not content.startswith(b"tree "):
            raise fail
        lines = content.split(b"\n")
        tree = lines[0][5:]
        parents = []
        for line in lines[1:]:
            if not line.startswith(b"parent "):
                break
            parents.append(line[7:])
        return tree, parents
    head = content.split(b"\n\n", 1)[0].split(b"\n")
    fields = {}
    for line in head:
        k, _, v = line.partition(b" ")
        fields.setdefault(k, v)
    if b"object" not in fields or b"type" not in fields:
        raise fail
    return fields.get(b"tag", b""), fields[b"type"], fields[b"object"]
