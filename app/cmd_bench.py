"""``refscope bench [-C PATH] [--git PATH ...] [--runs N] [--json] (REF... | --stdin)``.

The same deletion transaction through the native engine and the git engine (the repository's git, i.e.
``$REFSCOPE_GIT`` or ``git`` on PATH, then every ``--git`` binary), on scratch copies of the ref storage,
alternating runs; prints one table (or ``--json``). The real repository is only read. ``--stdin`` lines are
``REF [OLD_OID]``; refs given without an old value are expected at their current value.
Exit 0 after printing, 1 on an error (one line on stderr), 2 on a usage error.
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope bench [-C PATH] [--git PATH ...] [--runs N] [--json] (REF... | --stdin)"


def _parse(argv: list[str]):
    import argparse

    p = argparse.ArgumentParser(prog="refscope bench", usage=USAGE[len("usage: ") :], add_help=True)
    p.add_argument("-C", dest="dirs", action="append", default=[])
    p.add_argument("--git", action="append", default=[], metavar="PATH")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--stdin", action="store_true")
    p.add_argument("--scratch", default=None, help=argparse.SUPPRESS)
    p.add_argument("refs", nargs="*")
    args = p.parse_args(argv)
    from .args import fold_dirs

    args.path = fold_dirs(args.dirs)  # each -C relative to the one before, as git's
    if args.stdin == bool(args.refs) or args.runs < 1:
        p.error("give REF... or --stdin (not both), and --runs >= 1")
    return args


def run(argv: list[str]) -> int:
    import os

    args = _parse(argv)
    if args.stdin:
        from refscope.backend.errors import BadLine
        from refscope.backend.queuefile import parse_lines

        try:
            deletions = parse_lines(sys.stdin.buffer.read())
        except BadLine as err:
            from refscope.backend.display import emit, line

            emit([line("refscope bench: bad --stdin line: ", err.line)], sys.stderr)
            return 2
    else:
        deletions = [(os.fsencode(r), None) for r in args.refs]

    from refscope.backend.bench import run_bench
    from refscope.backend.benchtable import format_lines, result_json
    from refscope.backend.display import emit, to_json
    from refscope.backend.repo import discover

    repo = discover(args.path)
    gits = [os.environ.get("REFSCOPE_GIT") or "git", *args.git]
    result = run_bench(repo, deletions, gits, runs=args.runs, scratch_root=args.scratch)
    if args.json:
        sys.stdout.write(to_json(result_json(result)) + "\n")
    else:
        emit(format_lines(result))
    return 0
