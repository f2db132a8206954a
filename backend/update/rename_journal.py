"""The files engine's rename journal: where a crash leaves a moved reflog, and how it is put back beside
its ref.

A rename moves its reflog before any ref changes (``update/files.py`` writes every reflog first, so that
a refusal there takes them all back), and a nested rename's reflog passes through a temp file
(``update/nested.py``): killed in between, the reflog would be at the other name than the ref's, or in the
temp file, for good (git's own ``files_copy_or_rename_ref`` loses it so: its next rename overwrites its
``logs/refs/.tmp-renamed-log``). So before the first reflog of a transaction moves, the journal
``<common dir>/logs/refs/.refscope-rename`` lists every rename whose reflog moves (its ref directory, both
names, the old reflog's size); it is removed once every ref is at its new name for good, or once a refusal
has put every reflog back. ``recover``, run by the files engine before a transaction with a rename, reads
a journal a crash left and puts each reflog at the name its ref is at (the new one when the ref is at
both), cutting the rename's own entry off a reflog that goes back. The journal's and the temp file's names
start with a dot under ``logs/refs/``, which git's reflog walk and ``git refs verify`` pass over, as they
pass over git's own ``.tmp-renamed-log``.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os
import stat

from ..engines.common import log_path, ref_base
from ..engines.crashpoint import step

JOURNAL = ".refscope-rename"
TMP_LOG = ".refscope-renamed-log"
NESTED, PLAIN = b"nested", b"plain"


def journal_path(repo) -> str:
    return os.path.join(repo.commondir, "logs", "refs", JOURNAL)


def tmp_log_path(repo, name: bytes) -> str:
    return os.path.join(ref_base(repo, name), "logs", "refs", TMP_LOG)


def write(engine) -> None:
    """The journal of ``engine``'s renames whose reflog moves (none: no journal); ``engine.rename_journal``
    names it. Fields are NUL-separated (no ref name and no path holds a NUL), four per rename."""
    repo = engine.repo
    fields = []
    for m in engine.renames:
        old_log = log_path(repo, m.r.old_name)
        try:
            st = os.lstat(old_log)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        kind = NESTED if m.nested else PLAIN
        fields += [
            kind,
            os.fsencode(ref_base(repo, m.r.old_name)),
            m.r.old_name,
            m.r.name,
            b"%d" % st.st_size,
        ]
    if not fields:
        return
    from ..fileio import refused_write, write_all

    path = journal_path(repo)
    step("write rename journal", path)
    try:
        if not os.path.isdir(os.path.dirname(path)):  # (only per-worktree reflogs move: logs/ of a worktree)
            os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as err:
        raise refused_write(path, err) from None
    engine.rename_journal = path
    try:
        write_all(fd, b"\0".join(fields))
        if engine.do_fsync:
            os.fsync(fd)
    except OSError as err:  # disk full, quota: refused, nothing left behind
        os.close(fd)
        drop(engine)
        raise refused_write(path, err) from None
    os.close(fd)


def drop(engine) -> None:
    """The journal removed: every ref at its new name for good, or every reflog put back."""
    path = engine.rename_journal
    if path:
        step("unlink rename journal", path)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        engine.rename_journal = ""


def place(src: str, dst: str, tmp: str) -> None:
    """Move the reflog ``src`` to ``dst`` through ``tmp``: ``dst``'s emptied directory removed, its
    leading directories made (``a`` and ``a/b`` cannot both be files)."""
    from .reflog_undo import missing_dirs

    if src != tmp:
        step("move reflog to", tmp)
        os.rename(src, tmp)
    if os.path.isdir(dst):
        step("rmdir in the way", dst)
        for top, _dirs, _files in os.walk(dst, topdown=False):
            os.rmdir(top)
    for d in missing_dirs(os.path.dirname(dst)):
        step("mkdir", d)
        os.mkdir(d, 0o777)
    step("move reflog to", dst)
    os.rename(tmp, dst)


def prune(path: str, base: str) -> None:
    """Empty directories from ``path`` up to (not including) ``base`` (``logs/refs/heads``: git's
    try_remove_empty_parents stops there too)."""
    d = path
    while len(d) > len(base):
        try:
            os.rmdir(d)
        except OSError:
            return
        d = os.path.dirname(d)


def recover(repo) -> list[bytes]:
    """Put each reflog an interrupted transaction's journal names beside its ref (the new name when the
    ref is there, else the old one; a reflog that goes back is cut to its size before), then remove the
    journal. Returns the names whose reflog was moved. One whose ref is at neither name is left where it
    is; the journal goes all the same."""
    path = journal_path(repo)
    try:
        with open(path, "rb") as f:
            fields = f.read().split(b"\0")
    except (FileNotFoundError, NotADirectoryError):
        return []
    from ..engines.files import read_loose
    from ..formats.packed import PackedRefs
    from ..model import HASH_HEXSZ
    from .plan import REGULAR

    hexsz = HASH_HEXSZ[repo.hash_name]
    packed_path = os.path.join(repo.commondir, "packed-refs")
    try:
        packed = PackedRefs.open(packed_path, repo.hash_name)
    except FileNotFoundError:
        packed = PackedRefs.from_bytes(b"", packed_path, repo.hash_name)

    def exists(base: str, n: bytes) -> bool:
        kind, _value = read_loose(os.path.join(base, os.fsdecode(n)), n, hexsz)
        return kind == REGULAR or packed.lookup(n) is not None

    entries = [fields[i : i + 5] for i in range(0, len(fields) - 4, 5)]
    entries.sort(key=lambda e: e[0] != NESTED)  # the temp file is the nested one's: placed first
    moved = []
    for kind, base_b, old_name, name, size in entries:
        base = os.fsdecode(base_b)
        want = name if exists(base, name) else old_name if exists(base, old_name) else None
        if want is None:
            continue
        logs = os.path.join(base, "logs")
        tmp = os.path.join(logs, "refs", TMP_LOG)
        old_log, new_log = os.path.join(logs, os.fsdecode(old_name)), os.path.join(logs, os.fsdecode(name))
        dst = os.path.join(logs, os.fsdecode(want))
        candidates = (tmp, new_log, old_log) if kind == NESTED else (new_log, old_log)
        src = next((p for p in candidates if os.path.isfile(p) and not os.path.islink(p)), None)
        if src is None or src == dst:
            continue
        place(src, dst, tmp)
        if src != tmp:
            prune(os.path.dirname(src), os.path.join(logs, *os.fsdecode(want).split("/")[:2]))
        if want == old_name:  # back: without the rename's own entry
            try:
                if os.stat(dst).st_size > int(size):
                    os.truncate(dst, int(size))
            except (OSError, ValueError):
                pass
        moved.append(want)
    step("unlink rename journal", path)
    os.unlink(path)
    return moved
