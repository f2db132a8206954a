"""Deleting refs: refscope's engines side by side with git, in one run. Prints the table the README shows.

    .venv/bin/python tests/bench/bench_delete.py [--refs 100000] [--runs 15]

Rows:
- files, delete 1 of N packed refs: the commit (first lock to last unlink, snapshot already open, as the TUI
  pays it) in syscalls (the meter's kernel counts, cross-checked by strace) and wall, against the whole
  ``git update-ref -d`` (git's own commit cannot be separated from its process); and the whole process,
  ``refscope delete`` against ``git update-ref -d``.
- reftable, delete 1 and 10k of N refs in one transaction: the commit against ``git update-ref --stdin``,
  and the whole processes.
Times are medians of ``--runs`` runs, each on a fresh copy of the ref storage; whole processes alternate
with git's run by run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.git import git, git_binary, git_env, init_repo  # noqa: E402

REFSCOPE = str(ROOT / ".venv" / "bin" / "refscope")

CHILD = r"""
import os, sys, json
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.txn import Transaction
from refscope.backend.engines import files, reftable  # imported before the window, as the TUI has them
from refscope.backend.meter import measure
with measure("warm-up"):  # the meter opens its counters once per thread: the TUI has paid that already
    pass
names = [n.encode() for n in sys.argv[2:]]
store = open_store(discover(sys.argv[1]))
snap = store.snapshot()
txn = Transaction(store, "native", allow_checked_out=True, snapshot=snap)
for n in names:
    txn.delete(n)
try:
    os.write(1023, b"REFSCOPE-BEGIN")
except OSError:
    pass
res = txn.commit()
try:
    os.write(1023, b"REFSCOPE-END")
except OSError:
    pass
read = [p for p in res.phases if p.name in ("read", "check packed-refs")]
print(json.dumps({"wall_ms": res.report.wall_ms, "cpu_ms": res.report.cpu_ms, "syscalls": res.report.syscalls_total,
                  "by_name": res.report.syscalls_by_name, "source": res.report.source,
                  "read_ms": sum(p.wall_ms for p in read)}))
"""


def make_files_repo(path: Path, n: int) -> tuple[Path, bytes]:
    init_repo(path, fmt="files")
    oid = git(path, "rev-parse", "HEAD").strip()
    names = sorted(b"refs/heads/branch-%07d" % i for i in range(n))
    body = b"".join(b"%s %s\n" % (oid, name) for name in names)
    (path / ".git" / "packed-refs").write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n" + body)
    for p in (path / ".git" / "refs" / "heads").iterdir():
        p.unlink()
    (path / ".git" / "packed-refs").read_bytes()
    git(path, "update-ref", "refs/heads/main", oid)
    return path, oid


def make_reftable_repo(path: Path, n: int) -> Path:
    init_repo(path, fmt="reftable")
    oid = git(path, "rev-parse", "HEAD").strip()
    data = b"".join(b"create refs/heads/branch-%07d %s\n" % (i, oid) for i in range(n))
    git(path, "update-ref", "--stdin", input=data)
    git(path, "pack-refs", "--all")
    return path


def restore(src: Path, dst: Path) -> None:
    if dst.is_dir():
        shutil.rmtree(dst)
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)


CPU: list[float] = []  # user+sys of the last timed() child, ms


def bench_env() -> dict[str, str]:
    """git's deterministic env; Python may cache bytecode (an installed refscope has its .pyc files)."""
    env = git_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(argv: list[str], cwd: Path, stdin: bytes | None = None, env=None) -> float:
    """Wall ms of one run; its user+sys CPU ms is appended to CPU (robust when the machine is loaded)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env or bench_env(),
    )
    if stdin:
        proc.stdin.write(stdin)
    proc.stdin.close()
    _pid, status, ru = os.wait4(proc.pid, 0)
    dt = (time.perf_counter() - t0) * 1000
    err = proc.stderr.read()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: {err.decode()}")
    CPU.append((ru.ru_utime + ru.ru_stime) * 1000)
    return dt


def side_by_side(ours: list[str], theirs: list[str], cwd: Path, reset, runs: int, stdin=(None, None)):
    """Whole processes, refscope's and git's alternating run by run (each on a fresh copy from ``reset``):
    this shared machine's speed drifts by up to ~1.5x within minutes, so blocks of one then the other would
    compare different machines. Returns (our walls, our CPU median, git walls, git CPU median)."""
    our_walls, our_cpus, git_walls, git_cpus = [], [], [], []
    reset()
    timed(ours, cwd, stdin[0])  # the first run writes the bytecode cache
    for _ in range(runs):
        reset()
        git_walls.append(timed(theirs, cwd, stdin[1]))
        git_cpus.append(CPU[-1])
        reset()
        our_walls.append(timed(ours, cwd, stdin[0]))
        our_cpus.append(CPU[-1])
    return our_walls, statistics.median(our_cpus), git_walls, statistics.median(git_cpus)


def strace_count(
    argv: list[str], cwd: Path, stdin: bytes | None = None, window: bool = False
) -> dict[str, int]:
    """Syscalls by name of ``argv`` under strace (only between the child's markers when ``window``)."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        subprocess.run(
            ["strace", "-f", "-qq", "-o", out.name, *argv],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=git_env(),
        )
        lines = Path(out.name).read_text(errors="replace").splitlines()
    counts: dict[str, int] = {}
    inside = not window
    for line in lines:
        if "REFSCOPE-BEGIN" in line:
            inside = True
            continue
        if "REFSCOPE-END" in line:
            inside = False
            continue
        if not inside:
            continue
        parts = line.split(None, 1)
        call = parts[1] if len(parts) > 1 and parts[0].isdigit() else line
        if call.startswith(("+++", "---", "<...")):
            continue
        name = call.split("(", 1)[0].strip()
        if name and name.isidentifier():
            counts[name] = counts.get(name, 0) + 1
    return counts


def child_commit(repo: Path, names: list[str]) -> dict:
    import json

    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo), *names], capture_output=True, env=bench_env(), cwd=repo
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return json.loads(proc.stdout)


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_files(root: Path, n: int, runs: int) -> list[tuple]:
    repo, _oid = make_files_repo(root / "files", n)
    saved = root / "packed-refs.saved"
    shutil.copyfile(repo / ".git" / "packed-refs", saved)
    target = f"refs/heads/branch-{n // 2:07d}"
    packed = repo / ".git" / "packed-refs"
    rows = []
    # commit: native, in a child with the snapshot open
    walls, sys_counts, cpus = [], [], []
    for _ in range(runs):
        restore(saved, packed)
        r = child_commit(repo, [target])
        walls.append(r["wall_ms"])
        cpus.append(r["cpu_ms"])
        sys_counts.append(r["syscalls"])
        by_name = r["by_name"]
        source = r["source"]
    restore(saved, packed)
    st = strace_count([sys.executable, "-c", CHILD, str(repo), target], repo, window=True)
    ours, our_cpu, git_walls, git_cpu = side_by_side(
        [REFSCOPE, "delete", target],
        [git_binary(), "update-ref", "-d", target],
        repo,
        lambda: restore(saved, packed),
        runs,
    )
    restore(saved, packed)
    git_st = strace_count([git_binary(), "update-ref", "-d", target], repo)
    rows.append(
        (
            f"files: delete 1 of {n:,} packed — commit",
            f"{med(walls):.2f} ms wall, {med(cpus):.1f} ms cpu, {min(sys_counts)} syscalls ({source}); "
            f"strace window {sum(st.values())} (meter's own reads included)",
            f"{med(git_walls):.2f} ms wall, {git_cpu:.1f} ms cpu, {sum(git_st.values())} syscalls "
            f"({git_st.get('write', 0)} write)",
            f"{med(walls) / med(git_walls):.2f}x wall, {med(cpus) / git_cpu:.2f}x cpu",
        )
    )
    rows.append(
        (
            "  native commit syscalls by name",
            ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())),
            "",
            "",
        )
    )
    rows.append(("  (strace, same window)", ", ".join(f"{k} {v}" for k, v in sorted(st.items())), "", ""))
    rows.append(
        (
            f"files: delete 1 of {n:,} packed — whole process",
            f"{med(ours):.2f} ms wall, {our_cpu:.1f} ms cpu (refscope delete)",
            f"{med(git_walls):.2f} ms wall, {git_cpu:.1f} ms cpu (git update-ref -d)",
            f"{med(ours) / med(git_walls):.2f}x wall, {our_cpu / git_cpu:.2f}x cpu",
        )
    )
    restore(saved, packed)
    return rows


def bench_reftable(root: Path, n: int, runs: int, k: int, contiguous: bool = False) -> list[tuple]:
    tag = f"{k}{'c' if contiguous else ''}"
    repo = make_reftable_repo(root / f"reftable-{tag}", n)
    saved = root / f"reftable-{tag}.saved"
    shutil.copytree(repo / ".git" / "reftable", saved)
    rt = repo / ".git" / "reftable"
    if contiguous:  # one name range, as a TUI filter selects it
        names = [f"refs/heads/branch-{i:07d}" for i in range((n - k) // 2, (n - k) // 2 + k)]
    else:  # spread over the whole stack: every block is touched
        names = [f"refs/heads/branch-{i:07d}" for i in range(0, n, max(1, n // k))][:k]
    what = f"{k:,} of {n:,}" + (" (one range)" if contiguous else (" (spread)" if k > 1 else ""))
    stdin = "".join(f"delete {x}\n" for x in names).encode()
    walls, counts, cpus, reads = [], [], [], []
    for _ in range(runs):
        restore(saved, rt)
        r = child_commit(repo, names)
        walls.append(r["wall_ms"])
        cpus.append(r["cpu_ms"])
        counts.append(r["syscalls"])
        reads.append(r["read_ms"])
    ours, our_cpu, git_walls, git_cpu = side_by_side(
        [REFSCOPE, "delete", "--stdin"],
        [git_binary(), "update-ref", "--stdin"],
        repo,
        lambda: restore(saved, rt),
        runs,
        ("".join(x + "\n" for x in names).encode(), stdin),
    )
    restore(saved, rt)
    git_st = strace_count([git_binary(), "update-ref", "--stdin"], repo, stdin)
    restore(saved, rt)
    return [
        (
            f"reftable: delete {what} — commit",
            f"{med(walls):.2f} ms wall, {med(cpus):.1f} ms cpu, {min(counts)} syscalls "
            f"(+ {med(reads):.2f} ms reading the stack before the lock)",
            f"{med(git_walls):.2f} ms wall, {git_cpu:.1f} ms cpu, {sum(git_st.values())} syscalls "
            "(whole git update-ref --stdin)",
            f"{med(walls) / med(git_walls):.2f}x wall, {med(cpus) / git_cpu:.2f}x cpu",
        ),
        (
            f"reftable: delete {what} — whole process",
            f"{med(ours):.2f} ms wall, {our_cpu:.1f} ms cpu (refscope delete --stdin)",
            f"{med(git_walls):.2f} ms wall, {git_cpu:.1f} ms cpu (git update-ref --stdin)",
            f"{med(ours) / med(git_walls):.2f}x wall, {our_cpu / git_cpu:.2f}x cpu",
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", choices=["files", "reftable"], default=None)
    args = ap.parse_args()
    os.environ.setdefault("REFSCOPE_GIT", git_binary())
    rows = []
    with tempfile.TemporaryDirectory(prefix="refscope-bench-delete-") as tmp:
        root = Path(tmp)
        if args.only in (None, "files"):
            rows += bench_files(root, args.refs, args.runs)
        if args.only in (None, "reftable"):
            rows += bench_reftable(root, args.refs, args.runs, 1)
            rows += bench_reftable(root, args.refs, max(3, args.runs // 3), 10_000)
            rows += bench_reftable(root, args.refs, max(3, args.runs // 3), 10_000, contiguous=True)
    print_report(rows)


def print_report(rows: list) -> None:
    """git's version, then the rows as a Markdown table (bench_update prints its own the same way)."""
    print(f"git: {subprocess.run([git_binary(), 'version'], capture_output=True, text=True).stdout.strip()}")
    print()
    print("| operation | refscope (native) | git | ratio |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
