"""Reading benchmark: ``refscope list --json`` against ``git for-each-ref``, and opening a 1M snapshot.

    .venv/bin/python tests/bench/bench_read.py [--sizes 100000,1000000] [--runs 5] [--formats files,reftable]

Repositories are built once into ``~/.cache/refscope/bench-read/`` (files: packed-refs written directly
with ~5% annotated tags carrying peeled lines, plus some loose refs; reftable: the same repository
converted by ``git refs migrate``). Times are whole-process wall times, median of ``--runs``, output to
/dev/null; git is measured with its default format and with ``--format='%(objectname) %(refname)'``
(the cheapest format, the strict baseline). "open" is the time from ``discover()`` to the first 50 rows
of a fresh snapshot in a fresh process, with that process's RSS.

Reftable figures, 2026-11-30 (2 shared, busy cores; min / median wall ms of interleaved runs, list --json
against git for-each-ref --format='%(objectname) %(refname)'):
    refs                      before (56fdd58)   after (2 cores)   after (1 core)   git
    100k, one table            186 / 212          119 / 156         136 / 183        64 / 72
    1M, one table             1570 / 2031         760 / 965        1187 / 1315      673 / 849
    1M + a small newer table  3201 / 3940         935 / 958        1001 / 1513      911 / 1110
1M CPU: 1221 ms median against git's 835 (1.46x). 100k stays ~2x: ~45 ms of it is interpreter start and
imports (git: 2 ms; ``typing``/``re`` via backend/repo.py are ~10 ms of that).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.git import git, git_binary, git_env, start_cached_repo  # noqa: E402

CACHE = Path(os.environ.get("REFSCOPE_BENCH_CACHE", Path.home() / ".cache/refscope/bench-read"))


def build_files(n: int) -> Path:
    path = CACHE / f"files-{n}"
    if not start_cached_repo(path):
        return path
    commits = []
    for i in range(8):
        git(path, "commit", "-q", "--allow-empty", "-m", f"c{i}")
        commits.append(git(path, "rev-parse", "HEAD").strip())
    tags = []
    for i in range(4):
        git(path, "tag", "-a", "-m", f"t{i}", f"base-{i}", commits[i])
        tags.append((git(path, "rev-parse", f"base-{i}").strip(), commits[i]))
    git(path, "pack-refs", "--all")
    recs = []
    for i in range(n):
        kind = i % 20
        if kind == 0:
            t, c = tags[i % 4]
            recs.append((b"refs/tags/release/%07d" % i, t, c))
        elif kind < 8:
            recs.append((b"refs/pull/%d/head" % i, commits[i % 8], None))
        elif kind < 14:
            recs.append((b"refs/remotes/origin/team-%02d/topic-%07d" % (i % 37, i), commits[i % 8], None))
        else:
            recs.append((b"refs/heads/feature/team-%02d/branch-%07d" % (i % 41, i), commits[i % 8], None))
    recs.append((b"refs/heads/main", commits[-1], None))
    for i in range(4):
        recs.append((b"refs/tags/base-%d" % i, tags[i][0], tags[i][1]))
    recs.sort()
    out = [b"# pack-refs with: peeled fully-peeled sorted \n"]
    for name, oid, peeled in recs:
        out.append(oid + b" " + name + b"\n")
        if peeled:
            out.append(b"^" + peeled + b"\n")
    (path / ".git" / "packed-refs").write_bytes(b"".join(out))
    for name in list((path / ".git" / "refs").rglob("*")):
        if name.is_file():
            name.unlink()
    # a few loose refs, some shadowing packed ones
    lines = [
        b"update refs/heads/feature/team-00/branch-%07d %s" % (i, commits[0]) for i in range(14, 2000, 200)
    ]
    lines += [b"create refs/heads/loose-only-%d %s" % (i, commits[1]) for i in range(5)]
    git(path, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    (path / ".git" / "bench-done").write_text("ok\n")
    return path


def build_reftable(n: int) -> Path:
    path = CACHE / f"reftable-{n}"
    if (path / ".git" / "bench-done").exists():
        return path
    src = build_files(n)
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(src, path, symlinks=True)
    (path / ".git" / "bench-done").unlink()
    git(path, "refs", "migrate", "--ref-format=reftable")
    git(path, "pack-refs")
    (path / ".git" / "bench-done").write_text("ok\n")
    return path


def timed(cmd: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys of the child) over ``runs`` runs."""
    import resource

    env = git_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed refscope has its .pyc files
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True
        )
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


OPEN_PROBE = r"""
import os, sys, time, itertools
t0 = time.perf_counter()
from refscope.backend.repo import discover
from refscope.backend.store import open_store
import refscope.backend.stores.files, refscope.backend.stores.reftable
t1 = time.perf_counter()
snap = open_store(discover(sys.argv[1])).snapshot()
rows = list(itertools.islice(snap.iter_from(b""), 50))
t2 = time.perf_counter()
n = len(snap)
t3 = time.perf_counter()
r = snap.row(n // 2)
t4 = time.perf_counter()
rss = 0
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1]) // 1024
print(f"{(t1-t0)*1000:.1f} {(t2-t1)*1000:.1f} {(t3-t2)*1000:.1f} {(t4-t3)*1000:.1f} {rss} {n}")
"""


def open_probe(path: Path, runs: int) -> tuple[float, float, float, float, int, int]:
    res = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", OPEN_PROBE, str(path)],
            capture_output=True,
            text=True,
            env=git_env(),
            check=True,
        ).stdout.split()
        res.append([float(x) for x in out])
    med = [statistics.median(col) for col in zip(*res, strict=True)]
    return med[0], med[1], med[2], med[3], int(med[4]), int(med[5])


def main(argv: list[str]) -> int:
    sizes = [100_000, 1_000_000]
    runs = 5
    formats = ["files", "reftable"]
    i = 0
    while i < len(argv):
        if argv[i] == "--sizes":
            sizes = [int(x) for x in argv[i + 1].split(",")]
            i += 1
        elif argv[i] == "--runs":
            runs = int(argv[i + 1])
            i += 1
        elif argv[i] == "--formats":
            formats = argv[i + 1].split(",")
            i += 1
        i += 1
    gitbin = git_binary()
    # the launcher users run (scripts/setup-venv writes it: python -S, no import hook); -m as a fallback
    launcher = ROOT / ".venv" / "bin" / "refscope"
    refscope = [str(launcher)] if launcher.exists() else [sys.executable, "-m", "refscope.app"]
    print(f"git: {gitbin}  cpus: {os.cpu_count()}  runs: {runs} (median)")
    print()
    print("whole process, median wall ms / median CPU ms (user+sys); ratio = refscope / git (cheap format)")
    print(
        f"{'repo':<18} {'refs':>8} {'refscope list --json':>21} {'git f-e-r cheap':>16} {'ratio wall':>10}"
        f" {'ratio cpu':>9} {'git f-e-r default':>18}"
    )
    floor = timed([*refscope, "list", "--json"], build_files(100), runs)
    gfloor = timed([gitbin, "for-each-ref", "--format=%(objectname) %(refname)"], build_files(100), runs)
    print(f"{'startup (100 refs)':<18} {'':>8} {floor[0] * 1000:>9.0f} / {floor[1] * 1000:>6.0f} ms"
          f" {gfloor[0] * 1000:>6.0f} / {gfloor[1] * 1000:>4.0f} ms")  # fmt: skip
    for fmt in formats:
        for n in sizes:
            path = build_files(n) if fmt == "files" else build_reftable(n)
            r = runs if n < 1_000_000 else max(3, runs // 2)
            ours = timed([*refscope, "list", "--json"], path, r)
            cheap = timed([gitbin, "for-each-ref", "--format=%(objectname) %(refname)"], path, r)
            default = timed([gitbin, "for-each-ref"], path, 1)
            print(
                f"{fmt + '-' + str(n):<18} {n:>8} {ours[0] * 1000:>9.0f} / {ours[1] * 1000:>6.0f} ms"
                f" {cheap[0] * 1000:>6.0f} / {cheap[1] * 1000:>4.0f} ms {ours[0] / cheap[0]:>10.2f}"
                f" {ours[1] / cheap[1]:>9.2f} {default[0] * 1000:>9.0f} / {default[1] * 1000:>5.0f}"
            )
    print()
    print(f"{'open snapshot':<18} {'import ms':>10} {'first 50 rows ms':>17} {'len() ms':>9} {'row(n/2) ms':>12}"
          f" {'RSS MB':>7}")  # fmt: skip
    for fmt in formats:
        n = max(sizes)
        path = build_files(n) if fmt == "files" else build_reftable(n)
        imp, first, ln, mid, rss, count = open_probe(path, 5)
        print(f"{fmt + '-' + str(count):<18} {imp:>10.1f} {first:>17.1f} {ln:>9.1f} {mid:>12.1f} {rss:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
