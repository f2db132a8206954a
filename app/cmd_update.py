"""``refscope update [-C PATH] [--engine native|git] [-m MSG] [-z] [--stdin] [--json] [--allow-checked-out]``.

Reads git's ``update-ref --stdin`` language from stdin (LF form, or NUL form with ``-z``) and commits each
transaction of it atomically (``start`` ... ``commit`` blocks, or the whole input when it has none). What
git prints on stdout (``start: ok``...) is printed too; a refusal is one line ``refscope: <file>: <what>``
with git's own words, exit 1, and nothing on disk changed. Exit 2 on a usage error.

``--json`` prints one object: ``{"committed", "engine", "updates": [{"name", "old", "new"}...], "wall_ms",
"cpu_ms", "syscalls", "phases"}``; the top-level figures are the (last) commit's, first lock to last unlink.
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: refscope update [-C PATH] [--engine native|git] [-m MSG] [-z] [--stdin] [--json] "
    "[--no-deref] [--allow-checked-out]"
)


class _Args:
    __slots__ = ("path", "engine", "message", "nul", "json", "no_deref", "allow_checked_out")

    def __init__(self) -> None:
        self.path: str | None = None
        self.engine = "native"
        self.message: bytes | None = None
        self.nul = False
        self.json = False
        self.no_deref = False
        self.allow_checked_out = False


def _parse(argv: list[str]) -> _Args | None:
    import os

    a = _Args()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--json":
            a.json = True
        elif arg == "--stdin":
            pass  # the only input there is
        elif arg == "-z":
            a.nul = True
        elif arg == "--no-deref":
            a.no_deref = True
        elif arg == "--allow-checked-out":
            a.allow_checked_out = True
        elif arg in ("-C", "--engine", "-m"):
            if i + 1 >= len(argv):
                return None
            i += 1
            if arg == "-C":
                from .args import change_dir

                a.path = change_dir(a.path, argv[i])
            elif arg == "-m":
                a.message = os.fsencode(argv[i])
            else:
                a.engine = argv[i]
        elif arg.startswith("--engine="):
            a.engine = arg[len("--engine=") :]
        elif arg.startswith("-m") and len(arg) > 2:
            a.message = os.fsencode(arg[2:])
        elif arg.startswith("-C") and len(arg) > 2:
            from .args import change_dir

            a.path = change_dir(a.path, arg[2:])
        else:
            return None
        i += 1
    if a.engine not in ("native", "git"):
        return None
    return a


def _emit(obj: dict) -> None:
    from refscope.backend.display import to_json

    sys.stdout.write(to_json(obj) + "\n")


def run(argv: list[str]) -> int:
    args = _parse(argv)
    if args is None:
        print(USAGE, file=sys.stderr)
        return 2
    if args.message is not None and not args.message:
        print("refscope update: Refusing to perform update with empty message.", file=sys.stderr)
        return 2
    data = sys.stdin.buffer.read()

    from refscope.backend.errors import RefscopeError
    from refscope.backend.meter import measure

    phases = []
    results = []
    acks: list[str] = []
    try:
        with measure("open") as m:
            from refscope.backend.repo import discover
            from refscope.backend.store import open_store

            repo = discover(args.path)
            store = open_store(repo)
        phases.append(m.report)
        from refscope.backend.model import HASH_HEXSZ
        from refscope.backend.update.commands import parse
        from refscope.backend.update.txn import UpdateTransaction

        def new_txn(snapshot=None):
            return UpdateTransaction(
                store,
                args.engine,
                message=args.message or b"",
                allow_checked_out=args.allow_checked_out,
                snapshot=snapshot,
            )

        txn = new_txn()
        with measure("parse") as m:
            parsed = parse(
                data,
                nul=args.nul,
                hexsz=HASH_HEXSZ[repo.hash_name],
                no_deref=args.no_deref,
                resolve=txn.resolver(),
            )
        phases.append(m.report)
        for w in parsed.warnings:
            print(f"warning: {w}", file=sys.stderr)
        for batch in parsed.batches:
            if batch.action == "commit":
                if txn is None:
                    txn = new_txn()
                txn.queue(batch.commands)
                results.append(txn.commit())
                txn = None
            acks += batch.acks
        if parsed.error is not None:
            if parsed.pending:
                (txn or new_txn()).queue(parsed.pending)  # an object error git met first
            if parsed.error.file is None:
                parsed.error.file = repo.gitdir  # the parser knows no file; the line names the repository
            raise parsed.error
    except RefscopeError as err:
        if args.json:
            _emit(
                {
                    "committed": False,
                    "engine": args.engine,
                    "updates": [],
                    "error": err.brief,
                    "file": err.file,
                    "phases": [p.to_json() for p in phases],
                }
            )
        elif acks:
            sys.stdout.write("".join(a + "\n" for a in acks))
        sys.stdout.flush()
        print(err.cli_line(), file=sys.stderr)
        return 1
    updates = [u for r in results for u in r.updates]
    if args.json:
        rep = results[-1].report if results else None
        _emit(
            {
                "committed": True,
                "engine": args.engine,
                "updates": [{"name": n, "old": o, "new": v} for n, o, v in updates],
                "wall_ms": round(rep.wall_ms, 3) if rep else 0.0,
                "cpu_ms": round(rep.cpu_ms, 3) if rep else 0.0,
                "syscalls": rep.syscalls_json() if rep else {"total": 0, "by_name": {}, "source": None},
                "phases": [p.to_json() for p in [*phases, *(p for r in results for p in r.phases)]],
            }
        )
        return 0
    if acks:
        sys.stdout.write("".join(a + "\n" for a in acks))
    from refscope.backend.display import emit, line

    if results:
        rep = results[-1].report
        emit(
            [
                line(
                    f"refscope update: {len(updates)} updated ({args.engine}); "
                    f"commit {rep.wall_ms:.2f} ms, {rep.syscalls_total} syscalls ({rep.source})"
                )
            ],
            sys.stderr,
        )
    return 0
