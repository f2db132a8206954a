"""``refscope stack [-C PATH] [--json]``: what the ref storage is made of.

files:    the packed-refs summary (path, size, records, traits, sorted, peeled, loose ref count).
reftable: each table of the stack, oldest first (name, size, update-index range, version, hash, block
          size, ref/tombstone/log/log-deletion record counts from ``Table.counts``, the counts the TUI's
          stack view shows, blocks), for the common stack and, in a linked
          worktree, the worktree's own stack.
Plain output is one ``key: value`` block (files) or one line per table (reftable), fields through the
display function; ``--json`` prints one JSON object (``display.to_json``: traits that are not UTF-8 have
U+FFFD in ``traits`` and their bytes in ``traits_b64``, null for the others).
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope stack [-C PATH] [--json]"


def _parse(argv: list[str]) -> tuple[str | None, bool] | None:
    from .args import parse_path_json

    return parse_path_json(argv)


def table_info(t) -> dict:
    """One table's summary (decodes every block once to count records)."""
    counts = t.counts()
    return {
        "name": t.name,
        "size": t.size,
        "min_update_index": t.min_update_index,
        "max_update_index": t.max_update_index,
        "version": t.version,
        "hash": t.hash_name,
        "block_size": t.block_size,
        "refs": counts["refs"],
        "tombstones": counts["tombstones"],
        "logs": counts["logs"],
        "log_deletions": counts["log_deletions"],
        "objs": counts["objs"],
        "blocks": counts["blocks"],
    }


def describe(snap) -> dict:
    """The ``--json`` object for a snapshot of either format."""
    if snap.format == "files":
        return snap.summary()
    import os

    out = {
        "format": "reftable",
        "hash": snap.hash_name,
        "stacks": [
            {"dir": os.path.join(snap.commondir, "reftable"), "tables": [table_info(t) for t in snap.tables]}
        ],
    }
    wt = snap.worktree_tables
    if wt:
        out["stacks"].append(
            {"dir": os.path.join(snap.gitdir, "reftable"), "tables": [table_info(t) for t in wt]}
        )
    return out


def run(argv: list[str]) -> int:
    parsed = _parse(argv)
    if parsed is None:
        sys.stderr.write(USAGE + "\n")
        return 2
    path, as_json = parsed
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    snap = open_store(discover(path)).snapshot()
    info = describe(snap)
    from refscope.backend.display import emit, join, line, path_text, to_json

    if as_json:
        sys.stdout.write(to_json(info) + "\n")
        return 0
    lines = []
    if info["format"] == "files":
        lines.append(line("packed-refs: ", path_text(info["path"]), "" if info["exists"] else " (missing)"))
        lines.append(line("size: ", info["size"]))
        lines.append(line("records: ", info["records"]))
        lines.append(line("traits: ", join(" ", info["traits"]) or "(none)"))
        lines.append(line("sorted: ", "yes" if info["sorted"] else "no"))
        lines.append(line("peeled: ", info["peeled"]))
        lines.append(line("loose refs: ", info["loose"]))
    else:
        for st in info["stacks"]:
            lines.append(
                line("stack: ", path_text(st["dir"]), f" ({len(st['tables'])} tables, ", info["hash"], ")")
            )
            for t in st["tables"]:
                lines.append(
                    line(
                        "  ",
                        t["name"],
                        f"  size {t['size']}  updates {t['min_update_index']}..",
                        t["max_update_index"],
                        f"  v{t['version']} ",
                        t["hash"],
                        f" block {t['block_size']}",
                        f"  refs {t['refs']}  tombstones {t['tombstones']}  logs {t['logs']}"
                        f"  log-deletions {t['log_deletions']}  blocks {t['blocks']}",
                    )
                )
    emit(lines)
    return 0
