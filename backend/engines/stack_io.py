"""The reftable stack as the writers see it: locked ``tables.list``, open tables, merged lookups, new tables.

Shared by the commit engine and compaction. Everything here works on tables already mapped by a snapshot
when they are still listed (a check under the lock reads ``tables.list`` once and reuses every open table).
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
import random

from ..errors import CorruptStore, TransactionRefused
from ..formats.reftable.record import (
    BLOCK_LOG,
    BLOCK_REF,
    LOG_DELETION,
    VALUE_DELETION,
    VALUE_SYMREF,
    LogRecord,
    RefRecord,
    get_varint,
)
from ..formats.reftable.stack import parse_tables_list
from ..formats.reftable.table import Table
from ..lockfile import LOCK_SUFFIX, busy_error, create_with_timeout, unable_to_lock_message
from .crashpoint import step

_rng = random.Random()
# Up to this many names, lookups seek through each table's index; beyond, one key-only pass per table.
SEEK_LIMIT = 64


def table_name(min_index: int, max_index: int) -> str:
    """git's format_name: ``0x%012x-0x%012x-%08x`` with a random suffix."""
    return f"0x{min_index:012x}-0x{max_index:012x}-{_rng.getrandbits(32):08x}"


def read_list(path: str) -> list[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return parse_tables_list(b"".join(chunks), path)


class Stack:
    """One reftable stack directory with its tables (oldest first), possibly locked."""

    __slots__ = ("dir", "list_path", "names", "tables", "lock_fd", "lock_path", "hash_name")

    def __init__(self, directory: str, hash_name: str) -> None:
        self.dir = directory
        self.list_path = os.path.join(directory, "tables.list")
        self.names: list[str] = []
        self.tables: list[Table] = []
        self.lock_fd = -1
        self.lock_path = ""
        self.hash_name = hash_name

    # -- locking --------------------------------------------------------------------------------------
    def lock(self, timeout_ms: int, label: str = "lock tables.list") -> None:
        """Take tables.list.lock (fd kept: the new list is written through it). Busy -> LockBusy."""
        step(label)
        fd = create_with_timeout(self.list_path + LOCK_SUFFIX, timeout_ms)
        if fd < 0:
            if fd == -errno.EEXIST:
                err = busy_error(self.list_path, "cannot lock references: ")
                raise err
            raise TransactionRefused(
                self.list_path + LOCK_SUFFIX, unable_to_lock_message(self.list_path, -fd)
            )
        self.lock_fd = fd
        self.lock_path = self.list_path + LOCK_SUFFIX

    def unlock(self, label: str = "unlock tables.list") -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1
        if self.lock_path:
            step(label)
            try:
                os.unlink(self.lock_path)
            except FileNotFoundError:
                pass
            self.lock_path = ""

    def commit_list(self, names: list[str], do_fsync: bool, label: str = "rename tables.list") -> None:
        """Write ``names`` into the held lock, fsync if asked, rename it over tables.list."""
        data = "".join(n + "\n" for n in names).encode()
        step("write tables.list.lock")
        os.write(self.lock_fd, data)
        if do_fsync:
            step("fsync tables.list.lock")
            os.fsync(self.lock_fd)
        os.close(self.lock_fd)
        self.lock_fd = -1
        step(label)
        os.rename(self.lock_path, self.list_path)
        self.lock_path = ""
        self.names = list(names)

    # -- loading --------------------------------------------------------------------------------------
    def load(self, reuse: dict[str, Table] | None = None) -> bool:
        """Read tables.list once; open only tables not in ``reuse``. True when the names changed."""
        names = read_list(self.list_path)
        if names == self.names and self.tables:
            return False
        reuse = dict(reuse or {})
        for t in self.tables:
            reuse.setdefault(t.name, t)
        tables = []
        for n in names:
            t = reuse.get(n)
            if t is None:
                try:
                    t = Table.open(os.path.join(self.dir, n))
                except FileNotFoundError:
                    raise TransactionRefused(
                        os.path.join(self.dir, n), "table listed in tables.list does not exist"
                    ) from None
            tables.append(t)
        for t in tables:
            if t.hash_name != self.hash_name:
                raise CorruptStore(
                    t.path, f"table hash {t.hash_name} differs from the repository's {self.hash_name}"
                )
        changed = names != self.names
        self.names = names
        self.tables = tables
        return changed

    def adopt(self, names: list[str], tables: list[Table]) -> None:
        self.names = list(names)
        self.tables = list(tables)

    def next_update_index(self) -> int:
        return self.tables[-1].max_update_index + 1 if self.tables else 1

    # -- merged reads ---------------------------------------------------------------------------------
    def lookup(self, name: bytes) -> RefRecord | None:
        """The newest record of ``name`` (None if absent or deleted)."""
        for t in reversed(self.tables):
            rec = t.seek_ref(name)
            if rec is not None:
                return None if rec.value_type == VALUE_DELETION else rec
        return None

    def lookup_many(self, names: list[bytes]) -> dict[bytes, RefRecord | None]:
        """``lookup`` for many names at once: one key-only pass over each table's ref blocks (values are
        decoded for the wanted names only) instead of one index seek per name and table."""
        if len(names) <= SEEK_LIMIT:
            return {n: self.lookup(n) for n in names}
        pending = set(names)
        ordered = sorted(pending)
        found: dict[bytes, RefRecord | None] = {}
        for t in reversed(self.tables):
            if not pending:
                break
            if not t.has_refs:
                continue
            off = 0
            while pending:
                blk = t.block_at(off)
                if blk is None or blk.type != BLOCK_REF:
                    break
                _scan_ref_keys(blk, pending, found, t.min_update_index, ordered)
                off = blk.offset + blk.full_size
        out = {}
        for n in names:
            rec = found.get(n)
            out[n] = None if rec is None or rec.value_type == VALUE_DELETION else rec
        return out

    def resolve(self, name: bytes, depth: int = 5) -> bytes | None:
        """Follow symrefs to an oid (None when dangling/missing)."""
        for _ in range(depth):
            rec = self.lookup(name)
            if rec is None:
                return None
            if rec.value_type != VALUE_SYMREF:
                return rec.value
            name = rec.target
        return None

    def logs(self, name: bytes) -> list[LogRecord]:
        """The live reflog entries of ``name`` (newest table wins per update index; deletions hide)."""
        seen: dict[int, LogRecord] = {}
        for t in reversed(self.tables):
            for rec in t.iter_logs(name):
                if rec.update_index not in seen:
                    seen[rec.update_index] = rec
        return [r for r in seen.values() if r.log_type != LOG_DELETION]

    def has_log(self, name: bytes) -> bool:
        return bool(self.logs(name))

    def log_indexes(self, names: list[bytes]) -> dict[bytes, list[int]]:
        """Update indexes of every live reflog entry of each of ``names`` (newest table wins per key).

        Few names: one seek per name and table. Many: one pass over each table's log blocks reading keys
        only (values are skipped, never decoded): deleting 10k of 100k refs must not decode 100k entries.
        """
        if len(names) <= SEEK_LIMIT:
            return {n: [r.update_index for r in self.logs(n)] for n in names}
        wanted = set(names)
        ordered = sorted(wanted)
        seen: dict[tuple[bytes, int], int] = {}
        for t in reversed(self.tables):
            if not t.has_logs:
                continue
            off = t.footer.log_position
            while True:
                blk = t.block_at(off)
                if blk is None or blk.type != BLOCK_LOG:
                    break
                _scan_log_keys(blk, wanted, seen, ordered)
                off = blk.offset + blk.full_size
        out: dict[bytes, list[int]] = {}
        for (name, ui), lt in seen.items():
            if lt != LOG_DELETION:
                out.setdefault(name, []).append(ui)
        return out

    # -- adding a table -------------------------------------------------------------------------------
    def write_table(self, data: bytes, min_index: int, max_index: int, do_fsync: bool) -> str:
        """git's reftable_addition_add: ``<name>.temp.XXXXXX``, fsync if asked, rename to the final name."""
        temp_base = os.path.join(self.dir, table_name(min_index, min_index))
        step("create table temp")
        fd, temp = _mkstemp(temp_base + ".temp.")
        try:
            step("write table")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if do_fsync:
                step("fsync table")
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
        os.close(fd)
        final = table_name(min_index, max_index) + ".ref"
        step("rename table")
        try:
            os.rename(temp, os.path.join(self.dir, final))
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
        return final


_MAX_UI = 0xFFFFFFFFFFFFFFFF


def _wanted_ranges(blk, names: list[bytes], log: bool) -> list[tuple[int, int]]:
    """Byte ranges of the restart intervals of ``blk`` that can hold one of ``names`` (sorted).

    A restart record stores its key whole, so interval j holds names between the keys of restarts j and
    j + 1: intervals with no wanted name in that span are never parsed (a prefix of 10k refs touches a
    tenth of a 100k stack's blocks and records)."""
    from bisect import bisect_left

    data = blk.data
    end = blk.restart_off
    restarts = blk.restarts
    first = blk.header_off + 4
    keys = []
    for r in restarts:
        x, p = get_varint(data, r + 1, end)  # a restart's prefix length is 0: one byte
        k = data[p : p + (x >> 3)]
        keys.append(k[:-9] if log else k)
    out: list[tuple[int, int]] = []
    if not restarts or restarts[0] != first:
        return [(first, end)]
    n = len(restarts)
    nn = len(names)
    for j in range(n):
        i = bisect_left(names, keys[j])
        if i == nn:
            break
        if j + 1 < n and names[i] > keys[j + 1]:
            continue
        s, e = restarts[j], restarts[j + 1] if j + 1 < n else end
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _scan_ref_keys(
    blk, pending: set[bytes], found: dict[bytes, RefRecord], min_ui: int, names: list[bytes]
) -> None:
    """Decode the records of ``pending`` names in one ref block (moving them to ``found``), skipping the rest."""
    for rs, re_ in _wanted_ranges(blk, names, False):
        _scan_ref_range(blk, rs, re_, pending, found, min_ui)


def _scan_ref_range(blk, pos: int, end: int, pending, found, min_ui: int) -> None:
    data = blk.data
    hs = blk.hash_size
    last = b""
    while pos < end:
        c = data[pos]
        if c < 0x80:
            prefix = c
            pos += 1
        else:
            prefix, pos = get_varint(data, pos, end)
        c = data[pos]
        if c < 0x80:
            x = c
            pos += 1
        else:
            x, pos = get_varint(data, pos, end)
        slen = x >> 3
        key = last[:prefix] + data[pos : pos + slen]
        pos += slen
        last = key
        vt = x & 7
        start = pos
        while data[pos] & 0x80:  # update index delta
            pos += 1
        pos += 1
        if vt == 1:
            pos += hs
        elif vt == 2:
            pos += 2 * hs
        elif vt == 3:
            c = data[pos]
            if c < 0x80:
                pos += 1 + c
            else:
                n, pos = get_varint(data, pos, end)
                pos += n
        if key in pending:
            pending.discard(key)
            delta, vpos = get_varint(data, start, end)
            val = peeled = target = None
            if vt == 1:
                val = data[vpos : vpos + hs].hex().encode()
            elif vt == 2:
                val = data[vpos : vpos + hs].hex().encode()
                peeled = data[vpos + hs : vpos + 2 * hs].hex().encode()
            elif vt == 3:
                n, vpos = get_varint(data, vpos, end)
                target = bytes(data[vpos : vpos + n])
            found[bytes(key)] = RefRecord(bytes(key), delta + min_ui, vt, val, peeled, target)


def _scan_log_keys(blk, wanted: set[bytes], seen: dict[tuple[bytes, int], int], names: list[bytes]) -> None:
    """Record (name, update_index) -> log type for the wanted names of one log block, skipping values."""
    for rs, re_ in _wanted_ranges(blk, names, True):
        _scan_log_range(blk, rs, re_, wanted, seen)


def _scan_log_range(blk, pos: int, end: int, wanted, seen) -> None:
    data = blk.data
    hs2 = 2 * blk.hash_size
    last = b""
    while pos < end:
        c = data[pos]
        if c < 0x80:
            prefix = c
            pos += 1
        else:
            prefix, pos = get_varint(data, pos, end)
        c = data[pos]
        if c < 0x80:
            x = c
            pos += 1
        else:
            x, pos = get_varint(data, pos, end)
        slen = x >> 3
        key = last[:prefix] + data[pos : pos + slen]
        pos += slen
        last = key
        lt = x & 7
        if lt:
            pos += hs2
            for _ in range(2):  # name, email
                c = data[pos]
                if c < 0x80:
                    pos += 1 + c
                else:
                    n, pos = get_varint(data, pos, end)
                    pos += n
            while data[pos] & 0x80:  # time
                pos += 1
            pos += 3  # last time byte + tz
            c = data[pos]
            if c < 0x80:
                pos += 1 + c
            else:
                n, pos = get_varint(data, pos, end)
                pos += n
        name = key[:-9]
        if name in wanted:
            k = (name, _MAX_UI - int.from_bytes(key[-8:], "big"))
            if k not in seen:
                seen[k] = lt


def _mkstemp(prefix: str) -> tuple[int, str]:
    """mkstemp(``prefix`` + 6 random chars) with one open call in the common case."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for _ in range(100):
        path = prefix + "".join(_rng.choice(letters) for _ in range(6))
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), path
        except FileExistsError:
            continue
    raise TransactionRefused(prefix, "cannot create a temporary table file")
