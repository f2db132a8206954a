"""``verify --objects``: every ref's value against the object database, as ``git fsck`` judges refs.

What git checks, and so what this checks (builtin/fsck.c ``snapshot_ref``, refs.c
``ref_transaction_add_update``): each ref under refs/ and each worktree's HEAD, symrefs resolved, names an
object that exists ("invalid sha1 pointer"), and ``HEAD`` and ``refs/heads/*`` name a commit ("not a
commit"; git refuses to write anything else there). In a partial clone a missing object is a warning: git
excuses an object a promisor pack refers to, which takes parsing every object of those packs to know, so
here every missing object of a partial clone is excused as possibly promised.

Beyond git's ref checks: a recorded peeled value (a packed-refs ``^`` line, a reftable VAL2 record) is
what the tag chain really peels to, on a ref whose object is a tag (git's fsck only walks the tags;
``show-ref -d`` and ``%(*objectname)`` trust the record); each tag of the chain names an object of the
type its ``type`` line declares (``peel_object``'s check); an object that is there but unreadable, or
whose bytes do not hash to its name, is corrupt, not missing.

Why in bulk: a hosting repository's refs share few objects (1M refs over 200k tips), so each distinct
object is read once through ``Odb.read_many``, and each level of the tag chains is one more batch.
"""

from __future__ import annotations

import hashlib
import os
from itertools import accumulate
from operator import itemgetter
from typing import NamedTuple

from ..errors import CorruptStore
from ..formats.reftable.record import VALUE_SYMREF, VALUE_VAL1, VALUE_VAL2
from ..model import SYMREF_MAXDEPTH, TAG_CHAIN_MAX
from .findings import Collector, quoted

_CHUNK = 512 * 1024  # bytes of packed-refs records per bulk run
# Objects read at once (their contents are in memory together): large enough that a pack index of a
# million objects is turned into one dict (Odb.read_many does when a batch asks for an eighth of it).
_BATCH = 1 << 18


class RefValue(NamedTuple):
    """One value to check (collected as plain tuples of these fields, for speed): the ref, its object
    id (lowercase hex), the peeled id recorded with it (or None), where it was read (file, offset of the
    record or None), and for a symref the ref it resolves through (else None)."""

    name: bytes
    oid: bytes
    peeled: bytes | None
    file: str
    offset: int | None
    via: bytes | None = None


class _Read(NamedTuple):
    """What the object database said about one id: its type and, for a tag, its content (None when too
    large to read), or that it is missing (``kind`` None) or corrupt (``corrupt``: why)."""

    kind: str | None
    content: bytes | None
    corrupt: str | None = None


_MISSING = _Read(None, None)
_HEADER = {k: k.encode() + b" " for k in ("commit", "tree", "blob", "tag")}


# ------------------------------------------------------------------------------------------- the values


def reftable_values(merged: dict[bytes, tuple]) -> list[tuple]:
    """The values of a reftable merged view (name -> (path, record tuple of the fsck walk))."""
    direct: dict[bytes, tuple] = {}
    symrefs: list[tuple[bytes, bytes, str, int]] = []
    for name, (path, rec) in merged.items():
        vt = rec[1]
        if vt in (VALUE_VAL1, VALUE_VAL2):
            if rec[2] is not None and b"\0" not in name:
                direct[name] = (name, rec[2].lower(), rec[3] and rec[3].lower(), path, rec[6], None)
        elif vt == VALUE_SYMREF:
            symrefs.append((name, rec[4], path, rec[6]))
    symref_targets = {name: target for name, target, _, _ in symrefs}
    return list(direct.values()) + _resolve(symrefs, symref_targets, direct)


def files_values(loose: dict[bytes, tuple[str, bytes, str]], packed_path: str, hash_name: str) -> list[tuple]:
    """The values of the files backend: loose refs (name -> (kind, value, path)) over packed-refs, which
    is read with its own parser (a record git would not read is a storage finding already: the rest of
    the file is then not judged)."""
    from ..formats.packed import PackedRefs

    direct: dict[bytes, tuple] = {}
    try:
        packed = PackedRefs.open(packed_path, hash_name)
        try:
            pos, size = packed.header_end, packed.size
            while pos < size:
                end = packed.chunk_end(pos, _CHUNK)
                chunk = packed.read(pos, end)
                if not _bulk_records(chunk, pos, packed.hexlen, packed_path, direct):
                    for rec in packed.iter_records(pos):
                        if rec.offset >= end:
                            break
                        direct[rec.name] = (rec.name, rec.oid, rec.peeled, packed_path, rec.offset, None)
                pos = end
        finally:
            packed.close()
    except (CorruptStore, OSError):
        pass  # what the parser rejects is a storage finding already; the records before it are judged
    for name in loose:
        direct.pop(name, None)  # a loose ref hides its packed record
    symrefs: list[tuple[bytes, bytes, str, int]] = []
    for name, (kind, value, path) in loose.items():
        if kind == "sym":
            symrefs.append((name, value, path, 0))
        else:
            direct[name] = (name, value, None, path, 0, None)
    symref_targets = {name: target for name, target, _, _ in symrefs}
    return list(direct.values()) + _resolve(symrefs, symref_targets, direct)


def _bulk_records(chunk: bytes, base: int, hexlen: int, path: str, direct: dict[bytes, tuple]) -> bool:
    """The records of a run of whole packed-refs records at file offset ``base`` into ``direct``, when
    the parser's bulk checks pass the run (as ``refscope list``'s bulk path: ``peeled_parts`` and
    ``plain_run_ok``, so every line is what ``record_at`` would decode); False, adding nothing, when
    they do not (the caller then decodes record by record). Plain tuples: a million records as
    RefValues cost a second more."""
    from ..formats.packed.check import peeled_parts
    from ..listing import plain_run_ok

    plain = chunk
    if b"^" in chunk:
        parts = peeled_parts(chunk, hexlen)
        if parts is None:
            return False
        plain = parts[0]
    if not plain_run_ok(plain, hexlen):
        return False
    lines = chunk.split(b"\n")
    lines.pop()  # after the last LF
    last = None
    for line, at in zip(lines, accumulate(map((1).__add__, map(len, lines)), initial=base), strict=False):
        if line[:1] == b"^":
            direct[last] = (last, direct[last][1], line[1:], path, direct[last][4], None)
            continue
        last = line[hexlen + 1 :]
        direct[last] = (last, line[:hexlen], None, path, at, None)
    return True


def _resolve(symrefs, targets: dict[bytes, bytes], direct: dict[bytes, tuple]) -> list[tuple]:
    """Each symref resolved as git resolves it (``model.SYMREF_MAXDEPTH`` reads) to the value it reaches;
    one that reaches nothing (an unborn branch, a dangling target: reported by the storage checks) has
    nothing to check."""
    out = []
    for name, target, path, offset in symrefs:
        reads, at = 2, target  # the symref, then its target
        while at in targets and reads < SYMREF_MAXDEPTH:
            at, reads = targets[at], reads + 1
        hit = direct.get(at)  # None also when the chain is still a symref: git's ELOOP
        if hit is not None:
            out.append((name, hit[1], None, path, offset, target))
    return out


# ------------------------------------------------------------------------------------------- the reading


def is_partial_clone(repo, dirs: list[str]) -> bool:
    """git's ``repo_has_promisor_remote``, as far as the files say: ``extensions.partialClone`` set, a
    remote with ``promisor`` true, or a ``.promisor`` pack in any object directory."""
    cfg = repo.config
    if cfg.get("extensions.partialclone"):
        return True
    for d in dirs:
        try:
            if any(n.endswith(".promisor") for n in os.listdir(os.path.join(d, "pack"))):
                return True
        except OSError:
            continue
    from ..config import parse_bool

    for key, value in cfg.entries:
        if key.startswith("remote.") and key.endswith(".promisor"):
            try:
                if parse_bool(value, key):
                    return True
            except Exception:  # noqa: BLE001 - git dies on a bad boolean; not this check's to report
                continue
    return False


class _Reader:
    """Reads ids in batches, telling missing from corrupt, hashing what it reads (git's parse_object
    checks the hash of every object a ref names)."""

    def __init__(self, odb, hash_name: str) -> None:
        self.odb = odb
        self._hash = hashlib.sha256 if hash_name == "sha256" else hashlib.sha1
        self.got: dict[bytes, _Read] = {}

    def fetch(self, oids) -> None:
        todo = sorted(o for o in oids if o not in self.got)
        for at in range(0, len(todo), _BATCH):
            self._batch(todo[at : at + _BATCH])

    def _batch(self, todo: list[bytes]) -> None:
        try:
            batch = self.odb.read_many(todo)
        except (CorruptStore, ValueError):
            batch = None  # one bad object spoils the batch: read them one by one to say which
        if batch is None:
            for oid in todo:
                self.got[oid] = self._one(oid)
            return
        for oid, hit in batch.items():
            self.got[oid] = _MISSING if hit is None else self._hashed(oid, hit[0], hit[1])

    def _one(self, oid: bytes) -> _Read:
        try:
            hit = self.odb.read(oid)
        except ValueError as err:
            return _Read(None, None, str(err))
        except CorruptStore as err:
            try:
                info = self.odb.info(oid)
            except CorruptStore:
                info = None
            from ..objects.pack import MAX_INFLATE

            if info is not None and info[1] > MAX_INFLATE:
                return _Read(info[0], None)  # too large to read or hash here; its type is known
            where = (
                ""
                if err.file is None
                else f" ({err.file}" + ("" if err.offset is None else f"@{err.offset}") + ")"
            )
            return _Read(None, None, f"{err.what}{where}")
        return _MISSING if hit is None else self._hashed(oid, hit[0], hit[1])

    def _hashed(self, oid: bytes, kind: str, content: bytes) -> _Read:
        h = self._hash(_HEADER[kind] + b"%d\0" % len(content))
        h.update(content)
        if h.digest() != bytes.fromhex(oid.decode()):
            got = h.hexdigest()
            return _Read(None, None, f"its {kind} content hashes to {got} (hash mismatch)")
        return _Read(kind, content if kind == "tag" else None)  # only a tag's content is read again


def _tag_target(content: bytes) -> tuple[bytes | None, bytes | None]:
    """A tag's ``object`` and ``type`` header lines (git's parse_tag_buffer reads them first)."""
    obj = kind = None
    for line in content.split(b"\n", 3)[:3]:
        if line.startswith(b"object "):
            obj = line[7:]
        elif line.startswith(b"type "):
            kind = line[5:]
    return obj, kind


class _Peel(NamedTuple):
    """Where a tag chain ends: ``oid``/``kind`` of the first object that is not a tag, or ``problem``
    (a sentence) and the tag it is about."""

    oid: bytes | None
    kind: str | None
    problem: str | None = None
    missing: bool = False


def _peel_all(reader: _Reader, tags: list[bytes], hexsz: int) -> dict[bytes, _Peel]:
    """The peel of every tag in ``tags`` (already read), reading each level of the chains as one batch."""
    chains = {t: t for t in tags}  # first tag -> the tag of its chain reached so far
    done: dict[bytes, _Peel] = {}
    for _ in range(TAG_CHAIN_MAX):
        if not chains:
            break
        links: list[tuple[bytes, bytes, bytes, bytes | None]] = []  # (start, tag, object, declared type)
        for start, tag in chains.items():
            obj, declared = _tag_target(reader.got[tag].content or b"")
            if obj is None or len(obj) != hexsz or obj.translate(None, b"0123456789abcdef"):
                done[start] = _Peel(None, None, f"tag {tag.decode()} has no valid 'object' line")
            else:
                links.append((start, tag, obj, declared))
        reader.fetch({obj for _, _, obj, _ in links})
        chains = {}
        for start, tag, obj, declared in links:
            got = reader.got[obj]
            named = f"tag {tag.decode()} names {obj.decode()}"
            if got.corrupt is not None:
                done[start] = _Peel(None, None, f"{named}, which is corrupt: {got.corrupt}")
            elif got.kind is None:
                done[start] = _Peel(None, None, f"{named}, which is not in the object database", True)
            elif declared is not None and declared != got.kind.encode():
                shown = declared.decode("ascii", "replace")
                done[start] = _Peel(
                    None, None, f"{named} as a {shown}, but it is a {got.kind}; git refuses to peel it"
                )
            elif got.kind == "tag":
                chains[start] = obj
            else:
                done[start] = _Peel(obj, got.kind)
    for start in chains:
        done[start] = _Peel(
            None, None, f"the tag chain from {start.decode()} is over {TAG_CHAIN_MAX} tags deep (a loop)"
        )
    return done


# ------------------------------------------------------------------------------------------- the check


def check_objects(out: Collector, repo, values: list[tuple]) -> int:
    """Report every value in ``values`` that git's object checks would reject; the number of distinct
    objects read."""
    from ..model import HASH_HEXSZ
    from ..objects.odb import Odb

    # git fsck's refs: those under refs/ and HEAD. Other root refs (ORIG_HEAD, a reftable's FETCH_HEAD...)
    # may name objects gc has since pruned: git keeps nothing alive for them.
    values = [v for v in values if v[0].startswith(b"refs/") or v[0] == b"HEAD"]
    odb = Odb.of(repo)
    partial = is_partial_clone(repo, odb.dirs)
    reader = _Reader(odb, repo.hash_name)
    peeled = [p for p in map(itemgetter(2), values) if p is not None]
    reader.fetch(set(map(itemgetter(1), values)).union(peeled))
    got = reader.got
    tags = [oid for oid, hit in got.items() if hit.kind == "tag"]
    peels = _peel_all(reader, tags, HASH_HEXSZ[repo.hash_name])
    # Most values name a sound commit and record no peeled value: settled by one lookup each.
    fine = {oid for oid, hit in got.items() if hit.kind == "commit"}
    for v in values:
        if v[1] not in fine or v[2] is not None:
            _check_one(out, RefValue(*v), got, peels, partial)
    return len(got)


def _is_branch(name: bytes) -> bool:
    """git's ``is_branch`` (refs.c): the names that must hold a commit."""
    return name == b"HEAD" or name.startswith(b"refs/heads/")


def _check_one(
    out: Collector, v: RefValue, got: dict[bytes, _Read], peels: dict[bytes, _Peel], partial: bool
) -> None:
    hit = got[v.oid]
    if (
        hit.kind == "tag"
        and peels[v.oid].problem is None
        and v.peeled in (None, peels[v.oid].oid)
        and not _is_branch(v.name)
    ):
        return  # the common case of a tag ref, settled before any message is made
    what = f"ref {quoted(v.name)}" if v.via is None else f"symref {quoted(v.name)} (through {quoted(v.via)})"
    oid = v.oid.decode()
    if hit.corrupt is not None:
        out.error(v.file, v.offset, f"{what} points at {oid}, whose object is corrupt: {hit.corrupt}")
        return
    if hit.kind is None:
        if partial:
            out.warning(
                v.file,
                v.offset,
                f"{what} points at {oid}, which is not in the object database; this is a partial clone, "
                "so the promisor remote may have it (git fsck accepts a promised object)",
            )
        else:
            out.error(
                v.file,
                v.offset,
                f"{what} points at {oid}, which is not in the object database; git fsck reports "
                "'invalid sha1 pointer' and git fails reading the ref's object",
            )
        return
    if hit.kind != "commit" and _is_branch(v.name):
        out.error(
            v.file,
            v.offset,
            f"{what} points at {oid}, a {hit.kind}, not a commit: git refuses to write a non-commit to "
            "HEAD or a branch, and git fsck reports 'not a commit'",
        )
    peel = peels.get(v.oid) if hit.kind == "tag" else None
    if peel is not None and peel.problem is not None:
        if peel.missing and partial:
            out.warning(
                v.file,
                v.offset,
                f"{what}: {peel.problem}; this is a partial clone, the promisor remote may have it",
            )
        else:
            out.error(v.file, v.offset, f"{what}: {peel.problem}")
        return  # what a recorded peeled value should be is unknown: the chain is the finding
    if v.peeled is None:
        return
    recorded = v.peeled.decode()
    if hit.kind != "tag":
        out.error(
            v.file,
            v.offset,
            f"{what} records a peeled value {recorded}, but its object {oid} is a {hit.kind}, not a tag: "
            "git records peeled values for tags only, and reports this one as the ref's peeled object",
        )
        return
    if peel is not None and peel.oid is not None and peel.oid != v.peeled:
        out.error(
            v.file,
            v.offset,
            f"{what} records the peeled value {recorded}, but tag {oid} peels to {peel.oid.decode()}: "
            "'git show-ref -d' and %(*objectname) report the recorded value",
        )
        return
    p = got.get(v.peeled)
    if p is not None and p.kind is None and p.corrupt is None and not partial:
        out.error(
            v.file,
            v.offset,
            f"{what} records the peeled value {recorded}, which is not in the object database",
        )
