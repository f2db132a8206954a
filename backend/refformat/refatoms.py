"""The atoms whose value is the ref's own (its name, how it is stored), not its object's: ``%(flag)``,
``%(refname:lstrip=N)`` and ``rstrip``, and at scale ``%(HEAD)`` and ``%(worktreepath)`` as columns.
"""

from __future__ import annotations

from itertools import repeat

from ..model import PACKED, Ref
from .fields import Value
from .spec import Atom


def flag(ref: Ref) -> Value:
    """``%(flag)``: symref and/or packed (where the value was read)."""
    flags = []
    if ref.target is not None:
        flags.append(b"symref")
    if ref.location is not None and ref.location.kind == PACKED:
        flags.append(b"packed")
    return Value(b",".join(flags))


def stripped(name: bytes, arg: str) -> bytes:
    """``name`` with ``arg``'s (``lstrip=N``, ``strip=N``, ``rstrip=N``) count of components taken from
    its left or right; a negative N keeps that many instead. Too many: nothing is left."""
    key, _, n = arg.partition("=")
    count = int(n)
    if count < 0:
        count = name.count(b"/") + count + 1
    if key in ("lstrip", "strip"):
        rest = name
        while count > 0:
            slash = rest.find(b"/")
            if slash < 0:
                return b""
            rest = rest[slash + 1 :]
            count -= 1
        return rest
    end = len(name)
    while count > 0:
        if end == 0:
            return b""
        slash = name.rfind(b"/", 0, end)
        end = max(slash, 0)
        if slash < 0:
            return b""
        count -= 1
    return name[:end]


def name_column(
    a: Atom, names: list[bytes], head: bytes | None, worktrees: dict[bytes, bytes]
) -> list[bytes] | None:
    """The values of the ref-only atom ``a`` for the refs ``names`` (``head``: the ref HEAD resolves to;
    ``worktrees``: {branch: path}), made by C-level passes where its value is the name's alone and such
    passes make it (a call per ref is most of the cost of ``%(HEAD)`` or ``%(refname:lstrip=2)`` at a
    million refs); None: it is made per ref."""
    if a.deref:
        return None
    if a.name == "HEAD":
        if head is None:
            return [b" "] * len(names)
        return list(map((b" ", b"*").__getitem__, map(head.__eq__, names)))
    if a.name == "worktreepath":
        paths = {b: p for b, p in worktrees.items() if b.startswith(b"refs/heads/")}
        return list(map(paths.get, names, repeat(b"")))
    key, _, n = (a.arg or "").partition("=")
    if a.name != "refname" or not n or int(n) <= 0:
        return None
    count = int(n)
    if key in ("lstrip", "strip"):  # what is left past the first ``count`` slashes, if there are so many
        return [
            p[count] if len(p) > count else b"" for p in map(bytes.split, names, repeat(b"/"), repeat(count))
        ]
    if key == "rstrip":  # what is left before the last ``count``
        return [
            p[0] if len(p) > count else b"" for p in map(bytes.rsplit, names, repeat(b"/"), repeat(count))
        ]
    return None
