"""General transactions: refscope's engines side by side with ``git update-ref --stdin``, in one run.

    .venv/bin/python tests/bench/bench_update.py [--creates 50000] [--refs 100000] [--updates 10000] [--runs 7]

Rows (the README's table):
- the seed's recipe: N ``create refs/tags/foo-N <blob>`` into a fresh reftable repository: the native commit
  (first lock to last rename, snapshot open, commands parsed and checked: what the TUI pays) in syscalls
  (the meter's kernel counts; strace's count of the same window beside it) and wall, against the whole
  ``git update-ref --stdin`` (git's commit cannot be separated from its process); the whole processes;
- the same creates into a files repository (both bounded by one file per ref);
- K updates with old values on M refs, both formats.
Auto-compaction is its own phase (reported apart). Times are medians; whole processes alternate with git's
run by run, each on a fresh copy of the ref storage.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_delete import bench_env, med, print_report, side_by_side, strace_count  # noqa: E402

from tests.support.update import git, git_binary, init_repo  # noqa: E402

REFSCOPE = str(ROOT / ".venv" / "bin" / "refscope")

CHILD = r"""
import os, sys, json
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction
from refscope.backend.update import files, reftable  # imported before the window, as the TUI has them
from refscope.backend.meter import measure
with measure("warm-up"):
    pass
store = open_store(discover(sys.argv[1]))
data = open(sys.argv[2], "rb").read()
txn = UpdateTransaction(store, "native", allow_checked_out=True, snapshot=store.snapshot())
parsed = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
txn.queue(parsed.batches[0].commands)
try:
    os.write(1023, b"REFSCOPE-BEGIN")
except OSError:
    pass
res = txn.commit()
try:
    os.write(1023, b"REFSCOPE-END")
except OSError:
    pass
comp = [p for p in res.phases if p.name == "auto-compaction"]
prep = [p for p in res.phases if p.name == "prepare"]
print(json.dumps({"wall_ms": res.report.wall_ms, "cpu_ms": res.report.cpu_ms, "syscalls": res.report.syscalls_total,
                  "by_name": res.report.syscalls_by_name, "source": res.report.source,
                  "compaction_ms": sum(p.wall_ms for p in comp), "prepare_ms": sum(p.wall_ms for p in prep),
                  "prepare_cpu_ms": sum(p.cpu_ms for p in prep)}))
"""


def child_commit(repo: Path, input_path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo), str(input_path)],
        capture_output=True,
        env=bench_env(),
        cwd=repo,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return json.loads(proc.stdout)


def snapshot_dirs(repo: Path) -> list[str]:
    return ["reftable"] if (repo / ".git" / "reftable").is_dir() else ["refs", "logs", "packed-refs"]


def saver(repo: Path, saved: Path):
    """Save the ref storage of ``repo`` now; the returned function restores it (a fresh copy each time)."""
    names = snapshot_dirs(repo)
    saved.mkdir()
    for n in names:
        src = repo / ".git" / n
        if src.is_dir():
            shutil.copytree(src, saved / n, symlinks=True)
        elif src.exists():
            shutil.copyfile(src, saved / n)

    def reset() -> None:
        for n in names:
            dst = repo / ".git" / n
            if dst.is_dir():
                shutil.rmtree(dst)
            elif dst.exists():
                dst.unlink()
            src = saved / n
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True)
            elif src.exists():
                shutil.copyfile(src, dst)

    return reset


def rows_for(label: str, repo: Path, data: bytes, reset, runs: int, tmp: Path) -> list[tuple]:
    input_path = tmp / f"{label.replace(' ', '-').replace(':', '')}.input"
    input_path.write_bytes(data)
    walls, cpus, counts, comps, preps, prep_cpus = [], [], [], [], [], []
    by_name, source = {}, ""
    for _ in range(runs):
        reset()
        r = child_commit(repo, input_path)
        walls.append(r["wall_ms"])
        cpus.append(r["cpu_ms"])
        counts.append(r["syscalls"])
        comps.append(r["compaction_ms"])
        preps.append(r["prepare_ms"])
        prep_cpus.append(r["prepare_cpu_ms"])
        by_name, source = r["by_name"], r["source"]
    reset()
    st = strace_count([sys.executable, "-c", CHILD, str(repo), str(input_path)], repo, window=True)
    ours, our_cpu, git_walls, git_cpu = side_by_side(
        [REFSCOPE, "update"], [git_binary(), "update-ref", "--stdin"], repo, reset, runs, (data, data)
    )
    reset()
    git_st = strace_count([git_binary(), "update-ref", "--stdin"], repo, data)
    reset()
    return [
        (
            f"{label} — commit",
            f"{med(walls):.1f} ms wall, {med(cpus):.1f} ms cpu, {min(counts)} syscalls ({source}); "
            f"strace window {sum(st.values())}; before the lock (plan and table from the snapshot): "
            f"{med(preps):.1f} ms wall, {med(prep_cpus):.1f} ms cpu; auto-compaction apart: {med(comps):.1f} ms",
            f"{med(git_walls):.1f} ms wall, {git_cpu:.1f} ms cpu, {sum(git_st.values())} syscalls "
            "(whole git update-ref --stdin)",
            f"{med(walls) / med(git_walls):.2f}x wall, {med(cpus) / git_cpu:.2f}x cpu",
        ),
        (
            "  native commit syscalls by name",
            ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())),
            "",
            "",
        ),
        (
            f"{label} — whole process",
            f"{med(ours):.1f} ms wall, {our_cpu:.1f} ms cpu (refscope update)",
            f"{med(git_walls):.1f} ms wall, {git_cpu:.1f} ms cpu (git update-ref --stdin)",
            f"{med(ours) / med(git_walls):.2f}x wall, {our_cpu / git_cpu:.2f}x cpu",
        ),
    ]


def bench_creates(root: Path, fmt: str, n: int, runs: int) -> list[tuple]:
    """The seed's recipe: ``git init``, then N creates of one blob under refs/tags/."""
    repo = root / f"creates-{fmt}"
    repo.mkdir()
    git(repo, "init", "-q", f"--ref-format={fmt}", ".")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"bench\n").strip()
    data = b"".join(b"create refs/tags/foo-%d %s\n" % (i, blob) for i in range(1, n + 1))
    reset = saver(repo, root / f"creates-{fmt}.saved")
    return rows_for(f"{fmt}: {n:,} creates into a fresh repository", repo, data, reset, runs, root)


def bench_updates(root: Path, fmt: str, m: int, k: int, runs: int) -> list[tuple]:
    """K updates with old values, spread over M refs (packed / one table), to the second commit."""
    repo = init_repo(root / f"updates-{fmt}", fmt=fmt)
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "file").write_text("second\n")
    git(repo, "commit", "-q", "-am", "second")
    second = git(repo, "rev-parse", "HEAD").strip()
    names = [b"refs/heads/branch-%07d" % i for i in range(m)]
    if fmt == "files":  # packed directly, as bench_delete.py: no 100k reflog files to copy back each run
        body = b"".join(b"%s %s\n" % (first, n) for n in names)
        (repo / ".git" / "packed-refs").write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n" + body)
    else:
        git(repo, "update-ref", "--stdin", input=b"".join(b"create %s %s\n" % (n, first) for n in names))
        git(repo, "pack-refs", "--all")
    step = max(1, m // k)
    data = b"".join(b"update %s %s %s\n" % (n, second, first) for n in names[::step][:k])
    reset = saver(repo, root / f"updates-{fmt}.saved")
    return rows_for(f"{fmt}: {k:,} updates with old values on {m:,} refs", repo, data, reset, runs, root)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--creates", type=int, default=50_000)
    ap.add_argument("--refs", type=int, default=100_000)
    ap.add_argument("--updates", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", choices=["creates", "updates"], default=None)
    ap.add_argument("--format", choices=["files", "reftable"], default=None, dest="fmt")
    args = ap.parse_args()
    os.environ.setdefault("REFSCOPE_GIT", git_binary())
    rows = []
    with tempfile.TemporaryDirectory(prefix="refscope-bench-update-") as tmp:
        root = Path(tmp)
        formats = [args.fmt] if args.fmt else ["reftable", "files"]
        if args.only in (None, "creates"):
            for fmt in formats:
                rows += bench_creates(
                    root, fmt, args.creates, args.runs if fmt == "reftable" else max(3, args.runs // 2)
                )
        if args.only in (None, "updates"):
            for fmt in formats:
                rows += bench_updates(root, fmt, args.refs, args.updates, args.runs)
    print_report(rows)


if __name__ == "__main__":
    main()
