"""``refscope list [-C PATH] [--json] [PATTERN...]``: the refs ``git for-each-ref`` prints, in its order;
with ``--format``, ``--sort``, ``--count``, ``--points-at``, ``--merged``, ``--no-merged``, ``--contains``,
``--no-contains`` or ``--omit-empty``, what ``git for-each-ref`` prints with them.

The listing, its fast paths and its JSON are ``backend.listing``'s; the for-each-ref language is
``backend.refformat``'s; patterns are for-each-ref's (``backend.refpattern``). This module reads the
command line and opens the repository.
"""

from __future__ import annotations

USAGE = (
    "usage: refscope list [-C PATH] [--json] [--format=FORMAT] [--sort=KEY]... [--count=N]\n"
    "                     [--points-at=OBJECT] [--merged[=COMMIT]] [--no-merged[=COMMIT]]\n"
    "                     [--contains[=COMMIT]] [--no-contains[=COMMIT]] [--omit-empty] [PATTERN...]"
)
_REVS = ("--merged", "--no-merged", "--contains", "--no-contains")


def run(argv: list[str]) -> int:
    from .args import parse_or_usage

    opts = parse_or_usage(
        argv,
        USAGE,
        flags=("--json", "--omit-empty"),
        values=("--format", "--count"),
        repeat=("--sort", "--points-at"),
        optional={k: "HEAD" for k in _REVS},
        operands=True,
    )
    if opts is None:
        return 2
    import os

    as_json = "--json" in opts.flags
    foreach = bool(opts.values or opts.lists or "--omit-empty" in opts.flags)
    if as_json and foreach:
        import sys

        sys.stderr.write("refscope: --json cannot be combined with for-each-ref's options\n" + USAGE + "\n")
        return 2
    count = None
    if "--count" in opts.values:
        from refscope.backend.errors import CountError
        from refscope.backend.refformat.count import parse_count

        try:
            count = parse_count(opts.values["--count"])  # git: 0 is no limit
        except CountError as err:
            import sys

            sys.stderr.write(f"refscope: {err}\n{USAGE}\n")
            return 2
    plan = None
    if foreach:
        from refscope.backend.refformat.run import plan as make_plan

        fmt = opts.values.get("--format")
        plan = make_plan(None if fmt is None else os.fsencode(fmt), opts.lists.get("--sort", []))

    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    repo = discover(opts.path)
    snap = open_store(repo).snapshot()
    patterns = [os.fsencode(p) for p in opts.operands]
    tty = os.isatty(1)
    if plan is not None:
        from refscope.backend.display import escape_lines
        from refscope.backend.refformat import command

        revs = {k[2:].replace("-", "_"): v for k, v in opts.lists.items() if k != "--sort"}
        command.run(repo, snap, plan, patterns, revs=revs, count=count, omit_empty="--omit-empty" in opts.flags,
                    escape=escape_lines if tty else None)  # fmt: skip
        return 0
    from refscope.backend.listing import list_refs

    list_refs(snap, patterns, as_json, not as_json and tty)
    return 0
