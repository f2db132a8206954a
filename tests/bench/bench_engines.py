"""The engines side by side on big repositories, and the meter's own overhead.

    .venv/bin/python tests/bench/bench_engines.py [--runs N] [--git PATH ...] [--cache DIR] [--refs N]
    .venv/bin/python tests/bench/bench_engines.py --overhead

Builds (once, cached under ~/.cache/refscope/bench) a repository with 100k packed refs and one with 100k refs
in a single reftable table, then prints the ``refscope bench`` table for deleting 1 ref in each, and 10k refs
in the reftable one. ``--git`` adds extra git binaries (e.g. one built with the packed-refs patch).

``--overhead`` measures what counting costs on a ~1 ms operation: the same operation timed bare and inside
``measure()``, interleaved, medians compared; plus the cost counters impose on syscalls while merely open.
Not collected by pytest (tests/bench is excluded).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gitutil import git, git_binary, git_env, init_repo  # noqa: E402


def build_packed(path: Path, n: int) -> Path:
    """n refs written straight into a sorted, fully-peeled packed-refs (what `git pack-refs` writes)."""
    if (path / ".built").exists():
        return path
    init_repo(path, fmt="files")
    head = git(path, "rev-parse", "HEAD").strip()
    lines = [b"# pack-refs with: peeled fully-peeled sorted \n"]
    names = sorted([b"refs/heads/main"] + [b"refs/heads/branch/%07d" % i for i in range(n - 1)])
    lines += [head + b" " + name + b"\n" for name in names]
    (path / ".git" / "packed-refs").write_bytes(b"".join(lines))
    (path / ".git" / "refs" / "heads" / "main").unlink()
    assert git(path, "rev-parse", "refs/heads/branch/0000007").strip() == head
    (path / ".built").write_text("ok\n")
    return path


def build_reftable(path: Path, n: int) -> Path:
    """n refs created in one `git update-ref --stdin` transaction (one table), then compacted."""
    if (path / ".built").exists():
        return path
    init_repo(path, fmt="reftable")
    head = git(path, "rev-parse", "HEAD").strip().decode()
    lines = "".join(f"create refs/heads/branch/{i:07d} {head}\n" for i in range(n - 1))
    git(path, "update-ref", "--stdin", input=lines.encode())
    git(path, "pack-refs", "--all")
    (path / ".built").write_text("ok\n")
    return path


def bench_table(repo: Path, refs: list[str], runs: int, gits: list[str]) -> str:
    argv = [
        sys.executable,
        "-m",
        "refscope.app.cli",
        "bench",
        "-C",
        str(repo),
        "--runs",
        str(runs),
        "--stdin",
    ]
    for g in gits:
        argv += ["--git", g]
    env = dict(git_env(), REFSCOPE_GIT=git_binary())
    out = subprocess.run(argv, input="".join(r + "\n" for r in refs).encode(), capture_output=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr.decode())
    return out.stdout.decode()


# ---------------------------------------------------------------------------------------------------------
# Overhead

_OVERHEAD_CHILD = r"""
import os, sys, time
from refscope.backend.meter import measure
mode, path, k, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def op():
    for _ in range(k):
        fd = os.open(path, os.O_RDONLY)
        os.pread(fd, 4096, 0)
        os.close(fd)
    x = 0
    for i in range(2000):
        x += i * i

def bare():
    t0 = time.perf_counter_ns(); op(); return time.perf_counter_ns() - t0

def measured():
    t0 = time.perf_counter_ns()
    with measure("op"):
        op()
    return time.perf_counter_ns() - t0

if mode == "open":  # counters open on this thread (and idle) while the bare op runs
    with measure("prime"):
        pass
a, b = [], []
for _ in range(50):
    bare(); measured() if mode != "none" else bare()
for _ in range(reps):
    a.append(bare())
    if mode == "measure":
        b.append(measured())
a.sort(); b.sort()
print(a[len(a) // 2], b[len(b) // 2] if b else 0)
"""


def overhead(reps: int = 3000) -> None:
    from refscope.backend import meter

    path = Path("/tmp/refscope-overhead.dat")
    path.write_bytes(os.urandom(4096))
    # calibrate k so the bare op takes ~1 ms
    k = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(20):
            for _ in range(k):
                fd = os.open(path, os.O_RDONLY)
                os.pread(fd, 4096, 0)
                os.close(fd)
            x = 0
            for i in range(2000):
                x += i * i
        per = (time.perf_counter() - t0) / 20
        if per >= 0.001:
            break
        k = max(k + 1, int(k * 0.001 / per))
    print(f"meter source: {meter.status()}")
    script = Path("/tmp/refscope-overhead.py")
    script.write_text(_OVERHEAD_CHILD)

    def child(mode: str) -> tuple[int, int]:
        out = subprocess.run(
            [sys.executable, str(script), mode, str(path), str(k), str(reps)], capture_output=True, check=True
        ).stdout.split()
        return int(out[0]), int(out[1])

    bare, measured = child("measure")
    print(f"operation: {k} x (open, pread 4 KiB, close) + 2000 Python additions = {3 * k} syscalls")
    print(f"  bare median          {bare / 1e3:8.1f} us")
    print(
        f"  inside measure()     {measured / 1e3:8.1f} us   overhead {100 * (measured - bare) / bare:+.2f}%"
    )
    none, _ = child("none")
    opened, _ = child("open")
    print("idle counters (open on the thread, disabled) and the op's own syscalls, separate processes:")
    print(f"  no counters ever     {none / 1e3:8.1f} us")
    print(f"  counters open, idle  {opened / 1e3:8.1f} us   {100 * (opened - none) / none:+.2f}%")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--git", action="append", default=[])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/refscope/bench"))
    ap.add_argument("--refs", type=int, default=100_000)
    ap.add_argument("--overhead", action="store_true")
    args = ap.parse_args()
    if args.overhead:
        overhead()
        return
    cache = Path(args.cache)
    n = args.refs
    packed = build_packed(cache / f"packed-{n}", n)
    reftable = build_reftable(cache / f"reftable-{n}", n)
    one = [f"refs/heads/branch/{n // 2:07d}"]
    many = [f"refs/heads/branch/{i:07d}" for i in range(0, n - 1, max(1, (n - 1) // 10_000))][:10_000]
    print(bench_table(packed, one, args.runs, args.git))
    print(bench_table(reftable, one, args.runs, args.git))
    print(bench_table(reftable, many, args.runs, args.git))


if __name__ == "__main__":
    main()
