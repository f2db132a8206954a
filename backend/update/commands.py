"""git's ``update-ref --stdin`` language (builtin/update-ref.c), parsed as git parses it.

A faithful port of git's parser rather than a tokenizer of our own: which input is refused, and with which
words, is what scripts see, and git's rules have corners (C-quoting only without ``-z``, an empty
``<new-oid>`` meaning zero, a missing last terminator reading as "extra input"). Every refusal is
``UpdateInputError`` with git's text (what follows ``fatal: ``). Warnings git prints on stderr (``-z``
``update`` without a new value) are collected in ``Parsed.warnings``.

The records are git's ``struct ref_update`` as ``ref_transaction_update`` receives it: ``new`` / ``old``
are hex oids (``None``: not given; all zeros: "must not exist" / "delete"), ``new_target`` / ``old_target``
symref targets. Values are full hex object names or names the caller's ``resolve`` turns into one (git
accepts any revision; refscope resolves ref names and full object names, not abbreviations).
"""

from __future__ import annotations

import gc
from collections import namedtuple

from ..errors import UpdateInputError
from ..refname import is_valid_refname

_SPACE = b" \t\n\r"  # git's isspace (sane_ctype GIT_SPACE)
_HEX = frozenset(b"0123456789abcdefABCDEF")


class Command(namedtuple("Command", "verb name new old new_target old_target no_deref")):
    """One queued update: ``verb`` as written (``create``, ``symref-update``...), ``name`` (bytes),
    ``new``/``old`` hex oids or None, ``new_target``/``old_target`` symref targets or None, ``no_deref``."""

    __slots__ = ()


class Rename(namedtuple("Rename", "old_name name old")):
    """git branch -m OLD NEW, for any ref (not parsed from update-ref's language: update-ref has no
    rename). Queued beside ``Command`` records; the native engines move the ref, its reflog and the HEADs
    that point at it in the same one transaction (``update/rename.py``).

    ``old_name: bytes`` -- the ref's full name now; ``name: bytes`` -- its full name after; ``old: bytes |
    None`` -- the hex oid it must be at now (None: not checked). (The brief's ``typing.NamedTuple``, as
    ``collections.namedtuple``: the same record, without importing ``typing`` on ``refscope update``'s
    start.)"""

    __slots__ = ()


class Batch(namedtuple("Batch", "commands action acks")):
    """One transaction of the input: its commands, ``action`` ("commit" or "abort"), and the ``acks``
    git prints on stdout for it (``start: ok``...), in order."""

    __slots__ = ()


class Parsed(namedtuple("Parsed", "batches error warnings pending")):
    """``batches`` to commit in order; ``error``: the UpdateInputError git dies on after them (its open
    transaction is not committed), else None; ``warnings``: git's ``warning:`` lines, in order;
    ``pending``: the commands git had queued in the open transaction when it died (git checked their new
    values already: an object error among them is what git reports instead)."""

    __slots__ = ()


def _fatal(text: str) -> UpdateInputError:
    return UpdateInputError(None, text)


def _s(b: bytes) -> str:
    return b.decode("utf-8", "replace")


# verb -> (args, state) as git's command table: state 0 open, 1 started, 2 prepared, 3 closed
_TABLE = (
    (b"update", 3, 0),
    (b"create", 2, 0),
    (b"delete", 2, 0),
    (b"verify", 2, 0),
    (b"symref-update", 4, 0),
    (b"symref-create", 2, 0),
    (b"symref-delete", 2, 0),
    (b"symref-verify", 2, 0),
    (b"option", 1, 0),
    (b"start", 0, 1),
    (b"prepare", 0, 2),
    (b"abort", 0, 3),
    (b"commit", 0, 3),
)


def unquote_c_style(buf: bytes, i: int) -> tuple[bytes, int] | None:
    """git's unquote_c_style from ``buf[i] == '"'``: (value, index after the closing quote) or None."""
    out = bytearray()
    i += 1
    n = len(buf)
    while i < n:
        c = buf[i]
        if c == 0:
            return None
        if c == 0x22:  # "
            return bytes(out), i + 1
        if c != 0x5C:  # backslash
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            return None
        c = buf[i]
        i += 1
        simple = {0x61: 7, 0x62: 8, 0x66: 12, 0x6E: 10, 0x72: 13, 0x74: 9, 0x76: 11, 0x5C: 0x5C, 0x22: 0x22}
        if c in simple:
            out.append(simple[c])
        elif 0x30 <= c <= 0x33:
            if i + 1 >= n or not (0x30 <= buf[i] <= 0x37 and 0x30 <= buf[i + 1] <= 0x37):
                return None
            out.append(((c - 0x30) << 6) | ((buf[i] - 0x30) << 3) | (buf[i + 1] - 0x30))
            i += 2
        else:
            return None
    return None


class _Line:
    """One command's buffer as git holds it (the terminators included) and a cursor: C string semantics
    (``buf[i] == 0`` ends what ``%s`` prints), emulated with a NUL sentinel at the end."""

    __slots__ = ("buf", "end", "i", "term")

    def __init__(self, data: bytes, term: int) -> None:
        self.buf = data + b"\0"
        self.end = len(data)
        self.i = 0
        self.term = term

    def at(self) -> int:
        return self.buf[self.i]

    def rest(self, i: int | None = None) -> str:
        """``%s`` of the buffer from ``i``: up to the first NUL."""
        i = self.i if i is None else i
        text = self.buf[i : self.buf.index(0, i)]
        if self.term and text.endswith(b"\n"):
            text = text[:-1]  # git prints the line's LF too (a blank line after the fatal one): one line here
        return _s(text)


def _parse_arg(ln: _Line) -> bytes:
    buf = ln.buf
    if buf[ln.i] == 0x22:
        orig = ln.i
        got = unquote_c_style(buf, ln.i)
        if got is None:
            raise _fatal(f"badly quoted argument: {ln.rest(orig)}")
        value, ln.i = got
        c = buf[ln.i]
        if c and c not in _SPACE:
            raise _fatal(f"unexpected character after quoted argument: {ln.rest(orig)}")
        return value
    start = i = ln.i
    while buf[i] and buf[i] not in _SPACE:
        i += 1
        if i - start == 128:  # a long argument (a 100 MB line): its end found at C speed
            i = min(j for j in (buf.find(c, i) for c in b"\0 \t\n\r") if j >= 0)
            break
    ln.i = i
    return buf[start:i]


def _parse_refname(ln: _Line) -> bytes | None:
    if ln.term:
        ref = _parse_arg(ln)
    else:
        start = ln.i
        ln.i = ln.buf.index(0, start)
        ref = ln.buf[start : ln.i]
    if not ref:
        return None
    if not is_valid_refname(ref):
        raise _fatal(f"invalid ref format: {_s(ref)}")
    return ref


def _skip_delim(ln: _Line) -> bool:
    """git's delimiter before a next argument: False when there is none."""
    c = ln.at()
    if ln.term:
        if not c or c == ln.term:
            return False
        if c != 0x20:
            raise _fatal(f"expected SP but got: {ln.rest()}")
    elif c:
        return False
    ln.i += 1
    return True


def _parse_next_refname(ln: _Line) -> bytes | None:
    if not _skip_delim(ln):
        return None
    return _parse_refname(ln)


def _parse_next_arg(ln: _Line) -> bytes | None:
    if not _skip_delim(ln):
        return None
    if ln.term:
        arg = _parse_arg(ln)
    else:
        start = ln.i
        ln.i = ln.buf.index(0, start)
        arg = ln.buf[start : ln.i]
    return arg or None


class _Parser:
    def __init__(self, term: int, hexsz: int, resolve) -> None:
        self.term = term
        self.hexsz = hexsz
        self.zero = b"0" * hexsz
        self.resolve = resolve  # bytes -> hex oid bytes or None (not a name git would resolve)
        self.no_deref_default = False
        self.no_deref = False
        self.warnings: list[str] = []

    def oid(self, arg: bytes) -> bytes | None:
        if len(arg) == self.hexsz and _HEX.issuperset(arg):
            return arg.lower()
        return self.resolve(arg)

    def next_oid(self, ln: _Line, verb: str, ref: bytes, old: bool, allow_empty: bool) -> bytes | None:
        """git's parse_next_oid: the oid, or None when there is no argument at all."""
        what = "<old-oid>" if old else "<new-oid>"
        name = _s(ref)
        if ln.i == ln.end:
            raise _fatal(f"{verb} {name}: unexpected end of input when reading {what}")
        if ln.term:
            c = ln.at()
            if not c or c == ln.term:
                return None
            if c != 0x20:
                raise _fatal(f"{verb} {name}: expected SP but got: {ln.rest()}")
            ln.i += 1
            arg = _parse_arg(ln)
            if not arg:
                return self.zero  # without -z an empty value means all zeros
        else:
            if ln.at():
                raise _fatal(f"{verb} {name}: expected NUL but got: {ln.rest()}")
            ln.i += 1
            if ln.i == ln.end:
                raise _fatal(f"{verb} {name}: unexpected end of input when reading {what}")
            start = ln.i
            ln.i = ln.buf.index(0, start)
            arg = ln.buf[start : ln.i]
            if not arg:
                if allow_empty:
                    self.warnings.append(f"{verb} {name}: missing <new-oid>, treating as zero")
                    return self.zero
                return None
        value = self.oid(arg)
        if value is None:
            raise _fatal(f"{verb} {name}: invalid {what}: {_s(arg)}")
        return value

    def end_of(self, ln: _Line, verb: str, ref: bytes | None) -> None:
        if ln.at() != self.term:
            head = f"{verb} {_s(ref)}" if ref is not None else verb
            raise _fatal(f"{head}: extra input: {ln.rest()}")

    def command(self, verb: bytes, ln: _Line) -> Command | None:
        v = verb.decode()
        nd = self.no_deref
        if v == "option":
            rest = ln.buf[ln.i :]
            if rest.startswith(b"no-deref") and rest[8] == self.term:
                self.no_deref = True
                return None
            raise _fatal(f"option unknown: {ln.rest()}")
        if v in ("symref-delete", "symref-verify") and not nd:
            raise _fatal(f"{v}: cannot operate with deref mode")
        ref = _parse_refname(ln)
        if ref is None:
            raise _fatal(f"{v}: missing <ref>")
        name = _s(ref)
        z = self.zero
        if v == "update":
            new = self.next_oid(ln, v, ref, False, True)
            if new is None:
                raise _fatal(f"update {name}: missing <new-oid>")
            old = self.next_oid(ln, v, ref, True, False)
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, new, old, None, None, nd)
        elif v == "create":
            new = self.next_oid(ln, v, ref, False, False)
            if new is None:
                raise _fatal(f"create {name}: missing <new-oid>")
            if new == z:
                raise _fatal(f"create {name}: zero <new-oid>")
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, new, z, None, None, nd)
        elif v == "delete":
            old = self.next_oid(ln, v, ref, True, False)
            if old == z:
                raise _fatal(f"delete {name}: zero <old-oid>")
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, z, old, None, None, nd)
        elif v == "verify":
            old = self.next_oid(ln, v, ref, True, False)
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, None, z if old is None else old, None, None, nd)
        elif v == "symref-update":
            target = _parse_next_refname(ln)
            if target is None:
                raise _fatal(f"symref-update {name}: missing <new-target>")
            old_oid = old_target = None
            kind = _parse_next_arg(ln)
            if kind is not None:
                value = _parse_next_arg(ln)
                if value is None:
                    raise _fatal(f"symref-update {name}: expected old value")
                if kind == b"oid":
                    old_oid = self.oid(value)
                    if old_oid is None:
                        raise _fatal(f"symref-update {name}: invalid oid: {_s(value)}")
                elif kind == b"ref":
                    if not is_valid_refname(value):
                        raise _fatal(f"symref-update {name}: invalid ref: {_s(value)}")
                    old_target = value
                else:
                    raise _fatal(f"symref-update {name}: invalid arg '{_s(kind)}' for old value")
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, None, old_oid, target, old_target, nd)
        elif v == "symref-create":
            target = _parse_next_refname(ln)
            if target is None:
                raise _fatal(f"symref-create {name}: missing <new-target>")
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, None, z, target, None, nd)
        elif v == "symref-delete":
            old_target = _parse_next_refname(ln)
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, z, None, None, old_target, nd)
        else:  # symref-verify
            old_target = _parse_next_refname(ln)
            self.end_of(ln, v, ref)
            cmd = Command(v, ref, None, z if old_target is None else None, None, old_target, nd)
        self.no_deref = self.no_deref_default
        return cmd


def _lines(data: bytes, term: int):
    """git's strbuf_getwholeline: each line with its terminator (the last one may lack it)."""
    sep = bytes((term,))
    start = 0
    n = len(data)
    while start < n:
        j = data.find(sep, start)
        if j < 0:
            yield data[start:]
            return
        yield data[start : j + 1]
        start = j + 1


def parse(
    data: bytes,
    *,
    nul: bool = False,
    hexsz: int = 40,
    no_deref: bool = False,
    resolve=None,
    fast: bool = True,
) -> Parsed:
    """The batches of ``data`` (git's ``update-ref --stdin`` input; ``nul``: the ``-z`` form), and the
    error git dies on, if any. ``resolve(arg)``: the hex oid a value that is not a full hex object name
    stands for (None: git would refuse it). ``fast=False``: the faithful parser even for plain input
    (the tests check that both read it alike)."""
    if fast and not nul:
        was = gc.isenabled()
        gc.disable()  # one record per line, none in a cycle: a collection would only walk them again
        from .plainparse import parse_plain

        try:
            fast = parse_plain(data, hexsz, no_deref)
        finally:
            if was:
                gc.enable()
        if fast is not None:
            return fast
    term = 0 if nul else 0x0A
    p = _Parser(term, hexsz, resolve or (lambda _arg: None))
    p.no_deref_default = p.no_deref = no_deref
    batches: list[Batch] = []
    commands: list[Command] = []
    acks: list[str] = []
    state = 0
    lines = _lines(data, term)
    try:
        for first in lines:
            if first[0] == term:
                raise _fatal("empty command in input")
            if first[0] in _SPACE:
                raise _fatal(f"whitespace before command: {_Line(first, term).rest(0)}")
            found = None
            for verb, args, cstate in _TABLE:
                if first.startswith(verb):
                    follow = first[len(verb)] if len(first) > len(verb) else 0
                    if follow == (0x20 if args else term):
                        found = (verb, args, cstate)
                        break
            if found is None:
                raise _fatal(f"unknown command: {_Line(first, term).rest(0)}")
            verb, args, cstate = found
            buf = first
            if not term:
                for _ in range(1, args):
                    more = next(lines, None)
                    if more is None:
                        break
                    buf += more
            if state in (0, 1):
                if state == 1 and cstate == 1:
                    raise _fatal("cannot restart ongoing transaction")
                if cstate >= state:
                    state = cstate
            elif state == 2:
                if cstate != 3:
                    raise _fatal("prepared transactions can only be closed")
                state = cstate
            else:
                if cstate != 1:
                    raise _fatal("transaction is closed")
                state = cstate
            ln = _Line(buf, term)
            ln.i = len(verb) + (1 if args else 0)
            if not args:
                if ln.at() != term:
                    raise _fatal(f"{verb.decode()}: extra input: {ln.rest()}")
                acks.append(f"{verb.decode()}: ok")
                if cstate == 3:
                    batches.append(Batch(commands, verb.decode(), acks))
                    commands, acks = [], []
                continue
            cmd = p.command(verb, ln)
            if cmd is not None:
                commands.append(cmd)
    except UpdateInputError as err:
        return Parsed(batches, err, p.warnings, commands)
    if state == 0:
        batches.append(Batch(commands, "commit", acks))
    # started or prepared but never closed: git aborts it (nothing written)
    return Parsed(batches, None, p.warnings, [])
