"""The value of every ``for-each-ref`` atom for one ref, as ref-filter.c's populate_value and grab_*
functions make it: a string and, for numbers and dates, the number sorting compares.

Object atoms read the object once per id (a hosting repository's refs share tips) and keep the values
of every object atom of the format for it; the ``*`` atoms read the object a tag peels to, taking the
peeled id the ref store recorded when there is one, as git does. Text fields are read from the object as
a C string, so a NUL ends them where it ends git's.
"""

from __future__ import annotations

from contextlib import suppress

from ..errors import RefscopeError
from ..model import TAG_CHAIN_MAX, Ref
from . import tipreads
from .fields import (
    EMPTY,
    Value,
    cstr,
    date,
    dates_columns,
    dates_reader,
    first_line,
    ident_email,
    ident_name,
    message,
    object_headers,
    subject_line,
    subpos,
    wholine,
)
from .refatoms import flag, name_column, stripped
from .spec import NEEDS_OBJECT, NUMBER_ATOMS, TIME_ATOMS, Atom

_DATE_SOURCE = {"committerdate": b"committer", "creatordate": b"committer", "authordate": b"author"}
HEADER_ATOMS = frozenset({"objecttype", "objectsize"})  # what an object's header gives: git inflates no more


def tip_atom(a: Atom) -> bool:
    """Does ``a``'s value depend on the ref's object id alone (not on its name, nor on a tag's target)?"""
    return not a.deref and a.name in NEEDS_OBJECT


def _shown(name: bytes) -> str:
    return name.decode("utf-8", "replace")


def _short_len(arg: str) -> int:
    """The length ``:short`` (-1: the default) or ``:short=N`` (at least 4, as git clamps it) asks."""
    return -1 if arg == "short" else max(int(arg[6:]), 4)


def _at_ref(err: RefscopeError, i: int) -> RefscopeError:
    """``err``, marked as met at the ``i``-th ref a table was made for (``ref_index``): a run that
    prints each ref as git finds it prints the ones before, then fails (``run.for_each_ref``)."""
    err.ref_index = i
    return err


class Objects:
    """Reads objects for the atoms: ``read(oid)`` is (type, content) or None, cached per id."""

    def __init__(self, odb) -> None:
        self.odb = odb
        self._cache: dict[bytes, tuple[str, bytes] | None] = {}

    def read(self, oid: bytes) -> tuple[str, bytes] | None:
        hit = self._cache.get(oid, False)
        if hit is False:
            hit = self._cache[oid] = self.odb.read(oid)
        return hit

    def info(self, oid: bytes) -> tuple[str, int] | None:
        """(type name, size) of ``oid`` from its header (``Odb.info``), or None; from a whole read when
        one was made."""
        hit = self._cache.get(oid)
        if hit is not None:
            return hit[0], len(hit[1])
        return self.odb.info(oid)

    def prefetch(self, oids) -> None:
        """Read every one of ``oids`` not read yet, in one pass over each pack. An object that will
        not read leaves them all to be read one by one (``read``), where it fails for the ref that
        wants it."""
        cache = self._cache
        todo = [o for o in dict.fromkeys(oids) if o not in cache]
        if todo:
            with suppress(RefscopeError, ValueError):
                cache.update(self.odb.read_many(todo))


class Evaluator:
    """The values of ``atoms`` for refs of one repository."""

    def __init__(self, atoms: list[Atom], objects: Objects, *, head: bytes | None, worktrees: dict[bytes, bytes],
                 shorten, abbrev, numbers_only: frozenset[int] = frozenset()) -> None:  # fmt: skip
        """``numbers_only``: atoms only sorted by number, never printed (their text is not made)."""
        self.atoms = atoms
        self.objects = objects
        self.head = head
        self.worktrees = worktrees
        self.shorten = shorten  # refs_shorten_unambiguous_ref
        self.abbrev = abbrev  # objects.abbrev.Abbreviator: repo_find_unique_abbrev(oid hex, length or -1)
        self._plain = [
            k
            for k, a in enumerate(atoms)
            if not a.deref and a.name in NEEDS_OBJECT and a.name != "objectname"
        ]
        self._deref = [k for k, a in enumerate(atoms) if a.deref and a.name in NEEDS_OBJECT]
        # every object atom the header gives (git's object-info asks for the type and size alone, not
        # the content): the objects' headers are read, never their bodies, so a damaged body is not met
        self._headers = {
            deref: bool(which) and all(atoms[k].name in HEADER_ATOMS for k in which)
            for deref, which in ((False, self._plain), (True, self._deref))
        }
        self._wants_object = bool(self._plain or self._deref)
        self._by_oid: dict[bytes, list] = {}
        self._by_peeled: dict[bytes, list] = {}
        self._fns = [self._special_fn(a) for a in atoms]
        self._numbers_only = numbers_only
        self._oids_memo: tuple[list[Ref], list[bytes]] | None = None
        self._commit_dates = {
            deref: None if plan is None else self._date_reader(plan, deref)
            for deref, plan in ((False, self._dates_plan(self._plain)), (True, self._dates_plan(self._deref)))
        }
        plain_plan = self._dates_plan(self._plain)
        self._date_columns = None if plain_plan is None else dates_columns(plain_plan, self._other(False))

    def _dates_plan(self, which: list[int]):
        """When every object atom of ``which`` is a date a commit's author or committer line gives:
        (line, date modifier, whether only the number is wanted) per atom, so that a commit's line is
        found and read once for them all; else None. A modifier is parsed when a value is made, as git
        does (a bad one fails only where a date is shown)."""
        plan = []
        for k in which:
            a = self.atoms[k]
            src = _DATE_SOURCE.get(a.name)
            if src is None:
                return None
            plan.append((src + b" ", a.arg, k in self._numbers_only))
        return plan

    def prefetch(self, refs: list[Ref]) -> None:
        """Read the objects the atoms need for ``refs`` in bulk (then the tags' targets, if ``*`` atoms
        want them): the per-ref reads that follow hit the cache."""
        if not self._wants_object:
            return
        if not self._deref and tipreads.values_in_two(self, refs):
            return
        if self._headers[False] and not self._deref:
            tipreads.values_here(self, refs)
            return
        self.objects.prefetch(r.oid for r in refs)
        if self._deref:
            peeled = []
            with suppress(RefscopeError, ValueError):  # (``table`` meets it again, at its ref)
                for r in refs:
                    got = self.objects.read(r.oid)
                    if got is not None and got[0] == "tag":
                        peeled.append(r.peeled or self._peel(r.oid, got, r.name))
            if not self._headers[True]:  # (else their headers are all ``table`` reads)
                self.objects.prefetch(peeled)

    def _values_of(self, oids: list[bytes]) -> tuple[list, list] | None:
        """(the ids in pack order, for each object atom (``_plain``) (the texts, the numbers: 0 where
        none) of them) for the objects ``oids``; None if one is missing or refused."""
        try:
            located = self.objects.odb.locate_many(oids)
        except (RefscopeError, ValueError):
            return None
        cols = self._located_values(located)
        return None if cols is None else (located.ids(), cols)

    def _located_values(self, located) -> list | None:
        """``_values_of`` for the objects of ``located`` (``Odb.locate_many``), in its order. A format
        whose object atoms are commit dates (the sort of a million refs by date) keeps of each object
        its dates alone, read as the object is inflated."""
        try:
            if self._headers[False]:
                ids, got = self.objects.odb.infos_located(located)
                if None in got:
                    return None
                rows = [self._header_values(kind, size, False) for kind, size in got]
                return [
                    ([r[j][0] for r in rows], [r[j][1] or 0 for r in rows]) for j in range(len(self._plain))
                ]
            if self._date_columns is not None:
                _, flat = self.objects.odb.read_located_columns(located, self._date_columns)
                if not flat:
                    flat = [[] for _ in range(2 * len(self._plain))]
                return [(flat[2 * j], flat[2 * j + 1]) for j in range(len(self._plain))]
            ids, got = self.objects.odb.read_located(located, None)
            if None in got:
                return None
            rows = [self._object_values(oid, obj, False, b"") for oid, obj in zip(ids, got, strict=True)]
            return [([r[j][0] for r in rows], [r[j][1] or 0 for r in rows]) for j in range(len(self._plain))]
        except (RefscopeError, ValueError, KeyError):
            return None

    def _date_reader(self, plan, deref: bool):
        """``fields.dates_reader`` of ``plan``, any object but a commit through ``_object_values``."""
        return dates_reader(plan, self._other(deref))

    def _other(self, deref: bool):
        """(type name, content) -> the flat (text, number...) values of any object but a commit."""

        def other(kind, content):
            return tuple(
                x for t, v in self._object_values(b"", (kind, content), deref, b"") for x in (t, v or 0)
            )

        return other

    def table(self, refs: list[Ref]) -> tuple[list[list[bytes]], list[list[int]]]:
        """Every atom's values for ``refs``, one column per atom: (the bytes printed, the numbers sorted
        by; 0 where an atom has none). The object atoms' values are made once per object id and spread
        over the refs with C-level lookups, the ref-only ones straight from each ref -- at a million refs
        the per-ref work is what costs, so it is one list lookup per atom and no object per value."""
        n = len(refs)
        strs: list[list[bytes]] = []
        nums: list[list[int]] = []
        zeros = [0] * n
        names = None
        for k, fn in enumerate(self._fns):
            a = self.atoms[k]
            if a.name in NEEDS_OBJECT and not (a.name == "objectname" and not a.deref):
                strs.append([])  # filled below
                nums.append(zeros)
                continue
            if names is None:
                names = [r.name for r in refs]
            if a.name == "refname" and a.arg is None and not a.deref:
                strs.append(names)
            elif a.name == "objectname" and a.arg is None:
                strs.append([r.oid for r in refs])
            else:
                col = name_column(a, names, self.head, self.worktrees)
                strs.append([fn(r).s for r in refs] if col is None else col)
            nums.append(zeros)
        if not self._wants_object:
            return strs, nums
        by_oid = self._by_oid
        read = self.objects.read
        fetch = self.objects.info if self._headers[False] else read
        oids = self._oids(refs)
        where = {o: i for i, o in enumerate(by_oid)}
        at = list(map(where.get, oids))  # each ref's object's place in ``by_oid``
        for i, r in enumerate(refs) if None in at else ():
            oid = r.oid
            if oid in by_oid:
                continue
            try:
                got = fetch(oid)
                if got is None:
                    raise RefscopeError(None, f"missing object {oid.decode()} for {_shown(r.name)}")
                by_oid[oid] = self._values(oid, got, False, r.name)
            except RefscopeError as err:
                raise _at_ref(err, i) from None
        if None in at:
            where = {o: i for i, o in enumerate(by_oid)}
            at = list(map(where.__getitem__, oids))
        values = list(by_oid.values())
        for j, k in enumerate(self._plain):
            if k not in self._numbers_only:
                strs[k] = list(map([vs[j][0] for vs in values].__getitem__, at))
            if any(vs[j][1] for vs in values):
                nums[k] = list(map([vs[j][1] or 0 for vs in values].__getitem__, at))
        if self._deref:
            keys = []
            fetch = self.objects.info if self._headers[True] else read
            for i, r in enumerate(refs):
                got = read(r.oid)
                if got[0] != "tag":
                    keys.append(None)
                    continue
                try:
                    peeled = r.peeled or self._peel(r.oid, got, r.name)
                    if peeled not in self._by_peeled:
                        pgot = fetch(peeled)
                        if pgot is None:
                            raise RefscopeError(
                                None, f"missing object {peeled.decode()} for {_shown(r.name)}"
                            )
                        self._by_peeled[peeled] = self._values(peeled, pgot, True, r.name)
                except RefscopeError as err:
                    raise _at_ref(err, i) from None
                keys.append(peeled)
            for j, k in enumerate(self._deref):
                per = {o: vs[j] for o, vs in self._by_peeled.items()}
                per[None] = (b"", None)
                self._spread(strs, nums, k, per, keys)
        return strs, nums

    def _oids(self, refs: list[Ref]) -> list[bytes]:
        """The refs' object ids, one column made once for the passes that want it."""
        memo = self._oids_memo
        if memo is None or memo[0] is not refs:
            memo = self._oids_memo = (refs, [r.oid for r in refs])
        return memo[1]

    def _spread(self, strs: list, nums: list, k: int, per: dict, keys: list) -> None:
        """Column ``k`` from the values (text, number) ``per`` key (an object id), one per ref's key; an
        atom only sorted by number gets no text column."""
        if k not in self._numbers_only:
            strs[k] = list(map({o: v[0] for o, v in per.items()}.__getitem__, keys))
        if any(v[1] for v in per.values()):
            nums[k] = list(map({o: v[1] or 0 for o, v in per.items()}.__getitem__, keys))

    def _peel(self, oid: bytes, got, refname: bytes) -> bytes:
        """The object the tag ``oid`` (read: ``got``) peels to: each target's type is looked up in its
        header and only a tag is read on, as git's peel does (a target that is not there is git's "bad
        tag"; one whose body is damaged is no matter here)."""
        for _ in range(TAG_CHAIN_MAX):
            _, _, oid = object_headers("tag", got[1], oid, refname)
            kind = self.objects.info(oid)
            if kind is None:
                break
            if kind[0] != "tag":
                return oid
            got = self.objects.read(oid)
        raise RefscopeError(None, "bad tag")

    def _special_fn(self, atom: Atom):
        """The function that makes ``atom``'s value from the ref alone (EMPTY for object atoms, which
        ``values`` fills in)."""
        name, arg, deref = atom.name, atom.arg, atom.deref
        tail = b"^{}" if deref else b""
        if name == "refname":
            if arg is None and not deref:
                return lambda ref: Value(ref.name)
            return lambda ref: Value(self._show_ref(ref.name, arg) + tail)
        if name == "symref":  # get_symref's "" is still given the tail: ``%(*symref)`` of a plain ref is ^{}
            empty = Value(tail) if deref else EMPTY
            return lambda ref: empty if ref.target is None else Value(self._show_ref(ref.target, arg) + tail)
        if name == "objectname" and not deref:
            if arg is None:
                return lambda ref: Value(ref.oid)
            return lambda ref: Value(self._oid(ref.oid, arg))
        if name == "ahead-behind":
            return lambda ref: EMPTY  # a walk over every ref at once: run.for_each_ref fills it
        if name == "HEAD":
            star, blank = Value(b"*"), Value(b" ")
            return lambda ref: star if self.head is not None and ref.name == self.head else blank
        if name == "worktreepath":
            return lambda ref: (
                Value(self.worktrees.get(ref.name, b"")) if ref.name.startswith(b"refs/heads/") else EMPTY
            )
        if name == "flag":
            return flag
        return lambda ref: EMPTY

    def _show_ref(self, name: bytes, arg: str | None) -> bytes:
        if arg is None:
            return name
        if arg == "short":
            return self.shorten(name)
        return stripped(name, arg)

    def _oid(self, oid: bytes, arg: str | None) -> bytes:
        if arg is None:
            return oid
        return self.abbrev(oid, _short_len(arg))

    def short_ids(self, oids: list[bytes], arg: str) -> list[bytes]:
        """``_oid`` of each of ``oids`` (``arg``: ``short`` or ``short=N``), made for them all at once."""
        return self.abbrev.many(oids, _short_len(arg))

    def _values(self, oid: bytes, got, deref: bool, refname: bytes) -> list[tuple[bytes, int | None]]:
        """(text, number) of each object atom of the object ``got``: its header (type name, size) when
        the header is all they need (``_headers``), else (type name, content)."""
        if self._headers[deref]:
            return self._header_values(*got, deref)
        return self._object_values(oid, got, deref, refname)

    def _header_values(self, kind: str, size: int, deref: bool) -> list[tuple[bytes, int | None]]:
        """(text, number) of each object atom (all ``HEADER_ATOMS``) of an object of type ``kind`` and
        ``size`` bytes."""
        which = self._deref if deref else self._plain
        return [
            (kind.encode(), None) if self.atoms[k].name == "objecttype" else (str(size).encode(), size)
            for k in which
        ]

    def _object_values(self, oid: bytes, got, deref: bool, refname: bytes) -> list[tuple[bytes, int | None]]:
        """(text, number) of each object atom of the object ``got``."""
        kind, content = got
        which = self._deref if deref else self._plain
        reader = self._commit_dates[deref]
        if reader is not None and kind == "commit":
            flat = reader(kind, content)
            return list(zip(flat[0::2], flat[1::2], strict=True))
        textual = kind in ("commit", "tag")
        buf = cstr(content) if textual else b""
        heads = None
        if textual and any(
            self.atoms[k].name in ("tree", "parent", "numparent", "tag", "type", "object") for k in which
        ):
            heads = object_headers(kind, content, oid, refname)
        sub = (
            subpos(buf)
            if textual and any(self.atoms[k].name in ("subject", "body", "contents") for k in which)
            else None
        )
        values = (self._object_value(self.atoms[k], oid, kind, content, buf, heads, sub) for k in which)
        return [(v.s, v.v) for v in values]

    def _object_value(self, atom: Atom, oid, kind, content, buf, heads, sub) -> Value:
        name = atom.name
        if name == "objecttype":
            return Value(kind.encode())
        if name == "objectsize":
            return Value(str(len(content)).encode(), len(content))
        if name == "objectname":
            return Value(self._oid(oid, atom.arg))
        if kind == "commit":
            if name == "tree":
                return Value(self._oid(heads[0], atom.arg))
            if name in ("parent", "numparent"):  # a shallow boundary: git sees no parent
                parents = () if oid in getattr(self.objects.odb, "grafted", ()) else heads[1]
            if name == "parent":
                return Value(b" ".join(self._oid(p, atom.arg) for p in parents))
            if name == "numparent":
                return Value(str(len(parents)).encode(), len(parents))
            who = (b"author", b"committer")
        elif kind == "tag":
            if name == "tag":
                return Value(heads[0])
            if name == "type":
                return Value(heads[1])
            if name == "object":
                return Value(heads[2])
            who = (b"tagger",)
        else:
            return Value(b"", 0 if name in NUMBER_ATOMS or name in TIME_ATOMS else None)
        if name in ("subject", "body", "contents"):
            subject, body_sig, body, sig = sub
            if name == "subject" or atom.arg == "subject":
                return Value(subject_line(subject))
            if name == "body":  # git grabs it by the whole name: ``%(body:)`` is never filled
                return Value(b"" if atom.text.endswith(":") else body_sig)
            if atom.arg is None:
                return Value(message(buf))
            if atom.arg == "body":
                return Value(body)
            if atom.arg == "signature":
                return Value(sig)
            if atom.arg == "size":
                bare = message(buf)
                return Value(str(len(bare)).encode(), len(bare))
        if name.startswith("creator"):
            src = b"committer" if kind == "commit" else b"tagger"
            line = wholine(src, buf)
            if line is None:
                return Value(b"", 0 if name == "creatordate" else None)
            return date(line, atom.arg) if name == "creatordate" else Value(first_line(line))
        for w in who:
            wn = w.decode()
            if not name.startswith(wn):
                continue
            line = wholine(w, buf)
            if line is None:
                return Value(b"", 0 if name.endswith("date") else None)
            field = name[len(wn) :]
            if not field:
                return Value(first_line(line))
            if field == "name":
                return Value(ident_name(line))
            if field == "email":
                return Value(ident_email(line, atom.arg))
            if field == "date":
                return date(line, atom.arg)
        return Value(b"", 0 if name in TIME_ATOMS else None)
