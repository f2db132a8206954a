"""One verify run: ownership, the storage's own checks, the lock files, then a cross-check through the
stores' readers; the summary line of ``refscope verify``.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from ..errors import RefscopeError
from ..formats.reftable.record import VALUE_SYMREF
from ..refname import check_refname
from .files import verify_loose, verify_packed
from .findings import ERROR, Collector, Finding, quoted
from .locks import report_locks
from .ownership import check_ownership
from .reftable import verify_reftable


def _reader_crosscheck(out: Collector, repo) -> None:
    """Open the store with refscope's readers and read everything: report what they reject that the
    checks did not, and any exception that is not a typed error (a decoder bug)."""
    from ..store import open_store

    try:
        snap = open_store(repo).snapshot()
        for _ref in snap:
            pass
        snap.head()
    except RefscopeError as err:
        f = err.file or repo.commondir
        if f not in out.error_files and not any(fe.startswith(f) for fe in out.error_files):
            out.error(f, err.offset, f"refscope's reader rejects it: {err.what}")
    except (MemoryError, RecursionError) as err:  # pragma: no cover - decoder bug
        out.error(repo.commondir, None, f"refscope's reader failed with {type(err).__name__}: a refscope bug")
    except Exception as err:  # noqa: BLE001 - verify must keep running; this is a decoder bug to report
        if not out.error_files:
            out.error(
                repo.commondir,
                None,
                f"refscope's reader crashed ({type(err).__name__}: {err}): a refscope "
                "bug; the walker found nothing wrong here",
            )


class Summary(NamedTuple):
    """What one verify run read: the ref storage format, the refs found, the reftable tables (both stacks
    of a linked worktree), the packed-refs records and loose refs, and the findings by severity."""

    format: str
    refs: int
    tables: int
    packed: int
    loose: int
    errors: int
    warnings: int
    objects: int | None = None  # distinct objects read by --objects (None: not asked)

    def line(self) -> str:
        """The one line ``refscope verify`` ends with on stderr."""
        e, w = self.errors, self.warnings
        counts = f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"
        if not self.format:  # the repository could not be opened: nothing was read
            return counts
        if self.format == "reftable":
            what = f"reftable: {self.tables:,} table{'s' if self.tables != 1 else ''}"
        else:
            what = f"files: {self.packed:,} packed, {self.loose:,} loose"
        if self.objects is not None:
            what += f"; {self.objects:,} object{'s' if self.objects != 1 else ''}"
        return f"{counts} in {self.refs:,} ref{'s' if self.refs != 1 else ''} ({what})"


def verify(repo, *, crosscheck: bool = True, env=None, objects: bool = False) -> list[Finding]:
    """Every finding for ``repo`` (a ``backend.repo.Repo``), errors and warnings, in a stable order;
    with ``objects``, also every ref's value against the object database (``objects.check_objects``).

    Never raises for anything on disk: a failure of verify itself (a refscope bug) becomes an error
    finding on the repository, so the CLI and the TUI always get a list."""
    return verify_summary(repo, crosscheck=crosscheck, env=env, objects=objects)[0]


def verify_summary(
    repo, *, crosscheck: bool = True, env=None, objects: bool = False
) -> tuple[list[Finding], Summary]:
    """``verify`` and what it read (for the CLI's closing line)."""
    out = Collector()
    read = None
    try:
        owner = check_ownership(repo, env)
        if owner is not None:
            out.findings.append(owner)
        values = _verify_storage(out, repo, objects)
        report_locks(out, repo)
        if crosscheck:
            _reader_crosscheck(out, repo)
        if values is not None:
            from .objects import check_objects

            read = check_objects(out, repo, values)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 - verify reports, it does not crash
        out.error(
            repo.commondir,
            None,
            f"verify stopped early: {type(err).__name__}: {err} (a refscope bug; the findings above still hold)",
        )
    errors = sum(1 for f in out.findings if f.severity == ERROR)
    c = out.checked
    summary = Summary(
        repo.ref_storage,
        c["refs"],
        c["tables"],
        c["packed"],
        c["loose"],
        errors,
        len(out.findings) - errors,
        read,
    )
    return out.findings, summary


def _verify_storage(out: Collector, repo, objects: bool = False):
    """The storage checks; with ``objects``, the values to check against the object database (else
    None)."""
    values = None
    hexname = repo.hash_name
    symrefs: list[tuple[bytes, bytes, str]] = []
    present: set[bytes] = set()
    if repo.ref_storage == "reftable":
        merged = verify_reftable(out, repo.commondir, hexname)
        if os.path.realpath(repo.gitdir) != os.path.realpath(repo.commondir) and os.path.isdir(
            os.path.join(repo.gitdir, "reftable")
        ):
            # A linked worktree has its own stack for HEAD and the per-worktree refs.
            merged.update(verify_reftable(out, repo.gitdir, hexname))
        for name, (path, rec) in merged.items():
            present.add(name)
            if rec[1] == VALUE_SYMREF:
                symrefs.append((name, rec[4], path))
        out.checked["refs"] = len(merged)
        if objects:
            from .objects import reftable_values

            values = reftable_values(merged)
        head = os.path.join(repo.gitdir, "HEAD")
        # In a reftable repository HEAD on disk is a stub; the real HEAD is in the tables.
        if b"HEAD" not in merged and not os.path.exists(head):
            out.error(head, None, "HEAD is missing")
    else:
        packed = verify_packed(out, os.path.join(repo.commondir, "packed-refs"), hexname)
        present.update(packed)
        loose = verify_loose(out, repo.gitdir, repo.commondir, hexname)
        for name, (kind, value, path) in loose.items():
            present.add(name)
            if kind == "sym":
                symrefs.append((name, value, path))
        out.checked.update(refs=len(present), packed=len(packed), loose=len(loose))
        if objects:
            from .objects import files_values

            values = files_values(loose, os.path.join(repo.commondir, "packed-refs"), hexname)
        if b"HEAD" not in loose and not os.path.lexists(os.path.join(repo.gitdir, "HEAD")):
            out.error(os.path.join(repo.gitdir, "HEAD"), None, "HEAD is missing")
        new = os.path.join(repo.commondir, "packed-refs.new")
        if os.path.lexists(new):
            out.warning(
                new,
                None,
                "packed-refs.new left behind by an interrupted packed-refs rewrite (the writer died before "
                "renaming it); git ignores it, and the next rewrite replaces it",
            )
        from ..update.rename_journal import journal_path

        journal = journal_path(repo)
        if os.path.lexists(journal):
            out.warning(
                journal,
                None,
                "a rename's journal left behind by an interrupted refscope rename: a reflog may be away from "
                "its ref (or in logs/refs/.refscope-renamed-log); refscope's next rename puts it back",
            )
    # A store with errors has an incomplete view of its refs: "points nowhere" would be a guess.
    storage_broken = bool(out.error_files)
    for name, target, path in symrefs:
        if check_refname(target) is not None and target != b"HEAD":
            out.error(
                path, None, f"symref {quoted(name)} points at {quoted(target)}, which is not a valid ref name"
            )
            continue
        if not target.startswith(b"refs/") and not all(0x41 <= c <= 0x5A or c == 0x5F for c in target):
            out.warning(
                path,
                None,
                f"symref {quoted(name)} points at {quoted(target)}, which is not a ref (not under "
                "refs/ nor a root ref like HEAD)",
            )
            continue
        if target not in present and not storage_broken:
            if name == b"HEAD" and target.startswith(b"refs/heads/"):
                continue  # an unborn branch is normal (fresh repository, orphan checkout)
            out.warning(path, None, f"symref {quoted(name)} points at {quoted(target)}, which does not exist")
    return values
