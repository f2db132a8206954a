"""``--count`` as git for-each-ref reads it: parse-options' OPT_INTEGER (git_parse_signed into a C
int: strtoimax in base 0 -- ``0x10``, ``010``, a sign, leading blanks -- and one optional k/m/g unit),
then for-each-ref's own refusal of a negative count; every refusal in git's words."""

from __future__ import annotations

from ..errors import CountError

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _strtoimax(s: str) -> tuple[int, str] | None:
    """(value, what is left) of strtoimax(s, &end, 0), or None when no digit is read."""
    body = s.lstrip(" \t\n\v\f\r")
    sign = -1 if body[:1] == "-" else 1
    if body[:1] in "+-":
        body = body[1:]
    base, digits = 10, "0123456789"
    if body[:2].lower() == "0x" and body[2:3].lower() in tuple("0123456789abcdef"):
        base, digits, body = 16, "0123456789abcdefABCDEF", body[2:]
    elif body[:1] == "0":
        base, digits = 8, "01234567"
    n = 0
    while n < len(body) and body[n] in digits:
        n += 1
    if n == 0:
        return None
    return sign * int(body[:n], base), body[n:]


def parse_count(text: str) -> int | None:
    """The limit ``--count=text`` sets (None: no limit, git's 0), or CountError."""
    if not text:
        raise CountError("option `count' expects a numerical value")
    got = _strtoimax(text)
    unit = None if got is None else _UNITS.get(got[1].lower()) if len(got[1]) <= 1 else None
    if got is None or unit is None:
        raise CountError("option `count' expects an integer value with an optional k/m/g suffix")
    value = got[0] * unit
    if not _INT_MIN <= value <= _INT_MAX:
        raise CountError(f"value {text} for option `count' not in range [{_INT_MIN},{_INT_MAX}]")
    if value < 0:
        raise CountError(f"invalid --count argument: `{value}'")
    return value or None
