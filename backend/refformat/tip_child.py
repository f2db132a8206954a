"""Many tips read in another process: the TUI's whole-table reads (the background scan, a date sort
without a commit-graph) off its GIL.

Why: reading a tip is inflating an object (C) and parsing its header lines (Python); in the TUI's process
every such step competes with the UI thread for the one GIL, so a scan of 200k tips stopped frames and a
date sort without a commit-graph waited for the whole read in that contended process. Here a child reads
them on the other core and sends back the columns of a ``tip_table.TipTable`` (bytes, arrays and short
lists: marshal), which the parent takes in a few steps (``TipTable.take``).

The child is a fresh interpreter (``python -m refscope.backend.refformat.tip_child``), not a fork: the TUI
has threads, and a thread holding a lock at fork time would leave a forked child deadlocked on it
(``parallel.may_fork``). It gets the objects directory and hash in argv and the ids on stdin, and reads
with the same ``objects.tips`` code as the parent, so its facts are the parent's. Any failure (it cannot
start, is killed, exits non-zero, sends something short or malformed) is a ``Failed`` with one line:
the caller reads in its own process then, and says so.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import subprocess
import sys
from array import array
from itertools import repeat
from operator import add, lt
from typing import NamedTuple

from ..objects.parse import parse_object, split_ident
from .fields import plain_times
from .tip_table import NO_TIME

NICE = 10  # the child's niceness once its dates are sent
CHUNK = 1 << 15  # ids read per ``Tips.fill`` in the child, in offset order per pack (its argv: the parent's)
ALL = (1 << 63) - 1  # "date every id" (a streamed child: how many ids come is not known at the start)
STREAM_BLOCK = 1 << 14  # ids a child takes from its stdin and dates at once
PROGRESS = 1 << 63  # a length at least this is no answer's: the ids read so far (plus this), after a chunk
COMMAND = (
    sys.executable,
    "-m",
    "refscope.backend.refformat.tip_child",
)  # the child (tests may point it elsewhere)


class Columns(NamedTuple):
    """A ``TipTable``'s columns for ``n`` ids in the order they were sent (``TipTable.columns``)."""

    kind: bytes
    peeled_kind: bytes
    peeled: dict  # {index: the id a tag chain ends at} where that is not the id itself
    ctime: array
    atime: array
    committer: array  # index into ``people``; -1: none
    author: array
    subject: list
    people: list  # (name, email, tz)


class Dates(NamedTuple):
    """The first answer: ``is_commit`` (1 per id that is a commit) and ``times`` (its committer time,
    ``NO_TIME`` when it has none; 0 for the rest)."""

    is_commit: bytes
    times: array


class Failed(NamedTuple):
    """The child did not deliver: why, in one line."""

    line: str


def encode(table, lo: int, hi: int) -> bytes:
    """Slots ``lo..hi-1`` of ``table`` (a ``TipTable``), marshalled for the pipe."""
    return marshal.dumps(
        (
            bytes(table.kind[lo:hi]),
            bytes(table.peeled_kind[lo:hi]),
            {s - lo: p for s, p in table.peeled.items() if lo <= s < hi},
            table.ctime[lo:hi].tobytes(),
            table.atime[lo:hi].tobytes(),
            table.committer[lo:hi].tobytes(),
            table.author[lo:hi].tobytes(),
            table.subject[lo:hi],
            table.people,
        )
    )


def decode(data: bytes, n: int) -> Columns:
    """``encode``'s bytes back as ``Columns`` of ``n`` ids; ValueError when they are not that."""
    try:
        kind, pkind, peeled, ct, at, co, au, subject, people = marshal.loads(data)
    except (EOFError, TypeError) as err:
        raise ValueError(f"malformed answer ({err})") from None
    cols = Columns(kind, pkind, peeled, array("q"), array("q"), array("i"), array("i"), subject, people)
    for col, raw in ((cols.ctime, ct), (cols.atime, at), (cols.committer, co), (cols.author, au)):
        col.frombytes(raw)
    if not all(
        len(c) == n for c in (kind, pkind, subject, cols.ctime, cols.atime, cols.committer, cols.author)
    ):
        raise ValueError("answer of the wrong length")
    if any(not 0 <= k < n for k in peeled) or max(
        max(cols.committer, default=-1), max(cols.author, default=-1)
    ) >= len(people):
        raise ValueError("answer out of range")
    return cols


class Child:
    """``Child(objects_dir, hash_name, oids)`` starts the reader; ``result()`` waits for its ``Columns``
    (or ``Failed``); ``abandon()`` kills it. ``pid`` for whoever must know which process it is.
    Started with ``oids`` None, it starts up (the interpreter, the imports, the pack indexes) while its
    ids are still being found, and ``give`` hands them over. Only the first ``dated`` ids get the first
    answer (``dates``): the commits the commit-graph dated already need none, and a child that has no
    dates to send lowers its priority at once (the date sort ranking in the parent has the cores)."""

    def __init__(self, objects_dir: str, hash_name: str, oids: list[bytes] | None) -> None:
        self.n = 0
        self.dated = 0
        self.progress = 0  # ids whose whole tips the child has read (it says so a chunk at a time)
        self._ids = b""
        self.proc: subprocess.Popen | None = None
        self.failed: Failed | None = None
        try:
            self.proc = subprocess.Popen(
                [*COMMAND, os.fsencode(objects_dir), hash_name, str(CHUNK)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_env(),
            )
        except OSError as err:
            self.failed = Failed(f"tip reader did not start: {err.strerror or err}")
            return
        if oids is not None:
            self.give(oids)

    def give(self, oids: list[bytes], dated: int | None = None) -> None:
        """The ids to read (``send`` writes them), the first ``dated`` of them (all: None) dated first."""
        self.n = len(oids)
        self.dated = self.n if dated is None else min(dated, self.n)
        self._ids = self.dated.to_bytes(8, "little") + b"".join(oids)

    def stream(self, oids: list[bytes]) -> bool:
        """More ids, written at once (the child dates them as they come; ``end`` says there are no
        more): the ids of a million rows' table handed over while the parent still finds them. False
        when the child is gone (``dates`` then says how it ended)."""
        if self.proc is None:
            return False
        head = b"" if self.n else ALL.to_bytes(8, "little")
        self.n += len(oids)
        self.dated = self.n
        try:
            self.proc.stdin.write(head + b"".join(oids))  # (blocks without the GIL if need be)
        except (OSError, ValueError):  # (gone, or abandoned meanwhile: its stdin closed)
            return False
        return True

    def end(self) -> None:
        """No more ids (``stream``)."""
        if self.proc is not None and not self.n:
            self.stream([])
        with contextlib.suppress(OSError, ValueError):
            if self.proc is not None:
                self.proc.stdin.close()

    @property
    def pid(self) -> int:
        return -1 if self.proc is None else self.proc.pid

    def send(self) -> None:
        """Hand the child its ids (it reads them all at once, then works): every child is started
        before any is sent its ids, so their start-ups overlap."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(self._ids)
            self.proc.stdin.close()
        except OSError:  # (a child gone before taking its ids: EPIPE; ``result`` says how it ended)
            pass
        self._ids = b""

    def dates(self) -> Dates | Failed:
        """The first answer: which of the first ``dated`` ids are commits and their committer times
        (blocks without the GIL)."""
        got = self._answer()
        if isinstance(got, Failed):
            return got
        try:
            is_commit, raw = marshal.loads(got)
            times = array("q")
            times.frombytes(raw)
        except (EOFError, TypeError, ValueError) as err:
            return self._fail(f"malformed answer ({err})")
        if len(is_commit) != self.dated or len(times) != self.dated:
            return self._fail("answer of the wrong length")
        return Dates(is_commit, times)

    def result(self) -> Columns | Failed:
        """The second answer: the columns of the ids sent, in their order."""
        got = self._answer()
        if isinstance(got, Failed):
            return got
        code = self.proc.wait()
        if code != 0:
            return self._ended(code)
        try:
            return decode(got, self.n)
        except ValueError as err:
            return Failed(f"tip reader failed: {err}")

    def _answer(self) -> bytes | Failed:
        if self.proc is None:
            return self.failed or Failed("tip reader did not start")
        if self.failed is not None:
            return self.failed
        if self._ids:
            self.send()
        head = self.proc.stdout.read(8)
        size = int.from_bytes(head, "little") if len(head) == 8 else -1
        while size >= PROGRESS:  # (how far the reading is, between the answers: kept, not an answer)
            self.progress = min(size - PROGRESS, self.n)
            head = self.proc.stdout.read(8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
        parts, left = [], size
        while left > 0:  # (a bit at a time: a garbled length asks for no huge buffer)
            part = self.proc.stdout.read(min(left, 1 << 20))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        data = b"".join(parts)
        if size < 0 or len(data) != size:
            self.proc.stdout.close()
            return self._fail(None)
        return data

    def _fail(self, why: str | None) -> Failed:
        """The child's failure: how it ended if it did (killed, an exit status), else ``why``."""
        if why is not None:
            self.abandon()
            self.failed = Failed(f"tip reader failed: {why}")
            return self.failed
        code = self.proc.wait()
        self.failed = (
            self._ended(code) if code != 0 else Failed("tip reader failed: malformed answer (cut short)")
        )
        return self.failed

    @staticmethod
    def _ended(code: int) -> Failed:
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return Failed(f"tip reader failed ({how})")

    def abandon(self) -> None:
        """Kill and reap the child (the answer is no longer wanted)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError, ValueError):  # (ids still buffered: EPIPE)
                    f.close()


def _env() -> dict[str, str]:
    """The parent's environment, its ``sys.path`` in front of PYTHONPATH: the child imports the same
    refscope the parent runs."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def committer_time(data: bytes) -> int | None:
    """``split_ident(parse_object(data).first(b"committer")).time`` (what ``TipTable.store`` keeps as
    the committer time), found by position: the header line located with two finds, the full parse
    only where the quick way could differ (no such line, a continuation line after it, a message-only
    object)."""
    end = data.find(b"\n\n")
    head = data if end < 0 else data[:end]
    at = 0 if head.startswith(b"committer ") else head.find(b"\ncommitter ") + 1
    odd = b"committer\n" in head or head.endswith(b"committer") or data.startswith(b"\n")  # (a bare key)
    if odd or at == 0 and not head.startswith(b"committer "):
        return _slow_time(data)
    eol = head.find(b"\n", at)
    if eol >= 0 and head[eol + 1 : eol + 2] == b" ":
        return _slow_time(data)
    ident = split_ident(head[at + 10 : None if eol < 0 else eol])
    return None if ident is None else ident.time


def _slow_time(data: bytes) -> int | None:
    line = parse_object(data).first(b"committer")
    ident = None if line is None else split_ident(line)
    return None if ident is None else ident.time


def dates_of(odb, oids: list[bytes]) -> bytes:
    """The first answer: for each id, 1 and its committer time when it is a commit, else 0 (what the
    date order needs: ``TipTable.sort_time``), marshalled; the objects read in pack order, a chunk at a
    time and column-wise (``date_columns``)."""
    is_commit, times = commit_dates(odb, oids)
    return marshal.dumps((bytes(is_commit), times.tobytes()))


def commit_dates(odb, oids: list[bytes]) -> tuple[bytearray, array]:
    """``dates_of``'s two columns, not marshalled (a streamed child dates its ids block by block)."""
    n = len(oids)
    is_commit = bytearray(n)
    times = array("q", bytes(8 * n))
    try:
        ids, cols = odb.read_located_columns(odb.locate_many(oids), date_columns)
    except KeyError:  # (an object missing: one by one, the missing one left 0)
        got = odb.read_many(oids)
        ids = [o for o in oids if got.get(o) is not None]
        cols = date_columns([got[o][0] for o in ids], [got[o][1] for o in ids])
    if ids:
        where = dict(zip(oids, range(n), strict=True))
        for k, c, t in zip(map(where.__getitem__, ids), *cols, strict=True):
            if c:
                is_commit[k] = 1
                times[k] = t
    return is_commit, times


def date_columns(kinds: list[str], contents: list[bytes]) -> list[list]:
    """(1 per commit else 0, its ``committer_time``: ``NO_TIME`` for none, 0 for the rest) of a chunk
    of objects. A chunk of plain commits goes by ``fields.plain_times``'s C-level passes, checked to be
    where ``committer_time``'s line and ``split_ident``'s ``<...>`` are (the first ``committer`` line,
    not continued, its ``<`` and first ``>`` before the time); any other chunk object by object."""
    n = len(contents)
    if (
        n
        and kinds.count("commit") == n
        and b"\0" not in b"".join(contents)
        and not any(map(bytes.startswith, contents, repeat(b"committer")))
        and not any(map(bytes.startswith, contents, repeat(b"\n")))
    ):
        got = plain_times(contents, b"committer ")
        if got is not None and _idents_plain(contents, got[0], got[1]):
            return [[1] * n, list(map(int, got[2]))]
    ctimes = [
        (_or_none(committer_time(c)) if k == "commit" else 0) for k, c in zip(kinds, contents, strict=True)
    ]
    return [[int(k == "commit") for k in kinds], ctimes]


def _or_none(t: int | None) -> int:
    return NO_TIME if t is None else t


def _idents_plain(contents: list[bytes], at: list[int], gt: list[int]) -> bool:
    find = bytes.find
    eol = list(map(find, contents, repeat(b"\n"), map(add, at, repeat(1))))
    if min(eol) < 0 or not all(map(lt, gt, eol)):
        return False
    if any(map(bytes.startswith, contents, repeat(b" "), map(add, eol, repeat(1)))):
        return False  # (a continued line)
    if max(map(find, contents, repeat(b"\ncommitter\n"), repeat(0), map(add, at, repeat(1)))) >= 0:
        return False  # (a bare key first)
    lts = list(map(find, contents, repeat(b"<"), at))
    return min(lts) >= 0 and list(map(find, contents, repeat(b">"), map(add, lts, repeat(1)))) == gt


def _send(fd: int, data: bytes) -> None:
    _write(fd, len(data).to_bytes(8, "little") + data)


def _write(fd: int, data: bytes) -> None:
    out = memoryview(data)
    while out:
        out = out[os.write(fd, out) :]


def main() -> int:
    """The child: on stdin how many ids to date (8 bytes), then the ids (fixed width); on stdout, each
    answer after its length (8 bytes): the dates of the first ids (``dates_of``: soon, for a date sort
    waiting), then the whole tips' columns -- after each chunk of them read, how many (``PROGRESS``:
    the scan's progress line moves while the children read, not from 0 to 100% when they are done)."""
    from ..model import HASH_HEXSZ
    from ..objects.odb import Odb
    from .tip_table import TipTable
    from .tips_view import read_into

    objects_dir, hash_name, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
    width = HASH_HEXSZ[hash_name]
    odb = Odb(objects_dir, hash_name)
    odb.locate_many([])  # (the pack indexes opened while the parent still finds the ids)
    head = sys.stdin.buffer.read(8)
    dated = int.from_bytes(head, "little")
    # the ids come in blocks as the parent finds them (``Child.stream``): the first ``dated`` ones
    # dated as they arrive, so the dates are ready soon after the last id
    oids: list[bytes] = []
    is_commit, times = bytearray(), array("q")
    while raw := sys.stdin.buffer.read(width * STREAM_BLOCK):
        if len(raw) % width:
            return 3
        block = [raw[k : k + width] for k in range(0, len(raw), width)]
        todo = block[: max(0, dated - len(oids))]
        oids += block
        if todo:
            got = commit_dates(odb, todo)
            is_commit += got[0]
            times += got[1]
    if len(head) < 8 or (dated != ALL and dated > len(oids)):
        return 3
    fd = sys.stdout.fileno()
    _send(fd, marshal.dumps((bytes(is_commit), times.tobytes())))  # (first: a date sort may wait)
    table = TipTable()
    table.add(oids)
    if len(table) != len(oids):  # (the parent sends each id once)
        return 3
    with contextlib.suppress(OSError):  # (the rest is background work: a date sort ranking the dates
        os.nice(NICE)  # in the parent, which the UI waits for, has the cores first)
    for lo in range(0, len(oids), chunk):
        read_into(table, odb, range(lo, min(lo + chunk, len(oids))))
        _write(fd, (PROGRESS + min(lo + chunk, len(oids))).to_bytes(8, "little"))
    _send(fd, encode(table, 0, len(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
