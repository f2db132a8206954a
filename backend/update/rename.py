"""Renaming a ref inside an update transaction: ``git branch -m`` semantics for any ref, atomic with the
other commands of the batch.

git renames outside its transactions (refs.c ``refs_rename_ref``: files-backend.c
``files_copy_or_rename_ref`` deletes the old ref, moves its reflog, writes the new ref; reftable-backend.c
``write_copy_table`` writes one table), then ``builtin/branch.c`` moves each worktree's HEAD that pointed at
the old branch and the ``branch.<old>`` config section. refscope does the ref part in the batch's one
transaction and leaves the refs exactly as git leaves them: the same refs, the same reflogs (entries and
messages), the same HEADs and the same config.

This module holds the checks made when a ``commands.Rename`` is queued (against the snapshot, with the
words the engine would use under the lock, so that a refusal comes early and reads the same).
"""

from __future__ import annotations

from ..errors import TransactionRefused
from ..refname import is_valid_refname
from .commands import Rename

MESSAGE = b"Branch: renamed %s to %s"  # builtin/branch.c's reflog message, for any ref


def _t(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def message(r: Rename) -> bytes:
    return MESSAGE % (r.old_name, r.name)


def check_queued(txn, renames: list[Rename]) -> None:
    """Refuse, with one line, a rename git would refuse or refscope cannot do in one transaction: a bad
    name, a missing or symbolic old ref, an old value that does not match, a name that exists, a D/F
    conflict with the store, a rename between a worktree's own refs and the shared ones."""
    gitdir = txn.repo.gitdir
    if txn.engine == "git":
        raise TransactionRefused(
            gitdir,
            "the git engine cannot rename refs ('git update-ref' has no rename): use the native engine",
        )
    from ..engines.common import is_per_worktree

    snap = txn.snapshot
    for r in renames:
        for n in (r.old_name, r.name):
            if not is_valid_refname(n) or not n.startswith(b"refs/"):
                raise TransactionRefused(gitdir, f"invalid ref format: {_t(n)}")
        old_name, name = r.old_name, r.name
        if is_per_worktree(old_name) != is_per_worktree(name):
            raise TransactionRefused(
                gitdir,
                f"cannot rename '{_t(old_name)}' to '{_t(name)}': one is a per-worktree ref, the other is not",
            )
        ref = snap.lookup(old_name)
        if ref is None:
            raise TransactionRefused(gitdir, f"refname {_t(old_name)} not found")
        if ref.target is not None:
            raise TransactionRefused(
                gitdir, f"refname {_t(old_name)} is a symbolic ref, renaming it is not supported"
            )
        if r.old is not None and r.old != ref.oid:
            raise TransactionRefused(
                gitdir,
                f"cannot lock ref '{_t(old_name)}': is at {ref.oid.decode()} but expected {r.old.decode()}",
            )
        if snap.lookup(name) is not None:
            raise TransactionRefused(gitdir, f"cannot lock ref '{_t(name)}': reference already exists")
        j = name.find(b"/")
        while j >= 0:
            d = name[:j]
            j = name.find(b"/", j + 1)
            if d == old_name:
                raise TransactionRefused(
                    gitdir, f"cannot process '{_t(name)}' and '{_t(d)}' at the same time"
                )
            if snap.lookup(d) is not None:
                raise TransactionRefused(gitdir, f"'{_t(d)}' exists; cannot create '{_t(name)}'")
        prefix = name + b"/"
        hit = next(iter(snap.iter_names(prefix)), None)  # streamed: no row index of a big store
        if hit is not None and hit.startswith(prefix):
            if hit == old_name:
                raise TransactionRefused(
                    gitdir, f"cannot process '{_t(name)}' and '{_t(old_name)}' at the same time"
                )
            raise TransactionRefused(gitdir, f"'{_t(hit)}' exists; cannot create '{_t(name)}'")
        if name.startswith(b"refs/heads/"):
            from .commands import Command
            from .objects import check_new_values

            check_new_values(txn.repo, [Command("create", name, ref.oid, None, None, None, True)])
