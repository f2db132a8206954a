"""How fast the watcher notices git, and what a refresh costs on a big repository.

    .venv/bin/python tests/bench/bench_watch.py [--changes 100] [--sizes 10000,100000,1000000] [--cache DIR]

1. Latency: git makes ``--changes`` single-ref transactions (``git update-ref``), one at a time; for each, the
   time from git's final rename to the event's delivery in the ``on_event`` callback. "final rename" is read
   from the kernel: the change time (ctime) of the file git renamed into place last (``tables.list``, or the
   loose ref file; a rename sets the renamed inode's ctime), so the figure includes inotify, the two debounce
   stages, the refresh and the diff. Kernel file times tick at the scheduler clock (4 ms here), so each
   figure is +-4 ms. The time from git's *exit* is printed too (a lower bound that needs no file times).
   Target: < 200 ms, median and max, in both formats.
2. Refresh cost after one append: on a reftable stack of N refs (one table, built once and cached), git
   appends one table with one ref; the event's OpReport (refresh + diff) is printed for each N. The target
   is "proportional to the new table": the figures must not grow with N. For contrast, the cost of a full
   merge-walk diff of the same two snapshots.
3. The same for files: one loose ref created next to N packed refs, and one packed ref deleted (a
   packed-refs rewrite: compared byte-wise, so it costs memcmp over the file, not parsing it).

Not collected by pytest (tests/bench is excluded).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from refscope.backend import diff as D  # noqa: E402
from refscope.backend.meter import measure  # noqa: E402
from refscope.backend.repo import discover  # noqa: E402
from refscope.backend.store import open_store  # noqa: E402
from refscope.backend.watch import Watcher  # noqa: E402

from tests.support.git import git, git_binary, git_env, init_repo, one_table_reftable  # noqa: E402

NO_AUTOCOMPACT = {"GIT_TEST_REFTABLE_AUTOCOMPACTION": "false"}


def run_git(cwd: Path, *args: str, input: bytes | None = None, env: dict | None = None) -> None:
    e = git_env()
    e.update(env or {})
    subprocess.run([git_binary(), *args], cwd=cwd, input=input, check=True, capture_output=True, env=e)


class Waiter:
    """on_event that records (delivery wall time, event) and wakes a waiter."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.got: list = []

    def __call__(self, ev) -> None:
        t = time.time()
        with self.cv:
            self.got.append((t, ev))
            self.cv.notify_all()

    def wait_for(self, pred, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for item in self.got:
                    if pred(item[1]):
                        self.got.remove(item)
                        return item
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit("timed out waiting for an event")
                self.cv.wait(left)

    def clear(self) -> None:
        with self.cv:
            self.got.clear()


def _added(name: str):
    nm = name.encode()
    return lambda e: nm in e.diff.added


def _removed(name: str):
    nm = name.encode()
    return lambda e: nm in e.diff.removed


def latency(tmp: Path, fmt: str, n: int) -> tuple[list[float], list[float]]:
    repo = init_repo(tmp / f"lat-{fmt}", fmt=fmt)
    oid = git(repo, "rev-parse", "HEAD").strip().decode()
    w8 = Waiter()
    w = Watcher(open_store(discover(str(repo))), w8).start()
    from_rename: list[float] = []
    from_exit: list[float] = []
    try:
        for i in range(n):
            name = f"refs/heads/lat/{i:04d}"
            run_git(repo, "update-ref", name, oid)
            t_exit = time.time()
            t_ev, ev = w8.wait_for(_added(name))
            renamed = repo / ".git" / ("reftable/tables.list" if fmt == "reftable" else name)
            ctime = os.stat(renamed).st_ctime_ns / 1e9
            from_rename.append((t_ev - ctime) * 1000)
            from_exit.append((t_ev - t_exit) * 1000)
            w8.clear()
    finally:
        w.stop()
    return from_rename, from_exit


def build_packed(path: Path, n: int) -> Path:
    if (path / ".built").exists():
        return path
    init_repo(path, fmt="files")
    head = git(path, "rev-parse", "HEAD").strip()
    names = sorted([b"refs/heads/main"] + [b"refs/heads/b/%07d" % i for i in range(n - 1)])
    data = b"# pack-refs with: peeled fully-peeled sorted \n" + b"".join(
        head + b" " + nm + b"\n" for nm in names
    )
    (path / ".git" / "packed-refs").write_bytes(data)
    (path / ".git" / "refs" / "heads" / "main").unlink()
    (path / ".built").write_text("ok\n")
    return path


def changes(repo: Path, steps: list, full_walk: bool = True) -> tuple[list, object]:
    """Start a watcher, then for each (action, expect): apply it and wait for the event ``expect`` recognizes.
    Returns the events and the cost of a full merge-walk diff over the first step's two snapshots."""
    w8 = Waiter()
    w = Watcher(open_store(discover(str(repo))), w8).start()
    events = []
    try:
        prev = w.snapshot
        for action, expect in steps:
            action()
            events.append(w8.wait_for(expect, timeout=60)[1])
    finally:
        w.stop()
    report = None
    if full_walk:
        with measure("full diff") as m:
            full = D.full_diff(prev, events[0].snapshot)
        assert full[:3] == events[0].diff[:3], (full, events[0].diff)
        report = m.report
    return events, report


def fmt_report(r) -> str:
    return (
        f"{r.wall_ms:9.2f} ms {r.cpu_ms:9.2f} ms CPU {r.syscalls_total:7d} syscalls "
        f"{r.bytes_read / 1024:10.1f} KiB read ({r.source})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--cache", default=str(Path.home() / ".cache/refscope/bench"))
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument(
        "--walk-max", type=int, default=100_000, help="full-walk contrast only up to this many refs"
    )
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    print(f"git: {git_binary()}")
    if not args.skip_latency:
        print(
            f"\n## Latency: git's final rename -> event delivered ({args.changes} single-ref transactions)\n"
        )
        print("| format | median | max | median from git's exit | max from git's exit |")
        print("|---|---|---|---|---|")
        for fmt in ("files", "reftable"):
            rn, ex = latency(tmp, fmt, args.changes)
            print(
                f"| {fmt} | {statistics.median(rn):.1f} ms | {max(rn):.1f} ms | "
                f"{statistics.median(ex):.1f} ms | {max(ex):.1f} ms |"
            )
    sizes = [int(s) for s in args.sizes.split(",")]
    print("\n## Refresh + diff after one change (the event's OpReport) vs a full merge-walk diff\n")
    print("| store | refs | change | event: refresh+diff | examined | full walk |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        repo = one_table_reftable(cache / f"watch-reftable-{n}", n, "refs/heads/b/")
        oid = git(repo, "rev-parse", "HEAD").strip().decode()
        names = [f"refs/heads/new/{time.time_ns()}-{k}" for k in range(3)]
        steps = [
            (
                lambda repo=repo, name=name, oid=oid: run_git(
                    repo, "update-ref", name, oid, env=NO_AUTOCOMPACT
                ),
                _added(name),
            )
            for name in names
        ]
        events, full = changes(repo, steps, n <= args.walk_max)
        for k, ev in enumerate(events):
            walk = f"{full.wall_ms:.1f} ms" if k == 0 and full else ""
            print(
                f"| reftable | {n} | append 1 (#{k + 1}) | {fmt_report(ev.report)} | {ev.diff.examined} | {walk} |"
            )
        # leave the stack as it was: one table (so the next run measures the same thing)
        run_git(repo, "update-ref", "--stdin", input="".join(f"delete {x}\n" for x in names).encode())
        run_git(repo, "refs", "optimize")
    for n in sizes:
        repo = build_packed(cache / f"watch-packed-{n}", n)
        oid = git(repo, "rev-parse", "HEAD").strip().decode()
        name = f"refs/heads/new/{time.time_ns()}"
        (ev,), full = changes(
            repo,
            [(lambda repo=repo, name=name, oid=oid: run_git(repo, "update-ref", name, oid), _added(name))],
            n <= args.walk_max,
        )
        print(
            f"| files | {n} | loose create | {fmt_report(ev.report)} | {ev.diff.examined} | {f'{full.wall_ms:.1f} ms' if full else '-'} |"
        )
        victim = f"refs/heads/b/{n // 2:07d}"
        saved = (repo / ".git" / "packed-refs").read_bytes()
        (ev,), full = changes(
            repo,
            [
                (
                    lambda repo=repo, victim=victim, name=name: run_git(
                        repo, "update-ref", "--stdin", input=f"delete {victim}\ndelete {name}\n".encode()
                    ),
                    _removed(victim),
                )
            ],
            n <= args.walk_max,
        )
        print(
            f"| files | {n} | packed delete | {fmt_report(ev.report)} | {ev.diff.examined} | {f'{full.wall_ms:.1f} ms' if full else '-'} |"
        )
        # restore the victim (packed) so reruns measure the same thing
        (repo / ".git" / "packed-refs.new").write_bytes(saved)
        os.rename(repo / ".git" / "packed-refs.new", repo / ".git" / "packed-refs")


if __name__ == "__main__":
    main()
