"""``refscope list``'s two ways of listing a snapshot, run in-process for the tests that compare them."""

from __future__ import annotations


def listed(capfd, snap, as_json: bool, split: bytes | None, way: str) -> bytes:
    """What ``refscope list`` writes for ``snap`` listed ``way`` ("files" or "columns"): in one process
    (``split`` None) or split at ``split`` with the second half in a forked child."""
    from refscope.app import cmd_list

    out = cmd_list._Out()
    if split is None:
        getattr(cmd_list._Lister(snap, as_json, out, None), way)([(b"", None)])
        out.flush()
    else:
        cmd_list._split_listing(snap, as_json, out, split, way)
    return capfd.readouterr().out.encode("utf-8", "surrogateescape")
