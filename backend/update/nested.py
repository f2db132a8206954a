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
  directory): before it leaves, a journal ``logs/refs/.refscope-rename`` (the two names) is written, the
  reflog goes through ``logs/refs/.refscope-renamed-log``, and the journal is removed only once the ref is
  at its new name for good. ``recover`` (run by the files engine before any transaction with a rename)
  puts a reflog a crash left in the temp file or at the wrong name beside the ref, wherever the ref is.

What a concurrent reader sees, in order: the old ref (loose); the reflog at the new name (the old name
has none meanwhile); the old ref loose and the new one packed, at the same value (both names listed);
each worktree's HEAD on the new name; the new ref alone. A SIGKILL leaves one of these states (plus the
locks, which ``refscope verify`` reports); the ref is always at one of its names or both, every HEAD on a
name that exists, and the reflog recovered by the next rename. A refusal or a failure before the commit
point changes no byte (the reflog is moved back, the journal removed).
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os

from ..engines.common import log_path, ref_base, ref_path
from ..engines.crashpoint import step
from ..errors import TransactionRefused

JOURNAL = ".refscope-rename"  # under logs/refs/: a name git's reflog walk skips (as its .tmp-renamed-log)
TMP_LOG = ".refscope-renamed-log"


def _t(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def journal_path(repo, name: bytes) -> str:
    return os.path.join(ref_base(repo, name), "logs", "refs", JOURNAL)


def tmp_log_path(repo, name: bytes) -> str:
    return os.path.join(ref_base(repo, name), "logs", "refs", TMP_LOG)


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
    if os.path.lexists(journal_path(repo, m.r.old_name)):
        raise TransactionRefused(
            journal_path(repo, m.r.old_name), f"{words}: an interrupted rename's journal is in the way"
        )


# -- the finish -------------------------------------------------------------------------------------------
def _place(src: str, dst: str, tmp: str) -> list[str]:
    """Move the reflog ``src`` to ``dst`` through ``tmp`` (``dst``'s emptied directory removed, its
    leading directories made); returns the directories made, outermost first."""
    from .reflog_undo import missing_dirs

    if src != tmp:
        step("move reflog to", tmp)
        os.rename(src, tmp)
    if os.path.isdir(dst):
        step("rmdir in the way", dst)
        for top, _dirs, _files in os.walk(dst, topdown=False):
            os.rmdir(top)
    made = missing_dirs(os.path.dirname(dst))
    for d in made:
        step("mkdir", d)
        os.mkdir(d, 0o777)
    step("move reflog to", dst)
    os.rename(tmp, dst)
    return made


def _prune(path: str, base: str) -> None:
    """Empty directories from ``path`` up to (not including) ``base``."""
    d = path
    while len(d) > len(base):
        try:
            os.rmdir(d)
        except OSError:
            return
        d = os.path.dirname(d)


def move_log(engine, m) -> None:
    """The reflog moved from the old name to the new one through the temp file, under the journal (left
    until ``done``); the move is recorded in the engine's journal, to be taken back on a refusal."""
    repo = engine.repo
    old_log = log_path(repo, m.r.old_name)
    if not os.path.isfile(old_log) or os.path.islink(old_log):
        return
    new_log = log_path(repo, m.r.name)
    journal = journal_path(repo, m.r.old_name)
    tmp = tmp_log_path(repo, m.r.old_name)
    step("write rename journal", journal)
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        os.write(fd, b"%s\n%s\n" % (m.r.old_name, m.r.name))
        if engine.do_fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    m.journal = journal
    if engine.journal is not None:
        engine.journal.moved_via(old_log, new_log, tmp, journal)
    _place(old_log, new_log, tmp)


def undo_move(new_log: str, old_log: str, tmp: str, journal: str) -> None:
    """A nested reflog move taken back (a refusal later in the finish): the reflog back, the journal gone."""
    logs = os.path.dirname(os.path.dirname(tmp))
    src = next((p for p in (tmp, new_log) if os.path.isfile(p)), None)
    try:
        if src is not None:
            _place(src, old_log, tmp)
            _prune(os.path.dirname(new_log), logs)
    except OSError:
        return
    try:
        os.unlink(journal)
    except OSError:
        pass


def materialize(engine, m) -> None:
    """The old ref made loose (a hard link of its lock, which holds its value) when it is only packed: it
    stays visible after the packed-refs rewrite, until the HEADs have followed."""
    lk = m.gone.lock
    if lk.loose:
        return
    step("link", m.r.old_name)
    os.link(lk.path, lk.path[: -len(".lock")])
    lk.loose = True


def done(engine) -> None:
    """The journals of the renames, once every ref is at its new name for good."""
    for m in engine.renames:
        if m.nested and m.journal:
            step("unlink rename journal", m.journal)
            try:
                os.unlink(m.journal)
            except FileNotFoundError:
                pass
            m.journal = ""


# -- after a crash ----------------------------------------------------------------------------------------
def recover(repo) -> list[bytes]:
    """Put a reflog an interrupted nested rename left behind (in the temp file, or at the name the ref
    is not at) beside the ref, at the new name when the ref is there, else at the old one; then remove the
    journal. Returns the names whose reflog was placed. A journal whose ref is at neither name stays (for
    ``refscope verify`` to report)."""
    from ..engines.files import read_loose
    from ..formats.packed import PackedRefs
    from ..model import HASH_HEXSZ
    from .plan import REGULAR

    placed = []
    hexsz = HASH_HEXSZ[repo.hash_name]
    packed = None
    for base in dict.fromkeys((repo.commondir, repo.gitdir)):
        journal = os.path.join(base, "logs", "refs", JOURNAL)
        try:
            with open(journal, "rb") as f:
                lines = f.read().split(b"\n")
        except FileNotFoundError:
            continue
        if len(lines) < 2:
            os.unlink(journal)
            continue
        old_name, name = lines[0], lines[1]

        def exists(n: bytes) -> bool:
            nonlocal packed
            kind, _value = read_loose(ref_path(repo, n), n, hexsz)
            if kind == REGULAR:
                return True
            if packed is None:
                path = os.path.join(repo.commondir, "packed-refs")
                try:
                    packed = PackedRefs.open(path, repo.hash_name)
                except FileNotFoundError:
                    packed = PackedRefs.from_bytes(b"", path, repo.hash_name)
            return packed.lookup(n) is not None

        want = name if exists(name) else old_name if exists(old_name) else None
        if want is None:
            continue
        tmp = os.path.join(base, "logs", "refs", TMP_LOG)
        new_log, old_log = log_path(repo, name), log_path(repo, old_name)
        dst = log_path(repo, want)
        src = next((p for p in (tmp, new_log, old_log) if os.path.isfile(p)), None)
        if src is not None and src != dst:
            _place(src, dst, tmp)
            if src != tmp:
                _prune(os.path.dirname(src), os.path.join(base, "logs"))
            placed.append(want)
        os.unlink(journal)
    return placed
