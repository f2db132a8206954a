"""Closing counters without paying for it: the keeper.

Releasing the last perf user of a tracepoint waits for RCU grace periods while holding the kernel's
event_mutex: ~35 ms per tracepoint, ~2 s for a full set of 57. Registering a tracepoint nobody uses costs
~0.3 ms, and waits for that mutex. So two things are expensive: closing counters nobody else holds (a CLI
process would exit two seconds late), and opening counters while another process is closing its last ones
(a `refscope delete` right after another one started 1.8 s late, every open queued behind a grace period).
With every tracepoint held by another process, a set opens in ~1.5 ms and closes in ~0.15 ms.

Hence a keeper: counters are never closed by the thread that used them; their descriptors are retired, and
at exit (or whenever many have been retired) handed over. If a keeper is alive (it holds an flock on
:func:`keeper_path`), every tracepoint has another user and they are closed on the spot, cheaply. Otherwise
a detached grandchild takes them and becomes the keeper: it holds them, and with them every tracepoint,
until nobody has used the meter for ``REFSCOPE_METER_LINGER`` seconds (default 60; users touch the lock
file), then drops the lock and closes them, the grace periods passing in a process nobody waits for. It
holds no other descriptor (no pipe or terminal stays open on its account) and no counter of it counts
anything: they belong to threads that have exited. (Why a keeper rather than one sampled counter: see the
package docstring.)
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os
import time

retired: list[int] = []  # descriptors of closed counter sets, waiting to be handed off
RETIRED_MAX = 1024
LINGER_S = 60.0
# id -> weak reference to every open counter set (perf.Counters: ``fds``, ``close()``), of every thread
live: dict = {}
_exit_hook = False


def ensure_exit_hook() -> None:
    """At exit every open set is closed and the retired descriptors handed off (registered once)."""
    global _exit_hook
    if not _exit_hook:
        import atexit

        atexit.register(close_all)
        _exit_hook = True


def close_all() -> None:
    """Close every open counter set (of every thread) and hand the retired descriptors off: at exit."""
    for ref in list(live.values()):
        ctr = ref()
        if ctr is not None:
            ctr.close()
    hand_off_retired()


def retire(fds: list[int]) -> None:
    """Put ``fds`` (a closed set's descriptors) aside; hand them off once there are many."""
    if fds:
        retired.extend(fds)
        if len(retired) > RETIRED_MAX:
            hand_off_retired()


def keeper_path() -> str:
    """The keeper's lock file: ``$XDG_RUNTIME_DIR`` (or /tmp) ``/refscope-meter-<uid>.keeper``."""
    return f"{os.environ.get('XDG_RUNTIME_DIR') or '/tmp'}/refscope-meter-{os.getuid()}.keeper"


def _linger_s() -> float:
    try:
        return max(0.0, float(os.environ.get("REFSCOPE_METER_LINGER", LINGER_S)))
    except ValueError:
        return LINGER_S


def _keeper_lock() -> int | None:
    """The keeper's lock file, locked by us (no keeper is alive: we may become it), or None when a keeper
    is alive (its idle clock is reset) or the file cannot be used."""
    import fcntl

    try:
        fd = os.open(keeper_path(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            os.utime(fd)
        except OSError:
            pass
        os.close(fd)
        return None
    return fd


def hand_off_retired() -> None:
    """Close every retired descriptor without waiting for the kernel's grace periods (see above)."""
    fds = retired[:]
    del retired[:]
    if not fds:
        return
    linger = _linger_s()
    lock = _keeper_lock() if linger else None
    if linger and lock is None:  # a keeper holds every tracepoint: closing ours is cheap
        for fd in fds:
            close_quietly(fd)
        return
    import fcntl  # noqa: F401  (loaded before forking: the keeper imports nothing itself)

    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        for fd in fds:
            close_quietly(fd)
        return
    if pid == 0:  # child: fork the keeper and leave at once, so the parent reaps us without waiting
        try:
            if os.fork() == 0:
                _keep(fds, r, lock, linger)
        finally:
            os._exit(0)
    os.close(r)
    for fd in fds:
        close_quietly(fd)
    if lock is not None:
        os.close(lock)
    os.close(w)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def _keep(fds: list[int], r: int, lock: int | None, linger: float) -> None:
    """The detached grandchild: hold ``fds`` (while the lock says a keeper is alive) until nobody has used the
    meter for ``linger`` seconds, then release the lock first (a newcomer then keeps its own) and close them."""
    keep = sorted({*fds, r} | ({lock} if lock is not None else set()))
    low = 0
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    try:
        os.setsid()  # not in the caller's process group: a ^C there is not meant for us
    except OSError:
        pass
    os.read(r, 1)  # EOF: the parent has closed its copies; ours are the last references
    os.close(r)
    if lock is not None:
        import fcntl

        try:
            os.utime(lock)
            while True:
                idle = time.time() - os.fstat(lock).st_mtime
                if idle >= linger:
                    break
                time.sleep(linger - idle + 0.05)
            fcntl.flock(lock, fcntl.LOCK_UN)
        except OSError:
            pass
    for fd in fds:
        close_quietly(fd)


def close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def forget_after_fork() -> None:
    """The counters are the parent's (it still holds them): our copies close cheaply with this process."""
    for ref in live.values():
        ctr = ref()
        if ctr is not None:
            ctr.fds = []
    live.clear()
    del retired[:]
