"""``refscope list`` as the tests read it: its JSON as rows comparable with git's, the names that test
its escaping, and its two ways of listing a snapshot run in-process for the tests that compare them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.support.cli import refscope

LONG = b"refs/heads/long/" + b"/".join(
    [b"x" * 97] * 7 + [b"x" * 98]
)  # 800 bytes (components fit a file name)
assert len(LONG) == 800
ODD_NAMES = [
    "refs/heads/ünïcødé/ブランチ".encode(),
    b"refs/heads/bidi-\xe2\x80\xae-override",
    b"refs/heads/c1-\xc2\x85-control",
    b"refs/heads/not-utf8-\xff\xfe",
    b'refs/heads/quote"name',
    b"refs/heads/csi-\xc2\x9b31m",
    LONG,
]


def list_json(path: Path | str, *patterns: str) -> list[tuple[bytes, bytes, bytes, bytes]]:
    proc = refscope("list", "--json", "-C", str(path), *patterns)
    assert proc.returncode == 0, proc.stderr
    rows = []
    for line in proc.stdout.decode("utf-8").splitlines():  # strict UTF-8 (DESIGN.md, "Headless CLI")
        obj = json.loads(line)
        # name_b64 / target_b64 only where the name / target is not UTF-8: its exact bytes
        assert set(obj) - {"name_b64", "target_b64"} == {"name", "oid", "peeled", "target"}

        rows.append(
            (_exact(obj, "name"), obj["oid"].encode(), (obj["peeled"] or "").encode(), _exact(obj, "target"))
        )
    return rows


def _exact(obj: dict, key: str) -> bytes:
    """A name's or target's exact bytes from a ``list --json`` object."""
    if key + "_b64" in obj:
        return base64.b64decode(obj[key + "_b64"])
    return (obj[key] or "").encode("utf-8")


def assert_same(ours, theirs) -> None:
    """Same names, order, oids and symref targets; our peeled value (when the store records one) equals
    git's fully peeled ``%(*objectname)``."""
    assert [r[0] for r in ours] == [r[0] for r in theirs]
    assert [(r[0], r[1], r[3]) for r in ours] == [(r[0], r[1], r[3]) for r in theirs]
    for o, t in zip(ours, theirs, strict=True):
        if o[2]:
            assert o[2] == t[2], o[0]


def listed(capfd, snap, as_json: bool, split: bytes | None, way: str) -> bytes:
    """What ``refscope list`` writes for ``snap`` listed ``way`` ("files" or "columns"): in one process
    (``split`` None) or split at ``split`` with the second half in a forked child."""
    from refscope.backend import listing

    out = listing.Out()
    if split is None:
        getattr(listing.Lister(snap, as_json, out, None), way)([(b"", None)])
        out.flush()
    else:
        listing.split_listing(snap, as_json, out, split, way)
    return capfd.readouterr().out.encode("utf-8", "surrogateescape")
