"""The reftable stack: ``tables.list``, oldest table first (git's compaction policy is in ``policy``).

``tables.list`` names the tables oldest first, one per line, each line ending in LF (git rejects a last line
without one and skips empty lines). git joins the names to a path unchecked; refscope accepts only names of
the form git writes, so a hostile list cannot make it open files outside the reftable directory.
"""

from __future__ import annotations

import os

from ...errors import CorruptStore
from ...fileio import read_regular, unreadable

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
