"""The reftable stack: ``tables.list`` and git's geometric auto-compaction policy.

``tables.list`` names the tables oldest first, one per line, each line ending in LF (git rejects a last line
without one and skips empty lines). git joins the names to a path unchecked; refscope accepts only names of
the form git writes, so a hostile list cannot make it open files outside the reftable directory.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ...errors import CorruptStore
from ...fileio import read_regular, unreadable
from .merged import MergedTables
from .table import Table

_HEX = b"0123456789abcdef"


def is_table_name(name: bytes) -> bool:
    """``0x<12 hex>-0x<12 hex>-<8 hex>.ref`` (lowercase), the only table names git writes. By hand, not
    with a regex: ``re`` stays off the CLI path."""
    return (
        len(name) == 42
        and name[:2] == b"0x"
        and name[14:17] == b"-0x"
        and name[29:30] == b"-"
        and name[38:] == b".ref"
        and not (name[2:14] + name[17:29] + name[30:38]).translate(None, _HEX)
    )


DEFAULT_GEOMETRIC_FACTOR = 2
_HEADER = {"sha1": 24, "sha256": 28}
_FOOTER = {1: 68, 2: 72}


def parse_tables_list(data: bytes, path: str) -> list[str]:
    """Validated table names from the bytes of a tables.list (``path`` names it in errors)."""
    names: list[str] = []
    pos = 0
    n = len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise CorruptStore(path, "last line does not end in LF", pos)
        line = data[pos:nl]
        if line:
            if not is_table_name(line):
                shown = line[:80].decode("utf-8", "backslashreplace")
                raise CorruptStore(path, f"invalid table name {shown!r}", pos)
            names.append(line.decode("ascii"))
        pos = nl + 1
    return names


_RETRY_SECONDS = 3.0


class Stack(MergedTables):
    """One reftable directory as read at one moment (git's reftable_stack for reading): ``names`` and
    ``tables`` oldest first, read as one through ``MergedTables``; ``list_stat`` = (st_dev, st_ino,
    st_size, st_mtime_ns) of tables.list or None when it is missing. The writers' locked counterpart is
    ``engines.stack_io.StackWriter``."""

    __slots__ = ("dir", "names", "list_stat")

    def __init__(self, d: str, names: list[str], tables: list[Table], list_stat) -> None:
        super().__init__(tables)
        self.dir = d
        self.names = names
        self.list_stat = list_stat

    @classmethod
    def load(cls, d: str, hash_name: str, previous: Stack | None = None) -> Stack:
        """Read tables.list and open its tables, reusing ``previous``'s Table objects whose file (name,
        device, inode, size) is unchanged. A listed table that is missing while tables.list changed
        meanwhile means a concurrent writer: retry (about 3 s, as git's reader does)."""
        import time

        reuse = {t.name: t for t in previous.tables} if previous is not None else {}
        deadline = time.monotonic() + _RETRY_SECONDS
        tries = 0
        delay = 0.001
        while True:
            tries += 1
            names, lst = read_tables_list_stat(d)
            tables: list[Table] = []
            missing = None
            for n in names:
                path = os.path.join(d, n)
                old = reuse.get(n)
                try:
                    if old is not None:
                        st = os.stat(path)
                        if (st.st_dev, st.st_ino, st.st_size) == old.stat:
                            tables.append(old)
                            continue
                    tables.append(Table.open(path))
                except FileNotFoundError:
                    missing = path
                    break
                except OSError as err:  # the stat of a reused table (ELOOP, EACCES...): as fileio reports it
                    raise unreadable(path, err) from None
            if missing is None:
                break
            after, _ = read_tables_list_stat(d)
            if after == names or (tries > 3 and time.monotonic() >= deadline):
                raise CorruptStore(missing, "table listed in tables.list does not exist")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        for t in tables:
            if t.hash_name != hash_name:
                raise CorruptStore(t.path, f"table uses {t.hash_name}, the repository uses {hash_name}")
        return cls(d, names, tables, lst)

    def unchanged(self, names: list[str], lst) -> bool:
        """Do ``names`` and ``lst`` (as ``read_tables_list_stat`` gives them) describe this stack?"""
        return names == self.names and lst == self.list_stat


def read_tables_list_stat(reftable_dir: str) -> tuple[list[str], tuple[int, int, int, int] | None]:
    """(names, identity of tables.list as (st_dev, st_ino, st_size, st_mtime_ns) or None when missing)."""
    path = os.path.join(reftable_dir, "tables.list")
    try:
        data, st = read_regular(path)
    except FileNotFoundError:
        return [], None
    except NotADirectoryError as err:  # ``reftable`` is not a directory: not a missing stack
        raise unreadable(path, err) from None
    return parse_tables_list(data, path), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def compaction_size(file_size: int, table_version: int, stack_hash_name: str) -> int:
    """The size git's policy uses for one table: its size without the footer, minus (header size - 1) of
    the stack's format version (reftable/stack.c stack_segments_for_compaction)."""
    return file_size - _FOOTER[table_version] - (_HEADER[stack_hash_name] - 1)


def suggest_compaction_segment(
    sizes: list[int], factor: int = DEFAULT_GEOMETRIC_FACTOR
) -> tuple[int, int] | None:
    """git's geometric policy: the half-open [start, end) run of tables to merge, or None if the stack is
    already a geometric sequence (each table at least ``factor`` times the next newer one)."""
    if not factor:
        factor = DEFAULT_GEOMETRIC_FACTOR
    n = len(sizes)
    if n <= 1:
        return None
    start = end = 0
    total = 0
    i = n - 1
    while i > 0:
        if sizes[i - 1] < sizes[i] * factor:
            end = i + 1
            total = sizes[i]
            break
        i -= 1
    while i > 0:
        curr = total
        total += sizes[i - 1]
        if sizes[i - 1] < curr * factor:
            start = i - 1
        i -= 1
    return (start, end) if end - start > 0 else None


class CompactionStep(namedtuple("CompactionStep", "index size compared_with violates in_segment")):
    """One line of the explanation: table ``index`` with its policy ``size``; ``compared_with`` = the size
    the backwards walk compared it with; ``violates`` = size < that * factor; ``in_segment`` (bool)."""

    __slots__ = ()


def explain_compaction(sizes: list[int], factor: int = DEFAULT_GEOMETRIC_FACTOR) -> tuple[
    tuple[int, int] | None, list[CompactionStep]
]:  # fmt: skip
    """The forecast of ``suggest_compaction_segment`` with the comparison made for each table, for views:
    each newer-to-older step states which size the table was compared with (the next table's size while
    looking for the segment end, then the accumulated size of the segment) and whether it broke the
    geometric rule."""
    if not factor:
        factor = DEFAULT_GEOMETRIC_FACTOR
    seg = suggest_compaction_segment(sizes, factor)
    steps: list[CompactionStep] = []
    n = len(sizes)
    i = n - 1
    total = 0
    found = False
    while i > 0:
        nxt = sizes[i]
        if not found:
            v = sizes[i - 1] < nxt * factor
            steps.append(CompactionStep(i - 1, sizes[i - 1], nxt, v, False))
            if v:
                found = True
                total = sizes[i] + sizes[i - 1]
            i -= 1
            continue
        v = sizes[i - 1] < total * factor
        steps.append(CompactionStep(i - 1, sizes[i - 1], total, v, False))
        total += sizes[i - 1]
        i -= 1
    if seg:
        steps = [s._replace(in_segment=seg[0] <= s.index < seg[1]) for s in steps]
    return seg, steps


class Forecast(namedtuple("Forecast", "sizes segment steps factor")):
    """What git's auto-compaction would do to a stack now: ``sizes`` (policy sizes, oldest first),
    ``segment`` ([start, end) or None), ``steps`` (see ``explain_compaction``), ``factor``."""

    __slots__ = ()


def forecast(tables, hash_name: str, factor: int | None = None) -> Forecast:
    """The auto-compaction forecast for ``tables`` (oldest first; objects with ``.size`` and ``.version``,
    e.g. ``snapshot.tables``). ``factor`` is ``reftable.geometricFactor`` (None or 0: git's default 2)."""
    f = factor or DEFAULT_GEOMETRIC_FACTOR
    sizes = [compaction_size(t.size, t.version, hash_name) for t in tables]
    seg, steps = explain_compaction(sizes, f)
    return Forecast(sizes, seg, steps, f)


# A typical small write: ``git update-ref`` of one ref with its reflog entry, as git writes it (header, one
# ref block, one log block, footer). Its exact size moves with the name, the ident and the message; the
# forecast only needs it to know which side of the factor the newest tables fall.
ONE_REF_TABLE_SIZE = 300


class WriteForecast(namedtuple("WriteForecast", "sizes new_size segment steps factor")):
    """What git's auto-compaction does right after one more write: ``sizes`` (policy sizes of the current
    tables, oldest first), ``new_size`` (the policy size assumed for the write's own table, index
    ``len(sizes)``), ``segment`` ([start, end) over sizes + [new_size], or None: the stack just grows by
    one), ``steps`` (``explain_compaction`` over the same), ``factor``."""

    __slots__ = ()

    def tables_after(self) -> int:
        """How many tables ``tables.list`` names once the write and its compaction are done."""
        n = len(self.sizes) + 1
        if self.segment is None:
            return n
        start, end = self.segment
        return n - (end - start) + 1


def forecast_write(tables, hash_name: str, factor: int | None = None, new_file_size: int | None = None):
    """The forecast for the next small write (``new_file_size``: its table's file size, default a one-ref
    table). git adds the new table first and then runs its policy over the whole stack
    (reftable_addition_commit -> reftable_stack_auto_compact), so the new table takes part."""
    f = factor or DEFAULT_GEOMETRIC_FACTOR
    version = 1 if hash_name == "sha1" else 2
    sizes = [compaction_size(t.size, t.version, hash_name) for t in tables]
    new = compaction_size(new_file_size or ONE_REF_TABLE_SIZE, version, hash_name)
    seg, steps = explain_compaction(sizes + [new], f)
    return WriteForecast(sizes, new, seg, steps, f)
