"""``refscope watch [-C PATH] [--json]``: ref storage change events as they happen, one per line.

Once the file watches are in place, one line goes to stderr (``refscope watch: watching <gitdir> (<format>)``),
so a script knows that every later change will be reported. Then, per event, on stdout:

plain:  ``<seq> <kind>: <refs> | <changes> | refresh <wall> ms, <cpu> ms CPU, <n> syscalls (<source>)``
        refs: ``+name`` added, ``-name`` removed, ``~name`` changed (names through display.escape_name);
        changes: e.g. ``compacted T1,T2 -> T3 (no ref changed)``, ``appended T4``, ``loose-created NAME``,
        ``HEAD <gitdir>: OLD -> NEW``, ``lock-appeared PATH``, ``error: <what>``,
        ``watcher restarted after a failure: <what>``, ``watcher polling: <why>`` (file events failed or
        cannot be had, e.g. on a path that is not UTF-8: the watcher recovered by polling).
--json: one object per event: ``{"seq", "kind", "changes": [...], "added", "removed", "changed", "method",
        "examined", "report": {...OpReport...}, "latency_ms"}`` (through ``display.to_json``: a name that is not
        UTF-8 has U+FFFD in its text and its bytes in ``<key>_b64``).

Runs until interrupted: SIGINT exits 0 quietly. Exit 2 on a usage error, 1 when the repository cannot be opened.
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope watch [-C PATH] [--json]"


def _path(p: str):
    from refscope.backend.display import path_text

    return path_text(p)


def _value(v: bytes | None):
    from refscope.backend.display import escape_name, line

    return line("(none)") if v is None else escape_name(v)


def format_change(c):
    """One change as display text (``display.Shown``; shared with anything else that prints events)."""
    import os

    from refscope.backend import watch as W
    from refscope.backend.display import join, line

    if c.kind == W.TABLES_COMPACTED:
        d = c.detail
        tail = " (no ref changed)" if d.pure else " (with new writes)"
        return line("compacted ", join(",", d.inputs), " -> ", d.output, tail)
    if c.kind == W.TABLES_APPENDED:
        return line("appended ", join(",", c.detail) if c.detail else "(compacted at once)")
    if c.kind in (W.LOOSE_CREATED, W.LOOSE_CHANGED, W.LOOSE_DELETED):
        return line(c.kind, " ", c.name)
    if c.kind == W.HEAD_MOVED:
        old, new = c.detail
        return line("HEAD ", _path(c.path), ": ", _value(old), " -> ", _value(new))
    if c.kind == W.ERROR:
        return line("error: ", str(c.detail))
    if c.kind == W.WATCHER_RESTARTED:
        return line("watcher restarted after a failure: ", str(c.detail))
    if c.kind == W.WATCHER_POLLING:
        return line("watcher polling: ", str(c.detail))
    if c.kind in (W.LOCK_APPEARED, W.LOCK_GONE, W.PACKED_REWRITTEN, W.TABLES_LIST_REWRITTEN):
        return line(c.kind, " ", _path(c.path)) if c.path else line(c.kind)
    return line(c.kind) if not c.path else line(c.kind, " ", _path(os.fspath(c.path)))


def format_event(ev):
    """One event as display text (``display.Shown``)."""
    from refscope.backend.display import join, line

    d = ev.diff
    refs = [*(line("+", n) for n in d.added), *(line("-", n) for n in d.removed)]
    refs += [line("~", n) for n in d.changed]
    parts = [line(f"{ev.seq} ", ev.kind, ": ", join(" ", refs) if refs else "(no ref changed)")]
    parts.append(join("; ", [format_change(c) for c in ev.changes]) or line("-"))
    r = ev.report
    if r is not None:
        parts.append(
            line(
                f"refresh {r.wall_ms:.2f} ms, {r.cpu_ms:.2f} ms CPU, {r.syscalls_total} syscalls (",
                r.source,
                ")",
            )
        )
    return join(" | ", parts)


def run(argv: list[str]) -> int:
    from .args import parse_or_usage

    opts = parse_or_usage(argv, USAGE)
    if opts is None:
        return 2
    path, as_json = opts.path, "--json" in opts.flags
    import queue

    from refscope.backend.repo import discover
    from refscope.backend.store import open_store
    from refscope.backend.watch import Watcher

    store = open_store(discover(path))
    events: queue.SimpleQueue = queue.SimpleQueue()
    watcher = Watcher(store, events.put)
    try:
        watcher.start()
        from refscope.backend.display import emit, line, to_json

        emit([line("refscope watch: watching ", _path(store.repo.gitdir), f" ({store.format})")], sys.stderr)
        sys.stderr.flush()
        out = sys.stdout
        while True:
            try:
                ev = events.get(timeout=0.5)
            except queue.Empty:
                continue
            if as_json:
                out.write(to_json(ev.to_json()) + "\n")
            else:
                emit([format_event(ev)], out)
            out.flush()
    except KeyboardInterrupt:
        return 0
    finally:
        watcher.stop()
