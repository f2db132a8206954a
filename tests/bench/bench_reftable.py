"""Reftable decoding at scale: a 1M-ref single-table stack made by git, read natively.

Run: ``.venv/bin/python tests/bench/bench_reftable.py [N] [DIR]`` (default 1,000,000 refs in a temp dir;
needs REFSCOPE_GIT or scripts/provision-git). Prints CPU milliseconds (best of 3) for opening a snapshot and
showing its first rows, decoding every ref block, streaming names / columns / Ref objects, building the row
index, and ``git for-each-ref`` over the same repository for comparison.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from refscope.backend.repo import discover  # noqa: E402
from refscope.backend.store import open_store  # noqa: E402

from tests.support.git import git, git_binary, init_repo  # noqa: E402


def make(path: Path, n: int) -> None:
    init_repo(path, fmt="reftable")
    head = git(path, "rev-parse", "HEAD").strip().decode()
    lines = "".join(f"create refs/heads/pr/{i:07d}/head {head}\n" for i in range(n))
    git(path, "update-ref", "--stdin", input=lines.encode())
    git(path, "pack-refs")


def first_rows(st) -> int:
    s = st.snapshot()
    return len([s.row(i) for i in range(50)])


def best(f, k: int = 3):
    r = []
    x = None
    for _ in range(k):
        t0 = time.process_time()
        x = f()
        r.append(time.process_time() - t0)
    return min(r) * 1000, x


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    path = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp()) / "big"
    if not (path / ".git" / "reftable").exists():
        make(path, n)
    st = open_store(discover(str(path)))
    snap = st.snapshot()
    t = snap.tables[0]

    def decode() -> int:
        return sum(len(rb.names) for rb, _i in t.iter_ref_blocks())

    rows = [
        ("open snapshot + first 50 rows", best(lambda: first_rows(st), 5)),
        ("decode every ref block", best(decode)),
        ("iter_names", best(lambda: sum(1 for _ in snap.iter_names()))),
        ("iter_columns", best(lambda: sum(len(c[0]) for c in snap.iter_columns()))),
        ("iter_from (Ref objects)", best(lambda: sum(1 for _ in snap.iter_from()))),
        ("full row index (len)", best(lambda: len(st.snapshot()))),
    ]
    full = st.snapshot()
    len(full)
    rows.append(("prefix_range after index", best(lambda: full.prefix_range(b"refs/heads/pr/05"))))
    rows.append(("lookup", best(lambda: snap.lookup(b"refs/heads/pr/0000123/head"))))
    g = []
    for _ in range(3):
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [git_binary(), "-C", str(path), "for-each-ref", "--format=%(objectname) %(refname)"],
            stdout=subprocess.DEVNULL,
            check=True,
        )
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        g.append((c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime))
    print(f"reftable, {t.size / 1e6:.1f} MB table, {len(full)} refs (CPU ms, best of 3)")
    for label, (ms, _x) in rows:
        print(f"  {label:32s} {ms:10.2f}")
    print(f"  {'git for-each-ref':32s} {min(g) * 1000:10.2f}")
    print(f"  max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (pid {os.getpid()})")


if __name__ == "__main__":
    main()
