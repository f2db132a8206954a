"""The watcher at scale and under failure, against real git (issue 13, items 5 and 6).

- A transaction deleting most refs is diffed exactly (the event's sets equal the change between git's
  two listings) at a cost of one pass over the change: no per-name seek, each table block decoded at
  most about once per side.
- A refresh that finishes late never replaces a newer snapshot (read sequence numbers, ``offer``).
- Batches of lock files only refresh nothing; the process's own commit (``hold``/``release``) is one
  refresh afterwards, its intermediate states and locks never seen as foreign changes.
- A notify source that fails (a ref name that is not UTF-8 makes watchfiles raise) is restarted, then
  replaced by polling, and says so; a repository path that is not UTF-8 is watched by polling.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from refscope.backend import diff as D
from refscope.backend import watch as W
from refscope.backend.formats.reftable import table as table_mod
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.stores import files as files_mod
from refscope.backend.stores import reftable as reftable_mod
from refscope.backend.watch import Watcher

from tests.support.git import NO_AUTOCOMPACT, for_each_ref, git, git_env, init_repo
from tests.support.watch import Collector, settle

N = 3000  # refs: ~20 reftable blocks, ~120 KiB of packed-refs, quick to build and to walk
DEBOUNCE = 80


def _store(path: Path):
    return open_store(discover(str(path)))


def _listing(repo: Path) -> dict[bytes, tuple[bytes, bytes]]:
    return {n: (b"" if t else o, t) for n, o, _p, t in for_each_ref(repo)}


def _expected(before: dict, after: dict) -> tuple[tuple, tuple, tuple]:
    return (
        tuple(sorted(after.keys() - before.keys())),
        tuple(sorted(before.keys() - after.keys())),
        tuple(sorted(n for n in before.keys() & after.keys() if before[n] != after[n])),
    )


def _big_repo(tmp_path: Path, ref_format: str) -> Path:
    """N refs in the base: packed-refs (files) or one table (reftable)."""
    repo = init_repo(tmp_path / "big", fmt=ref_format)
    head = git(repo, "rev-parse", "HEAD").strip()
    lines = b"".join(b"create refs/heads/b/%05d %s\n" % (i, head) for i in range(N))
    git(repo, "update-ref", "--stdin", input=lines)
    git(repo, "pack-refs", "--all")
    return repo


def _big_delete(repo: Path) -> None:
    """One transaction from another process: 70% of the refs deleted (spread over the whole key space),
    a few changed, a few created."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "two", env=NO_AUTOCOMPACT)
    two = git(repo, "rev-parse", "HEAD").strip()
    lines = [b"delete refs/heads/b/%05d" % i for i in range(N) if i % 10 < 7]
    lines += [b"update refs/heads/b/%05d %s" % (i, two) for i in range(9, N, 500)]
    lines += [b"create refs/heads/new/%d %s" % (i, two) for i in range(3)]
    git(repo, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n", env=NO_AUTOCOMPACT)


class Counting:
    """Counts calls of a few functions (instrumentation of the real code; nothing is faked)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: dict[str, int] = {}
        for owner, attr in (
            (reftable_mod.ReftableSnapshot, "lookup"),
            (files_mod.FilesSnapshot, "lookup"),
            (table_mod, "decode_ref_block"),
        ):
            self._wrap(monkeypatch, owner, attr)

    def _wrap(self, monkeypatch, owner, attr: str) -> None:
        orig = getattr(owner, attr)

        def counted(*args, **kw):
            self.counts[attr] = self.counts.get(attr, 0) + 1
            return orig(*args, **kw)

        monkeypatch.setattr(owner, attr, counted)

    def reset(self) -> None:
        self.counts.clear()


def _ref_blocks(snap) -> int:
    return sum(1 for t in getattr(snap, "tables", []) for _ in t.iter_ref_raw_blocks())


def test_big_delete_is_diffed_exactly_in_one_pass(tmp_path, ref_format, monkeypatch):
    repo = _big_repo(tmp_path, ref_format)
    store = _store(repo)
    before_git = _listing(repo)
    old = store.snapshot()
    _big_delete(repo)
    after_git = _listing(repo)
    new = store.refresh(old)
    w = Watcher(store, lambda ev: None)
    w.snapshot = old
    w._remember(old, set())
    counting = Counting(monkeypatch)
    paths = {str(repo / ".git" / ("reftable/tables.list" if ref_format == "reftable" else "packed-refs"))}
    _changes, d, _state = w._classify(old, new, paths)
    assert d[:3] == _expected(before_git, after_git)
    assert len(d.removed) == 7 * N // 10 and len(d.added) == 3  # (changed: 6, and main's new commit)
    # the cost: no seek per changed name, and (reftable) every block decoded about once per side
    assert d.method in (D.SORTED, D.PACKED)
    # (files: the loose refs git wrote for the updates and creates are looked up, two per name; HEAD)
    loose = len(old.loose) + len(new.loose) if ref_format == "files" else 0
    assert counting.counts.get("lookup", 0) <= 2 * loose + 4
    if ref_format == "reftable":
        # one walk over the blocks (tombstones: presence only), one seek per written ref (below the
        # crossover), and HEAD's block on each side
        written = len(d.added) + len(d.changed)
        assert counting.counts.get("decode_ref_block", 0) <= _ref_blocks(new) + written + 4
    # the same through a running watcher: one event, the exact diff
    w = Watcher(store, c := Collector(), debounce_ms=DEBOUNCE, snapshot=new).start()
    try:
        git(repo, "update-ref", "refs/heads/live1", "HEAD")
        (ev,) = c.wait(lambda evs: any(b"refs/heads/live1" in e.diff.added for e in evs))
        assert ev.diff[:3] == ((b"refs/heads/live1",), (), ())
        assert ev.diff.method == D.CANDIDATES and ev.diff.examined == 1
    finally:
        w.stop()


def test_many_candidates_take_the_sorted_walk_few_the_lookups(tmp_path, monkeypatch):
    """The crossover (``diff.SORTED_WALK_MIN``): both ways give the same diff; below it one lookup per
    name per side, from it on no lookup at all."""
    repo = _big_repo(tmp_path, "reftable")
    store = _store(repo)
    old = store.snapshot()
    _big_delete(repo)
    new = store.refresh(old)
    names = sorted({*(r.name for r in old), *(r.name for r in new)})
    counting = Counting(monkeypatch)
    few = names[: D.SORTED_WALK_MIN - 1]
    d_few = D.diff_names(old, new, few)
    assert d_few.method == D.CANDIDATES and counting.counts["lookup"] == 2 * len(few)
    counting.reset()
    d_all = D.diff_names(old, new, names)
    assert d_all.method == D.SORTED and counting.counts.get("lookup", 0) == 0
    assert d_all[:3] == D.full_diff(old, new)[:3]
    assert set(d_few.names()) == {n for n in d_all.names() if n in set(few)}


def test_a_late_refresh_never_replaces_a_newer_snapshot(tmp_path, ref_format, monkeypatch):
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    store = _store(repo)
    c = Collector()
    w = Watcher(store, c, debounce_ms=20).start()
    gate, entered = threading.Event(), threading.Event()
    orig = store.refresh

    def slow_refresh(prev):
        new = orig(prev)  # reads the disk now ...
        if threading.current_thread().name == "refscope-watch" and not gate.is_set():
            entered.set()
            gate.wait(10)  # ... and finishes late
        return new

    settle(w, c, repo)
    initial = w.snapshot
    monkeypatch.setattr(store, "refresh", slow_refresh)
    try:
        git(repo, "update-ref", "refs/heads/first", "HEAD")
        assert entered.wait(10)
        git(repo, "update-ref", "refs/heads/second", "HEAD")
        newer = store.snapshot()  # what the consumer read itself ("r"), later than the watcher's read
        assert w.offer(newer)
        assert not w.offer(initial)  # the same rule the other way round
        gate.set()
        settle(w, c, repo)
        assert w.snapshot.read_seq >= newer.read_seq
        assert [r.name for r in w.snapshot] == [n for n, *_ in for_each_ref(repo)]
        # every event delivered after the offer carries a snapshot at least as new as it
        assert all(ev.snapshot.read_seq >= newer.read_seq for ev in c.events)
    finally:
        gate.set()
        w.stop()


def test_lock_only_batches_and_own_commit_refresh_once(tmp_path, ref_format, monkeypatch):
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    store = _store(repo)
    c = Collector()
    w = Watcher(store, c, debounce_ms=DEBOUNCE).start()
    refreshes = []
    orig = store.refresh

    def counted(prev):
        refreshes.append(threading.current_thread().name)
        return orig(prev)

    monkeypatch.setattr(store, "refresh", counted)
    try:
        settle(w, c, repo)
        refreshes.clear()
        # a per-ref lock file (files: what a transaction takes for each ref) changes no ref: no refresh
        lock = repo / ".git" / "refs" / ("heads/x.lock" if ref_format == "files" else "x.lock")
        lock.write_bytes(b"")
        lock.unlink()
        time.sleep(0.3)
        assert refreshes == [] and c.take() == []
        # our own commit: held, nothing is refreshed or delivered until release, then one event
        head = git(repo, "rev-parse", "HEAD").strip()
        w.hold()
        assert w.state == "held"
        lines = b"".join(b"create refs/heads/own/%03d %s\n" % (i, head) for i in range(50))
        git(repo, "update-ref", "--stdin", input=lines)
        time.sleep(0.3)
        assert refreshes == [] and c.take() == []
        w.release()
        evs = settle(w, c, repo)
        assert len(evs) == 1 and len(evs[0].diff.added) == 50
        assert not any(ch.kind in (W.LOCK_APPEARED, W.LOCK_GONE) for ch in evs[0].changes)
        assert refreshes.count("refscope-watch") == 1
    finally:
        w.stop()


def _break_notify(repo: Path, ref_format: str) -> None:
    """Make watchfiles raise "Unable to decode path": a path that is not UTF-8 in a watched directory
    (files: git's own loose ref ``refs/heads/caf\\xe9``; reftable: a stray file git ignores)."""
    if ref_format == "files":
        git(repo, "update-ref", b"refs/heads/caf\xe9".decode("utf-8", "surrogateescape"), "HEAD")
    else:
        d = os.fsencode(repo / ".git" / "reftable")
        with open(d + b"/stray-\xe9", "wb"):
            pass


def test_a_failing_notify_source_recovers_and_says_so(tmp_path, ref_format):
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    c = Collector()
    w = Watcher(_store(repo), c, debounce_ms=20).start()
    try:
        settle(w, c, repo)
        for _ in range(2):  # the first failure restarts the sources, a second one within a minute polls
            _break_notify(repo, ref_format)
            if ref_format == "files":
                git(repo, "update-ref", "-d", b"refs/heads/caf\xe9".decode("utf-8", "surrogateescape"))
            else:
                os.unlink(os.fsencode(repo / ".git" / "reftable") + b"/stray-\xe9")
            time.sleep(0.3)
        c.wait(lambda evs: any(ch.kind == W.WATCHER_RESTARTED for e in evs for ch in e.changes), timeout=10)
        c.wait(lambda evs: any(ch.kind == W.WATCHER_POLLING for e in evs for ch in e.changes), timeout=10)
        assert w.polling and "Unable to decode path" in w.polling
        assert w.running
        c.take()
        git(repo, "update-ref", "refs/heads/after", "HEAD")  # still heard, by polling now
        c.wait(lambda evs: any(b"refs/heads/after" in e.diff.added for e in evs), timeout=10)
        settle(w, c, repo)
    finally:
        w.stop()


@pytest.mark.parametrize("ref_format", ["files", "reftable"])
def test_cli_watch_on_a_path_that_is_not_utf8(tmp_path, ref_format):
    path = os.fsencode(tmp_path) + b"/repo\xff"
    init_repo(Path(os.fsdecode(path)), fmt=ref_format)
    env = git_env()
    cmd = [sys.executable, "-m", "refscope.app.cli", "watch", "-C", os.fsdecode(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        line = proc.stderr.readline()
        assert line.startswith(b"refscope watch: watching ") and b"repo\\xff" in line
        first = proc.stdout.readline()
        assert b"watcher-polling" in first and b"watcher polling: file events unavailable" in first
        git(os.fsdecode(path), "update-ref", "refs/heads/zz", "HEAD")
        seen = []  # (the poller may also catch git's lock file on its own: a lock-appeared line first)
        while not any(b"+refs/heads/zz" in ln for ln in seen):
            seen.append(proc.stdout.readline())
            assert seen[-1] and len(seen) < 5, seen
    finally:
        proc.send_signal(2)
        proc.wait(5)
    assert proc.returncode == 0
