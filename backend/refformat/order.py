"""The order of ``--sort``: ref-filter.c's cmp_ref_sorting and compare_refs, and versioncmp.c's
version comparison (glibc's strverscmp rules, which git carries).

Each key compares by number (sizes, dates without a format), by bytes (``strcmp``: a NUL ends a value, as
in C), or as versions; ``-`` reverses one key; when every key ties, the refnames decide, ascending.
"""

from __future__ import annotations

import re
from functools import cmp_to_key

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


def versioncmp(a: bytes, b: bytes, suffixes: tuple[bytes, ...] = ()) -> int:
    """versioncmp.c's versioncmp; ``suffixes``: ``versionsort.suffix`` in config order (prerelease
    suffixes: a name with one around the first difference sorts first, two by the suffixes' order)."""
    s1, s2 = _cstr(a), _cstr(b)
    a = s1 + b"\0\0"
    b = s2 + b"\0\0"
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
    if suffixes:
        swapped = _swap_prereleases(s1, s2, i, suffixes)
        if swapped is not None:
            return swapped
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


def _swap_prereleases(s1: bytes, s2: bytes, off: int, suffixes: tuple[bytes, ...]) -> int | None:
    """versioncmp.c's swap_prereleases: per name, the configured suffix that contains the first
    difference ``off`` or ends right before it (the earliest-starting one, then the longest); None when
    neither name has one or both the same (the rest of the comparison decides)."""
    m1 = [-1, off, -1]  # suffix_match: conf_pos, start, len
    m2 = [-1, off, -1]
    for pos, suffix in enumerate(suffixes):
        n = len(suffix)
        start = off - n if n < off else 0
        for name, m in ((s1, m1), (s2, m2)):  # find_better_matching_suffix
            end = m[1] if m[2] < n else m[1] - 1
            for i in range(start, end + 1):
                if name.startswith(suffix, i):
                    m[:] = [pos, i, n]
                    break
    if m1[0] == m2[0]:  # neither, or the same suffix in both
        return None
    if m1[0] >= 0 and m2[0] >= 0:
        return m1[0] - m2[0]
    return -1 if m1[0] >= 0 else 1


_RUNS = re.compile(rb"(\d+)")
_MOST_ZEROS = (1 << 32) - 1


def version_key(s: bytes) -> bytes:
    """A key whose byte order is ``versioncmp``'s, so that a sort by version is one C-level sort, and a
    million of them fit in little memory (bytes, not tuples): the bytes outside digit runs as
    themselves, each digit run as a token whose first byte stands where its first digit would (every
    byte of 0x30-0x39 is a digit, so against any other byte it compares as a digit does):
    ``1, length, digits`` for an integer part (the longer run is the larger number), ``0, ~zeros, 1``
    for a run of zeros alone and ``0, ~zeros, 0, rest`` for a fractional part, whose rest is compared
    byte by byte together with the byte after it (strverscmp compares that byte as it is with the
    other's digit: in ``01a`` against ``012``, ``a`` against ``2``). Lengths are 4 bytes, big-endian;
    more zeros come first. Two keys are aligned token for token up to their first difference, and a
    rest with its byte after never is a proper prefix of another (it ends at a byte that is no digit
    where the other's has a digit), so the concatenation orders as the tokens do. No byte and no token
    begins with NUL, so a caller may end a key with NUL and more to break ties."""
    parts = _RUNS.split(_cstr(s))
    key = bytearray(parts[0])
    for i in range(1, len(parts), 2):
        run = parts[i]
        after = parts[i + 1]
        if run[0] != 0x30:
            key += b"1" + len(run).to_bytes(4, "big") + run + after
            continue
        rest = run.lstrip(b"0")
        zeros = (_MOST_ZEROS - (len(run) - len(rest))).to_bytes(4, "big")
        if not rest:
            key += b"0" + zeros + b"\x01" + after
            continue
        key += b"0" + zeros + b"\x00" + rest + (after[:1] or b"\0") + after[1:]
    return bytes(key)


def _digit(s: bytes, i: int) -> bool:
    return i < len(s) and 0x30 <= s[i] <= 0x39


def _cstr(s: bytes) -> bytes:
    nul = s.find(b"\0")
    return s if nul < 0 else s[:nul]


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def sort_order(
    n: int,
    strs: list,
    nums: list,
    keys: list[tuple[int, bool, bool]],
    numeric: list[bool],
    suffixes: tuple[bytes, ...] = (),
) -> list[int]:
    """The order of ``n`` refs listed in name order, by ``keys`` (atom index, reverse, version; primary
    first) over the value columns (``strs`` the bytes, ``nums`` the numbers, per atom): one stable sort
    per key, least significant first, so ties keep name order as git's final refname comparison does,
    and each key is a C-level lookup. With ``suffixes`` (versionsort.suffix) a version key has no
    such key: it is sorted by versioncmp itself."""
    order = list(range(n))
    for k, reverse, version in reversed(keys):
        col = strs[k]
        if version and suffixes:
            by = cmp_to_key(lambda x, y, col=col: versioncmp(col[x], col[y], suffixes))
            order.sort(key=by, reverse=reverse)
        elif version:
            order.sort(key=list(map(version_key, col)).__getitem__, reverse=reverse)
        elif numeric[k]:
            order.sort(key=nums[k].__getitem__, reverse=reverse)
        else:
            col = [s if b"\0" not in s else _cstr(s) for s in col]
            order.sort(key=col.__getitem__, reverse=reverse)
    return order
