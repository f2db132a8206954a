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

    def __init__(self) -> None:
        self.path: str | None = None
        self.engine = "native"
        self.no_deref = False
        self.stdin = False
        self.json = False
        self.allow_checked_out = False
        self.refs: list[tuple[bytes, bytes | None]] = []


def _parse(argv: list[str]) -> _Args | None:
    import os

    a = _Args()
    i = 0
    only_refs = False
    while i < len(argv):
        arg = argv[i]
        if only_refs or not arg.startswith("-") or arg == "-":
            a.refs.append((os.fsencode(arg), None))
        elif arg == "--":
            only_refs = True
        elif arg == "--json":
            a.json = True
        elif arg == "--stdin":
            a.stdin = True
        elif arg == "--no-deref":
            a.no_deref = True
        elif arg == "--allow-checked-out":
            a.allow_checked_out = True
        elif arg in ("-C", "--engine"):
            if i + 1 >= len(argv):
                return None
            i += 1
            if arg == "-C":
                a.path = argv[i]
            else:
                a.engine = argv[i]
        elif arg.startswith("--engine="):
            a.engine = arg[len("--engine=") :]
        elif arg.startswith("-C") and len(arg) > 2:
            a.path = arg[2:]
        elif arg in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        else:
            return None
        i += 1
    if a.engine not in ("native", "git"):
        return None
    return a


def _stdin_refs() -> list[tuple[bytes, bytes | None]] | None:
    data = sys.stdin.buffer.read()
    if not any(c in data for c in _BLANKS):  # names only (no OLD_OID, no blanks): one C-level split
        return [(line, None) for line in data.split(b"\n") if line]
    out = []
    for line in data.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) > 2:
            return None
        out.append((parts[0], parts[1] if len(parts) == 2 else None))
    return out


_BLANKS = (b" ", b"\t", b"\r", b"\v", b"\f")


def _emit(obj: dict) -> None:
    import json

    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _name(name: bytes) -> str:
    return name.decode("utf-8", "surrogateescape")


_SIDE_MIN = 1000  # names from which a reftable delete reads the reflog entries in a second process


class _SideReads:
    """Work a 10k-name reftable delete hands to a forked child (``backend.forked``) while this process checks
    the names: the deleted refs' reflog entries (``engines.reftable.read_ahead``: a scan of every log block)
    and then the table the commit writes (``engines.reftable.prebuild``), once ``plan`` has told it which
    refs exist. A second core halves the wall time of that part. The results go into the transaction
    (``add_reads``, ``add_table``), which uses them only when they match what it finds under the lock; if
    the child fails, the transaction reads and builds itself, so errors surface as in one process."""

    def __init__(self, txn, names: list[bytes]) -> None:
        from refscope.backend.forked import Forked, may_fork

        self.child = None
        self.rest = memoryview(b"")  # what of the plan the pipe has not taken yet
        snap = txn.snapshot
        if getattr(snap, "worktree_stack", True) is not None or not may_fork():
            return
        import os

        self.txn = txn
        r, self.w = os.pipe()
        self.child = Forked(_side_work, snap, txn.store.repo, names, r, self.w)
        os.close(r)

    def plan(self, records: dict | None) -> None:
        """Send the child the refs its table deletes: every one of ``records`` (name -> record, from the
        snapshot) that exists, unless one is a symref (then git logs through it: the commit builds that).
        Without blocking: the child reads the plan only once its log scan is done, and what the pipe does
        not take now is sent by ``finish``."""
        if self.child is None or self.w < 0:
            return
        msg = b""
        if records is not None:
            found = [r for r in records.values() if r is not None]
            if found and all(r.target is None for r in found):
                import marshal

                msg = marshal.dumps([r.name for r in found])
        import os

        os.set_blocking(self.w, False)
        self._send(memoryview(msg))

    def _send(self, view: memoryview) -> None:
        import os

        try:
            while view:
                view = view[os.write(self.w, view) :]
        except BlockingIOError:
            self.rest = view
            return
        os.close(self.w)  # the end of the plan
        self.w = -1

    def finish(self) -> None:
        """Wait for the child and hand its reads and table to the transaction (nothing when it failed)."""
        if self.child is None:
            return
        if self.w >= 0:  # the rest of the plan, or none at all (not planned: the child builds nothing)
            import os

            os.set_blocking(self.w, True)
            self._send(self.rest)
        from refscope.backend.forked import FAILED

        got = self.child.result()
        self.child = None
        if got is not FAILED:
            from refscope.backend.engines.reftable import Prebuilt, StackReads

            d, names, logged, logs, table = got
            self.txn.add_reads(StackReads(d, names, {}, frozenset(logged), logs))
            if table is not None:
                self.txn.add_table(Prebuilt(*table))

    def abandon(self) -> None:
        if self.child is not None:
            import os

            if self.w >= 0:
                os.close(self.w)
                self.w = -1
            self.child.abandon()
            self.child = None


def _side_work(snap, repo, names: list[bytes], plan_fd: int, plan_w: int) -> tuple:
    """(In the child) the reflog reads of ``names``, then the table deleting the refs the parent names
    on ``plan_fd`` (nothing when it sends nothing), as plain values for marshal."""
    import marshal
    import os

    from refscope.backend.engines.reftable import prebuild, read_ahead

    os.close(plan_w)  # the parent's end: else the plan never ends

    reads = read_ahead(snap, [], None, names)
    chunks = []
    while chunk := os.read(plan_fd, 1 << 20):
        chunks.append(chunk)
    table = None
    if chunks:
        table = tuple(prebuild(snap, repo, marshal.loads(b"".join(chunks)), reads))
    return reads.dir, reads.names, sorted(reads.logged), reads.logs, table


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
            names = [n for n, _old in args.refs]
            side = _SideReads(txn, names)
            side.plan(txn.records(names))
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
                    "error": err.what,
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
                "deleted": [_name(n) for n in result.deleted],
                "wall_ms": round(rep.wall_ms, 3),
                "cpu_ms": round(rep.cpu_ms, 3),
                "syscalls": rep.syscalls_json(),
                "phases": [p.to_json() for p in [*phases, *result.phases]],
            }
        )
    else:
        print(
            f"refscope delete: {len(result.deleted)} deleted ({result.engine}); commit {rep.wall_ms:.2f} ms, "
            f"{rep.syscalls_total} syscalls ({rep.source})",
            file=sys.stderr,
        )
    return 0
