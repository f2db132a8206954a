"""The object database of a repository: its objects directory, its alternates, their packs
(through a multi-pack-index where there is one) and loose objects.

What callers get is a typed answer: ``(type name, content)`` or ``(type name, size)``, or None for an
object that is not there (missing, or only promised by a partial clone's remote) -- never an exception for
absence. Damage is a ``CorruptStore`` naming the file and offset, as for the ref readers. Packs are
opened on the first lookup and looked up newest first (the order git prefers), then loose objects.
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Iterator
from itertools import compress

from ..errors import CorruptStore
from ..fileio import map_regular, read_regular
from ..model import HASH_RAWSZ
from .abbrev import Abbreviator
from .loose import path_of, read_loose
from .midx import MultiPackIndex
from .pack import TYPE_NAMES, Pack
from .packidx import PackIndex

_MAX_ALTERNATE_DEPTH = 5  # git: "ignoring alternate object stores, nesting too deep"


def _unquote(line: str) -> str:
    """An alternates line as git reads it: a C-quoted path when it starts with a double quote."""
    if not line.startswith('"'):
        return line
    body = line[1:-1] if line.endswith('"') and len(line) > 1 else line[1:]
    return (
        body.encode("latin-1", "surrogateescape")
        .decode("unicode_escape")
        .encode("latin-1")
        .decode("utf-8", "surrogateescape")
    )


def object_dirs(objects_dir: str, env: dict[str, str] | None = None) -> list[str]:
    """``objects_dir`` and every alternate it reaches (``objects/info/alternates`` recursively, relative
    paths against the directory holding the file, then ``GIT_ALTERNATE_OBJECT_DIRECTORIES``), each once."""
    env = os.environ if env is None else env
    out: list[str] = []
    seen: set[str] = set()

    def add(path: str, depth: int) -> None:
        real = os.path.realpath(path)
        if real in seen or not os.path.isdir(path):
            return
        seen.add(real)
        out.append(path)
        if depth >= _MAX_ALTERNATE_DEPTH:
            return
        alt = os.path.join(path, "info", "alternates")
        try:
            data, _ = read_regular(alt, 1 << 20)
        except (FileNotFoundError, NotADirectoryError):
            return
        for raw in data.decode("utf-8", "surrogateescape").split("\n"):
            line = raw.strip("\r")
            if not line or line.startswith("#"):
                continue
            line = _unquote(line)
            add(line if os.path.isabs(line) else os.path.normpath(os.path.join(path, line)), depth + 1)

    add(objects_dir, 0)
    extra = env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
    if extra:
        for path in extra.split(":"):
            if path:
                add(path, 1)
    return out


class Located(namedtuple("Located", "packed elsewhere")):
    """Where many objects are: ``packed`` [(pack, offsets ascending, their hex ids)...], ``elsewhere``
    the ids in no pack (loose, or not there)."""

    __slots__ = ()

    def ids(self) -> list[bytes]:
        """The ids in the order ``Odb.read_located`` reads them."""
        out: list[bytes] = []
        for _, _, hexs in self.packed:
            out += hexs
        return out + list(self.elsewhere)


class _PackSet:
    """The packs of one objects directory, opened lazily."""

    __slots__ = ("directory", "rawsz", "midx", "indexes", "_packs")

    def __init__(self, directory: str, rawsz: int) -> None:
        self.directory = directory
        self.rawsz = rawsz
        pack_dir = os.path.join(directory, "pack")
        try:
            names = os.listdir(pack_dir)
        except (FileNotFoundError, NotADirectoryError):
            names = []
        idx = [n for n in names if n.endswith(".idx") and n[:-4] + ".pack" in names]
        self.midx = None
        if "multi-pack-index" in names:
            self.midx = MultiPackIndex(
                os.path.join(pack_dir, "multi-pack-index"),
                map_regular(os.path.join(pack_dir, "multi-pack-index")),
                rawsz,
            )
            covered = set(self.midx.packs)
            idx = [n for n in idx if n not in covered]

        def mtime(n: str) -> float:
            try:
                return os.stat(os.path.join(pack_dir, n[:-4] + ".pack")).st_mtime
            except OSError:
                return 0.0

        idx.sort(key=mtime, reverse=True)
        self.indexes = [
            (n, PackIndex(os.path.join(pack_dir, n), map_regular(os.path.join(pack_dir, n)), rawsz))
            for n in idx
        ]
        self._packs: dict[str, Pack] = {}

    def pack(self, idx_name: str) -> Pack | None:
        p = self._packs.get(idx_name)
        if p is None:
            path = os.path.join(self.directory, "pack", idx_name[:-4] + ".pack")
            try:
                p = Pack(path, map_regular(path), self.rawsz)
            except (FileNotFoundError, NotADirectoryError):
                return None
            self._packs[idx_name] = p
        return p

    def find(self, raw: bytes, bulk: int = 0) -> tuple[Pack, int] | None:
        """Where ``raw`` is; ``bulk``: how many lookups the caller is about to make (many turn each index
        into a dict first)."""
        if self.midx is not None:
            hit = self.midx.lookup(raw)
            if hit is not None:
                p = self.pack(hit[0])
                if p is not None:
                    return p, hit[1]
        for name, index in self.indexes:
            if bulk * 8 > index.count:
                index.build_table()
            off = index.lookup(raw)
            if off is not None:
                p = self.pack(name)
                if p is not None:
                    return p, off
        return None

    def find_many(
        self, hexoids: list[bytes], raw_of
    ) -> tuple[list[tuple[Pack, list[int], list[bytes]]], list[bytes]]:
        """Where the objects ``hexoids`` (distinct hex ids) are: ([(pack, offsets, their hex ids)...], the
        ids not found here). An index asked for a good part of its objects is looked up by hex id through
        one pass over its ids in hex (``PackIndex.hex_columns``: each tested for membership in a set of
        ``hexoids``), any other by raw id (``raw_of``: hex -> raw)."""
        found: dict[int, tuple[Pack, list, list]] = {}  # id(pack) -> (pack, offsets, hex ids)
        todo = hexoids
        if self.midx is not None:
            rest = []
            for h in todo:
                hit = self.find(raw_of(h))
                if hit is None:
                    rest.append(h)
                else:
                    got = found.setdefault(id(hit[0]), (hit[0], [], []))
                    got[1].append(hit[1])
                    got[2].append(h)
            return list(found.values()), rest
        for name, index in self.indexes:
            if not todo:
                break
            first, last = _first_bytes(todo)
            lo, hi = index.span(first, last)
            if len(todo) * 8 > hi - lo:
                names, offsets = index.hex_columns(first, last)
                hits = list(map(set(todo).__contains__, names))
                found_hexs = list(compress(names, hits))
                found_offs = list(compress(offsets, hits))
                if len(found_hexs) == len(todo):
                    todo = []
                elif found_hexs:
                    got = set(found_hexs)
                    todo = [h for h in todo if h not in got]
            else:
                offs = [index.lookup(raw_of(h)) for h in todo]
                if None not in offs:
                    found_offs, found_hexs, todo = offs, todo, []
                else:
                    found_offs = [off for off in offs if off is not None]
                    found_hexs = [h for off, h in zip(offs, todo, strict=True) if off is not None]
                    todo = [h for off, h in zip(offs, todo, strict=True) if off is None]
            if not found_hexs:
                continue
            p = self.pack(name)
            if p is None:  # (an index without its pack: the ids are looked for in the next ones)
                todo += found_hexs
                continue
            entry = found.setdefault(id(p), (p, [], []))
            entry[1].extend(found_offs)
            entry[2].extend(found_hexs)
        return list(found.values()), todo


def _first_bytes(hexoids: list[bytes]) -> tuple[int, int]:
    """The smallest and largest first byte of the (non-empty) hex ids ``hexoids`` (0 and 255 when one is
    not hex: it is then looked up by ``_raw``, which refuses it)."""
    try:
        first, last = int(min(hexoids)[:2], 16), int(max(hexoids)[:2], 16)
    except ValueError:
        return 0, 255
    return (first, last) if first <= last else (0, 255)


_NOT_HEX = str.maketrans("", "", "0123456789abcdef")  # what ``str.translate`` leaves of a name but hex


def objects_dir(repo) -> str:
    """The repository's object directory: ``GIT_OBJECT_DIRECTORY`` when set, as git reads it, else the
    common dir's ``objects``."""
    return os.environ.get("GIT_OBJECT_DIRECTORY") or os.path.join(repo.commondir, "objects")


class Odb:
    """Read access to every object a repository can reach."""

    def __init__(self, objects_dir: str, hash_name: str, env: dict[str, str] | None = None) -> None:
        self.rawsz = HASH_RAWSZ[hash_name]
        self.dirs = object_dirs(objects_dir, env)
        self._sets: list[_PackSet] | None = None
        self._count: int | None = None
        # commits git takes as parentless: a shallow repository's boundary (``shallow``), set by the caller
        # that knows the repository (``refformat.command``); the walks and %(parent) read it
        self.grafted: frozenset[bytes] = frozenset()

    def _packsets(self) -> list[_PackSet]:
        if self._sets is None:
            self._sets = [_PackSet(d, self.rawsz) for d in self.dirs]
        return self._sets

    def _find_packed(self, raw: bytes) -> tuple[Pack, int] | None:
        for ps in self._packsets():
            hit = ps.find(raw)
            if hit is not None:
                return hit
        return None

    def _ref_base(self, raw: bytes, pack: Pack):
        """A REF_DELTA's base: its offset when in the same pack, else (type, content) from anywhere."""
        for ps in self._packsets():
            hit = ps.find(raw)
            if hit is not None:
                if hit[0] is pack:
                    return hit[1]
                return hit[0].read(hit[1], self._ref_base)
        got = self._read_loose(raw.hex())
        return None if got is None else (got[0], got[2])

    def _read_loose(self, hexoid: str, header_only: bool = False):
        for d in self.dirs:
            got = read_loose(path_of(d, hexoid), header_only)
            if got is not None:
                return got
        return None

    def _raw(self, hexoid: bytes) -> bytes:
        if len(hexoid) != self.rawsz * 2:
            raise ValueError(f"object id of the wrong length: {hexoid!r}")
        return bytes.fromhex(hexoid.decode("ascii"))

    def _check_lengths(self, hexoids: list[bytes]) -> None:
        """The ValueError ``_raw`` gives an id of the wrong length, for the first such of ``hexoids``."""
        if set(map(len, hexoids)) - {self.rawsz * 2}:
            for h in hexoids:
                self._raw(h)

    def read(self, hexoid: bytes) -> tuple[str, bytes] | None:
        """(type name, content) of the object ``hexoid`` (lowercase hex bytes), or None if it is not
        there."""
        raw = self._raw(hexoid)
        hit = self._find_packed(raw)
        if hit is not None:
            kind, content = hit[0].read(hit[1], self._ref_base)
            return TYPE_NAMES[kind], content
        got = self._read_loose(hexoid.decode("ascii"))
        return None if got is None else (TYPE_NAMES[got[0]], got[2])

    def read_many(self, hexoids) -> dict[bytes, tuple[str, bytes] | None]:
        """{id: (type name, content) or None} for many ids at once: a pack index asked for a good part
        of it is looked up through one table, and each pack read in offset order."""
        located = self.locate_many(hexoids)
        out: dict[bytes, tuple[str, bytes] | None] = {}
        for pack, offs, hexs in located.packed:
            out.update(zip(hexs, pack.read_many(offs, self._ref_base), strict=True))
        for h in located.elsewhere:
            out[h] = self.read(h)
        return out

    def locate_many(self, hexoids) -> Located:
        """Where the objects ``hexoids`` are, each pack's in offset order (see ``Located``): what a
        caller splitting the reads between processes looks up once, before it forks."""
        todo = list(dict.fromkeys(hexoids))
        self._check_lengths(todo)
        packed = []
        for ps in self._packsets():
            if not todo:
                break
            found, todo = ps.find_many(todo, self._raw)
            for pack, offs, hexs in found:
                order = sorted(range(len(offs)), key=offs.__getitem__)
                packed.append((pack, list(map(offs.__getitem__, order)), list(map(hexs.__getitem__, order))))
        return Located(packed, todo)

    def read_located(self, located: Located, apply) -> tuple[list[bytes], list]:
        """(the ids, ``apply(type name, content)`` of each -- (type name, content) without ``apply``) for
        the objects of ``located``, each pack read front to back; an id in no pack is read on its own,
        and one not there at all gets None."""
        ids: list[bytes] = []
        out: list = []
        for pack, offs, hexs in located.packed:
            ids += hexs
            out += pack.read_many(offs, self._ref_base, apply)
        for h in located.elsewhere:
            got = self.read(h)
            ids.append(h)
            out.append(got if got is None or apply is None else apply(*got))
        return ids, out

    def read_located_columns(self, located: Located, fn) -> tuple[list[bytes], list[list]]:
        """(the ids, columns) for the objects of ``located`` as ``read_located`` reads them, the columns
        being what ``fn(type names, contents)`` makes of a chunk of them (a list of lists, each one
        value per object), chunk after chunk joined: a caller that keeps a few values of a million
        objects makes them column-wise, by C-level passes (``Pack.inflate_chunks``). An id in no pack
        is read on its own; one not there at all raises ``KeyError`` (the caller's per-object path
        reports it)."""
        ids: list[bytes] = []
        cols: list[list] = []
        names = TYPE_NAMES.__getitem__

        def add(got: list[list]) -> None:
            if not cols:
                cols.extend([] for _ in got)
            for col, part in zip(cols, got, strict=True):
                col += part

        for pack, offs, hexs in located.packed:
            ids += hexs
            for kinds, contents in pack.inflate_chunks(offs, self._ref_base):
                add(fn(list(map(names, kinds)), contents))
        if located.elsewhere:
            got = list(map(self.read, located.elsewhere))
            if None in got:
                raise KeyError("missing object")
            ids += located.elsewhere
            add(fn([g[0] for g in got], [g[1] for g in got]))
        return ids, cols

    def infos_located(self, located: Located) -> tuple[list[bytes], list[tuple[str, int] | None]]:
        """(the ids, (type name, size) of each or None when it is not there) for the objects of
        ``located``, in ``read_located``'s order, from the pack entries' headers (a delta's own header
        too) and the loose objects' headers: what ``%(objecttype)`` and ``%(objectsize)`` need, with no
        object inflated."""
        ids: list[bytes] = []
        out: list = []
        for pack, offs, hexs in located.packed:
            ids += hexs
            out += [(TYPE_NAMES[k], n) for k, n in pack.infos(offs, self._ref_base)]
        ids += located.elsewhere
        out += map(self.info, located.elsewhere)
        return ids, out

    def types(self, hexoids) -> dict[bytes, str | None]:
        """{id: type name or None} for many ids at once, from the pack entries' headers: the kinds of
        many tips without inflating one (a whole object's first byte, in index order: no sort by
        offset, no size decoded, which ``infos_located`` pays for)."""
        todo = list(dict.fromkeys(hexoids))
        self._check_lengths(todo)
        out: dict[bytes, str | None] = {}
        for ps in self._packsets():
            if not todo:
                break
            found, todo = ps.find_many(todo, self._raw)
            for pack, offs, hexs in found:
                kinds = pack.types(offs, self._ref_base)
                out.update(zip(hexs, map(TYPE_NAMES.__getitem__, kinds), strict=True))
        for h in todo:
            got = self.info(h)
            out[h] = None if got is None else got[0]
        return out

    @classmethod
    def of(cls, repo) -> Odb:
        """The object database of ``repo`` (see ``objects_dir``)."""
        return cls(objects_dir(repo), repo.hash_name)

    def approximate_count(self) -> int:
        """git's approximate object count: what the multi-pack-indexes and pack indexes hold (loose
        objects not counted), the basis of the default abbreviation."""
        if self._count is not None:
            return self._count
        total = 0
        for ps in self._packsets():
            if ps.midx is not None:
                total += ps.midx.count
            total += sum(index.count for _, index in ps.indexes)
        self._count = total
        return total

    def abbreviator(self, default: int = -1) -> Abbreviator:
        """What shortens ids for one run (``abbrev.Abbreviator``), ``default`` its start length."""
        return Abbreviator(self, default)

    def id_tables(self) -> list:
        """Every sorted table of object ids, each objects directory's multi-pack-index first, then its
        pack indexes: what an abbreviation is checked against (find_abbrev_len_packed)."""
        out = []
        for ps in self._packsets():
            if ps.midx is not None:
                out.append(ps.midx)
            out += [index for _, index in ps.indexes]
        return out

    def raw_id(self, hexoid: bytes) -> bytes:
        """The raw id of ``hexoid``; ValueError when it has the wrong length or is not hex."""
        return self._raw(hexoid)

    def with_prefix(self, prefix: bytes, limit: int = 2) -> list[bytes]:
        """Up to ``limit`` distinct hex ids of the objects whose names start with the lower-case hex
        ``prefix`` (an abbreviated name, as get_short_oid looks it up: every pack index and midx, every
        loose directory); two are enough to tell a unique name from an ambiguous one."""
        hexsz = self.rawsz * 2
        raw = bytes.fromhex((prefix + b"0" * (hexsz - len(prefix))).decode("ascii"))
        found: dict[bytes, None] = {}

        def scan(table) -> None:
            i, _ = table.bisect(raw)
            while i < table.count and len(found) < limit:
                name = table.name(i).hex().encode()
                if not name.startswith(prefix):
                    return
                found[name] = None
                i += 1

        for ps in self._packsets():
            if ps.midx is not None:
                scan(ps.midx)
            for _, index in ps.indexes:
                scan(index)
        for name in self.loose_names(prefix.decode("ascii")):
            if len(found) >= limit:
                break
            found[name.encode()] = None
        return list(found)[:limit]

    def loose_names(self, hexs: str, listed: dict[str, list[str]] | None = None) -> Iterator[str]:
        """The hex ids of the loose objects whose names start with ``hexs`` (two hex digits or more),
        in every objects directory; a file there whose name is no id is not one. ``listed``: the
        directories' listings by path, taken from there and kept there."""
        hexsz = self.rawsz * 2
        for d in self.dirs:
            path = os.path.join(d, hexs[:2])
            names = None if listed is None else listed.get(path)
            if names is None:
                try:
                    names = os.listdir(path)
                except (FileNotFoundError, NotADirectoryError):
                    names = []
                if listed is not None:
                    listed[path] = names
            for name in names:
                if len(name) == hexsz - 2 and name.startswith(hexs[2:]) and not name.translate(_NOT_HEX):
                    yield hexs[:2] + name

    def info(self, hexoid: bytes) -> tuple[str, int] | None:
        """(type name, size) of the object ``hexoid``, inflating no more than a delta's header."""
        raw = self._raw(hexoid)
        hit = self._find_packed(raw)
        if hit is not None:
            kind, size = hit[0].info(hit[1], self._ref_base)
            return TYPE_NAMES[kind], size
        got = self._read_loose(hexoid.decode("ascii"), header_only=True)
        return None if got is None else (TYPE_NAMES[got[0]], got[1])


__all__ = ["CorruptStore", "Odb", "object_dirs"]
