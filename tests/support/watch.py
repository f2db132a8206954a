"""Helpers shared by the watch tests: collect events, wait with deadlines, compare with git's listing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.support.git import for_each_ref


class Collector:
    """``on_event`` callback that records events and lets a test wait for a condition with a deadline."""

    def __init__(self) -> None:
        self.events: list = []
        self.cv = threading.Condition()
        self.last_time = time.monotonic()

    def __call__(self, ev) -> None:
        with self.cv:
            self.events.append(ev)
            self.last_time = time.monotonic()
            self.cv.notify_all()

    def wait(self, pred, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred(self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"condition not met within {timeout}s; events: {self.summary()}")
                self.cv.wait(left)
        return self.events

    def summary(self) -> list:
        return [summarize(e) for e in self.events]

    def take(self) -> list:
        with self.cv:
            out, self.events = self.events, []
        return out


def summarize(ev) -> tuple:
    """A comparable form of an event: (kind, change kinds, added, removed, changed)."""
    return (
        ev.kind,
        tuple(c.kind for c in ev.changes),
        ev.diff.added,
        ev.diff.removed,
        ev.diff.changed,
    )


def snapshot_rows(snap) -> list[tuple[bytes, bytes, bytes]]:
    """(name, oid-or-empty, target-or-empty) of every row: comparable with git's view."""
    return [(r.name, r.oid or b"", r.target or b"") for r in snap]


def git_rows(repo: Path) -> list[tuple[bytes, bytes, bytes]]:
    out = []
    for name, oid, _peeled, target in for_each_ref(repo):
        out.append((name, b"" if target else oid, target))
    return out


def settle(watcher, collector: Collector, repo: Path, timeout: float = 10.0, quiet: float = 0.15) -> list:
    """Wait until the watcher's snapshot shows what git shows, and the watcher has been idle (no raw file
    event seen or handled, nothing in progress) for ``quiet`` seconds; return (and clear) the events so far.

    Called after a git command returned, so all of its file events are already queued in the kernel: a
    quiet watcher has handled them."""
    want = git_rows(repo)
    start = time.monotonic()
    deadline = start + timeout
    while True:
        with collector.cv:
            now = time.monotonic()
            ok = snapshot_rows(watcher.snapshot) == want
            calm = not watcher.busy and now - max(watcher.activity, start) >= quiet
            if ok and calm:
                break
            if now > deadline:
                raise AssertionError(f"watcher did not settle; events: {collector.summary()}")
            collector.cv.wait(0.02)
    return collector.take()
