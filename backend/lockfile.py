"""git's lock-file protocol (lockfile.c, tempfile.c), one syscall per step.

A lock on ``<path>`` is the file ``<path>.lock`` created ``O_RDWR|O_CREAT|O_EXCL``: whoever creates it
owns ``<path>``. Commit = ``rename(<path>.lock, <path>)``; rollback = ``unlink(<path>.lock)``.
Only ``EEXIST`` (someone else holds it) is retried, with git's quadratic backoff from 1 ms, each wait
jittered to 0.75-1.25x and the multiplier capped at 1000. A timeout of 0 means one try, -1 forever.

Refscope and git must be able to write the same repository at once, so the exact protocol, texts and
timing rules matter: a git process waiting on our lock backs off the same way we back off on its.

Every lock and temporary file goes through one registry (git's ``tempfile_list``): ``create_temp`` (and
``try_create`` through it) registers what it creates, ``remove``/``discard`` and ``rename`` unregister it,
so that a signal can release everything before the process dies -- see "Signals" below.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import _signal  # the C module: ``signal`` itself builds enums at import, which the CLI path cannot afford
import _thread
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
        rename(self.lock_path, self.path)

    def rollback(self) -> None:
        """Give the lock up without changing ``path``."""
        self.close()
        remove(self.lock_path)


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
    """One attempt: the fd, or -errno (the callers branch on the errno, as git's lock_file does). A
    created lock is registered (``create_temp``)."""
    try:
        return create_temp(lock_path, _CREATE_FLAGS)
    except OSError as err:
        return -(err.errno or errno.EIO)


def create_with_timeout(lock_path: str, timeout_ms: int) -> int:
    """git's ``lock_file_timeout``: fd, or -errno after the timeout (EEXIST) or at once (other errors)."""
    try:  # ``try_create``, inline: every ref lock of a batch comes through here
        return create_temp(lock_path, _CREATE_FLAGS)
    except OSError as err:
        fd = -(err.errno or errno.EIO)
    if fd != -errno.EEXIST or timeout_ms == 0:
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


# -- Signals ---------------------------------------------------------------------------------------------
#
# git removes its lock and temp files when a signal kills it (tempfile.c: one list of live files; handlers
# for SIGINT, SIGHUP, SIGTERM, SIGQUIT, SIGPIPE unlink each, then re-raise the signal with the previous
# disposition). Here the same, for every asynchronous signal whose default action ends the process:
#
# - ``_live`` holds every lock/temp file this process created and still owns; ``_children`` the children
#   holding locks of their own (``git update-ref``), which get the signal too and are waited for, so that
#   git's own handlers clean up its locks before we go.
# - A signal while anything is registered: every registered file is unlinked and the process dies by that
#   signal (its default action, as git's re-raise). While nothing is registered, the previous handler runs
#   (SIGINT stays KeyboardInterrupt, SIGPIPE stays ignored, the TUI's event loop keeps its own).
# - The commit point. git never undoes a published file: a lock is dropped from the list by the rename that
#   publishes it, so a later signal cannot remove it (rename_tempfile). Python runs handlers between
#   bytecodes, so the rename and the registry update are made one step by a *hold*: a signal arriving inside
#   one is deferred and re-sent when the last hold ends. Every create/rename/remove of a registered file is
#   a hold, and so is everything after a transaction's point of no return (``committing``): the files
#   backend's finish (its reflog removals, the packed-refs rename and the loose unlinks: git can be left
#   with some loose refs deleted and others not; refscope completes the transaction, then dies), the
#   reftable backend's rename of tables.list. So a signal either finds the transaction before that point
#   (everything released, nothing changed) or completes it (all deleted, then the process dies). Auto-
#   compaction after a commit is interrupted like any other writer: its locks and temp table go.
# - Handlers run in the main thread only; the TUI commits in a worker. Holds are a list (append/pop are
#   atomic under the GIL) that the handler checks; a worker entering a hold while a handler decides waits
#   for the decision (``_stopping``), so no file is created behind the handler's back.
# - SIGKILL cannot be caught: it leaves what git leaves, and ``refscope verify`` reports the leftovers.

_live: dict[str, None] = {}  # every lock and temp file created and not yet removed or renamed (in order)
_children: dict[int, None] = {}  # child processes that hold locks of their own
_held: list[None] = []  # one entry per hold in progress, in any thread
_pending: list[int] = []  # signals deferred by a hold
_previous: dict[int, object] = {}  # signal -> the handler ours replaced
_stopping = False  # a handler is deciding: holds that start meanwhile wait
_doomed = False  # a deferred signal came back: die whatever is registered
_main_ident = -1  # the thread handlers run in (signals are re-sent to it); -1: not installed
_tried = False  # protect() was tried on a first lock
# git's five, which its handlers clean up on (other signals reach a git child as SIGTERM)
_GIT_SIGNALS = frozenset(
    getattr(_signal, n) for n in ("SIGINT", "SIGHUP", "SIGTERM", "SIGQUIT", "SIGPIPE") if hasattr(_signal, n)
)
# never handled: uncatchable, not fatal by default, synchronous faults (a Python handler runs too late for
# them), SIGXFSZ (ignored by Python: a write past the limit fails with EFBIG and is cleaned up as an error)
_UNHANDLED = frozenset(
    getattr(_signal, n)
    for n in (
        "SIGKILL", "SIGSTOP", "SIGCHLD", "SIGCONT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGWINCH",
        "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGABRT", "SIGSYS", "SIGXFSZ", "SIGEMT",
        "SIGINFO",
    )
    if hasattr(_signal, n)
)  # fmt: skip
_SIGPIPE = getattr(_signal, "SIGPIPE", -1)


def protect() -> bool:
    """Install the handlers (once per process, from the main thread; True when they are in place).

    Called outside measured windows (``Transaction.commit`` before its meter starts, the TUI when it
    mounts): each handler is one ``rt_sigaction``. A process that never called it gets them on its first
    lock, when that is taken in the main thread."""
    global _main_ident
    if _main_ident != -1:
        return True
    try:
        for sig in sorted(_signal.valid_signals()):
            if sig in _UNHANDLED:
                continue
            prev = _signal.getsignal(sig)
            if prev is None or prev is _on_signal or (prev == _signal.SIG_IGN and sig != _SIGPIPE):
                continue  # a handler not installed from Python, ours already; or ignored: cannot kill us
            _previous[sig] = _signal.signal(sig, _on_signal)
    except (ValueError, OSError):  # not the main thread (the first call raises: nothing was installed)
        return False
    _main_ident = _thread.get_ident()
    return True


def _protect_once() -> None:
    """``protect`` for a process that took a lock without calling it: tried once (a worker thread cannot)."""
    global _tried
    if not _tried:
        _tried = True
        protect()


def hold() -> None:
    """Begin a hold: signals are deferred until the last hold ends (``release``). Pure Python, no syscall."""
    _held.append(None)
    if _stopping:
        _wait()


def release() -> None:
    """End a hold; a signal deferred meanwhile is re-sent now (and ends the process)."""
    _leave()


class committing:
    """``with committing():`` the steps after a transaction's point of no return: a signal arriving inside
    is deferred until the block ends, so the transaction completes before the process dies."""

    __slots__ = ()

    def __enter__(self) -> None:
        hold()

    def __exit__(self, *exc) -> None:
        _leave()


def two_phase(prepare, finish, cleanup) -> None:
    """A transaction's two halves: ``prepare()`` takes the locks and changes nothing anyone sees (on
    failure: ``cleanup()``); ``finish()`` runs past the point of no return inside ``committing()``, so a
    signal waits until the transaction is complete and its locks are released, then ends the process (on
    failure: ``cleanup(True)``, never leaving our locks behind, even when a step of the finish fails)."""
    try:
        prepare()
    except BaseException:
        cleanup()
        raise
    with committing():
        try:
            finish()
        except BaseException:
            cleanup(True)
            raise


def create_temp(path: str, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags)`` (flags with ``O_CREAT|O_EXCL``) for a lock or temp file, registered as one
    step for the handlers (raises OSError as os.open). The first one installs the handlers."""
    _held.append(None)
    try:
        if _stopping:
            _wait()
        fd = os.open(path, flags, mode)
        _live[path] = None
    finally:
        _leave()
    if _main_ident == -1:
        _protect_once()
    return fd


def remove(path: str) -> bool:
    """Unlink a registered file and forget it; False when it was already gone."""
    hold()
    try:
        _live.pop(path, None)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True
    finally:
        _leave()


def discard(path: str) -> None:
    """``remove`` on the way out of a failed write: a file that cannot be unlinked either is left (the
    error being raised is the one that matters), and it is forgotten all the same."""
    try:
        remove(path)
    except OSError:
        pass


def rename(src: str, dst: str, *, keep: bool = False, publish: tuple[str, ...] = ()) -> None:
    """``rename(src, dst)`` and forget ``src``, as one step for the handlers. ``keep``: ``dst`` stays ours
    (a new table, not yet listed); ``publish``: files the rename makes part of the repository (the table a
    new tables.list lists), forgotten with it. On failure ``src`` stays registered."""
    hold()
    try:
        os.rename(src, dst)
        _live.pop(src, None)
        if keep:
            _live[dst] = None
        for p in publish:
            _live.pop(p, None)
    finally:
        _leave()


def add_child(pid: int) -> None:
    _children[pid] = None


def drop_child(pid: int) -> None:
    _children.pop(pid, None)


def live_paths() -> list[str]:
    """What a signal would remove now (for tests and diagnostics)."""
    return list(_live)


def _wait() -> None:
    """A hold started while a handler decides: wait for the verdict (the process may be about to die)."""
    while _stopping:
        time.sleep(0.001)


def _leave() -> None:
    _held.pop()
    if _pending and not _held:
        _resend()


def _resend() -> None:
    global _doomed
    sig = _pending[0]
    _pending.clear()
    _doomed = True  # it arrived while files were held: it ends the process
    if _main_ident == -1 or _thread.get_ident() == _main_ident:
        os.kill(os.getpid(), sig)
    else:
        _signal.pthread_kill(_main_ident, sig)


def _on_signal(sig: int, frame) -> object:
    global _stopping
    if _held or _stopping:
        _pending.append(sig)  # a hold in progress (or a handler already deciding): later
        return None
    _stopping = True
    if _held:  # a worker began a hold before seeing the flag: it goes first
        _stopping = False
        _pending.append(sig)
        return None
    if not (_doomed or _live or (_children and sig != _SIGPIPE)):
        # nothing held (a SIGPIPE with only a child can be our own write to the child's closed stdin)
        _stopping = False
        prev = _previous.get(sig, _signal.SIG_DFL)
        if callable(prev):
            return prev(sig, frame)
        if prev == _signal.SIG_IGN:
            return None
        _die(sig)
    _release_all(sig)
    _die(sig)
    return None


def _release_all(sig: int) -> None:
    """Unlink every registered file; pass the signal to every child and wait for it to exit."""
    for path in list(_live):
        try:
            os.unlink(path)
        except OSError:
            pass
    _live.clear()
    for pid in list(_children):
        try:
            os.kill(pid, sig if sig in _GIT_SIGNALS else _signal.SIGTERM)
        except OSError:
            continue
        for _ in range(2000):  # git's handler unlinks its locks and re-raises: give it up to ~10 s
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.005)
        else:
            try:
                os.kill(pid, _signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
    _children.clear()


def _die(sig: int) -> None:
    """Die by ``sig`` as git's re-raise does: its default action (exit status: killed by that signal)."""
    _signal.signal(sig, _signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # not reached: every handled signal's default action ends the process


def _forget_all() -> None:
    """In a forked child: the parent's files are the parent's (git's tempfile ``owner``)."""
    global _stopping, _doomed
    _live.clear()  # handlers, when installed, stay: the child's own files register afresh
    _children.clear()
    _held.clear()
    _pending.clear()
    _stopping = _doomed = False


os.register_at_fork(after_in_child=_forget_all)
