"""``refscope list [-C PATH] [--json] [PATTERN...]``: the refs ``git for-each-ref`` prints, in its order.

The listing, its fast paths and its JSON are ``backend.listing``'s; patterns are for-each-ref's
(``backend.refpattern``). This module reads the command line and opens the repository.
"""

from __future__ import annotations

USAGE = "usage: refscope list [-C PATH] [--json] [PATTERN...]"


def run(argv: list[str]) -> int:
    from .args import parse_or_usage

    opts = parse_or_usage(argv, USAGE, operands=True)
    if opts is None:
        return 2
    import os

    from refscope.backend.listing import list_refs
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    repo = discover(opts.path)
    snap = open_store(repo).snapshot()
    as_json = "--json" in opts.flags
    list_refs(snap, [os.fsencode(p) for p in opts.operands], as_json, not as_json and os.isatty(1))
    return 0
