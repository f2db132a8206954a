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

import marshal
import os
import subprocess
import sys
from array import array
from typing import NamedTuple

CHUNK = 1 << 15  # ids read per ``Tips.fill`` in the child (each pack is read in offset order per chunk)
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
    (or ``Failed``); ``abandon()`` kills it. ``pid`` for whoever must know which process it is."""

    def __init__(self, objects_dir: str, hash_name: str, oids: list[bytes]) -> None:
        self.n = len(oids)
        self.proc: subprocess.Popen | None = None
        self.failed: Failed | None = None
        try:
            self.proc = subprocess.Popen(
                [*COMMAND, os.fsencode(objects_dir), hash_name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_env(),
            )
        except OSError as err:
            self.failed = Failed(f"tip reader did not start: {err.strerror or err}")
            return
        self._ids = b"".join(oids)

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

    def result(self) -> Columns | Failed:
        """The columns of the ids sent, in their order (blocks without the GIL while the child reads)."""
        if self.proc is None:
            return self.failed or Failed("tip reader did not start")
        if self._ids:
            self.send()
        data = self.proc.stdout.read()
        self.proc.stdout.close()
        code = self.proc.wait()
        if code != 0:
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            return Failed(f"tip reader failed ({how})")
        try:
            return decode(data, self.n)
        except ValueError as err:
            return Failed(f"tip reader failed: {err}")

    def abandon(self) -> None:
        """Kill and reap the child (the answer is no longer wanted)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if not f.closed:
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


def main() -> int:
    """The child: ids on stdin (fixed width), their columns on stdout."""
    from ..model import HASH_HEXSZ
    from ..objects.odb import Odb
    from .tip_table import TipTable
    from .tips_view import read_into

    objects_dir, hash_name = sys.argv[1], sys.argv[2]
    width = HASH_HEXSZ[hash_name]
    raw = sys.stdin.buffer.read()
    oids = [raw[k : k + width] for k in range(0, len(raw), width)]
    table = TipTable()
    table.add(oids)
    if len(table) != len(oids):  # (the parent sends each id once)
        return 3
    odb = Odb(objects_dir, hash_name)
    for lo in range(0, len(oids), CHUNK):
        read_into(table, odb, range(lo, min(lo + CHUNK, len(oids))))
    out = memoryview(encode(table, 0, len(table)))
    fd = sys.stdout.fileno()
    while out:
        out = out[os.write(fd, out) :]
    return 0


if __name__ == "__main__":
    sys.exit(main())
