"""The reftable stack as the writers see it (``StackWriter``): locked ``tables.list``, open tables, merged
lookups (``formats.reftable.merged``), new tables.

Shared by the commit engine and compaction. Everything here works on tables already mapped by a snapshot
when they are still listed (a check under the lock reads ``tables.list`` once and reuses every open table).
"""

from __future__ import annotations

import errno
import os

from ..errors import CorruptStore, TransactionRefused
from ..fileio import refused_write
from ..formats.reftable.merged import MergedTables
from ..formats.reftable.stack import read_tables_list_stat
from ..formats.reftable.table import Table
from ..formats.reftable.writer import write_table
from ..lockfile import (
    LOCK_SUFFIX,
    busy_error,
    create_temp,
    create_with_timeout,
    discard,
    remove,
    rename,
    unable_to_lock_message,
)
from .crashpoint import step

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


class StackWriter(MergedTables):
    """One reftable stack directory as a writer holds it: ``tables.list`` locked (``lock``), the tables it
    lists (oldest first; read through ``MergedTables``), new tables added and the list replaced.

    Its ``load`` differs from the reading ``Stack``'s on purpose: under the lock the list cannot change,
    so a missing table is refused at once instead of retried."""

    __slots__ = ("dir", "list_path", "names", "lock_fd", "lock_path", "hash_name")

    def __init__(self, directory: str, hash_name: str) -> None:
        super().__init__([])
        self.dir = directory
        self.list_path = os.path.join(directory, "tables.list")
        self.names: list[str] = []
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
        names = self.read_names()
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

    def read_names(self) -> list[str]:
        """The names tables.list holds now ([] when it is missing): one read."""
        return read_tables_list_stat(self.dir)[0]

    def adopt(self, names: list[str], tables: list[Table]) -> None:
        self.names = list(names)
        self.tables = list(tables)

    def next_update_index(self) -> int:
        """The newest table's max_update_index + 1, in git's uint64_t arithmetic: after 2^64-1 comes 0
        (git's reftable_stack_next_update_index wraps, and its delete succeeds; so does ours)."""
        return (self.tables[-1].max_update_index + 1) & _U64_MAX if self.tables else 1

    # -- merged reads: MergedTables' (lookup, lookup_many, resolve, log_records, has_log, log_indexes) --

    # -- adding a table -------------------------------------------------------------------------------
    def write_table(self, data: bytes, min_index: int, max_index: int, do_fsync: bool) -> str:
        """git's reftable_addition_add: ``<name>.temp.XXXXXX``, fsync if asked, rename to the final name.
        An OSError on the way (disk full, quota, I/O error) removes the temp file and refuses, naming the
        stack's directory."""
        temp_base = os.path.join(self.dir, table_name(min_index, min_index))
        step("create table temp")
        try:
            fd, temp = make_temp(temp_base + ".temp.")
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
            _discard(temp, err, self.dir)
            raise
        final = table_name(min_index, max_index) + ".ref"
        try:
            os.close(fd)
            step("rename table")
            # still ours until tables.list names it (``commit_list(publish=...)``): a signal removes it
            rename(temp, os.path.join(self.dir, final), keep=True)
        except BaseException as err:
            _discard(temp, err, self.dir)
            raise
        return final


def _discard(temp: str, err: BaseException, directory: str) -> None:
    """Remove the temp table a failed write left; an OSError refuses naming ``directory`` (the temp file's
    random name is gone), anything else propagates (the caller re-raises it)."""
    discard(temp)
    if isinstance(err, OSError):
        raise refused_write(directory, err) from None


def table_bytes(repo, refs, logs, min_ui: int, max_ui: int, *, exact_log_message: bool = False) -> bytes:
    """One table holding ``refs`` and ``logs`` for update indexes ``min_ui``..``max_ui``, laid out with the
    repository's ``reftable.*`` settings (block size, restart interval, object index)."""
    return write_table(
        refs,
        logs,
        hash_name=repo.hash_name,
        min_update_index=min_ui,
        max_update_index=max_ui,
        block_size=repo.config.reftable_block_size(),
        restart_interval=repo.config.reftable_restart_interval(),
        index_objects=repo.config.reftable_index_objects(),
        exact_log_message=exact_log_message,
    )


def make_temp(prefix: str) -> tuple[int, str]:
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
