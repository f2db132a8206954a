"""The raw file-event sources that feed the coordinator's queue: watchfiles' notify, or polling stats.

Both put ``(monotonic time, {(change, path), ...})`` on the queue, or ``(time, exception)`` when the
source died, and stop within ``STEP_MS`` of their stop event being set.
"""

from __future__ import annotations

import os
import queue
import threading
import time

from ..repo import worktree_gitdirs

STEP_MS = 10  # notify sources: quiet window before handing a raw batch over, and stop-event poll period
POLL_MS = 50  # the polling source's period (stretched to 5x its own scan time on huge trees)


class NotifySource:
    """One watchfiles RustNotify (its inotify watches exist once the constructor returns) and the thread
    that hands its raw batches to the coordinator's queue."""

    def __init__(self, paths: list[str], recursive: bool, sink: queue.SimpleQueue) -> None:
        from watchfiles._rust_notify import RustNotify

        self.stop_event = threading.Event()
        self._notify = RustNotify(paths, False, False, 50, recursive, True)
        self._sink = sink
        self.thread = threading.Thread(target=self._run, name="refscope-watch-source", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        notify, stop, sink = self._notify, self.stop_event, self._sink
        try:
            while not stop.is_set():
                raw = notify.watch(STEP_MS * 5, STEP_MS, 500, stop)
                if isinstance(raw, set):
                    sink.put((time.monotonic(), raw))
                elif raw == "stop":
                    break
        except Exception as err:  # the notify thread died (a watched dir removed, a name not UTF-8...)
            if not stop.is_set():
                sink.put((time.monotonic(), err))
        finally:
            notify.close()

    def stop(self) -> None:
        self.stop_event.set()


class PollSource:
    """The fallback when file events fail: every ``POLL_MS`` it stats the few things git changes when it
    writes refs (``packed-refs``, ``HEAD``, ``tables.list``, every directory under ``refs/`` -- git
    renames loose refs into place, which changes their directory's mtime -- and the ``*.lock`` names in
    the storage directories) and hands the paths that differ to the coordinator, as a notify source
    would. Works on any path (watchfiles needs UTF-8 paths)."""

    def __init__(self, commondir: str, sink: queue.SimpleQueue, interval_ms: int = POLL_MS) -> None:
        self.commondir = commondir
        self.stop_event = threading.Event()
        self._sink = sink
        self._interval = interval_ms / 1000
        self._seen = self._scan()
        self.thread = threading.Thread(target=self._run, name="refscope-watch-poll", daemon=True)
        self.thread.start()

    def _scan(self) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        gitdirs = [self.commondir, *worktree_gitdirs(self.commondir)]
        for gd in gitdirs:
            for rel in ("packed-refs", "HEAD", os.path.join("reftable", "tables.list")):
                _stat_into(os.path.join(gd, rel), out)
            for d in (gd, os.path.join(gd, "reftable")):
                try:
                    names = os.listdir(d)
                except OSError:
                    continue
                out.update((os.path.join(d, n), ()) for n in names if n.endswith(".lock"))
            stack = [os.path.join(gd, "refs")]
            while stack:
                d = stack.pop()
                if not _stat_into(d, out):
                    continue
                try:
                    with os.scandir(d) as it:
                        stack.extend(e.path for e in it if e.is_dir(follow_symlinks=False))
                except OSError:
                    continue
        return out

    def _run(self) -> None:
        stop = self.stop_event
        wait = self._interval
        while not stop.wait(wait):
            t = time.monotonic()
            now = self._scan()
            wait = max(self._interval, 5 * (time.monotonic() - t))
            if now != self._seen:
                paths = {p for p in now.keys() | self._seen.keys() if now.get(p) != self._seen.get(p)}
                self._seen = now
                self._sink.put((time.monotonic(), {(2, p) for p in paths}))

    def stop(self) -> None:
        self.stop_event.set()


def _stat_into(path: str, out: dict[str, tuple]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    out[path] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return True
