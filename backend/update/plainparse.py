"""The plain ``update-ref --stdin`` input most scripts write, parsed at C speed (``commands.parse`` tries
it first): LF lines of create / update / delete / verify with full hex values, one space apart; input of
creates only (the seed's 50k ``create refs/tags/foo-N <blob>``) by columns -- one split into words, the
commands built in one C loop. Anything else is None, and the faithful parser reads it, errors and all.
"""

from __future__ import annotations

from itertools import repeat

from ..refname import all_valid_and_safe, is_valid_refname
from .commands import Batch, Command, Parsed

_HEX_BYTES = b"0123456789abcdefABCDEF"
_new = tuple.__new__


def parse_plain(data: bytes, hexsz: int, no_deref: bool) -> Parsed | None:
    """The plain input most scripts write -- LF lines of create / update / delete / verify with full hex
    values, one space apart -- parsed at C speed; None for anything else (quotes, other commands, a
    value that is not full hex, a bad name...), which the faithful parser then reads, errors and all."""
    if not data.endswith(b"\n") or b'"' in data or b"\t" in data or b"\r" in data or b"\0" in data:
        return None
    zero = b"0" * hexsz
    lines = data[:-1].split(b"\n")
    n = len(lines)
    if data.startswith(b"create ") and list(map(bytes.count, lines, repeat(b" "))).count(2) == n:
        # every line three words: when every one is a create, the batch by columns (the seed's recipe)
        words = data[:-1].replace(b"\n", b" ").split(b" ")
        if words[0::3].count(b"create") == n:
            news = words[2::3]
            if zero in news:
                return None  # git words it
            names = words[1::3]
            verbs, zeros, nones, nd = repeat("create"), repeat(zero), repeat(None), repeat(no_deref)
            rows = zip(verbs, names, news, zeros, nones, nones, nd, strict=False)  # (the repeats never end)
            out = list(map(_new, repeat(Command), rows))
            return _checked(out, news, names, hexsz)
    out = []
    add = out.append
    values: list[bytes] = []  # every hex value given: checked together at the end
    value = values.append
    for line in lines:
        parts = line.split(b" ")
        verb = parts[0]
        n = len(parts)
        if verb == b"create" and n == 3:
            new = parts[2]
            value(new)
            add(_new(Command, ("create", parts[1], new, zero, None, None, no_deref)))
        elif verb == b"update" and n in (3, 4):
            value(parts[2])
            old = None
            if n == 4:
                old = parts[3]
                value(old)
            add(_new(Command, ("update", parts[1], parts[2], old, None, None, no_deref)))
        elif verb in (b"delete", b"verify") and n in (2, 3):
            old = None
            if n == 3:
                old = parts[2]
                value(old)
            if verb == b"delete":
                add(_new(Command, ("delete", parts[1], zero, old, None, None, no_deref)))
            else:
                add(
                    _new(
                        Command,
                        ("verify", parts[1], None, zero if old is None else old, None, None, no_deref),
                    )
                )
        else:
            return None
    for c in out:
        if (c.verb == "create" and c.new == zero) or (c.verb == "delete" and c.old == zero):
            return None
    return _checked(out, values, [c.name for c in out], hexsz)


def _checked(out: list, values: list[bytes], names: list[bytes], hexsz: int) -> Parsed | None:
    """``parse_plain``'s commands ``out`` once their hex ``values`` and ``names`` pass git's checks, else None."""
    joined = b"".join(values)
    if len(joined) != hexsz * len(values) or joined.translate(None, _HEX_BYTES):
        return None  # a value of another length (or empty, or not hex): the faithful parser words it
    if values and set(map(len, values)) != {hexsz}:
        return None
    if joined.translate(None, b"0123456789abcdef"):  # upper-case hex: git takes it, refscope stores lower
        out = [
            c._replace(new=c.new.lower() if c.new else c.new, old=c.old.lower() if c.old else c.old)
            for c in out
        ]
    if not (all_valid_and_safe(names) or all(map(is_valid_refname, names))):  # all at once, else one by one
        return None
    return Parsed([Batch(out, "commit", [])], None, [], [])
