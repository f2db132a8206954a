"""The queue's edits as the backend takes them, and what the edit dialogs check before queueing one.

A dialog's answer is checked at once, against the snapshot the user sees and git's rules, so that a
name git would refuse, a name already taken, or a revision that names nothing is one line in the dialog and
nothing is queued. The commit checks everything again under the locks (the snapshot may be old by then):
these checks are for the user, the transaction's are for the repository.

The entries become ``update.commands.Command`` records (deletions, creates, moves) and
``update.commands.Rename`` records, committed as one ``UpdateTransaction``.
"""

from __future__ import annotations

from refscope.backend.display import line
from refscope.backend.errors import InvalidRefName, TransactionRefused
from refscope.backend.refname import check_refname

from ..widgets.queue import CREATE, DELETE, MOVE, RENAME

_HEX = frozenset(b"0123456789abcdefABCDEF")
BRANCHES, TAGS = b"refs/heads/", b"refs/tags/"


def refuse(what) -> TransactionRefused:
    """A one-line refusal of a dialog's answer (no file: it is about what was typed)."""
    return TransactionRefused(None, what)


def full_name(text: str, namespace: bytes) -> bytes:
    """The full ref name a dialog's answer stands for: as typed when it starts with ``refs/``, else under
    ``namespace`` (``refs/heads/`` for ``n``, ``refs/tags/`` for ``t``, the ref's own for a rename), as
    ``git branch`` and ``git tag`` read a short name."""
    raw = text.strip().encode("utf-8", "surrogateescape")
    if not raw:
        raise InvalidRefName(None, "no name given")
    if raw.startswith(b"refs/"):
        return raw
    if raw.startswith(b"-") or (namespace == BRANCHES and raw == b"HEAD"):
        kind = "branch" if namespace == BRANCHES else "tag" if namespace == TAGS else "ref"
        raise InvalidRefName(None, line("'", raw, f"' is not a valid {kind} name"))
    return namespace + raw


def namespace_of(name: bytes) -> bytes:
    """``refs/heads/`` of ``refs/heads/a/b``: where a rename's short new name goes."""
    parts = name.split(b"/", 2)
    return b"/".join(parts[:2]) + b"/" if len(parts) == 3 and parts[0] == b"refs" else b"refs/"


def check_new_name(snapshot, queue, name: bytes, renaming: bytes | None = None) -> None:
    """Refuse (one line) a name git would refuse, one that exists, one another entry touches, and a
    directory/file conflict with an existing ref (``renaming``: the ref being renamed, which frees its name
    and its directory)."""
    why = check_refname(name)
    if why is not None:
        raise InvalidRefName(None, line("'", name, f"' is not a valid ref name: {why}"))
    if name == renaming:
        raise refuse(line(name, " is the ref's own name"))
    now = snapshot.lookup(name)
    if now is not None:
        if name.startswith(BRANCHES):
            raise refuse(line("a branch named '", name[len(BRANCHES) :], "' already exists"))
        if name.startswith(TAGS):
            raise refuse(line("tag '", name[len(TAGS) :], "' already exists"))
        raise refuse(line("'", name, "' already exists"))
    other = queue.claimed(name)
    if other is not None:
        raise refuse(line(name, f" is queued already ({other.kind}): u undoes that entry"))
    # directory/file conflicts, worded as git's refs_verify_refname_available
    cut = name.find(b"/")
    while cut >= 0:
        parent = name[:cut]
        if parent != renaming and snapshot.lookup(parent) is not None:
            raise refuse(line("'", parent, "' exists; cannot create '", name, "'"))
        cut = name.find(b"/", cut + 1)
    under = snapshot.prefix_range(name + b"/")
    for i in under:
        child = snapshot.name_at(i)
        if child != renaming:
            raise refuse(line("'", child, "' exists; cannot create '", name, "'"))


def resolve_revision(txn, text: str) -> bytes:
    """The hex oid a dialog's revision stands for: a full object name as typed, else a ref name by git's
    rules (``UpdateTransaction.resolver``: as given, refs/, refs/tags/, refs/heads/, refs/remotes/; other
    revisions asked of git rev-parse). Refused, one line, when it names nothing."""
    raw = text.strip().encode("utf-8", "surrogateescape")
    if not raw:
        raise refuse("no revision given")
    if len(raw) == len(txn.zero) and _HEX.issuperset(raw):
        return raw.lower()
    oid = txn.resolver()(raw)
    if oid is None:
        raise refuse(line("not a valid revision: ", raw))
    return oid


def branch_point(repo, oid: bytes, name: bytes) -> bytes:
    """The value a branch gets for ``oid``: the commit an annotated tag peels to (as ``git branch`` and
    ``git branch -f`` peel); other refs take ``oid`` itself. Then git's own check of the new value
    (``update.objects.check_new_values``: the object must exist, a branch must get a commit)."""
    from refscope.backend.objects.odb import Odb
    from refscope.backend.update.commands import Command
    from refscope.backend.update.objects import check_new_values, repo_zero

    if oid == repo_zero(repo):
        raise refuse(line("the null object name is no value for ", name, " (space queues a deletion)"))
    if name.startswith(BRANCHES):
        odb = Odb.of(repo)
        if odb.types([oid]).get(oid) == "tag":
            from refscope.backend.objects.tips import Tips

            peeled = Tips(odb).tip(oid)
            if peeled.peeled is not None:
                oid = peeled.peeled
    check_new_values(repo, [Command("update", name, oid, None, None, None, False)])
    return oid


def value_of(snapshot, ref) -> bytes | None:
    """The oid a ref under the cursor stands for (a symref: what it resolves to; None: nothing)."""
    if ref.target is None:
        return ref.oid
    return snapshot.resolve(ref.name)


def commands(entries, zero: bytes) -> list:
    """The entries as the records ``UpdateTransaction.queue`` takes, in queue order."""
    from refscope.backend.update.commands import Command

    out: list = []
    for e in entries:
        if e.kind == DELETE:
            out.append(Command("delete", e.name, zero, e.old_oid, None, None, True))
        elif e.kind == CREATE:
            out.append(Command("create", e.name, e.new, zero, None, None, False))
        elif e.kind == MOVE:
            out.append(Command("update", e.name, e.new, e.old_oid, None, None, False))
        elif e.kind == RENAME:
            from refscope.backend.update.commands import Rename

            out.append(Rename(e.name, e.new_name, e.old_oid))
    return out
