"""Ref-name patterns as git matches them: one matcher for ``refscope list`` and the TUI's filter.

git's for-each-ref (``match_name_as_path``) takes a pattern as a path prefix up to a ``/``
(``refs/heads`` matches ``refs/heads/x``, not ``refs/headsx``) and, when it holds ``* ? [ \\``, as a
wildmatch glob with WM_PATHNAME: ``*``, ``?`` and classes never match ``/``; ``**`` between slashes (or at
either end) matches any number of directories. fnmatch's ``*`` crosses ``/``, so ``refs/pull/*`` would
select every pull ref where git selects none: this module is the only place a glob is compiled.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (the typing module costs ~3 ms of CLI start-up)

if TYPE_CHECKING:
    import re

GLOB_BYTES = frozenset(b"*?[\\")


def is_glob(pattern: bytes) -> bool:
    """Does git treat ``pattern`` as a wildmatch glob (rather than a path prefix)?"""
    return any(b in GLOB_BYTES for b in pattern)


def literal_prefix(pattern: bytes) -> bytes:
    """The part of ``pattern`` before its first glob character: every match starts with it."""
    for k, b in enumerate(pattern):
        if b in GLOB_BYTES:
            return pattern[:k]
    return pattern


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix`` (None: no bound)."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes([p[-1] + 1])


def wildmatch(pattern: bytes) -> re.Pattern[bytes]:
    """git's ``wildmatch(pattern, name, WM_PATHNAME)`` as a compiled regex over whole names (``re`` is
    imported here: the delete path imports this module for ``prefix_successor`` and must not pay for it)."""
    import re

    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i : i + 1]
        if c == b"*":
            j = i
            while j < n and pattern[j : j + 1] == b"*":
                j += 1
            at_start = i == 0 or pattern[i - 1 : i] == b"/"
            if j - i >= 2 and at_start and (j == n or pattern[j : j + 1] == b"/"):
                if j == n:
                    out.append(rb".*")
                else:
                    out.append(rb"(?:.*/)?")
                    j += 1
            else:
                out.append(rb"[^/]*")
            i = j
            continue
        if c == b"?":
            out.append(rb"[^/]")
        elif c == b"[":
            j = i + 1
            negated = j < n and pattern[j : j + 1] in (b"!", b"^")
            if negated:
                j += 1
            start = j
            if j < n and pattern[j : j + 1] == b"]":
                j += 1
            while j < n and pattern[j : j + 1] != b"]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[start:j].replace(b"\\", b"\\\\")
                out.append(b"[^/" + body + b"]" if negated else b"(?!/)[" + body + b"]")
                i = j
        elif c == b"\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i : i + 1]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile(b"".join(out) + rb"\Z", re.DOTALL)


class ForEachRefPatterns:
    """for-each-ref's pattern list: a name is selected when any pattern matches it. ``regex``: the
    whole list as one regex over whole names (a path prefix or a glob each), for a caller that tests a
    column of names by C-level calls (``map(regex.match, names)``)."""

    __slots__ = ("patterns", "globs", "regex")

    def __init__(self, patterns: list[bytes]) -> None:
        import re

        self.patterns = patterns
        self.globs = [wildmatch(p) for p in patterns if is_glob(p)]
        prefixes = [re.escape(p) + (rb".*" if p.endswith(b"/") else rb"(?:/.*)?") + rb"\Z" for p in patterns]
        self.regex = re.compile(
            b"|".join(b"(?:%s)" % r for r in [*prefixes, *(g.pattern for g in self.globs)]), re.DOTALL
        )

    def match(self, name: bytes) -> bool:
        return self.regex.match(name) is not None

    def intervals(self) -> list[tuple[bytes, bytes | None]]:
        """Disjoint sorted name intervals [lo, hi) that contain every match (exact for plain patterns)."""
        iv: list[tuple[bytes, bytes | None]] = []
        for p in self.patterns:
            lit = literal_prefix(p)
            if lit != p or p.endswith(b"/"):
                iv.append((lit, prefix_successor(lit)))
            else:
                iv.append((p, p + b"\x00"))
                iv.append((p + b"/", p + b"0"))
        iv.sort(key=lambda t: t[0])
        merged: list[tuple[bytes, bytes | None]] = []
        for lo, hi in iv:
            if merged:
                plo, phi = merged[-1]
                if phi is None or lo <= phi:
                    merged[-1] = (plo, None if phi is None or hi is None else max(phi, hi))
                    continue
            merged.append((lo, hi))
        return merged
