"""The whole-file check of a ``packed-refs`` file (``PackedRefs.validate``, ``Checks`` is one of its bases)
and the C-speed run checks it is built on.

Why apart: a transaction that rewrites packed-refs must refuse a damaged file first (a splice would copy
the damage through), in a process that should cost no more than git's own rewrite; reading never needs
any of this. ``peeled_parts`` and ``suspect_name_ends`` serve ``backend.listing``'s bulk output and the
row index's hidden-name scan too.
"""

from __future__ import annotations

from itertools import islice
from operator import lt

from ...errors import CorruptStore

LOWER_HEX = b"0123456789abcdef"  # the form oids are kept in
FORK_MIN = 1 << 21  # validate checks a file from this size in two processes when it may
_CHECK_CHUNK = 1 << 19  # bytes validate checks at a time


class Checks:
    """The whole-file check part of ``PackedRefs`` (a base of it; the state is in its slots)."""

    __slots__ = ()

    def validate(self) -> None:
        """Everything git's reader would reject anywhere in the file, plus the order the ``sorted`` trait
        promises and the names git hides: raises the first CorruptStore found.

        A transaction that rewrites packed-refs must refuse a damaged file (the splice would otherwise copy
        the damage through). A file in name order is checked chunk by chunk (``_check_range``); a big one
        in two halves at once when this process may fork (``backend.parallel``): the second half in a child,
        whose verdict comes back as (what, offset). An unsorted file was decoded whole at open; only its
        dangerous names remain (``hidden_rows``). Cached: the file is immutable once mapped."""
        if self._validated:
            return
        if self._names is not None:
            hidden = self.hidden_rows()
            if hidden:
                rec = self.record_at(self._starts[hidden[0]])
                raise self.broken_name(rec.name, rec.offset)
            self._validated = True
            return
        he, size = self.header_end, self.size
        mid = size
        child = None
        if self.check_forks():
            from ...parallel import FAILED, Forked

            mid = self.middle_record()
            if he < mid:
                child = Forked(self._range_verdict, mid, size)
            else:
                mid = size
        try:
            last = self._check_range(he, mid)
        except BaseException:
            if child is not None:
                child.abandon()
            raise
        if child is not None:
            verdict = child.result()
            if verdict is FAILED:
                self._check_range(mid, size)  # the child could not tell: errors as in one process
            elif verdict is not None:
                raise self.corrupt(*verdict)
            if last is not None and not last[0] < self.name_at(mid):
                raise self.unsorted_error(last[1], mid)
        self._validated = True

    def middle_record(self) -> int:
        """Start of the record holding the file's middle byte: where a scan is split over two processes."""
        return self.record_start(self.header_end + (self.size - self.header_end) // 2)

    def check_forks(self) -> bool:
        """Will ``validate`` hand half of the file to a forked child (whose cost a measure then counts)?"""
        if self._validated or self._names is not None or self.size - self.header_end < FORK_MIN:
            return False
        from ...parallel import may_fork

        return may_fork()

    def _range_verdict(self, start: int, end: int) -> tuple[str, int | None] | None:
        """``_check_range`` as a plain value for a forked child: None, or the error's (what, offset)."""
        try:
            self._check_range(start, end)
        except CorruptStore as err:
            return err.what, err.offset
        return None

    def _check_range(self, start: int, end: int) -> tuple[bytes, int] | None:
        """Check the records in [start, end) (record boundaries): structure, dangerous names, strictly
        increasing names. Returns the last record's (name, offset). Chunks of 512 KiB go through
        ``checked_names`` (a third faster than 4 MiB ones: its copies and splits stay in the CPU caches); a
        chunk it is unsure of is decoded record by record."""
        hexlen = self.hexlen
        prev: bytes | None = None
        prev_off = start
        pos = start
        while pos < end:
            cend = min(self.chunk_end(pos, _CHECK_CHUNK), end)
            names = checked_names(self.read(pos, cend), hexlen)  # in strict order when not None
            if names is None:
                names = self._decoded_names(pos, cend)
                if not all(map(lt, names, islice(names, 1, None))):
                    self._find_disorder(pos)
            if prev is not None and not prev < names[0]:
                self._find_disorder(prev_off)
            prev = names[-1]
            prev_off = self.record_start(cend - 1)
            pos = cend
        return None if prev is None else (prev, prev_off)

    def _decoded_names(self, start: int, end: int) -> list[bytes]:
        """The names in [start, end), each record decoded with every check. A dangerous name raises as
        git dies; so does a name git hides from every listing ("ignoring ref with broken name"), which
        verify reports as an error: a store that does not read cleanly is not rewritten (git would copy
        that record through its rewrite; refscope refuses instead, one rule for every write)."""
        from ...refname import is_safe_refname, is_valid_refname

        names = []
        record_at = self.record_at
        pos = start
        while pos < end:
            rec = record_at(pos)
            name = rec.name
            if not is_valid_refname(name):
                if not is_safe_refname(name):
                    raise self.corrupt(
                        f"packed refname is dangerous: {name.decode('utf-8', 'replace')}", rec.offset
                    )
                raise self.broken_name(name, rec.offset)
            names.append(name)
            pos += rec.length
        return names


# -- the whole-file check (``validate``) ---------------------------------------------------------------
# ``validate`` must look at every record before a splice copies them through, in a process that should
# cost no more than git's own rewrite. Per record in Python that is ~1 us each; a chunk of plain records
# (the usual case) is instead checked with a few C-speed operations over the whole chunk
# (``checked_names``), and anything it is unsure of goes down the record-by-record path.

# bytes no valid name holds (controls but LF, DEL, ``~^:?[\\*``) -> "!"; the separators "/", "." and LF
# -> "S"; "k" kept (no "k": no ".lock"); SP kept; the rest -> "a".
_VALID = bytearray(b"a" * 256)
for _c in [*range(0x00, 0x20), 0x7F, *b"~^:?[\\*"]:
    _VALID[_c] = ord("!")
for _c in b"/.\n":
    _VALID[_c] = ord("S")
for _c in b"k ":
    _VALID[_c] = _c
_VALID = bytes(_VALID)
_NOT_SP_LF = bytes(c for c in range(256) if c not in b" \n")


def checked_names(data: bytes, hexlen: int) -> list[bytes] | None:
    """The names of a run of whole records (``^`` lines allowed) when every record reads cleanly, names
    increase strictly and every name passes check_refname_format under ``refs/``; None when any of that
    is not certain (the caller then decodes record by record, with git's exact errors).

    Each ``^`` line is checked and cut out (``peeled_parts``). In the rest, spaces and LFs alternate
    (one space per line); one split on both gives the oids (each ``hexlen`` lowercase hex digits) and the
    names. Strictly increasing, with the first and the last under ``refs/``, every name is under
    ``refs/``: none is empty or starts with "/" or ".". Over one translation (``_VALID``): no byte a name
    cannot hold, and no two adjacent separators ("//", "/.", "..", "./", a trailing "/" or "."); then
    "@{" and a ".lock" component end. About 33 ms for 100k records on one core (in 512 KiB chunks),
    against ~85 ms for the check this replaced."""
    if not data:
        return []
    if b"^" in data:
        parts = peeled_parts(data, hexlen)
        if parts is None:
            return None
        data = parts[0]
    seps = data.translate(None, _NOT_SP_LF)
    n = len(seps) >> 1
    if seps != b" \n" * n:
        return None  # not one space per line
    pieces = data.replace(b"\n", b" ").split(b" ")
    oids = pieces[0:-1:2]
    if set(map(len, oids)) != {hexlen} or b"".join(oids).translate(None, LOWER_HEX):
        return None
    names = pieces[1::2]
    if not all(map(lt, names, islice(names, 1, None))):
        return None
    if not (names[0].startswith(b"refs/") and names[-1].startswith(b"refs/")):
        return None
    t = data.translate(_VALID)
    if b"!" in t or b"SS" in t:
        return None
    if suspect_name_ends(data, b"k" in t):
        return None
    return names


def peeled_parts(data: bytes, hexlen: int) -> tuple[bytes, bytes, list[bytes]] | None:
    """A run of whole records cut at its ``^`` lines: the ref lines alone, the part before the first ``^``
    line and, for each ``^`` line, the part after its caret (the peeled oid, LF, then the ref lines up to
    the next ``^``). None unless every ``^`` line is a lowercase oid and LF following a ref line."""
    parts = data.split(b"\n^")
    first = parts[0]
    rest = parts[1:]
    if first[:1] == b"^" or not first:
        return None
    nl = b"\n"
    if any(p[hexlen : hexlen + 1] != nl for p in rest):
        return None
    if b"".join([p[:hexlen] for p in rest]).translate(None, LOWER_HEX):
        return None
    return first + b"".join([b"\n" + p[hexlen + 1 :] for p in rest]), first, rest


def suspect_name_ends(data: bytes, maybe_lock: bool) -> bool:
    """Does a run of whole records hold ``@{``, a name ``@`` alone, or (``maybe_lock``: the caller saw a
    "k") a component ending ``.lock``? The last question of each C-speed run check (the hidden-name scan,
    ``checked_names``, the listing's ``plain_run_ok``): True sends the run down the exact path."""
    if b"@" in data and (b"@{" in data or b" @\n" in data):
        return True
    return maybe_lock and (b".lock/" in data or b".lock\n" in data)
