"""The git engine: the same transaction committed by ``git update-ref --stdin -z``.

It is both a fallback and the yardstick: the meter counts it with its child process, and the benchmark sets
the native engines against it. git's refusals come back on stderr (``fatal: cannot lock ref ...``) and are
mapped onto the same typed errors the native engines raise.
"""

from __future__ import annotations

import os
import subprocess

from ..errors import LockBusy, StaleValue, TransactionRefused
from .common import Deletion


def git_binary() -> str:
    return os.environ.get("REFSCOPE_GIT") or "git"


def build_input(deletions: list[Deletion]) -> bytes:
    """``start``, one ``delete <ref> NUL <old> NUL`` per deletion, ``prepare``, ``commit`` (the -z format)."""
    parts = [b"start\0"]
    for d in deletions:
        parts.append(b"delete %s\0%s\0" % (d.name, d.old_oid or b""))
    parts.append(b"prepare\0commit\0")
    return b"".join(parts)


def map_error(stderr: bytes, gitdir: str) -> TransactionRefused:
    """git's ``fatal:``/``error:`` text as the typed error a native engine would raise."""
    text = stderr.decode("utf-8", "replace").strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = ""
    for ln in lines:
        if ln.startswith(("fatal: ", "error: ")):
            first = ln.split(": ", 1)[1]
            break
    if not first:
        first = lines[0] if lines else "git update-ref failed"
    for verb in ("prepare: ", "commit: ", "start: "):  # the --stdin verbs prefix git's own message
        if first.startswith(verb):
            first = first[len(verb) :]
            break
    hint = " ".join(ln for ln in lines if not ln.startswith(("fatal: ", "error: ")))
    if "Unable to create '" in first and "File exists" in first or first == "cannot lock references":
        lock = (
            first.split("Unable to create '", 1)[1].split("'", 1)[0]
            if "Unable to create '" in first
            else None
        )
        err: TransactionRefused = LockBusy(
            lock or os.path.join(gitdir, "reftable", "tables.list.lock"), first
        )
        err.hint = hint  # type: ignore[attr-defined]
        return err
    if " but expected " in first or "unable to resolve reference" in first:
        return StaleValue(None, first)
    return TransactionRefused(None, first)


def commit(repo, deletions: list[Deletion], *, no_deref: bool = False, message: bytes = b"") -> list[bytes]:
    """Run git; returns the names asked for (git does not say which existed). Raises on refusal."""
    argv = [git_binary(), "--git-dir=" + repo.gitdir, "update-ref", "--stdin", "-z"]
    if no_deref:
        argv.insert(4, "--no-deref")
    if message:
        argv[4:4] = ["-m", os.fsdecode(message)]
    data = build_input(deletions)
    returncode, err = run_update_ref(repo, argv, data)
    if returncode != 0:
        raise map_error(err, repo.gitdir)
    return [d.name for d in deletions]


def run_update_ref(repo, argv: list[str], data: bytes) -> tuple[int, bytes]:
    """Run ``git update-ref --stdin`` (``argv``) in ``repo`` on ``data``; returns its exit status and stderr.
    The one way refscope hands a transaction to git (deletions and update's commands)."""
    env = dict(os.environ)
    env.pop("GIT_DIR", None)
    env.pop("GIT_COMMON_DIR", None)
    cwd = repo.worktree or repo.gitdir
    from ..lockfile import add_child, drop_child, hold, release
    from ..meter import child_argv

    # git holds the locks: a signal that ends us goes to git too, and we wait while git's own handlers
    # remove its lock files (lockfile.py, "Signals"). Started inside a hold, so that no signal finds the
    # child started but not yet known.
    hold()
    try:
        proc = subprocess.Popen(
            child_argv(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        add_child(proc.pid)
    except OSError as e:  # no git, or no pipes or process to spare (EMFILE, EAGAIN...): git never ran
        raise TransactionRefused(repo.gitdir, f"cannot run {argv[0]}: {e.strerror}") from None
    finally:
        release()
    try:
        _out, err = proc.communicate(data)
    except BaseException:
        proc.terminate()  # SIGTERM, not SIGKILL: git's handlers remove its locks
        proc.wait()
        raise
    finally:
        drop_child(proc.pid)
    return proc.returncode, err
