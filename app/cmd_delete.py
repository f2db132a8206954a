"""``refscope delete [-C PATH] [--engine native|git] [--no-deref] [--stdin] [--json] [REF...]``.

One atomic transaction deleting every REF (and, with ``--stdin``, every line ``REF [OLD_OID]``; an OLD_OID is
checked under the locks). Exit 0 when committed, 1 when refused (nothing on disk changed; one line
``refscope: <file>: <what>`` on stderr), 2 on a usage error.

``--json`` prints one object: ``{"committed", "engine", "deleted", "wall_ms", "cpu_ms",
"syscalls": {"total", "by_name", "source"}, "phases": [...]}``; the top-level figures are the commit's
(first lock to last unlink); opening the repository and the snapshot are phases of their own.
Without ``--json`` one summary line goes to stderr.

Import discipline: this module imports only what the delete path needs, lazily, so the whole process
stays within git's own ``update-ref -d`` time.
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: refscope delete [-C PATH] [--engine native|git] [--no-deref] [--allow-checked-out] "
    "[--stdin] [--json] [REF...]"
)


class _Args:
    __slots__ = ("path", "engine", "no_deref", "stdin", "json", "refs", "allow_checked_out")

    def __init__(self, opts) -> None:
        import os

        flags = opts.flags
        self.path: str | None = opts.path
        self.engine: str = opts.values.get("--engine", "native")
        self.no_deref = "--no-deref" in flags
        self.stdin = "--stdin" in flags
        self.json = "--json" in flags
        self.allow_checked_out = "--allow-checked-out" in flags
        self.refs: list[tuple[bytes, bytes | None]] = [(os.fsencode(r), None) for r in opts.operands]


_FLAGS = ("--json", "--stdin", "--no-deref", "--allow-checked-out")


def _parse(argv: list[str]) -> _Args | None:
    from .args import parse

    opts = parse(argv, _FLAGS, ("--engine",), operands=True)
    if opts is None or opts.values.get("--engine", "native") not in ("native", "git"):
        return None
    return _Args(opts)


def _stdin_refs() -> list[tuple[bytes, bytes | None]] | None:
    from refscope.backend.errors import BadLine
    from refscope.backend.queuefile import parse_lines

    try:
        return parse_lines(sys.stdin.buffer.read())
    except BadLine:
        return None


def _emit(obj: dict) -> None:
    from refscope.backend.display import to_json

    sys.stdout.write(to_json(obj) + "\n")


_SIDE_MIN = 1000  # names from which a reftable delete reads the reflog entries in a second process


class _SideReads:
    """The deleted refs' reflog entries (``engines.reftable.read_ahead``) read from the snapshot by a forked
    child (``backend.parallel``) while this process checks the names and reads their records: a 10k-name
    delete scans every log block, and a second core halves the wall time of that part. The child's result
    goes into the transaction (``Transaction.add_reads``); if the child fails, the transaction reads them
    itself, so errors surface as in one process."""

    def __init__(self, txn, names: list[bytes]) -> None:
        from refscope.backend.parallel import Forked, may_fork

        self.child = None
        snap = txn.snapshot
        if snap is None or snap.format != "reftable" or snap.worktree_stack is not None or not may_fork():
            return
        self.txn = txn
        self.child = Forked(_log_reads, snap, names)

    def finish(self) -> None:
        """Wait for the child and hand its reads to the transaction (nothing when it failed)."""
        if self.child is None:
            return
        from refscope.backend.parallel import FAILED

        got = self.child.result()
        self.child = None
        if got is not FAILED:
            from refscope.backend.engines.reftable import StackReads

            d, names, logged, logs = got
            self.txn.add_reads(StackReads(d, names, {}, frozenset(logged), logs))

    def abandon(self) -> None:
        if self.child is not None:
            self.child.abandon()
            self.child = None


def _log_reads(snap, names: list[bytes]) -> tuple:
    """(In the child) the reflog reads of ``names``, as plain values for marshal."""
    from refscope.backend.engines.reftable import read_ahead

    reads = read_ahead(snap, [], None, names)
    return reads.dir, reads.names, sorted(reads.logged), reads.logs


def run(argv: list[str]) -> int:
    args = _parse(argv)
    if args is None:
        print(USAGE, file=sys.stderr)
        return 2
    if args.stdin:
        more = _stdin_refs()
        if more is None:
            print("refscope delete: --stdin lines are 'REF [OLD_OID]'", file=sys.stderr)
            return 2
        args.refs.extend(more)
    if not args.refs:
        print(USAGE, file=sys.stderr)
        return 2

    from refscope.backend.errors import RefscopeError
    from refscope.backend.meter import measure

    phases = []
    with measure("open") as m:
        from refscope.backend.repo import discover
        from refscope.backend.store import open_store

        repo = discover(args.path)
        store = open_store(repo)
    phases.append(m.report)

    from refscope.backend.txn import Transaction

    txn = Transaction(store, args.engine, no_deref=args.no_deref, allow_checked_out=args.allow_checked_out)
    side = None
    try:
        if args.engine == "native" and store.format == "reftable" and len(args.refs) >= _SIDE_MIN:
            side = _SideReads(txn, [n for n, _old in args.refs])
        txn.delete_many(args.refs)
        if side is not None:
            side.finish()
        result = txn.commit()
    except RefscopeError as err:
        if side is not None:
            side.abandon()
        if args.json:
            _emit(
                {
                    "committed": False,
                    "engine": args.engine,
                    "deleted": [],
                    "error": err.brief,
                    "file": err.file,
                    "phases": [p.to_json() for p in phases],
                }
            )
        sys.stdout.flush()
        print(err.cli_line(), file=sys.stderr)
        return 1
    rep = result.report
    if args.json:
        _emit(
            {
                "committed": True,
                "engine": result.engine,
                "deleted": list(result.deleted),
                "missing": list(result.missing),
                "wall_ms": round(rep.wall_ms, 3),
                "cpu_ms": round(rep.cpu_ms, 3),
                "syscalls": rep.syscalls_json(),
                "phases": [p.to_json() for p in [*phases, *result.phases]],
            }
        )
    else:
        from refscope.backend.display import emit, line

        missing = result.missing
        gone = f", {len(missing)} not found" if missing else ""
        lines = [
            line(
                f"refscope delete: {len(result.deleted)} deleted{gone} ({result.engine}); "
                f"commit {rep.wall_ms:.2f} ms, {rep.syscalls_total} syscalls ({rep.source})"
            )
        ]
        lines += [line("refscope delete: not found: ", name) for name in missing[:_MISSING_SHOWN]]
        if len(missing) > _MISSING_SHOWN:
            lines.append(line(f"refscope delete: ... and {len(missing) - _MISSING_SHOWN:,} more not found"))
        emit(lines, sys.stderr)
    return 0


_MISSING_SHOWN = 10  # names of refs not found listed on stderr (--json lists them all)
