"""What git checks of a new value before it queues an update (refs.c ``ref_transaction_update``).

The object must exist ("trying to write ref '%s' with nonexistent object %s"), a branch must point at a
commit ("trying to write non-commit object %s to branch '%s'"), and an annotated tag is peeled (reftable
stores the peeled value beside it). refscope has no object database of its own: loose objects are read
here (a zlib header: one open and one read each), anything else -- packed objects, alternates, the peel of
a tag -- is asked of one ``git cat-file --batch-check`` for the whole transaction.
"""

from __future__ import annotations

import os
import subprocess
import zlib

from ..errors import TransactionRefused

COMMIT, TAG = b"commit", b"tag"


def _loose_type(objects: str, oid: bytes) -> bytes | None:
    """The type of loose object ``oid`` (hex), None when it is not loose (or unreadable)."""
    h = oid.decode()
    try:
        fd = os.open(os.path.join(objects, h[:2], h[2:]), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        head = os.read(fd, 64)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = zlib.decompressobj().decompress(head, 32)
    except zlib.error:
        return None
    kind, sep, _rest = data.partition(b" ")
    return kind if sep and kind in (b"commit", b"tree", b"blob", b"tag") else None


def _batch_check(repo, queries: list[bytes]) -> dict[bytes, tuple[bytes, bytes] | None]:
    """query -> (oid, type) or None (missing), from one ``git cat-file --batch-check``."""
    from ..engines.git import git_binary

    env = dict(os.environ)
    env.pop("GIT_DIR", None)
    env.pop("GIT_COMMON_DIR", None)
    argv = [git_binary(), "--git-dir=" + repo.gitdir, "cat-file", "--batch-check=%(objectname) %(objecttype)"]
    try:
        proc = subprocess.run(argv, input=b"".join(q + b"\n" for q in queries), capture_output=True, env=env)
    except OSError as err:
        raise TransactionRefused(repo.gitdir, f"cannot run {argv[0]}: {err.strerror}") from None
    out: dict[bytes, tuple[bytes, bytes] | None] = {}
    lines = proc.stdout.split(b"\n")
    for q, ln in zip(queries, lines, strict=False):
        parts = ln.split(b" ")
        out[q] = (parts[0], parts[1]) if len(parts) == 2 and parts[1] != b"missing" else None
    return out


def check_new_values(repo, commands) -> dict[bytes, bytes]:
    """Check every new oid of ``commands`` (``commands.Command``) in order, as git does when it queues
    them; returns oid -> peeled oid for the annotated tags among them. Raises TransactionRefused with
    git's words for the first one git refuses."""
    zero = repo_zero(repo)
    wanted = []
    seen = set()
    for c in commands:
        if c.new is not None and c.new_target is None and c.new != zero and c.new not in seen:
            seen.add(c.new)
            wanted.append(c.new)
    if not wanted:
        return {}
    objects = os.path.join(repo.commondir, "objects")
    types: dict[bytes, bytes | None] = {oid: _loose_type(objects, oid) for oid in wanted}
    ask = [oid for oid, t in types.items() if t is None]
    tags = [oid for oid, t in types.items() if t == TAG]
    peeled: dict[bytes, bytes] = {}
    if ask or tags:
        got = _batch_check(repo, [*ask, *(t + b"^{}" for t in tags)])
        for oid in ask:
            r = got.get(oid)
            types[oid] = r[1] if r is not None else None
            if r is not None and r[1] == TAG:
                tags.append(oid)
        more = [t for t in tags if t + b"^{}" not in got]
        if more:
            got.update(_batch_check(repo, [t + b"^{}" for t in more]))
        for t in tags:
            r = got.get(t + b"^{}")
            if r is not None:
                peeled[t] = r[0]
    for c in commands:
        if c.new is None or c.new_target is not None or c.new == zero:
            continue
        kind = types[c.new]
        if kind is None:
            raise TransactionRefused(
                repo.gitdir,
                f"trying to write ref '{_s(c.name)}' with nonexistent object {c.new.decode()}",
            )
        if kind != COMMIT and c.name.startswith(b"refs/heads/"):
            raise TransactionRefused(
                repo.gitdir,
                f"trying to write non-commit object {c.new.decode()} to branch '{_s(c.name)}'",
            )
    return peeled


def repo_zero(repo) -> bytes:
    from ..model import HASH_HEXSZ

    return b"0" * HASH_HEXSZ[repo.hash_name]


def _s(b: bytes) -> str:
    return b.decode("utf-8", "replace")
