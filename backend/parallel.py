"""The one fork-and-collect helper: a function run in a forked child, its result coming back through a pipe.

Why: a short CLI process that must scan a big file (the packed-refs check before a splice, a reftable
stack's log blocks before a 10k-name delete) does byte work that never releases the GIL; a second core
only helps from a second process, and forking the already-open snapshot costs about a millisecond where a
new interpreter would cost ten. The child computes ``fn(*args)``, sends it marshalled (so only plain
values: None, numbers, bytes, str, tuples, lists, dicts, sets) and leaves with ``os._exit``: no exit
handlers, no flushing of the parent's buffers. If it fails for any reason, ``result`` says so and the
caller does the work itself, so every error surfaces as in one process.

Only a single-threaded process forks (``may_fork``): a thread holding a lock at fork time (the TUI's
workers, the import lock) would leave the child deadlocked on it.
"""

from __future__ import annotations

import os
import sys

FAILED = object()  # what ``result`` returns when the child did not deliver


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def single_threaded() -> bool:
    """No thread but this one runs (``threading`` never imported, or only the main thread alive)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def may_fork() -> bool:
    """Can work go to a second process here: fork exists, a second CPU is there, no other thread runs."""
    return hasattr(os, "fork") and cores() > 1 and single_threaded()


def pipes_and_fork(n: int) -> tuple[int, list[tuple[int, int]]] | None:
    """``n`` pipes, then a fork: (pid, [(read fd, write fd)...]) as ``os.fork`` returns in each process, or
    None in the parent, with nothing left open, when the process lacks descriptors or the system
    processes or memory (EMFILE, ENFILE, EAGAIN, ENOMEM...): the work then runs in this process,
    which needs neither (a short ``ulimit -n`` must not fail where git works)."""
    pipes: list[tuple[int, int]] = []
    try:
        for _ in range(n):
            pipes.append(os.pipe())
        return os.fork(), pipes
    except OSError:
        for r, w in pipes:
            os.close(r)
            os.close(w)
        return None


class Forked:
    """``Forked(fn, *args)`` starts the child; ``result()`` waits for its value (``FAILED`` when it did not
    deliver); ``abandon()`` kills it when the value is no longer wanted. Exactly one of the two is called.

    ``gated=True`` is for a child whose work has a part that must wait its turn (a split listing's second
    half, written to the shared fd 1 after the parent's first half): ``fn(*args)`` returns a callable, the
    child tells ``ready()`` it has got that far, and calls it only after ``go()``; its return value is what
    ``result()`` gets. A child that fails before it is ready makes ``ready()`` False (it is reaped then; the
    caller does its work itself)."""

    __slots__ = ("pid", "_r", "_go")

    def __init__(self, fn, *args, gated: bool = False) -> None:
        self._go = -1
        got = pipes_and_fork(2 if gated else 1)
        if got is None:  # no descriptor or process to spare: ``result`` says FAILED, the caller does the work
            self.pid = -1
            self._r = -1
            return
        pid, pipes = got
        r, w = pipes[0]
        if pid == 0:  # the child: never returns, never touches sys.stdout or runs exit handlers
            code = 1
            try:
                os.close(r)
                value = fn(*args)
                if gated:
                    r_go, w_go = pipes[1]
                    os.close(w_go)
                    os.write(w, b"K")
                    if os.read(r_go, 1) != b"G":  # the parent went on without us
                        os._exit(0)
                    value = value()
                import marshal

                data = memoryview(marshal.dumps(value))
                while data:
                    data = data[os.write(w, data) :]
                code = 0
            except BaseException:
                pass
            finally:
                os._exit(code)
        os.close(w)
        if gated:
            r_go, w_go = pipes[1]
            os.close(r_go)
            self._go = w_go
        self.pid = pid
        self._r = r

    def ready(self) -> bool:
        """(gated) Has the child done its first part? False: it failed (and is reaped), or never started."""
        if self.pid < 0:
            return False
        if os.read(self._r, 1) == b"K":
            return True
        self._close()
        os.waitpid(self.pid, 0)
        self.pid = -1
        return False

    def go(self) -> None:
        """(gated, after ``ready()``) Let the child do its second part; ``result()`` then collects it."""
        os.write(self._go, b"G")

    def result(self):
        """The child's ``fn(*args)`` (gated: its second part's value), or ``FAILED``."""
        if self.pid < 0:
            return FAILED
        chunks = []
        while chunk := os.read(self._r, 1 << 20):
            chunks.append(chunk)
        self._close()
        _pid, status = os.waitpid(self.pid, 0)
        self.pid = -1
        if status != 0:
            return FAILED
        import marshal

        try:
            return marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            return FAILED

    def abandon(self) -> None:
        """Kill and reap the child (not reaped yet, so the pid is still ours)."""
        if self.pid > 0:
            import signal

            self._close()  # a gated child still waiting sees EOF and exits without writing
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = -1

    def _close(self) -> None:
        for fd in (self._r, self._go):
            if fd >= 0:
                os.close(fd)
        self._r = self._go = -1


def both(here, there) -> tuple:
    """``(here(), there())``, ``there`` run in a forked child meanwhile: a child that fails has its work
    done here after all, so every error surfaces as in one process; an error here kills the child."""
    child = Forked(there)
    try:
        mine = here()
    except BaseException:
        child.abandon()
        raise
    theirs = child.result()
    return mine, there() if theirs is FAILED else theirs
