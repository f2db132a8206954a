"""What refs point at, at scale: ``refscope list`` with for-each-ref's object atoms against git, whole
processes side by side in one run, alternating. Prints the table the README shows.

    .venv/bin/python tests/bench/bench_objects.py [--refs 1000000] [--commits 200000] [--runs 3]

The repository: ``--commits`` commits made by ``git fast-import`` (50 branches of linear history, varied
authors and zones), packed, and ``--refs`` refs (``refs/pull/N/head``) spread over them at random in a
packed-refs file, so tips are shared as on a hosting server. Each case runs without and with a
commit-graph (``git commit-graph write --reachable``):
- ``--sort=-committerdate --format='%(committerdate:unix) %(refname)'``;
- ``--merged=refs/heads/b0 --format='%(refname)'``.
Outputs are compared byte for byte before timing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.git import git, git_binary, git_env, start_cached_repo  # noqa: E402

CACHE = Path(os.environ.get("REFSCOPE_BENCH_CACHE", Path.home() / ".cache/refscope/bench-objects"))


def build(refs: int, commits: int) -> Path:
    path = CACHE / f"r-{refs}-{commits}"
    if not start_cached_repo(path):
        return path
    git(path, "config", "gc.auto", "0")
    chunks = []
    for i in range(1, commits + 1):
        t = 1600000000 + i * 60
        msg = f"commit number {i}\n\nbody of {i}\n"
        chunks.append(
            f"blob\nmark :{2 * i}\ndata {len(str(i)) + 1}\n{i}\n"
            f"commit refs/heads/b{i % 50}\nmark :{2 * i + 1}\n"
            f"author Au Thor{i % 7} <a{i % 7}@example.org> {t} +0{i % 10}00\n"
            f"committer Com Mitter <c@example.org> {t + 5} -0{i % 5}30\n"
            f"data {len(msg)}\n{msg}"
            + (f"from :{2 * (i - 50) + 1}\n" if i > 50 else "")
            + f"M 100644 :{2 * i} f{i % 1000}\n\n"
        )
    git(path, "fast-import", "--quiet", input="".join(chunks).encode())
    oids = git(path, "rev-list", "--all").split()
    rng = random.Random(1)
    recs = sorted((b"refs/pull/%d/head" % i, rng.choice(oids)) for i in range(refs))
    heads = [
        ln.split(b" ", 1)
        for ln in git(path, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
    ]
    recs = sorted(recs + [(name, oid) for oid, name in heads])
    body = b"".join(oid + b" " + name + b"\n" for name, oid in recs)
    (path / ".git" / "packed-refs").write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n" + body)
    shutil.rmtree(path / ".git" / "refs" / "heads")
    (path / ".git" / "refs" / "heads").mkdir()
    (path / ".git" / "bench-done").write_text("ok\n")
    return path


def run(cmd: list[str], cwd: Path) -> tuple[float, float, bytes]:
    import resource

    env = git_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env, check=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refs", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--case", choices=["all", "sort", "merged"], default="all")
    ap.add_argument("--graph", choices=["both", "no", "yes"], default="both")
    args = ap.parse_args()
    path = build(args.refs, args.commits)
    launcher = ROOT / ".venv" / "bin" / "refscope"
    refscope = [str(launcher)] if launcher.exists() else [sys.executable, "-m", "refscope.app"]
    gitbin = git_binary()
    cases = [
        ("sort by -committerdate", ["--sort=-committerdate", "--format=%(committerdate:unix) %(refname)"]),
        ("--merged=refs/heads/b0", ["--merged=refs/heads/b0", "--format=%(refname)"]),
    ]
    cases = [c for c in cases if args.case == "all" or args.case in c[0]]
    print(
        f"{args.refs:,} refs over {args.commits:,} commits; git {gitbin}; {os.cpu_count()} cpus; medians of {args.runs}"
    )
    print(
        f"{'case':<26} {'graph':<6} {'refscope wall / cpu s':>22} {'git wall / cpu s':>18} {'wall ratio':>10}"
    )
    graph = path / ".git" / "objects" / "info" / "commit-graph"
    for with_graph in {"both": (False, True), "no": (False,), "yes": (True,)}[args.graph]:
        if with_graph and not graph.exists():
            git(path, "commit-graph", "write", "--reachable")
        if not with_graph and graph.exists():
            graph.unlink()
        for label, extra in cases:
            ours_t, git_t = [], []
            for i in range(args.runs):
                order = [(ours_t, [*refscope, "list", *extra]), (git_t, [gitbin, "for-each-ref", *extra])]
                if i % 2:
                    order.reverse()
                outs = []
                for sink, cmd in order:
                    wall, cpu, out = run(cmd, path)
                    sink.append((wall, cpu))
                    outs.append(out)
                if outs[0] != outs[1]:
                    print(f"{label}: OUTPUT DIFFERS", file=sys.stderr)
                    return 1
            ow = statistics.median(w for w, _ in ours_t)
            oc = statistics.median(c for _, c in ours_t)
            gw = statistics.median(w for w, _ in git_t)
            gc = statistics.median(c for _, c in git_t)
            print(
                f"{label:<26} {'yes' if with_graph else 'no':<6} {ow:>12.2f} / {oc:>6.2f} {gw:>10.2f} / {gc:>5.2f} {ow / gw:>9.2f}×"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
