"""``refscope list``: the refs ``git for-each-ref`` prints, in its order, as lines or JSON.

Output, one ref per line:
    plain:  ``<oid> <name>`` (as ``git for-each-ref --format='%(objectname) %(refname)'``; a symref shows
            the oid it resolves to). Into a pipe or file the names are git's exact bytes (so the output
            composes with ``delete --stdin``); on a terminal they go through ``display.escape_name``.
    --json: ``{"oid", "name", "peeled", "target"}`` (``peeled`` as the store records it, else null;
            ``target`` the symref's target, else null), strict UTF-8: a name or target that is not UTF-8
            has U+FFFD in its text and its exact bytes, base64, in ``name_b64`` / ``target_b64`` right
            after it (present only then; ``display.json_value``).
Patterns are for-each-ref's (``refpattern.ForEachRefPatterns``, the one matcher).

Why it looks like this: whole-process time over a million refs is the target (within 1.5x of git), so
imports are few and lazy, output goes out in big chunks, and runs of plain packed records are turned
into output with a handful of C-speed byte operations (``bulk_run``). A reftable ref block of plain refs
is decoded straight into ``[oid, name, ...]`` pairs and printed with one ``%`` over a repeated line
template (``ReftableSnapshot.iter_bulk``); a big listing (either format) runs on two cores, the second
half in a forked child (``split_listing``, over ``parallel.Forked``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (the typing module costs ~3 ms of CLI start-up)

if TYPE_CHECKING:
    from .refpattern import ForEachRefPatterns

# 64 KiB: the byte operations of the bulk path stay in cache and their buffers are reused by malloc (4 MiB
# chunks spent a third of the time in page faults: 1M packed refs listed in 1.34 s, now 0.85 s).
_CHUNK = 1 << 16
# bytes of packed-refs (~15k refs) or of the base table (~30k) from which `list` uses two cores
SPLIT_MIN = 1 << 20

# -- formatting ----------------------------------------------------------------------------------------
_JSON_PLAIN = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')  # bytes JSON takes as they are
JSON_OPEN = b'{"oid": "'
JSON_MID = b'", "name": "'
JSON_END = b'", "peeled": null, "target": null}\n'
JSON_PEELED = b'", "peeled": "'
JSON_END_PEELED = b'", "target": null}\n'
_JSON_LINE = JSON_OPEN + b"%s" + JSON_MID + b"%s" + JSON_END  # one plain ref, from (oid, name)
_PLAIN_LINE = b"%s %s\n"
_JSON_LINE_PEELED = JSON_OPEN + b'%s", "name": "%s", "peeled": %s, "target": null}\n'  # peeled: null or "hex"


def _jstr(key: bytes, b: bytes | None) -> bytes:
    """``"key": value`` for a name or target (plus ``, "key_b64": ...`` when it is not UTF-8)."""
    if b is None:
        return b'"' + key + b'": null'
    if not b.translate(None, _JSON_PLAIN):
        return b'"' + key + b'": "' + b + b'"'
    from .display import json_value, to_json

    text, b64 = json_value(b)
    out = b'"' + key + b'": ' + to_json(text).encode("ascii")
    return out if b64 is None else out + b', "' + key + b'_b64": "' + b64.encode("ascii") + b'"'


def _json_line(name: bytes, oid: bytes | None, peeled: bytes | None, target: bytes | None) -> bytes:
    """One line; oids are hex by construction, only names need the escaping check."""
    return (
        b'{"oid": ' + (b'"' + oid + b'"' if oid is not None else b"null") + b", " + _jstr(b"name", name)
        + b', "peeled": ' + (b'"' + peeled + b'"' if peeled is not None else b"null")
        + b", " + _jstr(b"target", target) + b"}\n"
    )  # fmt: skip


def _plain_line(name: bytes, oid: bytes | None, escape: bool) -> bytes:
    """``oid name``: git's raw bytes, or (``escape``: stdout is a terminal) the name as display text."""
    if not escape or name.translate(None, _JSON_PLAIN) in (b"", b'"'):
        shown = name
    else:
        from .display import escape_name

        shown = escape_name(name).encode("utf-8")
    return (oid or b"") + b" " + shown + b"\n"


class Out:
    """Collects output and writes it in big chunks to fd 1."""

    def __init__(self, keep: bool = False, transform=None) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.keep = keep  # collect everything (the second half of a split listing, written later)
        self.stream = None if keep else sys.stdout.buffer
        self.transform = transform  # bytes -> bytes, applied to each part (whole lines) as it comes

    def add(self, data: bytes) -> None:
        if data and self.transform is not None:
            data = self.transform(data)
        if data:
            self.parts.append(data)
            self.size += len(data)
            if self.size >= _CHUNK and not self.keep:
                self.flush()

    def flush(self) -> None:
        if self.keep:
            return
        if self.parts:
            self.stream.write(b"".join(self.parts) if len(self.parts) > 1 else self.parts[0])
            self.parts = []
            self.size = 0
        self.stream.flush()


class Lister:
    """Turns a snapshot's refs into output lines: ``files`` and ``columns`` are the two fast paths (packed
    records in runs, reftable column batches), each over name intervals; ``ref`` is the one-ref path every
    doubt falls back to. ``matcher``: the glob patterns (None: every ref in the intervals)."""

    def __init__(
        self, snap, as_json: bool, out: Out, matcher: ForEachRefPatterns | None, escape: bool = False
    ) -> None:
        self.snap = snap
        self.as_json = as_json
        self.out = out
        self.matcher = matcher
        self.escape = escape  # plain text to a terminal: names through the display function

    def ref(self, ref) -> None:
        """One Ref of the snapshot interface (loose refs, reftable, slow paths)."""
        if self.matcher is not None and not self.matcher.match(ref.name):
            return
        oid = ref.oid
        target = ref.target
        if target is not None:
            res = self._resolve(ref)
            if res is None:
                return  # a symref that does not resolve: git hides it
            oid, target = res
        if self.as_json:
            self.out.add(_json_line(ref.name, oid, ref.peeled, target))
        else:
            self.out.add(_plain_line(ref.name, oid, self.escape))

    def _resolve(self, ref) -> tuple[bytes, bytes] | None:
        """(oid, final ref name) of a symref, as git's %(objectname) and %(symref) show it."""
        return self.snap.resolve_full(ref.name)

    # -- column batches (reftable) -----------------------------------------------------------------------
    def columns(self, intervals: list[tuple[bytes, bytes | None]]) -> None:
        """Batches from the store (``iter_bulk``): a batch of pairs (plain refs with plain names) becomes
        its output with one ``%`` over a repeated line template; column batches of plain refs with one
        join; anything else goes row by row."""
        import bisect
        from itertools import chain, compress

        from .model import Location, Ref
        from .stores.bulk import cut_before

        snap = self.snap
        add = self.out.add
        loc = Location("table", "")
        sep = JSON_END + JSON_OPEN
        line = _JSON_LINE if self.as_json else _PLAIN_LINE
        for lo, hi in intervals:
            done = False
            for pairs, cols in snap.iter_bulk(lo):
                if pairs is not None:
                    if hi is not None and pairs[-1] >= hi:
                        k = bisect.bisect_left(pairs[1::2], hi)
                        pairs = pairs[: 2 * k]
                        done = True
                    if not pairs:
                        break
                    if self.matcher is not None:  # the pairs the patterns select (a C-level pass)
                        keep = map(self.matcher.regex.match, pairs[1::2])
                        pairs = list(
                            chain.from_iterable(compress(zip(pairs[0::2], pairs[1::2], strict=True), keep))
                        )
                    if pairs:
                        add((line * (len(pairs) >> 1)) % tuple(pairs))
                    if done:
                        break
                    continue
                names, oids, peeled, targets = cols
                if hi is not None and names and names[-1] >= hi:
                    names, oids, peeled, targets = cut_before(hi, names, oids, peeled, targets)
                    done = True
                if not names:
                    break
                if self.matcher is not None:  # the rows the patterns select, every column cut alike
                    keep = list(map(self.matcher.regex.match, names))
                    names, oids = list(compress(names, keep)), list(compress(oids, keep))
                    peeled = None if peeled is None else list(compress(peeled, keep))
                    targets = None if targets is None else list(compress(targets, keep))
                    if not names:
                        if done:
                            break
                        continue
                has_peeled = peeled is not None and any(peeled)
                plain = (
                    (targets is None or not any(targets))
                    and None not in oids
                    and not b"".join(names).translate(None, _JSON_PLAIN)
                )
                if plain and has_peeled:  # annotated tags: one % for the batch
                    n = len(names)
                    if self.as_json:
                        cells: list = [None] * (3 * n)
                        cells[0::3] = oids
                        cells[1::3] = names
                        cells[2::3] = [b"null" if p is None else b'"' + p + b'"' for p in peeled]
                        add((_JSON_LINE_PEELED * n) % tuple(cells))
                    else:
                        cells = [None] * (2 * n)
                        cells[0::2] = oids
                        cells[1::2] = names
                        add((_PLAIN_LINE * n) % tuple(cells))
                elif plain:
                    if self.as_json:
                        add(
                            JSON_OPEN + sep.join(map(JSON_MID.join, zip(oids, names, strict=True))) + JSON_END
                        )
                    else:
                        add(b"\n".join(map(b" ".join, zip(oids, names, strict=True))) + b"\n")
                else:
                    for j, name in enumerate(names):
                        p = peeled[j] if peeled is not None else None
                        t = targets[j] if targets is not None else None
                        self.ref(Ref(name, oids[j], p, t, loc))
                if done:
                    break

    # -- files fast path -------------------------------------------------------------------------------
    def files(self, intervals: list[tuple[bytes, bytes | None]]) -> None:
        snap = self.snap
        packed = snap.packed
        loose_names = snap.loose_names
        import bisect

        for lo, hi in intervals:
            pos = packed.seek(lo)
            end = packed.size if hi is None else packed.seek(hi)
            li = bisect.bisect_left(loose_names, lo)
            lj = len(loose_names) if hi is None else bisect.bisect_left(loose_names, hi)
            for name in loose_names[li:lj]:
                o = packed.seek(name)
                if o > pos:
                    self.packed_range(pos, min(o, end))
                    pos = min(o, end)
                if o < end and packed.name_at(o) == name:
                    pos = packed.record_end(o)
                ref = snap.lookup(name)
                if ref is not None:
                    self.ref(ref)
            if end > pos:
                self.packed_range(pos, end)

    def packed_range(self, start: int, end: int) -> None:
        """Records of packed-refs in [start, end) (record boundaries), in chunks."""
        packed = self.snap.packed
        pos = start
        while pos < end:
            stop = min(end, pos + _CHUNK)
            if stop < end:
                stop = packed.record_start(stop)
                if stop <= pos:
                    stop = packed.record_end(pos)
            self.packed_chunk(pos, packed.read(pos, stop))
            pos = stop

    def packed_chunk(self, base: int, data: bytes) -> None:
        out = bulk_run(data, self.snap.packed.hexlen, self.as_json)
        if out is None:
            self.slow(base, base + len(data))
        else:
            self.out.add(out if self.matcher is None else self.kept(out))

    def kept(self, text: bytes) -> bytes:
        """The lines of plain output ``text`` (``oid SP name LF``) whose names the patterns select,
        tested a column at a time by C-level calls (a glob over a million refs)."""
        from itertools import compress

        parts = text.split()  # (a plain line's name holds no space)
        lines = text.splitlines(keepends=True)
        return b"".join(compress(lines, map(self.matcher.regex.match, parts[1::2])))

    def slow(self, start: int, end: int) -> None:
        """Record by record with every check git makes (corruption raises; broken names are hidden)."""
        snap = self.snap
        packed = snap.packed
        for rec in packed.iter_records(start):
            if rec.offset >= end:
                break
            if snap.packed_visible(rec):
                self.ref(snap.packed_ref(rec))


def _write_all(fd: int, parts: list[bytes]) -> None:
    from .fileio import write_all

    for part in parts:
        write_all(fd, part)


def _tables_of(snap) -> list:
    """Every reftable table of the snapshot (none for a files snapshot), in a fixed order."""
    return [*snap.tables, *snap.worktree_tables] if snap.format == "reftable" else []


def warn_unlisted(snap, intervals: list[tuple[bytes, bytes | None]]) -> None:
    """One stderr line per reftable record in the listed intervals that the listing did not serve
    because its key holds a NUL byte (git reads such a key up to the NUL): the table, the escaped name,
    the block."""
    lines = []
    for t in _tables_of(snap):
        for name, off in sorted(t.nul_names.items()):
            if any(name >= lo and (hi is None or name < hi) for lo, hi in intervals):
                from .display import escape_name, printable

                lines.append(
                    printable(
                        f"refscope: {t.path}: warning: ref name '{escape_name(name)}' holds a NUL byte; "
                        f"not listed (ref block at {off})"
                    )
                    + "\n"
                )
    if lines:
        import os

        os.write(2, "".join(lines).encode("utf-8", "surrogateescape"))


def split_listing(snap, as_json: bool, out: Out, split: bytes, way: str, escape: bool = False) -> None:
    """List ``< split + NUL`` here and ``>= split + NUL`` in a forked child at the same time, the child's
    output following ours: the decoding is per-record Python, a second core halves the wall time.

    The child (``parallel.Forked``, gated) collects its output and waits; once our half is written it is
    told to write its own to the same fd 1, and sends back what it found unlisted. If it fails (a corrupt
    table, say) its half is listed here instead, so errors surface as in one process; if it cannot write
    (the reader went away) we end as on a broken pipe. Without descriptors or a process to spare (a short
    ``ulimit -n``), everything is listed here."""
    from .parallel import FAILED, Forked

    mid = split + b"\x00"
    child = Forked(_second_half, snap, as_json, way, mid, escape, gated=True)
    if child.pid < 0:
        getattr(Lister(snap, as_json, out, None, escape), way)([(b"", None)])
        return
    done = False
    try:
        getattr(Lister(snap, as_json, out, None, escape), way)([(b"", mid)])
        out.flush()
        if child.ready():
            child.go()
            found = child.result()
            done = True
            if found is FAILED:
                raise BrokenPipeError("the listing's second half could not be written")
            tables = _tables_of(snap)
            for i, name, off in found:
                tables[i].nul_names.setdefault(name, off)
        else:
            done = True
            getattr(Lister(snap, as_json, out, None, escape), way)([(mid, None)])
    finally:
        if not done:  # we failed (corrupt first half, reader gone, ^C): its half is not wanted
            child.abandon()


def _second_half(snap, as_json: bool, way: str, mid: bytes, escape: bool):
    """(In the child) list ``>= mid`` into memory; the callable writes it to fd 1 when its turn comes and
    returns what the child found unlisted, for the parent to warn once for the whole listing."""
    mine = Out(keep=True)
    getattr(Lister(snap, as_json, mine, None, escape), way)([(mid, None)])

    def write() -> list[tuple[int, bytes, int]]:
        _write_all(1, mine.parts)
        return [(i, name, off) for i, t in enumerate(_tables_of(snap)) for name, off in t.nul_names.items()]

    return write


def list_refs(snap, patterns: list[bytes], as_json: bool, escape: bool, out: Out | None = None) -> None:
    """Write ``snap``'s refs matching ``patterns`` (every ref when empty) to fd 1, as ``refscope list``
    does: the files or columns fast path over name intervals, split over two cores when the listing is
    whole and big; stderr warns of reftable records a NUL byte kept out of it. ``escape``: plain text to
    a terminal (names through the display function). ``out``: collect into it instead (one process)."""
    from .parallel import may_fork

    keep = out is not None
    out = out or Out()
    pats = None
    if patterns:
        from .refpattern import ForEachRefPatterns

        pats = ForEachRefPatterns(patterns)
    has_glob = pats is not None and bool(pats.globs)
    intervals = pats.intervals() if pats is not None else [(b"", None)]
    lister = Lister(snap, as_json, out, pats if has_glob else None, escape)
    try:
        way = None
        if snap.format == "files" and not (has_glob and as_json) and snap.packed.in_name_order:
            way = "files"
        elif snap.format == "reftable":
            way = "columns"
        if way is not None:
            split = None
            if pats is None and not keep and may_fork():
                split = snap.split_name(SPLIT_MIN)
            if split is not None:
                split_listing(snap, as_json, out, split, way, escape)
            else:
                getattr(lister, way)(intervals)
        else:
            for lo, hi in intervals:
                for ref in snap.iter_from(lo):
                    if hi is not None and ref.name >= hi:
                        break
                    lister.ref(ref)
    finally:
        out.flush()
    if snap.format == "reftable":
        warn_unlisted(snap, intervals)  # a split listing's child sent what it found


# -- bulk output (``refscope list``) ---------------------------------------------------------------------
# Turning a run of packed records into output lines one record at a time costs ~1.5 us each in Python;
# for a million refs that alone is slower than git. When a run is plain (every name valid, printable
# ASCII, no quote; every line ``<hex oid> <name>``) the output is made with a few C-speed byte
# operations over the whole run instead. Any doubt sends the run down the per-record path, which
# applies every check git makes.

# One table for every per-byte question the bulk path asks: hex digits -> "x"; bytes no plain name holds
# (controls, DEL, ``~^:?[\\*"``, non-ASCII) -> "!"; the separators "/" and "." -> "S"; LF and SP kept; the
# rest -> "a". Names hold neither LF nor SP, so "\n" + "x" * hexlen + " " can only stand at a line start.
_PLAIN = bytearray(b"a" * 256)
for _c in [*range(0x00, 0x20), 0x7F, *b'~^:?[\\*"', *range(0x80, 0x100)]:
    _PLAIN[_c] = ord("!")
for _c in b"\n ":
    _PLAIN[_c] = _c
for _c in b"0123456789abcdef":  # (formats.packed.check.LOWER_HEX: not imported for reftable)
    _PLAIN[_c] = ord("x")
for _c in b"/.":
    _PLAIN[_c] = ord("S")
_PLAIN = bytes(_PLAIN)
# Over a ``_PLAIN`` translation: the separators "S", SP and LF -> "S", the rest -> "a". Once every line is
# known to be "x" * hexlen + SP + name, "SS" stands exactly where a name holds "//", "..", "/." or "./",
# starts or ends with "/" or ".", or is empty: one search instead of four (each ~8 ms over 100k records).
_SEPS = bytearray(b"a" * 256)
for _c in b"S \n":
    _SEPS[_c] = ord("S")
_SEPS = bytes(_SEPS)


def plain_run_ok(data: bytes, hexlen: int) -> bool:
    """Is ``data`` (whole records, no ``^`` lines) safe for the bulk path? Conservative: False when
    unsure (the caller then decodes record by record with every check).

    Checked at C speed over one translation (``_PLAIN``): no unsafe byte; one space per line, right after
    exactly ``hexlen`` lowercase hex digits; no two adjacent separators among ``/ . SP LF``
    (``//``, leading/trailing ``/``, ``..``, a component starting with ``.``, a trailing ``.``, an empty
    name); no ``@{``, ``@`` alone or ``.lock`` component end.
    """
    if not data:
        return True
    t = data.translate(_PLAIN)
    if b"!" in t:
        return False
    n = t.count(b"\n")
    oid_sp = b"x" * hexlen + b" "
    if t.count(b" ") != n or not t.startswith(oid_sp) or t.count(b"\n" + oid_sp) != n - 1:
        return False  # not one space per line, each right after exactly ``hexlen`` lowercase hex digits
    if b"SS" in t.translate(_SEPS):
        return False  # "//", "..", "/.", "./"; a name starting or ending with "/" or "."; an empty name
    from .formats.packed.check import suspect_name_ends

    return not suspect_name_ends(data, b"k" in data)


def bulk_json(data: bytes) -> bytes:
    """JSON lines for a run that passed ``plain_run_ok`` (keys: oid, name, peeled, target)."""
    if not data:
        return b""
    return JSON_OPEN + data[:-1].replace(b" ", JSON_MID).replace(b"\n", JSON_END + JSON_OPEN) + JSON_END


def bulk_run(data: bytes, hexlen: int, as_json: bool) -> bytes | None:
    """Output lines for a run of whole records (``^`` lines allowed), or None when the run is not plain
    (the caller then goes record by record). Peeled lines are cut out with one split on ``\\n^``: each
    piece after the first starts with the peeled oid and its LF."""
    if not data:
        return b""
    if b"^" not in data:
        if not plain_run_ok(data, hexlen):
            return None
        return bulk_json(data) if as_json else data
    from .formats.packed.check import peeled_parts

    parts = peeled_parts(data, hexlen)
    if parts is None:
        return None
    plain, first, rest = parts
    if not plain_run_ok(plain, hexlen):
        return None
    if not as_json:
        return plain
    marked = first + b"".join([b"\x01" + p[:hexlen] + b"\x02" + p[hexlen + 1 :] for p in rest])
    last_peeled = marked[-1:] == b"\x02"
    body = (
        marked[:-1]
        .replace(b" ", JSON_MID)
        .replace(b"\n", JSON_END + JSON_OPEN)
        .replace(b"\x01", JSON_PEELED)
        .replace(b"\x02", JSON_END_PEELED + JSON_OPEN)
    )
    return JSON_OPEN + body + (JSON_END_PEELED if last_peeled else JSON_END)
