"""Live following right after a huge transaction (not collected by pytest).

    .venv/bin/python tests/bench/bench_live_scale.py [--refs 1000000] [--formats files,reftable]
                                                     [--cache /tmp/refscope-live-scale] [--no-tui] [--crossover]

For each format: a repository of N refs (built once and cached: packed-refs written directly and checked
with ``git for-each-ref``; the reftable one by ``git refs migrate`` from it) is copied, then

1. ``refscope watch --json`` runs on the copy (its own process). Another process (``git update-ref
   --stdin``) deletes 70% of the refs, spread over the whole key space, in one transaction; then one
   ``git update-ref refs/heads/live1 HEAD``. Printed: each change's latency from git's exit to the event's
   line on watch's stdout, and watch's peak RSS (VmHWM).
2. The same on a fresh copy with the TUI (RefscopeApp, watcher on, headless under Pilot, in this process):
   latency from git's exit until the main list shows the change (a snapshot with the new row count, then
   a row named live1), and this process's peak RSS.

Target (DESIGN.md): each change within 2 s, RSS under 300 MB. ``--crossover`` prints the measurement behind
``diff.SORTED_WALK_MIN``: k names spread over an N-ref table, resolved by one lookup each or by one sorted
walk (fresh snapshots, best of 3).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import random
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.cli import refscope_watch_json  # noqa: E402
from tests.support.git import git_binary, git_env, init_repo  # noqa: E402

TIMEOUT = 600.0


def run_git(path: Path, *args: str, input: bytes | None = None) -> float:
    """git in ``path``; returns when it has exited: the time of its exit (``time.time()``)."""
    subprocess.run(
        [git_binary(), "-C", str(path), *args], input=input, check=True, capture_output=True, env=git_env()
    )
    return time.time()


def build(cache: Path, n: int) -> dict[str, Path]:
    files = cache / f"files-{n}"
    if not (files / ".git" / "live-built").exists():
        shutil.rmtree(files, ignore_errors=True)
        init_repo(files, fmt="files")
        head = subprocess.run(
            [git_binary(), "-C", str(files), "rev-parse", "HEAD"],
            capture_output=True,
            check=True,
            env=git_env(),
        ).stdout.strip()
        names = sorted([b"refs/heads/main"] + [b"refs/heads/b/%07d" % i for i in range(n - 1)])
        body = b"".join(head + b" " + nm + b"\n" for nm in names)
        (files / ".git" / "packed-refs").write_bytes(
            b"# pack-refs with: peeled fully-peeled sorted \n" + body
        )
        (files / ".git" / "refs" / "heads" / "main").unlink()
        out = subprocess.run(
            [git_binary(), "-C", str(files), "for-each-ref", "--format=%(refname)"],
            capture_output=True,
            check=True,
            env=git_env(),
        ).stdout
        assert out.count(b"\n") == n, "git does not list what was written"
        (files / ".git" / "live-built").write_text("ok\n")
    reftable = cache / f"reftable-{n}"
    if not (reftable / ".git" / "live-built").exists():
        shutil.rmtree(reftable, ignore_errors=True)
        shutil.copytree(files, reftable, symlinks=True)
        run_git(reftable, "refs", "migrate", "--ref-format=reftable")
        run_git(reftable, "pack-refs")
    return {"files": files, "reftable": reftable}


def renamed_at(repo: Path) -> float:
    """When git renamed the file that made the change visible (packed-refs or tables.list), as a
    ``time.time()`` value: a files transaction removes its lock files after that, so the change can be
    on screen before git exits."""
    for rel in ("reftable/tables.list", "packed-refs"):
        p = repo / ".git" / rel
        if p.exists():
            return os.stat(p).st_ctime_ns / 1e9
    raise FileNotFoundError(repo)


def deletion(n: int) -> bytes:
    return b"".join(b"delete refs/heads/b/%07d\n" % i for i in range(n - 1) if i % 10 < 7)


def fresh_copy(src: Path, cache: Path, fmt: str) -> Path:
    dst = cache / f"work-{fmt}"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, symlinks=True)
    return dst


# --- 1. refscope watch --------------------------------------------------------------------------------


def bench_watch(repo: Path, n: int) -> dict:
    proc = refscope_watch_json(repo)
    out: dict = {}
    lines: queue.SimpleQueue = queue.SimpleQueue()

    def reader() -> None:  # timestamps each event line as it arrives, while git still runs
        for line in proc.stdout:
            lines.put((time.time(), line))

    try:
        assert proc.stderr.readline().startswith(b"refscope watch: watching")
        threading.Thread(target=reader, daemon=True).start()
        want = len(deletion(n).splitlines())
        t0 = time.time()
        t_exit = run_git(repo, "update-ref", "--stdin", input=deletion(n))
        out["git delete s"] = t_exit - t0
        removed = 0
        while removed < want:
            t_line, line = lines.get(timeout=TIMEOUT)
            ev = json.loads(line)
            removed += len(ev["removed"])
            if ev.get("report"):
                out["refresh ms (max)"] = max(out.get("refresh ms (max)", 0), ev["report"]["wall_ms"])
        out["delete latency s"] = max(0.0, t_line - t_exit)
        out["delete from rename s"] = t_line - renamed_at(repo)
        t_exit = run_git(repo, "update-ref", "refs/heads/live1", "HEAD")
        while True:
            t_line, line = lines.get(timeout=TIMEOUT)
            if "refs/heads/live1" in json.loads(line)["added"]:
                break
        out["update-ref latency s"] = t_line - t_exit
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    out["peak RSS MB"] = int(line.split()[1]) / 1024
    finally:
        proc.send_signal(2)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
    return out


# --- 2. the TUI -----------------------------------------------------------------------------------------


async def _tui(repo: Path, n: int) -> dict:
    from refscope.app.tui.app import RefscopeApp
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    r = discover(str(repo))
    app = RefscopeApp(open_store(r), repo=r, repo_path=str(repo), watch=True)
    out: dict = {}
    labels: set[str] = set()

    async def until(cond, what: str) -> float:
        """Poll ``cond`` every 10 ms; the ``time.time()`` when it first held."""
        deadline = time.monotonic() + TIMEOUT
        while not cond():
            labels.add(app.live)
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)
        return time.time()

    async def git_async(*args: str, input: bytes | None = None) -> float:
        p = await asyncio.create_subprocess_exec(
            git_binary(),
            "-C",
            str(repo),
            *args,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        )
        await p.communicate(input)
        assert p.returncode == 0
        return time.time()

    def shows(count: int) -> bool:
        rl = app.screen.ref_list
        return rl.preview is None and rl.snapshot is app.snapshot and app.ref_count() == count

    def listed(name: bytes) -> bool:
        rl = app.screen.ref_list
        snap = rl.snapshot
        if snap is None or rl.preview is not None:
            return False
        rows = snap.prefix_range(name)
        return bool(len(rows)) and rows.start in rl.view and snap.name_at(rows.start) == name

    async with app.run_test(size=(160, 40)):
        await until(lambda: app.live == "live" and app.screen.is_ready(), "the first screen")
        left = n - len(deletion(n).splitlines())
        t0 = time.time()
        git_task = asyncio.ensure_future(git_async("update-ref", "--stdin", input=deletion(n)))
        t_shown = await until(lambda: shows(left), "the deletion on screen")  # (maybe before git exits)
        t_exit = await git_task
        out["git delete s"] = t_exit - t0
        out["delete latency s"] = max(0.0, t_shown - t_exit)
        out["delete from rename s"] = t_shown - renamed_at(repo)
        t_exit = await git_async("update-ref", "refs/heads/live1", "HEAD")
        t_shown = await until(lambda: listed(b"refs/heads/live1"), "live1 on screen")
        out["update-ref latency s"] = t_shown - t_exit
        await until(lambda: app.live == "live", "live again")
    out["peak RSS MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["header states seen"] = sorted({s.split(" ")[0] for s in labels})
    return out


def bench_tui(repo: Path, n: int) -> dict:
    return asyncio.run(_tui(repo, n))


# --- crossover ------------------------------------------------------------------------------------------


def crossover(repo: Path, n: int) -> None:
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    st = open_store(discover(str(repo)))
    print(f"\ncrossover on {n:,} refs in one table (best of 3, fresh snapshots):")
    print("| names | one lookup each ms | sorted walk ms | lookups / walk |")
    print("|---|---|---|---|")
    k = 1
    while k <= n // 4:
        names = sorted(b"refs/heads/b/%07d" % i for i in random.Random(k).sample(range(n - 1), k))
        a, b = [], []
        for _ in range(3):
            snap = st.snapshot()
            t = time.perf_counter()
            for name in names:
                snap.lookup(name)
            a.append(time.perf_counter() - t)
            snap = st.snapshot()
            t = time.perf_counter()
            snap.values_sorted(names)
            b.append(time.perf_counter() - t)
        print(f"| {k:,} | {min(a) * 1e3:.2f} | {min(b) * 1e3:.2f} | {min(a) / min(b):.2f} |", flush=True)
        k *= 4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refs", type=int, default=1_000_000)
    ap.add_argument("--formats", default="files,reftable")
    ap.add_argument("--cache", default="/tmp/refscope-live-scale")
    ap.add_argument("--no-tui", action="store_true")
    ap.add_argument("--no-watch", action="store_true")
    ap.add_argument("--crossover", action="store_true")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    n = args.refs
    repos = build(cache, n)
    if args.crossover:
        crossover(repos["reftable"], n)
        return
    rows = []
    for fmt in args.formats.split(","):
        if not args.no_watch:
            rows.append((fmt, "refscope watch", bench_watch(fresh_copy(repos[fmt], cache, fmt), n)))
            print(fmt, "watch", rows[-1][2], flush=True)
        if not args.no_tui:
            rows.append((fmt, "TUI", bench_tui(fresh_copy(repos[fmt], cache, fmt), n)))
            print(fmt, "TUI", rows[-1][2], flush=True)
    deleted = len(deletion(n).splitlines())
    print(
        f"\n{n:,} refs, {deleted:,} deleted by `git update-ref --stdin` in one transaction, then one update-ref"
    )
    print("(latencies from git's exit; in brackets from git's rename of packed-refs / tables.list)")
    print("| format | follower | git's delete s | delete shown s | update-ref shown s | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for fmt, who, r in rows:
        print(
            f"| {fmt} | {who} | {r['git delete s']:.1f} | {r['delete latency s']:.2f} "
            f"({r['delete from rename s']:.2f}) | {r['update-ref latency s']:.3f} | {r['peak RSS MB']:.0f} |"
        )


if __name__ == "__main__":
    main()
