"""What git checks of a new value before it queues an update (refs.c ``ref_transaction_update``).

The object must exist ("trying to write ref '%s' with nonexistent object %s"), a branch must point at a
commit ("trying to write non-commit object %s to branch '%s'"), and an annotated tag is peeled (reftable
stores the peeled value beside it). Read from the object database natively (``backend.objects``): types in
bulk from the pack entries' headers, tags followed to what they peel to.
"""

from __future__ import annotations

from ..errors import TransactionRefused

COMMIT, TAG = b"commit", b"tag"


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
    from ..objects.odb import Odb

    odb = Odb.of(repo)
    types = {oid: (None if t is None else t.encode()) for oid, t in odb.types(wanted).items()}
    peeled: dict[bytes, bytes] = {}
    tags = [oid for oid, t in types.items() if t == TAG]
    if tags:
        from ..objects.tips import Tips

        tips = Tips(odb)
        for t in tags:
            got = tips.tip(t).peeled
            if got is not None:
                peeled[t] = got
    if all(t == COMMIT for t in types.values()):
        return peeled  # every object a commit (one test per distinct one): nothing below to refuse
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
