"""``refscope bench [-C PATH] [--git PATH ...] [--runs N] [--warmup N] [--json]
(REF... | --stdin | --update [-z] [-m MSG])``.

The same transaction through the native engine and git (the repository's git, i.e. ``$REFSCOPE_GIT``
or ``git`` on PATH, then every ``--git`` binary), on scratch copies of the ref storage,
alternating runs; prints one table (or ``--json``). The real repository is only read.

Two kinds of transaction: a deletion (REF... or ``--stdin`` lines ``REF [OLD_OID]``; refs given without an
old value are expected at their current value), or, with ``--update``, any transaction in git's ``update-ref
--stdin`` language on standard input (LF lines, or NUL-terminated with ``-z``; ``-m`` the reflog message).
The input is read and checked once, before anything runs: a line git would refuse is one line on stderr and
exit 2. An engine that refuses the transaction in the scratch copies is a row saying so.
Exit 0 after printing (an update bench: 1 when every engine refused), 1 on an error (one line on stderr),
2 on a usage error or a bad input line.
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: refscope bench [-C PATH] [--git PATH ...] [--runs N] [--warmup N] [--json] "
    "(REF... | --stdin | --update [-z] [-m MSG])"
)


def _parse(argv: list[str]):
    import argparse

    p = argparse.ArgumentParser(prog="refscope bench", usage=USAGE[len("usage: ") :], add_help=True)
    p.add_argument("-C", dest="dirs", action="append", default=[])
    p.add_argument("--git", action="append", default=[], metavar="PATH")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--stdin", action="store_true")
    p.add_argument("--update", action="store_true")
    p.add_argument("-z", dest="nul", action="store_true")
    p.add_argument("-m", dest="message", default=None)
    p.add_argument("--scratch", default=None, help=argparse.SUPPRESS)
    p.add_argument("refs", nargs="*")
    args = p.parse_args(argv)
    from .args import fold_dirs

    args.path = fold_dirs(args.dirs)  # each -C relative to the one before, as git's
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs N needs N >= 1, --warmup N needs N >= 0")
    if args.update:
        if args.refs:
            p.error("--update reads the transaction from standard input: no REF arguments")
    elif args.nul or args.message is not None:
        p.error("-z and -m go with --update")
    elif args.stdin == bool(args.refs):
        p.error("give REF... or --stdin (not both), and --runs >= 1")
    return args


def _say(text: str, *parts) -> None:
    from refscope.backend.display import emit, line

    emit([line(text, *parts)], sys.stderr)


def _commands(args, repo):
    """The update bench's commands, from standard input checked once as git would read it; an exit
    status (2) instead when the input is not one transaction git would take."""
    import os

    from refscope.backend.model import HASH_HEXSZ
    from refscope.backend.store import open_store
    from refscope.backend.update.commands import parse
    from refscope.backend.update.txn import UpdateTransaction

    if args.message is not None and not args.message:
        _say("refscope bench: Refusing to perform update with empty message.")
        return 2
    data = sys.stdin.buffer.read()
    # names given as values (``update refs/heads/a main``) are resolved in the real repository, once
    resolver = UpdateTransaction(open_store(repo), "native").resolver()
    parsed = parse(data, nul=args.nul, hexsz=HASH_HEXSZ[repo.hash_name], resolve=resolver)
    for w in parsed.warnings:
        _say("warning: ", w)
    if parsed.error is not None:
        _say("refscope bench: bad input: ", parsed.error.what)
        return 2
    batches = [b for b in parsed.batches if b.action == "commit"]
    if len(batches) > 1:
        _say(f"refscope bench: the input holds {len(batches)} transactions; bench runs one")
        return 2
    commands = batches[0].commands if batches else []
    if not commands:
        _say("refscope bench: the input holds no command to bench")
        return 2
    args.message_bytes = os.fsencode(args.message or "")
    return commands


def run(argv: list[str]) -> int:
    import os

    args = _parse(argv)
    from refscope.backend.repo import discover

    if args.update:
        repo = discover(args.path)
        commands = _commands(args, repo)
        if isinstance(commands, int):
            return commands
    elif args.stdin:
        from refscope.backend.errors import BadLine
        from refscope.backend.queuefile import parse_lines

        try:
            deletions = parse_lines(sys.stdin.buffer.read())
        except BadLine as err:
            _say("refscope bench: bad --stdin line: ", err.line)
            return 2
    else:
        deletions = [(os.fsencode(r), None) for r in args.refs]

    from refscope.backend.bench import run_bench, run_update_bench
    from refscope.backend.benchtable import format_lines, result_json
    from refscope.backend.display import emit, to_json

    gits = [os.environ.get("REFSCOPE_GIT") or "git", *args.git]
    if args.update:
        result = run_update_bench(
            repo,
            commands,
            gits,
            runs=args.runs,
            warmup=args.warmup,
            scratch_root=args.scratch,
            message=args.message_bytes,
        )
    else:
        repo = discover(args.path)
        result = run_bench(
            repo, deletions, gits, runs=args.runs, warmup=args.warmup, scratch_root=args.scratch
        )
    if args.json:
        sys.stdout.write(to_json(result_json(result)) + "\n")
    else:
        emit(format_lines(result))
    if args.update and all(row.refused is not None for row in result.rows):
        sys.stdout.flush()
        _say("refscope bench: every engine refused the transaction")
        return 1
    return 0
