"""Benchmark the TUI's main screen on a big repository with Pilot (not collected by pytest).

    .venv/bin/python tests/bench/bench_tui_main.py /tmp/big-reftable [/tmp/big-files ...]

Prints, per repository: import + first painted screen from process start, a jump to the end, a prefix jump,
a substring scan (and how long key presses take while it runs), and the RSS. "Frame" figures are the time to
run the action and render every visible line (what one repaint costs), measured in-process.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import asyncio  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from procstat import rss_mb  # noqa: E402


def render_visible(reflist) -> None:
    for y in range(reflist.size.height):
        reflist.render_line(y)


async def bench(path: str, out: dict) -> None:
    from refscope.app import cmd_tui
    from refscope.app.tui.widgets.ref_list import RefList

    out["import_ms"] = (time.perf_counter() - T0) * 1e3
    args = cmd_tui.parse(["-C", path, "--no-watch"])
    app = cmd_tui.build_app(args)
    first: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        reflist = app.screen.query_one(RefList)
        while not first:
            await pilot.pause()
            if reflist.virtual_size.height and app.screen.query_one(RefList).render_line(0).text.strip():
                first.append(time.perf_counter())
        out["first_screen_ms"] = (first[0] - T0) * 1e3
        out["first_paint_ms"] = (app.first_paint - T0) * 1e3 if getattr(app, "first_paint", None) else -1.0
        while app.ref_count() is None:  # the row index is built in a worker; the UI stays live meanwhile
            await pilot.pause()
        out["indexed_ms"] = (time.perf_counter() - T0) * 1e3
        out["refs"] = app.ref_count()
        screen = app.screen

        def timed(fn) -> float:
            t = time.perf_counter()
            fn()
            render_visible(reflist)
            return (time.perf_counter() - t) * 1e3

        out["jump_end_ms"] = timed(lambda: reflist.action_edge(1))
        out["jump_home_ms"] = timed(lambda: reflist.action_edge(0))
        out["page_down_ms"] = timed(lambda: reflist.action_page(1))
        out["prefix_jump_ms"] = timed(lambda: screen.apply_filter("refs/heads/branch/500/"))
        out["prefix_shown"] = len(reflist.view)
        out["prefix_clear_ms"] = timed(lambda: screen.apply_filter(""))
        # substring scan: time to completion, and key latency while it runs
        t = time.perf_counter()
        await pilot.press("slash")
        screen.query_one("#filter").value = "b0999"
        latencies = []  # event-loop lag while the scan runs: how late a 5 ms timer fires (UI responsiveness)
        while screen.query_one("#filter-progress").display or len(reflist.view) == out["refs"]:
            k = time.perf_counter()
            await asyncio.sleep(0.005)
            latencies.append((time.perf_counter() - k) * 1e3 - 5)
            if time.perf_counter() - t > 120:
                break
        await app.workers.wait_for_complete()
        out["scan_ms"] = (time.perf_counter() - t) * 1e3
        out["scan_shown"] = len(reflist.view)
        out["lag_samples"] = len(latencies)
        latencies.sort()
        out["loop_lag_median_ms"] = latencies[len(latencies) // 2] if latencies else 0.0
        out["loop_lag_max_ms"] = latencies[-1] if latencies else 0.0
        out["rss_mb"] = rss_mb()


def main() -> None:
    if os.environ.get("SWITCH"):
        sys.setswitchinterval(float(os.environ["SWITCH"]))
    for path in sys.argv[1:]:
        out: dict = {}
        asyncio.run(bench(path, out))
        print(os.path.basename(path.rstrip("/")))
        for k, v in out.items():
            print(f"  {k:<20} {v:,.1f}" if isinstance(v, float) else f"  {k:<20} {v:,}")


if __name__ == "__main__":
    main()
