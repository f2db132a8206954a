"""git's lock-file protocol (lockfile.c, tempfile.c), one syscall per step.

A lock on ``<path>`` is the file ``<path>.lock`` created ``O_RDWR|O_CREAT|O_EXCL``: whoever creates it
owns ``<path>``. Commit = ``rename(<path>.lock, <path>)``; rollback = ``unlink(<path>.lock)``.
Only ``EEXIST`` (someone else holds it) is retried, with git's quadratic backoff from 1 ms, each wait
jittered to 0.75-1.25x and the multiplier capped at 1000. A timeout of 0 means one try, -1 forever.

Refscope and git must be able to write the same repository at once, so the exact protocol, texts and
timing rules matter: a git process waiting on our lock backs off the same way we back off on its.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import errno
import os
import time

from .errors import LockBusy, TransactionRefused

LOCK_SUFFIX = ".lock"
_INITIAL_BACKOFF_MS = 1
_BACKOFF_MAX_MULTIPLIER = 1000
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


class Lock:
    """A held lock: ``path`` is what is locked, ``lock_path`` the ``.lock`` file; ``fd`` is -1 once closed."""

    __slots__ = ("path", "lock_path", "fd")

    def __init__(self, path: str, lock_path: str, fd: int) -> None:
        self.path = path
        self.lock_path = lock_path
        self.fd = fd

    def close(self) -> None:
        """Close the descriptor, keep the lock (git closes ref locks at once: fds are scarce)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def commit(self) -> None:
        """Make the lock's content the new ``path`` (rename is atomic)."""
        self.close()
        os.rename(self.lock_path, self.path)

    def rollback(self) -> None:
        """Give the lock up without changing ``path``."""
        self.close()
        try:
            os.unlink(self.lock_path)
        except FileNotFoundError:
            pass


def _pid_hint(path: str) -> str:
    """git's advice after EEXIST, reading the optional ``<path>~pid.lock`` (core.lockfilePid)."""
    pid = 0
    try:
        fd = os.open(path + "~pid" + LOCK_SUFFIX, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # FIFO: no wait
        try:
            data = os.read(fd, 64)
        finally:
            os.close(fd)
        if data.startswith(b"pid "):
            text = data[4:].rstrip(b"\n")
            if text.isdigit():
                pid = int(text)
    except OSError:
        pid = 0
    if pid > 0:
        try:
            os.kill(pid, 0)
            running = True
        except PermissionError:
            running = True
        except ProcessLookupError:
            running = False
        except OSError:
            running = True
        if running:
            return (
                f"Lock may be held by process {pid}; if no git process is running, "
                "the lock file may be stale (PIDs can be reused)"
            )
        return (
            f"Lock was held by process {pid}, which is no longer running; the lock file appears to be stale"
        )
    return "Another git process seems to be running in this repository, or the lock file may be stale"


def unable_to_lock_message(path: str, err: int) -> str:
    """git's first line for a lock that could not be created (``unable_to_lock_message``)."""
    text = f"Unable to create '{os.path.abspath(path)}{LOCK_SUFFIX}': {os.strerror(err)}"
    return text + "." if err == errno.EEXIST else text


def busy_error(path: str, prefix: str = "") -> LockBusy:
    """The typed error for a lock held by someone else; ``.hint`` carries git's advice line."""
    lock_path = os.path.abspath(path) + LOCK_SUFFIX
    error = LockBusy(lock_path, prefix + unable_to_lock_message(path, errno.EEXIST))
    error.hint = _pid_hint(os.path.abspath(path))  # type: ignore[attr-defined]
    return error


def try_create(lock_path: str) -> int:
    """One attempt: the fd, or -errno (no exception on the hot path)."""
    try:
        return os.open(lock_path, _CREATE_FLAGS, 0o666)
    except OSError as err:
        return -(err.errno or errno.EIO)


def create_with_timeout(lock_path: str, timeout_ms: int) -> int:
    """git's ``lock_file_timeout``: fd, or -errno after the timeout (EEXIST) or at once (other errors)."""
    fd = try_create(lock_path)
    if fd >= 0 or fd != -errno.EEXIST or timeout_ms == 0:
        return fd
    import random  # only on contention: keeps the uncontended path import-free

    rng = random.Random(os.getpid())
    remaining = timeout_ms
    n = 1
    multiplier = 1
    while True:
        if timeout_ms > 0 and remaining <= 0:
            return -errno.EEXIST
        backoff_ms = multiplier * _INITIAL_BACKOFF_MS
        wait_ms = (750 + rng.randrange(500)) * backoff_ms // 1000
        time.sleep(wait_ms / 1000.0)
        remaining -= wait_ms
        multiplier += 2 * n + 1
        if multiplier > _BACKOFF_MAX_MULTIPLIER:
            multiplier = _BACKOFF_MAX_MULTIPLIER
        else:
            n += 1
        fd = try_create(lock_path)
        if fd >= 0 or fd != -errno.EEXIST:
            return fd


def acquire(path: str, timeout_ms: int = 0, *, keep_open: bool = False, prefix: str = "") -> Lock:
    """Lock ``path`` (raises LockBusy on EEXIST after the timeout, TransactionRefused on other errors).

    ``keep_open=False`` closes the descriptor at once (the lock stays held): 1,000 ref locks must
    fit under ``ulimit -n 32``. ``prefix`` is put before git's text (e.g. "cannot lock ref 'X': ").
    """
    lock_path = path + LOCK_SUFFIX
    fd = create_with_timeout(lock_path, timeout_ms)
    if fd < 0:
        if fd == -errno.EEXIST:
            raise busy_error(path, prefix)
        raise TransactionRefused(os.path.abspath(lock_path), prefix + unable_to_lock_message(path, -fd))
    if not keep_open:
        os.close(fd)
        fd = -1
    return Lock(path, lock_path, fd)
