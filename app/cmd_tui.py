"""``refscope [-C PATH] [--demo [files|reftable]] [--demo-dir DIR] [--engine native|git] [--no-watch]``: the
Textual app (the default command).

Textual is imported here and only here, lazily: headless commands never pay for it.
"""

from __future__ import annotations

import argparse
import os
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="refscope", description="Browse, watch and edit git refs.")
    parser.add_argument("-C", dest="dirs", action="append", default=[], help="run as if started in PATH")
    parser.add_argument(
        "--demo",
        nargs="?",
        const="files",
        choices=("files", "reftable"),
        help="build the demo repositories (both formats) in a temp dir, removed on exit, and open one "
        "(default: files)",
    )
    parser.add_argument(
        "--demo-dir",
        metavar="DIR",
        default=None,
        help="with --demo: build them in DIR instead and keep them (DIR/files, DIR/reftable)",
    )
    parser.add_argument("--engine", choices=("native", "git"), default="native", help="engine for commits")
    parser.add_argument("--no-watch", action="store_true", help="do not follow changes live")
    args = parser.parse_args(argv)
    from .args import fold_dirs

    args.path = fold_dirs(args.dirs)  # each -C relative to the one before, as git's
    return args


def build_app(args: argparse.Namespace, meter=None, first_open_fatal: bool = False):
    """The app for these arguments (also used by scripts/screenshots and tests). ``first_open_fatal``:
    a store that cannot be opened ends the app (``run``) instead of being shown in place."""
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    from .tui.app import RefscopeApp

    # The switch interval is the slice of the GIL a thread keeps while another waits for it. Workers that
    # index, scan or sort a big snapshot are CPU-bound: a long slice makes the UI thread wait that long
    # for every hand-back, a short one cuts a frame being painted (tens of ms of Python) into many
    # slices, each waiting for a worker's next C call to end. The value is the one that kept frames
    # within budget in tests/bench/bench_tui_tips.py on 1M refs. This process runs only the TUI, so the
    # global setting is ours to choose.
    sys.setswitchinterval(0.002)
    from refscope.backend.heap import fix_mmap_threshold

    fix_mmap_threshold()  # (the big arrays' memory goes back when freed: see backend/heap.py)
    path = args.path
    if args.demo:
        path = demo_repo(args.demo, args.demo_dir)
    repo = discover(path)
    store = open_store(repo)
    shown = repo.worktree or repo.gitdir
    return RefscopeApp(
        store,
        repo=repo,
        repo_path=shown,
        meter=meter,
        engine=args.engine,
        watch=not args.no_watch,
        first_open_fatal=first_open_fatal,
    )


def demo_repo(fmt: str = "files", base: str | None = None) -> str:
    """Build the demo repository in both formats (no git needed) under ``base`` (a fresh temp dir by
    default) and return the path of the ``fmt`` one."""
    import tempfile

    from refscope.backend.demo import build_demo

    base = base or tempfile.mkdtemp(prefix="refscope-demo-")
    paths = {f: build_demo(os.path.join(base, f), f) for f in ("files", "reftable")}
    return paths[fmt]


def run(argv: list[str]) -> int:
    try:
        args = parse(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and 2
    if not sys.stdout.isatty():
        print("refscope: the TUI needs a terminal (see `refscope list` for scripts)", file=sys.stderr)
        return 2
    if args.demo and args.demo_dir is None:
        import tempfile

        args.demo_dir = tempfile.mkdtemp(prefix="refscope-demo-")
        try:
            return _run_app(args)
        finally:
            import shutil

            shutil.rmtree(args.demo_dir, ignore_errors=True)
    return _run_app(args)


def _run_app(args: argparse.Namespace) -> int:
    app = build_app(args, first_open_fatal=True)
    app.run()
    if app.crash is not None:
        # Textual has restored the terminal by now: the one line goes where the shell shows it
        print(crash_line(app.crash, app.repo.gitdir if app.repo is not None else None), file=sys.stderr)
        return 1
    return app.return_code or 0


def crash_line(error: BaseException, where: str | None) -> str:
    """``refscope: <file>: <what>`` for what ended the app: a typed error's own line; otherwise the file
    the OS named (or the repository) and the error's type and message (its traceback is logged)."""
    from refscope.backend.errors import RefscopeError

    from .tui.workers import failure_line

    if isinstance(error, RefscopeError):
        return error.cli_line()
    return "refscope: " + failure_line(error, where)
