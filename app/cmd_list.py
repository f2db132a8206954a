"""``refscope list [-C PATH] [--json] [PATTERN...]``: the refs ``git for-each-ref`` prints, in its order.

Output, one ref per line:
    plain:  ``<oid> <name>`` (as ``git for-each-ref --format='%(objectname) %(refname)'``; a symref shows
            the oid it resolves to). Into a pipe or file the names are git's exact bytes (so the output
            composes with ``delete --stdin``); on a terminal they go through ``display.escape_name``.
    --json: ``{"oid", "name", "peeled", "target"}`` (``peeled`` as the store records it, else null;
            ``target`` the symref's target, else null), strict UTF-8: a name or target that is not UTF-8
            has U+FFFD in its text and its exact bytes, base64, in ``name_b64`` / ``target_b64`` right
            after it (present only then; ``display.json_value``).
Patterns follow for-each-ref: a pattern matches a name equal to it, or a name it prefixes up to a ``/``
(``refs/heads`` matches ``refs/heads/x``, not ``refs/headsx``), or, with ``* ? [ \\``, as a wildmatch
glob where ``*`` stops at ``/``.

Why it looks like this: whole-process time over a million refs is the target (within 1.5x of git), so
imports are few and lazy, output goes out in big chunks, and runs of plain packed records are turned
into output with a handful of C-speed byte operations (``formats.packed.bulk_json``). A reftable ref block
of plain refs is decoded straight into ``[oid, name, ...]`` pairs and printed with one ``%`` over a
repeated line template (``ReftableSnapshot.iter_bulk``); a big listing (either format) runs on two cores, the
second half in a forked child (``_split_listing``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (the typing module costs ~3 ms of CLI start-up)

if TYPE_CHECKING:
    from refscope.backend.refpattern import ForEachRefPatterns

USAGE = "usage: refscope list [-C PATH] [--json] [PATTERN...]"
# 64 KiB: the byte operations of the bulk path stay in cache and their buffers are reused by malloc (4 MiB
# chunks spent a third of the time in page faults: 1M packed refs listed in 1.34 s, now 0.85 s).
_CHUNK = 1 << 16
# bytes of packed-refs (~15k refs) or of the base table (~30k) from which `list` uses two cores
_SPLIT_MIN = 1 << 20


def _parse(argv: list[str]) -> tuple[str | None, bool, list[str]] | None:
    path: str | None = None
    as_json = False
    patterns: list[str] = []
    i = 0
    only_args = False
    while i < len(argv):
        arg = argv[i]
        if only_args or not arg.startswith("-") or arg == "-":
            patterns.append(arg)
        elif arg == "--":
            only_args = True
        elif arg == "--json":
            as_json = True
        elif arg == "-C":
            if i + 1 >= len(argv):
                return None
            from .args import change_dir

            path = change_dir(path, argv[i + 1])
            i += 1
        elif arg.startswith("-C"):
            from .args import change_dir

            path = change_dir(path, arg[2:])
        else:
            return None
        i += 1
    return path, as_json, patterns


# -- formatting ----------------------------------------------------------------------------------------
_JSON_PLAIN = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')  # bytes JSON takes as they are


_JSON_OPEN = b'{"oid": "'
_JSON_MID = b'", "name": "'
_JSON_END = b'", "peeled": null, "target": null}\n'
_JSON_LINE = _JSON_OPEN + b"%s" + _JSON_MID + b"%s" + _JSON_END  # one plain ref, from (oid, name)
_PLAIN_LINE = b"%s %s\n"
_JSON_LINE_PEELED = (
    _JSON_OPEN + b'%s", "name": "%s", "peeled": %s, "target": null}\n'
)  # peeled: null or "hex"


def _jstr(key: bytes, b: bytes | None) -> bytes:
    """``"key": value`` for a name or target (plus ``, "key_b64": ...`` when it is not UTF-8)."""
    if b is None:
        return b'"' + key + b'": null'
    if not b.translate(None, _JSON_PLAIN):
        return b'"' + key + b'": "' + b + b'"'
    from refscope.backend.display import json_value, to_json

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
        from refscope.backend.display import escape_name

        shown = escape_name(name).encode("utf-8")
    return (oid or b"") + b" " + shown + b"\n"


class _Out:
    """Collects output and writes it in big chunks to fd 1."""

    def __init__(self, keep: bool = False) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.keep = keep  # collect everything (the second half of a split listing, written later)
        self.stream = None if keep else sys.stdout.buffer

    def add(self, data: bytes) -> None:
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


class _Lister:
    def __init__(
        self, snap, as_json: bool, out: _Out, matcher: ForEachRefPatterns | None, escape: bool = False
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

        from refscope.backend.model import Location, Ref

        snap = self.snap
        add = self.out.add
        loc = Location("table", "")
        sep = _JSON_END + _JSON_OPEN
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
                    if self.matcher is None:
                        add((line * (len(pairs) >> 1)) % tuple(pairs))
                        if done:
                            break
                        continue
                    cols = (pairs[1::2], pairs[0::2], None, None)
                names, oids, peeled, targets = cols
                if hi is not None and names and names[-1] >= hi:
                    k = bisect.bisect_left(names, hi)
                    names, oids = names[:k], oids[:k]
                    peeled = peeled[:k] if peeled is not None else None
                    targets = targets[:k] if targets is not None else None
                    done = True
                if not names:
                    break
                has_peeled = peeled is not None and any(peeled)
                plain = (
                    (targets is None or not any(targets))
                    and None not in oids
                    and not b"".join(names).translate(None, _JSON_PLAIN)
                )
                if plain and has_peeled and self.matcher is None:  # annotated tags: one % for the batch
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
                elif plain and self.matcher is None:
                    if self.as_json:
                        add(
                            _JSON_OPEN
                            + sep.join(map(_JSON_MID.join, zip(oids, names, strict=True)))
                            + _JSON_END
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
                    pos = packed._record_end(o)
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
                stop = packed._record_start(stop)
                if stop <= pos:
                    stop = packed._record_end(pos)
            self.packed_chunk(pos, packed.read(pos, stop))
            pos = stop

    def packed_chunk(self, base: int, data: bytes) -> None:
        from refscope.backend.formats.packed import bulk_run

        out = bulk_run(data, self.snap.packed.hexlen, self.as_json)
        if out is None:
            self.slow(base, base + len(data))
        else:
            self.out.add(out)

    def slow(self, start: int, end: int) -> None:
        """Record by record with every check git makes (corruption raises; broken names are hidden)."""
        snap = self.snap
        packed = snap.packed
        for rec in packed.iter_records(start):
            if rec.offset >= end:
                break
            if snap._packed_ok(rec):
                self.ref(snap._packed_ref(rec))


def _write_all(fd: int, parts: list[bytes]) -> None:
    import os

    for part in parts:
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


def _tables_of(snap) -> list:
    """Every reftable table of the snapshot (none for a files snapshot), in a fixed order."""
    return [*snap.tables, *snap.worktree_tables] if snap.format == "reftable" else []


def _warn_unlisted(snap, intervals: list[tuple[bytes, bytes | None]]) -> None:
    """One stderr line per reftable record in the listed intervals that the listing did not serve
    because its key holds a NUL byte (git reads such a key up to the NUL): the table, the escaped name,
    the block."""
    lines = []
    for t in _tables_of(snap):
        for name, off in sorted(t.nul_names.items()):
            if any(name >= lo and (hi is None or name < hi) for lo, hi in intervals):
                from refscope.backend.display import escape_name, printable

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


def _split_listing(snap, as_json: bool, out: _Out, split: bytes, way: str, escape: bool = False) -> None:
    """List ``< split + NUL`` here and ``>= split + NUL`` in a forked child at the same time, the child's
    output following ours: the decoding is per-record Python, a second core halves the wall time.

    The child collects its output and waits; once our half is written it is told to write its own to the
    same fd 1. If it fails (a corrupt table, say) its half is listed here instead, so errors surface as in
    one process; if it cannot write (the reader went away) we end as on a broken pipe. Without descriptors
    or a process to spare (a short ``ulimit -n``), everything is listed here."""
    import os

    from refscope.backend.forked import pipes_and_fork

    mid = split + b"\x00"
    got = pipes_and_fork(2)
    if got is None:
        getattr(_Lister(snap, as_json, out, None, escape), way)([(b"", None)])
        return
    pid, ((r_st, w_st), (r_go, w_go)) = got
    if pid == 0:  # the child: never returns, never touches sys.stdout or runs exit handlers
        code = 1
        try:
            os.close(r_st)
            os.close(w_go)
            mine = _Out(keep=True)
            getattr(_Lister(snap, as_json, mine, None, escape), way)([(mid, None)])
            os.write(w_st, b"K")
            if os.read(r_go, 1) == b"G":
                _write_all(1, mine.parts)
                # what it found unlisted goes to the parent, which warns once for the whole listing
                found = [
                    b"%d %s %d\n" % (i, name.hex().encode(), off)
                    for i, t in enumerate(_tables_of(snap))
                    for name, off in t.nul_names.items()
                ]
                _write_all(w_st, found)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(w_st)
    os.close(r_go)
    reaped = False
    try:
        getattr(_Lister(snap, as_json, out, None, escape), way)([(b"", mid)])
        out.flush()
        if os.read(r_st, 1) == b"K":
            os.write(w_go, b"G")
            found = []
            while chunk := os.read(r_st, 65536):  # until the child exits
                found.append(chunk)
            _pid, status = os.waitpid(pid, 0)
            reaped = True
            if status != 0:
                raise BrokenPipeError("the listing's second half could not be written")
            from binascii import unhexlify

            tables = _tables_of(snap)
            for line in b"".join(found).splitlines():
                i, name, off = line.split(b" ")
                tables[int(i)].nul_names.setdefault(unhexlify(name), int(off))
        else:
            _pid, _status = os.waitpid(pid, 0)
            reaped = True
            getattr(_Lister(snap, as_json, out, None, escape), way)([(mid, None)])
    finally:
        os.close(r_st)
        os.close(w_go)  # a child still waiting sees EOF and exits without writing
        if not reaped:  # we failed (corrupt first half, reader gone, ^C): its half is not wanted
            import signal

            os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid is still our child's
            os.waitpid(pid, 0)


def run(argv: list[str]) -> int:
    parsed = _parse(argv)
    if parsed is None:
        sys.stderr.write(USAGE + "\n")
        return 2
    path, as_json, patterns = parsed
    from refscope.backend.forked import may_fork
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    repo = discover(path)
    snap = open_store(repo).snapshot()
    out = _Out()
    import os

    bpatterns = [os.fsencode(p) for p in patterns]
    pats = None
    if bpatterns:
        from refscope.backend.refpattern import ForEachRefPatterns

        pats = ForEachRefPatterns(bpatterns)
    has_glob = pats is not None and bool(pats.globs)
    intervals = pats.intervals() if pats is not None else [(b"", None)]
    escape = not as_json and os.isatty(1)
    lister = _Lister(snap, as_json, out, pats if has_glob else None, escape)
    try:
        way = None
        if snap.format == "files" and not has_glob and snap.packed.in_name_order:
            way = "files"
        elif snap.format == "reftable":  # (files: its packed-refs way above, else row by row)
            way = "columns"
        if way is not None:
            split = None
            if pats is None and may_fork():
                split = snap.split_name(_SPLIT_MIN)
            if split is not None:
                _split_listing(snap, as_json, out, split, way, escape)
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
        _warn_unlisted(snap, intervals)  # a split listing's child sent what it found
    return 0
