"""A rename into or out of its own name space in the files backend (``git branch -m a a/b``, ``a/b`` ->
``a``): a loose ``refs/heads/a`` and a directory ``refs/heads/a/`` cannot coexist (nor can the two
reflogs under ``logs/``), so the rename cannot be the atomic rename of two lock files the other renames
are.

git (files-backend.c ``files_copy_or_rename_ref``) moves the reflog to ``logs/refs/.tmp-renamed-log``,
deletes the old ref, then creates the new one: killed between the two, the ref is gone and its reflog sits
in the temp file, which git's next rename overwrites. refscope never loses either:

- **The ref**: the commit point is the ``packed-refs`` rewrite, which drops the old name and inserts the
  new one (``^peeled`` line included) in one rename. Before it, a packed-only old ref gets a loose copy
  (``link`` of its own lock, which holds its value, so the lock stays held), so the old name stays visible
  until the HEADs have followed; the loose old ref is unlinked last. The new ref stays in ``packed-refs``
  (git leaves it loose; ``git pack-refs`` would pack it: both are git's storage, read alike), so a rename
  costs one ``packed-refs`` rewrite where git's costs one only when the old ref was packed. The new name
  has no lock of its own (a loose ``a`` leaves no room for ``a/b.lock``): every git writer of it must first
  pass the D/F check against the old ref, which exists until ``packed-refs`` -- locked by us throughout --
  says otherwise.
- **The reflog** cannot be at either name while it moves (``logs/refs/heads/a`` is a file, then a
  directory): it goes through ``logs/refs/.refscope-renamed-log``, under the transaction's rename journal
  (``rename_journal``: written before any reflog moves, removed once the ref is at its new name for good),
  from which the next rename puts a reflog a crash left in the temp file, or at the other name than its
  ref's, beside the ref.

What a concurrent reader sees, in order: the old ref (loose); the reflog at the new name (the old name
has none meanwhile); the old ref loose and the new one packed, at the same value (both names listed);
each worktree's HEAD on the new name; the new ref alone. A SIGKILL leaves one of these states (plus the
locks, which ``refscope verify`` reports); the ref is always at one of its names or both, every HEAD on a
name that exists, and the reflog recovered by the next rename. A refusal or a failure before the commit
point changes no byte (the reflog is moved back, the journal removed). One nested rename per transaction:
the temp file is one.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os

from ..engines.common import log_path, ref_base, ref_path
from ..engines.crashpoint import step
from ..errors import TransactionRefused
from ..errors import name_text as _t
from .rename_journal import place, prune, tmp_log_path


# -- the prepare ------------------------------------------------------------------------------------------
def read_new(engine, u) -> tuple[int, bytes | None]:
    """The new name's read, without a lock (there is no room for one): loose, else packed-refs."""
    from ..engines.files import IN_THE_WAY, read_loose
    from .plan import MISSING, REGULAR

    kind, value = read_loose(ref_path(engine.repo, u.name), u.name, engine.hexsz)
    if value is IN_THE_WAY or kind == MISSING:
        rec = engine.packed().lookup(u.name)
        return (REGULAR, rec.oid) if rec is not None else (MISSING, None)
    return kind, value


def packed_insert(engine, m, view) -> tuple[int, bytes]:
    """Where the new name's record goes in ``packed-refs`` (a byte offset of ``view``) and its bytes: the
    value read under the lock, its ``^peeled`` line when it is an annotated tag (the header says
    fully-peeled): the old record's, else read from the objects."""
    if view.size > view.header_end and not view.sorted:
        raise TransactionRefused(
            view.path,
            f"cannot rename '{_t(m.r.old_name)}' to '{_t(m.r.name)}': packed-refs is not sorted "
            "(git pack-refs sorts it)",
        )
    oid = m.made.new
    rec = view.lookup(m.r.old_name) if view.size > view.header_end else None
    if rec is not None and rec.oid == oid:
        peeled = rec.peeled
    else:
        from .commands import Command
        from .objects import check_new_values

        peeled = check_new_values(
            engine.repo, [Command("create", m.r.name, oid, None, None, None, True)]
        ).get(oid)
    data = b"%s %s\n" % (oid, m.r.name)
    if peeled is not None:
        data += b"^%s\n" % peeled
    pos = view.seek(m.r.name) if view.size > view.header_end else view.header_end
    return pos, data


def splice_items(kept: list[tuple[int, int]], inserts: list[tuple[int, bytes]]) -> list:
    """``kept`` byte ranges with ``inserts`` (offset, bytes) placed at their offsets, in order: a range
    an offset falls inside is split there."""
    out: list = []
    ins = sorted(inserts, key=lambda x: x[0])
    i = 0
    for s, e in kept:
        while i < len(ins) and ins[i][0] <= s:
            out.append(ins[i][1])
            i += 1
        while i < len(ins) and ins[i][0] < e:
            pos = ins[i][0]
            out.append((s, pos))
            out.append(ins[i][1])
            s = pos
            i += 1
        out.append((s, e))
    out += [data for _pos, data in ins[i:]]
    return out


def check_log_room(engine, m, words: str) -> None:
    """The new reflog's place, the old reflog itself aside (it moves away first): no other reflog in the
    way, no other reflog in a directory that must go."""
    repo = engine.repo
    old_log = log_path(repo, m.r.old_name)
    new_log = log_path(repo, m.r.name)
    base = os.path.join(ref_base(repo, m.r.name), "logs")
    d = os.path.dirname(new_log)
    while len(d) > len(base):
        if d != old_log and os.path.lexists(d) and not os.path.isdir(d):
            raise TransactionRefused(d, f"{words}: a reflog is in the way of its directory")
        d = os.path.dirname(d)
    if os.path.isdir(new_log):
        for top, _dirs, files in os.walk(new_log):
            for f in files:
                if os.path.join(top, f) != old_log:
                    raise TransactionRefused(new_log, f"{words}: directory not empty")


# -- the finish -------------------------------------------------------------------------------------------
def move_log(engine, m) -> None:
    """The reflog moved from the old name to the new one through the temp file (the transaction's rename
    journal names it: ``rename_journal``); recorded in the engine's journal, to be taken back on a
    refusal."""
    repo = engine.repo
    old_log = log_path(repo, m.r.old_name)
    if not os.path.isfile(old_log) or os.path.islink(old_log):
        return
    new_log = log_path(repo, m.r.name)
    tmp = tmp_log_path(repo, m.r.old_name)
    if engine.journal is not None:
        engine.journal.moved_via(old_log, new_log, tmp)
    place(old_log, new_log, tmp)


def undo_move(new_log: str, old_log: str, tmp: str) -> None:
    """A nested reflog move taken back (a refusal later in the finish): the reflog back where it was."""
    src = next((p for p in (tmp, new_log) if os.path.isfile(p)), None)
    try:
        if src is not None:
            place(src, old_log, tmp)
            prune(os.path.dirname(new_log), os.path.dirname(old_log))
    except OSError:
        return


def materialize(engine, m) -> None:
    """The old ref made loose (a hard link of its lock, which holds its value) when it is only packed: it
    stays visible after the packed-refs rewrite, until the HEADs have followed."""
    lk = m.gone.lock
    if lk.loose:
        return
    step("link", m.r.old_name)
    os.link(lk.path, lk.path[: -len(".lock")])
    lk.loose = True
