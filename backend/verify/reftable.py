"""The reftable backend's checks: tables.list, each table through the parsers' fsck mode
(``formats/reftable/fsck.py``), the stack's update-index order, the merged view's names, stray files.
"""

from __future__ import annotations

import os
import re

from ..display import escape_name
from ..formats.reftable.fsck import CheckedBlock, TableInfo, check_table
from ..formats.reftable.record import VALUE_DELETION
from .findings import Collector, Finding, check_name, quoted, read_checked, why

__all__ = ["TableInfo", "table_blocks", "verify_reftable", "verify_table_bytes"]

_TABLE_NAME = re.compile(r"\A0x([0-9a-f]{12})-0x([0-9a-f]{12})-[0-9a-f]{8}\.ref\Z")


def table_blocks(data: bytes, path: str = "<table>") -> tuple[list[CheckedBlock], list[Finding]]:
    """The blocks of one reftable (offset, type, lengths, restart table, keys) as the check walked them,
    and the findings: for building corrupted tables in tests."""
    out = Collector()
    info = verify_table_bytes(out, path, data)
    return info.blocks, out.findings


def verify_table_bytes(out: Collector, path: str, data: bytes) -> TableInfo:
    """Check one reftable file's bytes into ``out`` (used by verify and by tests/fuzzers); the stack
    check compares each table's hash with the repository's."""
    return check_table(
        data,
        path,
        lambda offset, message: out.error(path, offset, message),
        lambda offset, message: out.warning(path, offset, message),
    )


def verify_reftable(out: Collector, commondir: str, hash_name: str) -> dict[bytes, tuple]:
    """Check the stack in ``commondir/reftable``; returns the merged view name -> ref tuple."""
    rdir = os.path.join(commondir, "reftable")
    lpath = os.path.join(rdir, "tables.list")
    merged: dict[bytes, tuple] = {}
    try:
        st = os.lstat(lpath)
    except FileNotFoundError:
        out.error(lpath, None, "tables.list is missing: the reftable stack cannot be read")
        return merged
    except OSError as err:  # reftable/ itself cannot be searched (EACCES) or is not a directory
        out.error(rdir, None, f"cannot read the reftable directory: {why(err)}")
        return merged
    data = read_checked(out, lpath, st, "tables.list")
    if data is None:
        return merged
    names: list[str] = []
    pos = 0
    while pos < len(data):
        eol = data.find(b"\n", pos)
        if eol < 0:
            out.error(
                lpath, len(data), "the last line of tables.list does not end in LF; git refuses the stack"
            )
            eol = len(data)
        raw = data[pos:eol]
        name = os.fsdecode(raw)
        if not raw:
            out.warning(lpath, pos, "tables.list has an empty line (git skips it; git never writes one)")
        elif not _TABLE_NAME.match(name):
            if "/" in name or name in (".", ".."):
                out.error(
                    lpath,
                    pos,
                    f"tables.list names '{escape_name(raw)}', a path outside reftable/; git "
                    "joins names to the directory unchecked, refscope refuses it",
                )
            else:
                out.error(
                    lpath,
                    pos,
                    f"tables.list names '{escape_name(raw)}', which is not of git's form "
                    "0x<min:12 hex>-0x<max:12 hex>-<8 hex>.ref",
                )
        elif name in names:
            out.error(lpath, pos, f"tables.list names {name} twice")
        else:
            names.append(name)
        pos = eol + 1
    out.checked["tables"] += len(names)
    infos: list[TableInfo] = []
    for name in names:
        path = os.path.join(rdir, name)
        try:
            tst = os.lstat(path)
        except FileNotFoundError:
            out.error(path, None, f"table {name} is listed in tables.list but does not exist")
            continue
        except OSError as err:
            out.error(path, None, f"cannot read table {name}: {why(err)}")
            continue
        tdata = read_checked(out, path, tst, f"table {name}")
        if tdata is None:
            continue
        info = verify_table_bytes(out, path, tdata)
        if not info.ok:
            continue
        if info.hash_name != hash_name:
            out.error(
                path,
                24 if tdata[4] == 2 else 4,
                f"table {name} uses {info.hash_name} but the repository "
                f"uses {hash_name}; all tables of a stack must share one hash",
            )
        m = _TABLE_NAME.match(name)
        if m and (int(m.group(1), 16), int(m.group(2), 16)) != (info.min_update_index, info.max_update_index):
            out.warning(
                path,
                8,
                f"table {name}'s name says update indexes {int(m.group(1), 16)}.."
                f"{int(m.group(2), 16)} but its header says {info.min_update_index}.."
                f"{info.max_update_index}",
            )
        infos.append(info)
    for prev, cur in zip(infos, infos[1:], strict=False):
        if cur.min_update_index <= prev.max_update_index:
            out.error(
                cur.path,
                8,
                f"update indexes must increase through the stack: this table starts at "
                f"{cur.min_update_index} but the table before ({os.path.basename(prev.path)}) ends at "
                f"{prev.max_update_index}",
            )
    # merged view: newest table wins; tombstones hide older values
    for info in infos:
        for rec in info.refs:
            merged[rec[0]] = (info.path, rec)
    for name in list(merged):
        path, rec = merged[name]
        if rec[1] == VALUE_DELETION:
            del merged[name]
            continue
        if b"\0" in name:
            as_git = name.split(b"\0")[0]
            out.error(
                path,
                rec[6],
                f"ref name {quoted(name)} holds a NUL byte: git reads it as {quoted(as_git)}; "
                "refscope does not list it and refuses writes that name it",
            )
            continue
        check_name(out, path, rec[6], name)
    # stray files
    listed = set(names)
    try:
        entries = sorted(os.listdir(rdir))
    except OSError:
        entries = []
    for entry in entries:
        if entry == "tables.list" or entry in listed or entry.endswith(".lock"):
            continue
        path = os.path.join(rdir, entry)
        if _TABLE_NAME.match(entry):
            out.warning(
                path,
                None,
                f"stray table {entry}: present in reftable/ but not listed in tables.list "
                "(left by an interrupted write or compaction; git ignores it)",
            )
        elif ".temp." in entry:
            out.warning(path, None, f"leftover temporary file {entry} from an interrupted table write")
        else:
            out.warning(path, None, f"unexpected file '{escape_name(os.fsencode(entry))}' in reftable/")
    return merged
