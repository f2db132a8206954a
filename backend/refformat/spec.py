"""``--format`` and ``--sort`` of ``git for-each-ref``, parsed as ref-filter.c parses them: literal text
(``%%`` a percent, ``%xx`` a byte in hex) and ``%(atom:modifier)`` fields, each atom checked against
git's table, with git's wording for what git refuses and one clear line for what git knows but refscope
does not print.
"""

from __future__ import annotations

from collections import namedtuple

from ..errors import FormatError

# Every atom git knows (ref-filter.c valid_atom); the supported ones are those with a reader in values.py.
GIT_ATOMS = (
    "refname", "objecttype", "objectsize", "objectname", "deltabase", "tree", "parent", "numparent",
    "object", "type", "tag", "author", "authorname", "authoremail", "authordate", "committer",
    "committername", "committeremail", "committerdate", "tagger", "taggername", "taggeremail",
    "taggerdate", "creator", "creatordate", "describe", "subject", "body", "trailers", "contents",
    "signature", "raw", "upstream", "push", "symref", "flag", "HEAD", "color", "worktreepath", "align",
    "end", "if", "then", "else", "rest", "ahead-behind", "is-base",
)  # fmt: skip
SUPPORTED = frozenset(
    {
        "refname", "objecttype", "objectsize", "objectname", "tree", "parent", "numparent", "object",
        "type", "tag", "author", "authorname", "authoremail", "authordate", "committer", "committername",
        "committeremail", "committerdate", "tagger", "taggername", "taggeremail", "taggerdate", "creator",
        "creatordate", "subject", "body", "contents", "symref", "flag", "HEAD", "worktreepath",
        "ahead-behind",
    }
)  # fmt: skip
# Atoms whose value comes from the object (SOURCE_OBJ / SOURCE_OTHER): asking for one reads it.
NEEDS_OBJECT = frozenset(SUPPORTED - {"refname", "symref", "flag", "HEAD", "worktreepath", "ahead-behind"})
TIME_ATOMS = frozenset({"authordate", "committerdate", "taggerdate", "creatordate"})
NUMBER_ATOMS = frozenset({"objectsize", "numparent"})


def sorts_as_number(a: Atom) -> bool:
    """Does git compare this atom's values as numbers (FIELD_ULONG / FIELD_TIME)? The sizes and counts,
    a date without a format, and ``%(contents:size)`` (its parser makes the atom a number)."""
    return (
        a.name in NUMBER_ATOMS
        or (a.name in TIME_ATOMS and a.arg is None)
        or (a.name == "contents" and a.arg == "size")
    )


class Atom(namedtuple("Atom", "text deref name arg")):
    """One ``%(…)`` field: ``text`` as written inside the parentheses (what git deduplicates on),
    ``deref`` for a leading ``*``, the atom ``name`` and its ``arg`` after the first colon (or None)."""

    __slots__ = ()


class SortKey(namedtuple("SortKey", "atom reverse version")):
    __slots__ = ()


def _hex(c: int) -> int:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


def literal(text: bytes) -> bytes:
    """ref-filter.c's append_literal: ``%%`` is ``%``, ``%xx`` the byte 0xXX (not NUL-safe in git: a
    ``%00`` ends git's C string there, and so it does here)."""
    out = bytearray()
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == 0x25:
            if i + 1 < n and text[i + 1] == 0x25:
                i += 1
            elif i + 2 < n:
                hi, lo = _hex(text[i + 1]), _hex(text[i + 2])
                if hi >= 0 and lo >= 0:
                    out.append(hi * 16 + lo)
                    i += 3
                    continue
        out.append(text[i])
        i += 1
    return bytes(out)


def _next_atom(text: bytes, i: int) -> int:
    """find_next: the position of the next ``%(`` at or after ``i`` (``%%`` skipped), or -1."""
    n = len(text)
    while i < n:
        if text[i] == 0x25:
            if i + 1 < n and text[i + 1] == 0x28:
                return i
            if i + 1 < n and text[i + 1] == 0x25:
                i += 1
        i += 1
    return -1


def parse_atom(text: str) -> Atom:
    """The atom written ``text`` (without ``%(``…``)``), checked as parse_ref_filter_atom does."""
    deref = text.startswith("*")
    body = text[1:] if deref else text
    if not body:
        raise FormatError(f"malformed field name: {text}")
    name, colon, arg = body.partition(":")
    if name not in GIT_ATOMS:
        raise FormatError(f"unknown field name: {text}")
    if name not in SUPPORTED:
        raise FormatError(
            f"unsupported field name: {name} (refscope does not print it; git for-each-ref does)"
        )
    if colon and not arg and name not in TIME_ATOMS:
        colon = ""  # git reads ``%(atom:)`` as ``%(atom)``; a date reads its own text (an empty format)
    atom = Atom(text, deref, name, arg if colon else None)
    _check_arg(atom)
    return atom


def _no_arg(atom: Atom) -> None:
    if atom.arg is not None:
        raise FormatError(f"%({atom.name}) does not take arguments")


# parsers that name their own atom in git's error, not the atom as written (err_bad_arg(err, "contents",
# arg)): %(*contents:x) is refused as %(contents)
_SELF_NAMED = frozenset({"objectsize", "subject", "contents"})


def _bad_arg(atom: Atom, shown: str | None = None) -> FormatError:
    head = atom.name if atom.name in _SELF_NAMED else atom.text.partition(":")[0]
    return FormatError(f"unrecognized %({head}) argument: {atom.arg if shown is None else shown}")


def _strtol_i(text: str) -> int | None:
    """git's strtol_i: an int in base 10 with nothing after it (leading space and a sign allowed)."""
    s = text.lstrip(" \t\n\v\f\r")
    body = s[1:] if s[:1] in "+-" else s
    if not body.isdigit() or not body.isascii():
        return None
    v = int(s)
    return v if -(1 << 31) <= v < (1 << 31) else None


def _check_arg(atom: Atom) -> None:
    name, arg = atom.name, atom.arg
    if name in ("refname", "symref"):
        if arg is None or arg == "short":
            return
        for prefix in ("lstrip=", "strip=", "rstrip="):
            if arg.startswith(prefix):
                if _strtol_i(arg[len(prefix) :]) is None:
                    which = "rstrip" if prefix == "rstrip=" else "lstrip"
                    raise FormatError(f"Integer value expected refname:{which}={arg[len(prefix) :]}")
                return
        raise _bad_arg(atom)
    if name in ("objecttype", "body", "HEAD"):
        _no_arg(atom)
    elif name == "ahead-behind":
        if arg is None:
            raise FormatError("expected format: %(ahead-behind:<committish>)")
    elif name == "objectsize":
        if arg is not None:
            if arg == "disk":
                raise FormatError("unsupported field name: objectsize:disk (refscope does not print it)")
            raise _bad_arg(atom)
    elif name in ("objectname", "tree", "parent"):
        if arg is None or arg == "short":
            return
        if arg.startswith("short="):
            n = arg[6:]
            if not n.isdigit() or not n.isascii() or int(n) == 0 or int(n) >= 1 << 32:
                raise FormatError(f"positive value expected '{n}' in %({atom.text})")
            return
        raise _bad_arg(atom)
    elif name == "subject":
        if arg is not None:
            if arg == "sanitize":
                raise FormatError("unsupported field name: subject:sanitize (refscope does not print it)")
            raise _bad_arg(atom)
    elif name == "contents":
        if arg in (None, "body", "subject", "signature", "size"):
            return
        if arg.startswith(("trailers", "lines=")):
            raise FormatError(f"unsupported field name: contents:{arg} (refscope does not print it)")
        raise _bad_arg(atom)
    elif name in ("authorname", "committername", "taggername"):
        if arg is not None:
            if arg == "mailmap":
                raise FormatError(f"unsupported field name: {name}:mailmap (refscope does not print it)")
            raise _bad_arg(atom)
    elif name in ("authoremail", "committeremail", "taggeremail"):
        _email_options(atom)
    elif name in TIME_ATOMS:
        return  # the date format is parsed when the value is made, as git does
    elif arg is not None and name in ("numparent", "object", "type", "tag", "author", "committer",
                                       "tagger", "creator", "flag", "worktreepath"):  # fmt: skip
        return  # git ignores an argument of an atom without a parser


def _email_options(atom: Atom) -> None:
    arg = atom.arg
    if arg is None:
        return
    rest = arg
    while True:
        for opt in ("trim", "localpart", "mailmap"):
            if rest.startswith(opt):
                if opt == "mailmap":
                    raise FormatError(
                        f"unsupported field name: {atom.name}:mailmap (refscope does not print it)"
                    )
                rest = rest[len(opt) :]
                break
        else:
            raise _bad_arg(atom, rest)
        if not rest:
            return
        if rest[0] != ",":
            raise _bad_arg(atom, rest)
        rest = rest[1:]
        if not rest:
            return


class Format(namedtuple("Format", "pieces atoms")):
    """``pieces``: literal bytes and atom indexes in order; ``atoms``: the distinct atoms."""

    __slots__ = ()


def parse_format(text: bytes, atoms: list[Atom] | None = None) -> Format:
    """The format ``text`` as verify_ref_format reads it; ``atoms`` collects every distinct atom (shared
    with the sort keys, as git shares used_atom)."""
    atoms = [] if atoms is None else atoms
    pieces: list[bytes | int] = []
    i = 0
    while True:
        sp = _next_atom(text, i)
        if sp < 0:
            if i < len(text):
                pieces.append(literal(text[i:]))
            break
        ep = text.find(b")", sp)
        if ep < 0:
            raise FormatError(f"malformed format string {text[sp:].decode('utf-8', 'replace')}")
        if sp > i:
            pieces.append(literal(text[i:sp]))
        pieces.append(intern(atoms, text[sp + 2 : ep].decode("utf-8", "surrogateescape")))
        i = ep + 1
    return Format(tuple(pieces), atoms)


def intern(atoms: list[Atom], text: str) -> int:
    """The index of the atom written ``text`` in ``atoms``, parsing and adding it if new."""
    for k, a in enumerate(atoms):
        if a.text == text:
            return k
    atoms.append(parse_atom(text))
    return len(atoms) - 1


def parse_sort(keys: list[str], atoms: list[Atom]) -> list[tuple[int, bool, bool]]:
    """(atom index, reverse, version) per ``--sort`` key, primary first: git makes the LAST key given the
    primary one."""
    out = []
    for key in keys:  # interned in the order given, as git adds them to used_atom: the order it fails in
        reverse = key.startswith("-")
        body = key[1:] if reverse else key
        version = False
        for prefix in ("version:", "v:"):
            if body.startswith(prefix):
                version = True
                body = body[len(prefix) :]
                break
        if not body:
            raise FormatError(f"malformed field name: {body}")  # git names the atom: "-" and "v:" are gone
        out.append((intern(atoms, body), reverse, version))
    out.reverse()
    return out
