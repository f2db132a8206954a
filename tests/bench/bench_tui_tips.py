"""Benchmark the TUI's tip columns on a big repository with Pilot (not collected by pytest; issue 16).

    .venv/bin/python tests/bench/bench_tui_tips.py build DIR REFS COMMITS   # a repo via git fast-import
    .venv/bin/python tests/bench/bench_tui_tips.py DIR

Prints: the first screen with dates and subjects from process start, the background scan of every tip,
sorting every row by committer date (and the worst event-loop lag meanwhile: how late a 5 ms timer
fires, i.e. how long a frame waits), a ``!merged >90d`` filter, and the RSS.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import asyncio  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from procstat import rss_mb  # noqa: E402


def build(path: str, refs: int, commits: int) -> None:
    git = os.environ.get("REFSCOPE_GIT", "git")
    subprocess.run([git, "init", "-q", "-b", "main", path], check=True)
    lines = []
    for i in range(1, commits + 1):
        msg = f"commit number {i}\n"
        lines.append(
            f"commit refs/heads/main\nmark :{i}\nauthor Au{i % 97} <au@example.com> {1600000000 + i * 600} +0000\n"
            f"committer Co <co@example.com> {1600000000 + i * 600} +0000\ndata {len(msg)}\n{msg}"
            + (f"from :{i - 1}\n" if i > 1 else "")
            + "\n"
        )
    for r in range(refs):
        lines.append(f"reset refs/heads/branch/{r // 1000}/b{r:07d}\nfrom :{1 + (r * 7919) % commits}\n\n")
    subprocess.run([git, "fast-import", "--quiet"], cwd=path, input="".join(lines).encode(), check=True)
    subprocess.run([git, "pack-refs", "--all"], cwd=path, check=True)


async def lagging(app, done, out: dict, key: str, t: float | None = None) -> None:
    worst = 0.0
    t = time.perf_counter() if t is None else t
    while not done():
        k = time.perf_counter()
        await asyncio.sleep(0.005)
        worst = max(worst, (time.perf_counter() - k) * 1e3 - 5)
        if time.perf_counter() - t > 600:
            break
    await app.workers.wait_for_complete()
    out[key + "_ms"] = (time.perf_counter() - t) * 1e3
    out[key + "_worst_lag_ms"] = worst


async def bench(path: str, out: dict) -> None:
    from refscope.app import cmd_tui
    from refscope.app.tui.widgets.ref_list import RefList

    args = cmd_tui.parse(["-C", path, "--no-watch"])
    app = cmd_tui.build_app(args)
    async with app.run_test(size=(160, 50)) as pilot:
        reflist = app.screen.query_one(RefList)
        screen = app.screen
        while True:
            await pilot.pause()
            line = reflist.render_line(0).text if reflist.virtual_size.height else ""
            if line.strip() and "first_screen_ms" not in out:
                out["first_screen_ms"] = (time.perf_counter() - T0) * 1e3
            if " ago " in line:
                break
        out["first_screen_with_tips_ms"] = (time.perf_counter() - T0) * 1e3
        await lagging(app, lambda: screen.tips_scanned is not None and screen.tips_scanned[0] >= screen.tips_scanned[1],
                      out, "tip_scan")  # fmt: skip
        out["refs"] = app.ref_count()

        def idle() -> bool:
            return not any(
                w.state.name in ("PENDING", "RUNNING") for w in app.workers if w.group == "prepare"
            )

        screen.sort = "version"  # (S from version: the date order)
        before = reflist.view
        t = time.perf_counter()
        await pilot.press("S")
        await lagging(app, lambda: reflist.view is not before and idle(), out, "date_sort", t)
        out["date_sort_first_row"] = reflist._name_at(0).decode()
        before = reflist.view
        screen.apply_filter("!merged >90d")
        await lagging(app, lambda: reflist.view is not before and idle(), out, "filter_notmerged_old")
        out["filter_notmerged_old_shown"] = len(reflist.view)
        before = reflist.view
        screen.apply_filter("refs/heads/branch/5 >1y")
        await lagging(app, lambda: reflist.view is not before and idle(), out, "filter_name_newer")
        out["filter_name_newer_shown"] = len(reflist.view)
        out["rss_mb"] = rss_mb()


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    result: dict = {}
    asyncio.run(bench(sys.argv[1], result))
    for k, v in result.items():
        print(f"{k:34} {v:,.1f}" if isinstance(v, float) else f"{k:34} {v}")
