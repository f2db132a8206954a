"""The reftable stack as the writers see it: locked ``tables.list``, open tables, merged lookups, new tables.

Shared by the commit engine and compaction. Everything here works on tables already mapped by a snapshot
when they are still listed (a check under the lock reads ``tables.list`` once and reuses every open table).
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
from binascii import hexlify
from bisect import bisect_left

from ..errors import CorruptStore, TransactionRefused
from ..fileio import read_regular, refused_write, unreadable
from ..formats.reftable.record import (
    BLOCK_LOG,
    BLOCK_REF,
    LOG_DELETION,
    VALUE_DELETION,
    VALUE_SYMREF,
    LogRecord,
    RefRecord,
    VarintError,
    get_varint,
)
from ..formats.reftable.stack import parse_tables_list
from ..formats.reftable.table import Table
from ..formats.reftable.writer import write_table
from ..lockfile import (
    LOCK_SUFFIX,
    busy_error,
    create_temp,
    create_with_timeout,
    remove,
    rename,
    unable_to_lock_message,
)
from .common import config_bool, config_int
from .crashpoint import step

# Up to this many names, lookups seek through each table's index; beyond, one key-only pass per table.
SEEK_LIMIT = 64


# Names need only be unlikely to collide (git uses rand()): a 64-bit LCG seeded once at import, so that
# neither the random module's import nor a getrandom() call lands on the CLI path / in the commit window.
_seed = [int.from_bytes(os.urandom(8), "big") ^ os.getpid()]


def _rand32() -> int:
    x = (_seed[0] * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    _seed[0] = x
    return x >> 32


_U64_MAX = (1 << 64) - 1


def table_name(min_index: int, max_index: int) -> str:
    """git's format_name: ``0x%012x-0x%012x-%08x`` with a random suffix."""
    return f"0x{min_index:012x}-0x{max_index:012x}-{_rand32():08x}"


def read_list(path: str) -> list[str]:
    try:
        data = read_regular(path)[0]
    except FileNotFoundError:
        return []
    except NotADirectoryError as err:
        raise unreadable(path, err) from None
    return parse_tables_list(data, path)


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
            remove(self.lock_path)
            self.lock_path = ""

    def commit_list(
        self,
        names: list[str],
        do_fsync: bool,
        label: str = "rename tables.list",
        publish: tuple[str, ...] = (),
    ) -> None:
        """Write ``names`` into the held lock, fsync if asked, rename it over tables.list: the commit point.
        ``publish``: the new table(s) the list names, no longer ours to remove once it is renamed."""
        data = "".join(n + "\n" for n in names).encode()
        try:
            step("write tables.list.lock")
            view = memoryview(data)
            while view:
                view = view[os.write(self.lock_fd, view) :]
            if do_fsync:
                step("fsync tables.list.lock")
                os.fsync(self.lock_fd)
            fd, self.lock_fd = self.lock_fd, -1
            os.close(fd)
            step(label)
            rename(self.lock_path, self.list_path, publish=publish)
        except OSError as err:  # the caller removes the new table; unlock() the lock
            raise refused_write(self.lock_path, err) from None
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
        """The newest table's max_update_index + 1, in git's uint64_t arithmetic: after 2^64-1 comes 0
        (git's reftable_stack_next_update_index wraps, and its delete succeeds; so does ours)."""
        return (self.tables[-1].max_update_index + 1) & _U64_MAX if self.tables else 1

    # -- merged reads ---------------------------------------------------------------------------------
    def lookup(self, name: bytes) -> RefRecord | None:
        """The newest record of ``name`` (None if absent or deleted)."""
        for t in reversed(self.tables):
            rec = t.seek_ref(name)
            if rec is not None:
                return None if rec.value_type == VALUE_DELETION else rec
        return None

    def lookup_many(self, names: list[bytes]) -> dict[bytes, RefRecord | None]:
        """``lookup`` for many names at once: one sorted pass over each table's ref blocks (see
        ``merged_lookup``) instead of one index seek per name and table."""
        if len(names) <= SEEK_LIMIT:
            return {n: self.lookup(n) for n in names}
        return merged_lookup(self.tables, names)

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
        """Update indexes of every live reflog entry of each of ``names`` (newest table wins per key;
        names without one are left out).

        Keys only are read, values skipped, never decoded (deleting 10k of 100k refs must not decode 100k
        entries, nor one ref's the 40-odd entries around it). Many names: one sorted pass over each table's
        log blocks. Few: one such pass per name from its own seek through the log index (a sorted pass
        would inflate every block between names far apart)."""
        ordered = sorted(set(names))
        if len(ordered) > SEEK_LIMIT:
            return self._log_pass(ordered)
        out: dict[bytes, list[int]] = {}
        for n in ordered:
            out.update(self._log_pass([n]))
        return out

    def _log_pass(self, ordered: list[bytes]) -> dict[bytes, list[int]]:
        """``log_indexes`` of ``ordered`` (sorted, distinct) in one pass over each table."""
        targets = [n + b"\0" for n in ordered]  # every log key of name n is n NUL <8-byte index>
        seen: dict[tuple[bytes, int], int] = {}
        skip = (_NO_IDENT, _NO_IDENT)
        for t in reversed(self.tables):
            if not t.has_logs:
                continue
            off = t.footer.log_position
            seek = getattr(t, "_seek_indexed", None)  # the log index, when the table offers it
            if seek is not None and t.footer.log_index_position:
                off = seek(t.footer.log_index_position, targets[0], BLOCK_LOG)
                if off is None:
                    continue
            k = 0
            while k < len(targets):
                blk = t.block_at(off)
                if blk is None or blk.type != BLOCK_LOG:
                    break
                try:
                    k, skip = _scan_log_block(blk, targets, ordered, k, seen, skip)
                except (IndexError, VarintError) as e:
                    raise CorruptStore(t.path, f"log block does not decode ({e})", blk.offset) from None
                off = blk.offset + blk.full_size
        out: dict[bytes, list[int]] = {}
        for (name, ui), lt in seen.items():
            if lt != LOG_DELETION:
                out.setdefault(name, []).append(ui)
        return out

    # -- adding a table -------------------------------------------------------------------------------
    def write_table(self, data: bytes, min_index: int, max_index: int, do_fsync: bool) -> str:
        """git's reftable_addition_add: ``<name>.temp.XXXXXX``, fsync if asked, rename to the final name.
        An OSError on the way (disk full, quota, I/O error) removes the temp file and refuses, naming the
        stack's directory."""
        temp_base = os.path.join(self.dir, table_name(min_index, min_index))
        step("create table temp")
        try:
            fd, temp = _mkstemp(temp_base + ".temp.")
        except OSError as err:
            raise refused_write(self.dir, err) from None
        try:
            step("write table")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if do_fsync:
                step("fsync table")
                os.fsync(fd)
        except BaseException as err:
            os.close(fd)
            try:
                remove(temp)
            except OSError:
                pass
            if isinstance(err, OSError):
                raise refused_write(self.dir, err) from None  # (the temp file's random name is gone)
            raise
        final = table_name(min_index, max_index) + ".ref"
        try:
            os.close(fd)
            step("rename table")
            # still ours until tables.list names it (``commit_list(publish=...)``): a signal removes it
            rename(temp, os.path.join(self.dir, final), keep=True)
        except BaseException as err:
            try:
                remove(temp)
            except OSError:
                pass
            if isinstance(err, OSError):
                raise refused_write(self.dir, err) from None  # (the temp file's random name is gone)
            raise
        return final


def table_bytes(repo, refs, logs, min_ui: int, max_ui: int, *, exact_log_message: bool = False) -> bytes:
    """One table holding ``refs`` and ``logs`` for update indexes ``min_ui``..``max_ui``, laid out with the
    repository's ``reftable.*`` settings (block size, restart interval, object index)."""
    return write_table(
        refs,
        logs,
        hash_name=repo.hash_name,
        min_update_index=min_ui,
        max_update_index=max_ui,
        block_size=config_int(repo, "reftable.blockSize", 4096),
        restart_interval=config_int(repo, "reftable.restartInterval", 16),
        index_objects=config_bool(repo, "reftable.indexObjects", True),
        exact_log_message=exact_log_message,
    )


_MAX_UI = 0xFFFFFFFFFFFFFFFF
_new = tuple.__new__  # NamedTuples without their Python-level __new__ (hot paths)
_IN_RUN = 1 << 62  # the walks' "common prefix with the wanted key" inside that key's own run: decode all
# The log value fields last decoded (see _scan_log_block) start unset: eleven 0xff bytes never start a
# valid value (a varint with ten continuation bytes overflows 64 bits).
_NO_IDENT = b"\xff" * 11


def _interval_starts(blk) -> tuple[int, ...]:
    """Where the restart intervals of ``blk`` begin. git's first record is always a restart point; a
    block whose first record is not one is walked as one interval."""
    first = blk.header_off + 4
    restarts = blk.restarts
    return restarts if restarts and restarts[0] == first else (first,)


def merged_lookup(tables, names) -> dict[bytes, RefRecord | None]:
    """The newest record of each of ``names`` over ``tables`` (oldest first); None when absent or deleted.

    Newest table first, each table resolves the names no newer table had, in one merge pass: the names
    are sorted, every ref block is entered only when it can hold the next wanted name (its successor's
    first key decides), and inside a block only the restart intervals that can hold one are walked,
    each up to its last wanted name (see ``_lookup_block``). Values are decoded for the names found only."""
    found: dict[bytes, RefRecord] = {}
    want = sorted(set(names))
    for t in reversed(tables):
        if not want:
            break
        if t.has_refs:
            try:
                _lookup_table(t, want, found)
            except (IndexError, VarintError) as e:
                raise CorruptStore(t.path, f"ref block does not decode ({e})") from None
            want = [n for n in want if n not in found]
    out: dict[bytes, RefRecord | None] = {}
    for n in names:
        rec = found.get(n)
        out[n] = None if rec is None or rec.value_type == VALUE_DELETION else rec
    return out


def _restart_key(data, r: int) -> bytes:
    """The key of the record at restart offset ``r`` (a restart stores its key whole: prefix length 0)."""
    x = data[r + 1]
    if x < 0x80:
        return data[r + 2 : r + 2 + (x >> 3)]
    y = data[r + 2]
    if y < 0x80:  # two bytes: a log key or a long ref name
        x = (((x & 0x7F) + 1) << 7) | y
        return data[r + 3 : r + 3 + (x >> 3)]
    x, p = get_varint(data, r + 1, len(data))
    return data[p : p + (x >> 3)]


def _lookup_table(t, want: list[bytes], found: dict) -> None:
    n = len(want)
    start = getattr(t, "_ref_start_block", None)  # the index walk, when the table offers it
    off = start(want[0]) if start is not None else 0
    if off is None:
        return
    blk = t.block_at(off)
    if blk is None or blk.type != BLOCK_REF:
        return
    min_ui = t.min_update_index
    k = 0
    while k < n:
        nxt = t.block_at(blk.offset + blk.full_size)
        if nxt is not None and nxt.type != BLOCK_REF:
            nxt = None
        if nxt is None:
            k = _lookup_block(blk, want, k, n, found, min_ui)
            break
        limit = _restart_key(nxt.data, nxt.restarts[0])
        if want[k] < limit:
            k = _lookup_block(blk, want, k, bisect_left(want, limit, k), found, min_ui)
        blk = nxt


def _lookup_block(blk, want: list[bytes], k: int, kend: int, found: dict, min_ui: int) -> int:
    """Resolve ``want[k:kend]`` (sorted, all below the next block's first key) in ``blk``; returns ``kend``.

    Restart intervals whose successor's key is not above the wanted name are skipped. Inside an interval
    the walk keeps ``m``, the length the previous key has in common with the wanted name ``T`` (it sorts
    below ``T``): a record sharing more than ``m`` bytes with its predecessor, or exactly ``m`` and then a
    smaller byte than ``T``'s, sorts below ``T`` as well and is skipped without building its key. Only a
    record that reaches ``T`` (about once per wanted name) has its key built."""
    data = blk.data
    end = blk.restart_off
    hs = blk.hash_size
    hs1 = hs + 1
    frombytes = int.from_bytes
    t = want[k]
    starts = _interval_starts(blk)
    nr = len(starts)
    j = 0
    while j < nr:
        pos = starts[j]
        j += 1
        if j < nr:
            stop = starts[j]
            limit = _restart_key(data, stop)
            if limit <= t:
                continue  # every key of the interval sorts below the wanted name
        else:
            stop = end
            limit = None
        last = b""
        m = 0
        while pos < stop:
            p = data[pos]
            x = data[pos + 1]
            if (p | x) < 0x80:
                s = pos + 2
            else:
                p, x, s = _key_header(data, pos, stop)
            e = s + (x >> 3)
            vt = x & 7
            pos = e + hs1 if vt == 1 and data[e] < 128 else _ref_value_end(data, e, stop, vt, hs)
            if p > m or (p == m and s < e and data[s] < t[m]):
                continue  # below the wanted name
            key = last[:p] + data[s:e] if p else data[s:e]
            last = key
            while key >= t:
                if key == t:
                    found[key] = _ref_at(data, e, stop, key, vt, hs, min_ui)
                k += 1  # found, or passed: absent
                if k == kend:
                    return kend
                t = want[k]
                if limit is not None and limit <= t:
                    pos = stop  # the rest of the interval sorts below the next wanted name
                    break
            else:
                n = len(key) if len(key) < len(t) else len(t)
                m = n - ((frombytes(key[:n], "big") ^ frombytes(t[:n], "big")).bit_length() + 7) // 8
        if pos != stop:
            raise IndexError("a ref record runs past its restart interval")
    return kend


def _key_header(data, pos: int, end: int) -> tuple[int, int, int]:
    """(prefix length, suffix length << 3 | type, key suffix position) of the record at ``pos``: the walks'
    slow path, for varints longer than one byte (a restart record's whole key is usually 16 bytes or more)."""
    p = data[pos]
    if p < 0x80:
        pos += 1
    else:
        p, pos = get_varint(data, pos, end)
    x = data[pos]
    if x < 0x80:
        return p, x, pos + 1
    y = data[pos + 1]
    if y < 0x80:
        return p, (((x & 0x7F) + 1) << 7) | y, pos + 2
    x, pos = get_varint(data, pos, end)
    return p, x, pos


def _ref_value_end(data, vpos: int, end: int, vt: int, hs: int) -> int:
    """Where the ref value at ``vpos`` (update-index delta first) ends: the walk's slow path."""
    pos = vpos + 1 if data[vpos] < 0x80 else get_varint(data, vpos, end)[1]
    if vt == 1:
        return pos + hs
    if vt == 2:
        return pos + 2 * hs
    if vt == 3:
        c, pos = get_varint(data, pos, end)
        return pos + c
    if vt:
        raise IndexError(f"unknown ref value type {vt}")
    return pos


def _ref_at(data, vpos: int, end: int, key: bytes, vt: int, hs: int, min_ui: int) -> RefRecord:
    """The record of ``key`` whose value (update-index delta first) starts at ``vpos``."""
    delta = data[vpos]
    if delta < 0x80:  # one byte: the common delta
        v = vpos + 1
    else:
        delta, v = get_varint(data, vpos, end)
    val = peeled = sym = None
    if vt == 1:
        val = hexlify(data[v : v + hs])
    elif vt == 2:
        val = hexlify(data[v : v + hs])
        peeled = hexlify(data[v + hs : v + hs + hs])
    elif vt == 3:
        c, v = get_varint(data, v, end)
        sym = bytes(data[v : v + c])
    return _new(RefRecord, (key, delta + min_ui, vt, val, peeled, sym))


def _scan_log_block(blk, targets, names, k: int, seen: dict, skip: tuple) -> tuple[int, tuple]:
    """Record (name, update index) -> log type of the log records of ``names[k:]`` in ``blk`` (``targets``:
    each name + NUL, the prefix of its keys; sorted). Returns the index of the first name whose records
    may continue past the block, and ``skip`` for the next block (see below).

    The walk is ``_lookup_block``'s: intervals below the wanted name skipped, keys built only for records
    that reach it. Values are skipped, never decoded: after the two object ids come the name, email,
    time, tz and message. Consecutive entries mostly share them (a batch of refs written by one command)
    or at least all but the message, so ``skip`` holds the bytes of the last value's fields after the ids
    (``tail``) and of its name to tz (``ident``): when the bytes ahead equal one of them, that run is
    skipped by one C-level compare (equal bytes decode equally: every field is self-delimiting)."""
    data = blk.data
    end = blk.restart_off
    hs2 = 2 * blk.hash_size
    ident, tail = skip
    li = len(ident)
    ltail = len(tail)
    frombytes = int.from_bytes
    nt = len(targets)
    t = targets[k]
    lt = len(t)
    starts = _interval_starts(blk)
    nr = len(starts)
    j = 0
    while j < nr:
        pos = starts[j]
        j += 1
        if j < nr:
            stop = starts[j]
            limit = _restart_key(data, stop)
            if limit <= t:
                continue  # every key of the interval sorts below the wanted name's
        else:
            stop = end
            limit = None
        last = b""
        m = 0
        while pos < stop:
            p = data[pos]
            x = data[pos + 1]
            if (p | x) < 0x80:
                s = pos + 2
            else:
                p, x, s = _key_header(data, pos, stop)
            e = s + (x >> 3)
            if x & 7:
                q = e + hs2
                # (a slice compares faster than startswith parses its arguments)
                if data[q : q + ltail] == tail:
                    pos = q + ltail
                else:
                    pos = q
                    if data[pos : pos + li] == ident:
                        pos += li
                    else:
                        c = data[pos]  # committer name
                        if c < 0x80:
                            pos += 1 + c
                        else:
                            c, pos = get_varint(data, pos, stop)
                            pos += c
                        c = data[pos]  # email
                        if c < 0x80:
                            pos += 1 + c
                        else:
                            c, pos = get_varint(data, pos, stop)
                            pos += c
                        while data[pos] >= 0x80:  # time
                            pos += 1
                        pos += 3  # the time's last byte, tz
                        ident = data[q:pos]
                        li = pos - q
                    c = data[pos]  # message
                    if c < 0x80:
                        pos += 1 + c
                    else:
                        c, pos = get_varint(data, pos, stop)
                        pos += c
                    tail = data[q:pos]
                    ltail = pos - q
            else:
                pos = e
            if p > m or (p == m and s < e and data[s] < t[m]):
                continue  # below the wanted name's keys
            key = last[:p] + data[s:e] if p else data[s:e]
            last = key
            while key >= t:
                if key.startswith(t):  # one of the wanted name's entries
                    if len(key) != lt + 8:
                        raise IndexError("log key is not name NUL update index")
                    got = (names[k], _MAX_UI - frombytes(key[lt:], "big"))
                    if got not in seen:
                        seen[got] = x & 7
                    m = _IN_RUN
                    break
                k += 1  # past the wanted name's entries
                if k == nt:
                    return k, (ident, tail)
                t = targets[k]
                lt = len(t)
                if limit is not None and limit <= t:
                    pos = stop  # the rest of the interval sorts below the next wanted name
                    break
            else:
                n = len(key) if len(key) < lt else lt
                m = n - ((frombytes(key[:n], "big") ^ frombytes(t[:n], "big")).bit_length() + 7) // 8
        if pos != stop:
            raise IndexError("a log record runs past its restart interval")
    return k, (ident, tail)


def _mkstemp(prefix: str) -> tuple[int, str]:
    """mkstemp(``prefix`` + 6 random chars) with one open call in the common case."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for _ in range(100):
        r = _rand32() << 32 | _rand32()
        path = prefix + "".join(letters[(r >> (6 * i)) % 62] for i in range(6))
        try:
            return create_temp(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC), path
        except FileExistsError:
            continue
    raise TransactionRefused(prefix, "cannot create a temporary table file")
