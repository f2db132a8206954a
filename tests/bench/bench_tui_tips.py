"""Benchmark the TUI's tip columns on a big repository with Pilot (not collected by pytest; issue 16).

    .venv/bin/python tests/bench/bench_tui_tips.py build DIR REFS COMMITS   # a repo via git fast-import
    .venv/bin/python tests/bench/bench_tui_tips.py DIR

Prints: the first screen with dates and subjects from process start; sorting every row by committer date
right after the index is built (the background scan running), by version once the scan is over, and by
date again; the
filters ``>90d``, ``merged``, ``!merged >90d`` and ``refs/heads/ >1y`` (in the date order); the RSS and
its peak; the CPU time of the child processes that read the tips (``refformat/tip_child.py``). For each step: wall and CPU time (every thread of the process: on a loaded machine CPU is the
figure to compare), the worst event-loop lag meanwhile (how late a 5 ms timer fires, i.e. how long a
frame waits) and how many waits went over 50 ms.
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


def status_mb(key: str) -> float:
    """A size from /proc/self/status in MiB: VmHWM (peak resident set), RssAnon (the resident set
    without mapped files: packed-refs, packs and the commit-graph are mapped)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


async def lagging(app, done, out: dict, key: str, t: float | None = None) -> None:
    """Wait for ``done()`` while a 5 ms timer measures how late the event loop runs it (a frame's wait)."""
    worst = 0.0
    lags = []
    cpu = time.process_time()
    t = time.perf_counter() if t is None else t
    while not done():
        k = time.perf_counter()
        await asyncio.sleep(0.005)
        lag = (time.perf_counter() - k) * 1e3 - 5
        lags.append(lag)
        worst = max(worst, lag)
        if time.perf_counter() - t > 600:
            break
    out[key + "_ms"] = (time.perf_counter() - t) * 1e3
    out[key + "_cpu_ms"] = (time.process_time() - cpu) * 1e3  # (every thread of the process)
    out[key + "_worst_lag_ms"] = worst
    out[key + "_over_50ms"] = sum(1 for x in lags if x > 50)


def line_of(reflist) -> str:
    return reflist.render_line(0).text if reflist.virtual_size.height else ""


async def bench(path: str, out: dict) -> None:
    from refscope.app import cmd_tui
    from refscope.app.tui.widgets.ref_list import RefList

    args = cmd_tui.parse(["-C", path, "--no-watch"])
    app = cmd_tui.build_app(args)
    async with app.run_test(size=(160, 50)):
        reflist = app.screen.query_one(RefList)
        screen = app.screen
        # polled by a plain sleep: ``pilot.pause()`` waits for the process to go idle (up to 1 s)
        while True:
            await asyncio.sleep(0.005)
            line = line_of(reflist)
            if line.strip() and "first_screen_ms" not in out:
                out["first_screen_ms"] = (time.perf_counter() - T0) * 1e3
            if " ago " in line:
                break
        out["first_screen_with_tips_ms"] = (time.perf_counter() - T0) * 1e3
        out["first_screen_cpu_ms"] = time.process_time() * 1e3
        await lagging(app, lambda: screen.is_ready(), out, "index")

        def idle() -> bool:
            return not any(
                w.state.name in ("PENDING", "RUNNING") for w in app.workers if w.group == "prepare"
            )

        def scanned() -> bool:
            return screen.tips_scanned is not None and screen.tips_scanned[0] >= screen.tips_scanned[1]

        # S right away, the background scan running: from version (S: the date order)
        screen.sort = "version"
        before = reflist.view
        t = time.perf_counter()
        out["date_sort_scan_running"] = not scanned()
        screen.action_cycle_sort()  # (S: not ``pilot.press``, which waits for idle, up to 1 s unmeasured)
        await lagging(app, lambda: reflist.view is not before and idle(), out, "date_sort", t)
        out["date_sort_first_row"] = reflist._name_at(0).decode()
        out["date_sort_first_line_has_tips"] = " ago " in line_of(reflist)
        await lagging(app, scanned, out, "tip_scan_rest")
        out["tip_scan_from_launch_ms"] = (time.perf_counter() - T0) * 1e3
        while any(w.state.name in ("PENDING", "RUNNING") for w in app.workers):
            await asyncio.sleep(
                0.01
            )  # (not ``wait_for_complete``: it raises for a superseded, cancelled worker)
        # S from name: every row by version (``--sort=version:refname``)
        screen.sort = "name"
        before = reflist.view
        screen.action_cycle_sort()
        await lagging(app, lambda: reflist.view is not before and idle(), out, "version_sort")
        out["version_sort_first_row"] = reflist._name_at(0).decode()
        # the same date sort once the scan has read everything (S from version again, the view unfiltered)
        screen.sort = "version"
        before = reflist.view
        screen.action_cycle_sort()
        await lagging(app, lambda: reflist.view is not before and idle(), out, "date_sort_after_scan")
        out["refs"] = app.ref_count()
        out["tips"] = len(screen.facts.table)
        # (bench_objects.py's repository has an unborn HEAD: its merged base is refs/heads/b0)
        merged = "merged:refs/heads/b0" if app.snapshot.lookup(b"refs/heads/b0") else "merged"
        for key, text in (
            ("filter_old", ">90d"),
            ("filter_merged", merged),
            ("filter_notmerged_old", f"!{merged} >90d"),
            ("filter_name_old", "refs/heads/ >1y"),
        ):
            old = reflist.view
            t = time.perf_counter()
            screen.apply_filter(text)
            # (a filter the repository refuses, e.g. ``merged`` when HEAD's branch has no commit, keeps the
            # view and says why: stop there, not at the 600 s cap)
            await lagging(
                app,
                lambda old=old: (reflist.view is not old or screen.filter_error) and idle(),
                out,
                key,
                t,
            )
            out[key + "_shown"] = screen.filter_error or len(reflist.view)
        import resource

        r = resource.getrusage(resource.RUSAGE_CHILDREN)  # (the tip readers, reaped by now)
        out["children_cpu_ms"] = (r.ru_utime + r.ru_stime) * 1e3
        out["tips_read_by_children"] = screen.facts.child_read
        out["rss_mb"] = rss_mb()
        out["peak_rss_mb"] = status_mb("VmHWM")
        out["rss_anon_mb"] = status_mb("RssAnon")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    result: dict = {}
    asyncio.run(bench(sys.argv[1], result))
    for k, v in result.items():
        print(f"{k:34} {v:,.1f}" if isinstance(v, float) else f"{k:34} {v}")
