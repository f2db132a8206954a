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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.git import git, git_binary, git_env, init_repo, one_table_reftable  # noqa: E402


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
mode, path, triples, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
work = 0

def op():
    for _ in range(triples):
        fd = os.open(path, os.O_RDONLY)
        os.pread(fd, 4096, 0)
        os.close(fd)
    x = 0
    for i in range(work):
        x += i * i

def bare():
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    op()
    return time.perf_counter_ns() - w0, time.thread_time_ns() - c0

def measured():
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    with measure("op") as m:
        op()
    w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    # what the caller paid, and what the report says the operation took
    return w1 - w0, c1 - c0, round(m.report.wall_ms * 1e6), round(m.report.cpu_ms * 1e6)

# calibrate the Python work so the bare operation takes ~1 ms of CPU
while True:
    c = sorted(bare()[1] for _ in range(21))[10]
    if c >= 950_000:
        break
    work = int((work or 1000) * min(4.0, max(1.05, 1_000_000 / max(c, 1))))
if mode == "open":  # counters open on this thread (and idle) while the bare op runs
    with measure("prime"):
        pass
a, b = [], []
for _ in range(reps):
    a.append(bare())
    if mode == "measure":
        b.append(measured())
def q(xs, i, f):
    v = sorted(x[i] for x in xs)
    return v[int(len(v) * f)] if v else 0
# medians, then 10th percentiles (the runs least disturbed by other processes)
for f in (.5, .1):
    print(q(a, 0, f), q(a, 1, f), q(b, 0, f), q(b, 1, f), q(b, 2, f), q(b, 3, f), end=" ")
print()
"""


def overhead(reps: int = 1500) -> None:
    """Overhead of counting on ~1 ms operations, medians of interleaved bare and measured runs."""
    from refscope.backend import meter

    path = Path("/tmp/refscope-overhead.dat")
    path.write_bytes(os.urandom(4096))
    script = Path("/tmp/refscope-overhead.py")
    script.write_text(_OVERHEAD_CHILD)
    print(f"meter: {meter.status()}")

    def child(mode: str, triples: int) -> list[int]:
        out = subprocess.run(
            [sys.executable, str(script), mode, str(path), str(triples), str(reps)],
            capture_output=True,
            check=True,
        ).stdout.split()
        return [int(v) for v in out]

    def pct(x: int, base: int) -> str:
        return f"{100 * (x - base) / base:+6.2f}%"

    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("distortion: the time the report gives vs the bare operation; cost: what the caller pays in all")
    print(
        "operation (~1 ms CPU)                      stat    bare wall  reported  distortion  caller's  cost"
        "      bare cpu  reported  distortion"
    )
    for triples in (0, 10, 100):
        r = child("measure", triples)
        label = f"{3 * triples} syscalls (open/pread/close) + Python"
        for name, (bw, bc, mw, _mc, rw, rc) in (("median", r[:6]), ("p10", r[6:])):
            print(
                f"{label:42s} {name:6s} {bw / 1e3:8.1f}us {rw / 1e3:8.1f}us {pct(rw, bw)} {mw / 1e3:9.1f}us {pct(mw, bw)}"
                f"  {bc / 1e3:8.1f}us {rc / 1e3:8.1f}us {pct(rc, bc)}"
            )
            label = ""
    print(
        "counters merely open on the thread (disabled) vs never opened, 300 syscalls, separate processes (cpu):"
    )
    none, opened = child("none", 100), child("open", 100)
    for name, i in (("median", 1), ("p10", 7)):
        print(f"  {name:6s} {none[i] / 1e3:.1f}us -> {opened[i] / 1e3:.1f}us ({pct(opened[i], none[i])})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--git", action="append", default=[])
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/refscope/bench"))
    ap.add_argument("--refs", type=int, default=100_000)
    ap.add_argument("--overhead", action="store_true")
    ap.add_argument("--many", type=int, default=10_000, help="refs deleted in the big reftable transaction")
    args = ap.parse_args()
    if args.overhead:
        overhead()
        return
    cache = Path(args.cache)
    n = args.refs
    packed = build_packed(cache / f"packed-{n}", n)
    reftable = one_table_reftable(cache / f"reftable-{n}", n, "refs/heads/branch/")
    one = [f"refs/heads/branch/{n // 2:07d}"]
    step = max(1, (n - 1) // args.many)
    many = [f"refs/heads/branch/{i:07d}" for i in range(0, n - 1, step)][: args.many]
    print(bench_table(packed, one, args.runs, args.git))
    rt_gits = [g for g in args.git if knows_reftable(g)]
    for g in sorted(set(args.git) - set(rt_gits)):
        print(f"(not in the reftable tables: {g} predates reftable)\n")
    print(bench_table(reftable, one, args.runs, rt_gits))
    print(bench_table(reftable, many, args.runs, rt_gits))


def knows_reftable(git_path: str) -> bool:
    """git learned the reftable backend in 2.45."""
    out = subprocess.run([git_path, "version"], capture_output=True, text=True).stdout.split()
    parts = (out[2] if len(out) > 2 else "0").split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (2, 45)
    except (ValueError, IndexError):
        return False


if __name__ == "__main__":
    main()
