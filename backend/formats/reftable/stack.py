"""The reftable stack: ``tables.list``, oldest table first (git's compaction policy is in ``policy``).

``tables.list`` names the tables oldest first, one per line, each line ending in LF (git rejects a last line
without one and skips empty lines). git joins the names to a path unchecked; refscope accepts only names of
the form git writes, so a hostile list cannot make it open files outside the reftable directory.
"""

from __future__ import annotations

import os

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
