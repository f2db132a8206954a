"""The order of ``--sort``: ref-filter.c's cmp_ref_sorting and compare_refs, and versioncmp.c's
version comparison (glibc's strverscmp rules, which git carries).

Each key compares by number (sizes, dates without a format), by bytes (``strcmp``: a NUL ends a value, as
in C), or as versions; ``-`` reverses one key; when every key ties, the refnames decide, ascending.
"""

from __future__ import annotations

import functools

_S_N, _S_I, _S_F, _S_Z = 0, 3, 6, 9
_CMP, _LEN = 2, 3
_NEXT = (_S_N, _S_I, _S_Z, _S_N, _S_I, _S_I, _S_N, _S_F, _S_F, _S_N, _S_F, _S_Z)
# fmt: off
_RESULT = (
    _CMP, _CMP, _CMP, _CMP, _LEN, _CMP, _CMP, _CMP, _CMP,
    _CMP, -1, -1, +1, _LEN, _LEN, +1, _LEN, _LEN,
    _CMP, _CMP, _CMP, _CMP, _CMP, _CMP, _CMP, _CMP, _CMP,
    _CMP, +1, +1, -1, _CMP, _CMP, -1, _CMP, _CMP,
)
# fmt: on


def _cls(c: int) -> int:
    return (c == 0x30) + (0x30 <= c <= 0x39)


def versioncmp(a: bytes, b: bytes) -> int:
    """versioncmp without ``versionsort.suffix`` (the caller refuses that setting)."""
    a = _cstr(a) + b"\0\0"
    b = _cstr(b) + b"\0\0"
    i = 0
    c1, c2 = a[0], b[0]
    state = _S_N + _cls(c1)
    while c1 == c2:
        if c1 == 0:
            return 0
        state = _NEXT[state]
        i += 1
        c1, c2 = a[i], b[i]
        state += _cls(c1)
    diff = c1 - c2
    kind = _RESULT[state * 3 + _cls(c2)]
    if kind == _CMP:
        return diff
    if kind != _LEN:
        return kind
    # the longer run of digits is the larger number; runs of one length keep the first difference
    p1 = p2 = i + 1
    while _digit(a, p1):
        p1 += 1
        if not _digit(b, p2):
            return 1
        p2 += 1
    return -1 if _digit(b, p2) else diff


def _digit(s: bytes, i: int) -> bool:
    return i < len(s) and 0x30 <= s[i] <= 0x39


def _cstr(s: bytes) -> bytes:
    nul = s.find(b"\0")
    return s if nul < 0 else s[:nul]


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def sort_rows(rows: list, keys: list[tuple[int, bool, bool]], numeric: list[bool]) -> None:
    """Sort ``rows`` -- (refname, values) pairs -- in place by ``keys`` (atom index, reverse, version),
    primary first; ``numeric[k]`` says atom ``k`` compares by number (a value never set is 0, as git's
    fill_missing_values leaves it)."""

    def compare(x, y) -> int:
        for k, reverse, version in keys:
            va, vb = x[1][k], y[1][k]
            if version:
                c = versioncmp(va.s, vb.s)
            elif numeric[k]:
                c = _cmp(va.v or 0, vb.v or 0)
            else:
                c = _cmp(_cstr(va.s), _cstr(vb.s))
            if c:
                return -c if reverse else c
        return _cmp(x[0], y[0])

    if all(not version for _, _, version in keys):
        # the common case at scale: a key tuple per row, one C-level sort
        def key_of(row):
            parts = []
            for k, reverse, _ in keys:
                v = row[1][k]
                part = (v.v or 0) if numeric[k] else _cstr(v.s)
                parts.append(_Rev(part) if reverse else part)
            parts.append(row[0])
            return tuple(parts)

        if all(numeric[k] for k, _, _ in keys) and all(
            r[1][k].v is not None for r in rows for k, _, _ in keys
        ):
            rows.sort(key=lambda r: tuple((-r[1][k].v if rev else r[1][k].v) for k, rev, _ in keys) + (r[0],))
            return
        rows.sort(key=key_of)
        return
    rows.sort(key=functools.cmp_to_key(compare))


@functools.total_ordering
class _Rev:
    """A value that sorts in reverse."""

    __slots__ = ("x",)

    def __init__(self, x) -> None:
        self.x = x

    def __lt__(self, other: _Rev) -> bool:
        return other.x < self.x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Rev) and other.x == self.x
