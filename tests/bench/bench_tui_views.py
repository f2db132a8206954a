"""Storage views on 1M refs: time to first rows, time until every background count is done, and the cost of a
frame while scrolling (TUI-VIEWS). Not collected by pytest; run ``.venv/bin/python tests/bench/bench_tui_views.py``.

Repos are built once under /tmp/refscope-bench-views (1M refs through ``git update-ref --stdin`` for reftable,
plus a few small tables; a 1M-record packed-refs written directly for files).
"""

from __future__ import annotations

import asyncio
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from refscope.app.tui.fake_meter import FakeMeter  # noqa: E402
from refscope.app.tui.screens.packed import PackedScreen  # noqa: E402
from refscope.app.tui.screens.reflog import ReflogScreen  # noqa: E402
from refscope.app.tui.screens.stack import StackScreen  # noqa: E402
from refscope.app.tui.screens.table import TableScreen  # noqa: E402
from refscope.app.tui.widgets.rows import RowsView  # noqa: E402

from tests.support.git import git, init_repo  # noqa: E402
from tests.support.tui import Host, open_store, wait_for  # noqa: E402

ROOT = Path("/tmp/refscope-bench-views")
N = int(os.environ.get("BENCH_REFS", "1000000"))
SIZE = (140, 45)


def reftable_repo() -> Path:
    repo = ROOT / f"rt-{N}"
    if (repo / ".git/reftable/tables.list").exists():
        return repo
    init_repo(repo, fmt="reftable")
    oid = git(repo, "rev-parse", "HEAD").strip().decode()
    git(
        repo,
        "update-ref",
        "--stdin",
        input="".join(f"create refs/heads/b/{i:07d} {oid}\n" for i in range(N)).encode(),
    )
    for i in range(3):
        git(repo, "update-ref", f"refs/heads/small/{i}", "HEAD")
    return repo


def files_repo() -> Path:
    repo = ROOT / f"files-{N}"
    if (repo / ".git/packed-refs").exists():
        return repo
    init_repo(repo, fmt="files")
    oid = git(repo, "rev-parse", "HEAD").strip()
    lines = [b"# pack-refs with: peeled fully-peeled sorted \n"]
    lines += [oid + b" refs/heads/b/%07d\n" % i for i in range(N)]
    (repo / ".git/packed-refs").write_bytes(b"".join(lines))
    return repo


async def frames(pilot, view, rows: int, samples: int = 200) -> tuple[float, float]:
    """(median ms, p95 ms) of CPU time (this thread's: robust to a loaded machine) to render one full screen
    of lines after a jump to a random row."""
    height = view.size.height
    out = []
    rnd = random.Random(7)
    for _ in range(samples):
        view.move_to(rnd.randrange(rows))
        t = time.thread_time()
        for y in range(height):
            view.render_line(y)
        out.append((time.thread_time() - t) * 1000)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.95)]


async def keys(pilot, key: str, n: int = 30) -> float:
    """Mean ms per key press (Pilot: key event, cursor move, repaint)."""
    t = time.perf_counter()
    for _ in range(n):
        await pilot.press(key)
    await pilot.pause()
    return (time.perf_counter() - t) * 1000 / n


FIRST_ROWS: list[float] = []
_set_source = RowsView.set_source


def _recording_set_source(self, source, cursor=None):
    """Notes when any view first gets rows (what the user sees first), without waiting for Pilot."""
    if len(source) and not FIRST_ROWS:
        FIRST_ROWS.append(time.perf_counter())
    return _set_source(self, source, cursor)


RowsView.set_source = _recording_set_source


async def measure(name: str, make, ready_first, ready_full, view_of, rows_of) -> dict:
    app = Host(make)
    FIRST_ROWS.clear()
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: ready_first(app.screen), timeout=60)
        first = ((FIRST_ROWS[0] if FIRST_ROWS else time.perf_counter()) - t0) * 1000
        await wait_for(pilot, lambda: ready_full(app.screen), timeout=120)
        full = (time.perf_counter() - t0) * 1000
        view = view_of(app.screen)
        view.focus()
        med, p95 = await frames(pilot, view, rows_of(app.screen))
        per_key = await keys(pilot, "pagedown")
    return {
        "view": name,
        "first_ms": first,
        "all_counts_ms": full,
        "frame_med_ms": med,
        "frame_p95_ms": p95,
        "pagedown_ms": per_key,
    }


async def main() -> None:
    rt, fl = reftable_repo(), files_repo()
    rt_store, fl_store = open_store(rt), open_store(fl)
    results = []
    big = rt_store.snapshot().tables[0]
    results.append(
        await measure(
            "stack (reftable)",
            lambda: StackScreen(rt_store, rt_store.snapshot(), FakeMeter(), follow=False),
            lambda s: isinstance(s, StackScreen) and len(s.tables_view.source) > 0,
            lambda s: all(x.ref_records >= 0 for x in s.summaries),
            lambda s: s.tables_view,
            lambda s: len(s.tables_view.source),
        )
    )
    results.append(
        await measure(
            f"table ({big.size >> 20} MiB)",
            lambda: TableScreen(big),
            lambda s: isinstance(s, TableScreen) and len(s.records) > 0,
            lambda s: not any(w.is_running for w in s.app.workers),
            lambda s: s.blocks_view,
            lambda s: len(s.blocks),
        )
    )
    results.append(
        await measure(
            "packed-refs (files)",
            lambda: PackedScreen(fl_store.snapshot(), b"refs/heads/b/0500000", store=fl_store, follow=False),
            lambda s: isinstance(s, PackedScreen) and s.index is not None and s.index.done,
            lambda s: s.index is not None and s.index.done,
            lambda s: s.records,
            lambda s: s.index.count,
        )
    )
    results.append(
        await measure(
            "reflog (reftable)",
            lambda: ReflogScreen(rt_store.snapshot(), b"refs/heads/b/0999999"),
            lambda s: isinstance(s, ReflogScreen) and s.loaded,
            lambda s: True,
            lambda s: s.query_one("#reflog-rows"),
            lambda s: max(1, len(s.entries)),
        )
    )
    print(
        f"{N:,} refs; terminal {SIZE[0]}x{SIZE[1]}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print("first rows / all counts: wall ms from app start (Textual's own start included); frame: CPU ms to")
    print("render a full screen after a random jump; pagedown: wall ms per Pilot key press incl. repaint")
    print(
        f"{'view':<22} {'first rows':>11} {'all counts':>11} {'frame med':>10} {'frame p95':>10} {'pagedown':>9}"
    )
    for r in results:
        print(
            f"{r['view']:<22} {r['first_ms']:>9.0f}ms {r['all_counts_ms']:>9.0f}ms {r['frame_med_ms']:>8.2f}ms "
            f"{r['frame_p95_ms']:>8.2f}ms {r['pagedown_ms']:>7.1f}ms"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the whole run (all four views, both 1M repos open): {rss:.0f} MiB")


if __name__ == "__main__":
    asyncio.run(main())
