"""Driving the real git, the oracle every test compares against, and the repositories it builds.

``REFSCOPE_GIT`` names a reftable-capable git (>= 2.45); ``scripts/test`` provisions one. When it is not
set, ``scripts/provision-git`` is run once (it builds git from Debian's source package if needed).
Every git run here gets ``git_env()``: no system or global config, fixed identities and dates, so that two
repositories built alike are alike byte for byte.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: tests/support/git.py -> ../..

# git has no config for reftable auto-compaction, only this test variable (git 2.55).
NO_AUTOCOMPACT = {"GIT_TEST_REFTABLE_AUTOCOMPACTION": "false"}


@functools.cache
def git_binary() -> str:
    env_git = os.environ.get("REFSCOPE_GIT")
    if env_git:
        return env_git
    out = subprocess.run(
        [str(ROOT / "scripts" / "provision-git")], check=True, capture_output=True, text=True
    ).stdout.strip()
    os.environ["REFSCOPE_GIT"] = out
    return out


GLOBAL_CONFIG = Path(__file__).with_name("gitconfig")


def git_env(home: Path | None = None) -> dict[str, str]:
    """A deterministic environment: no system config, the tests' own global one (``gitconfig``: git's
    auto-maintenance in the foreground), fixed identities and dates."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(GLOBAL_CONFIG),
        GIT_AUTHOR_NAME="A U Thor",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="C O Mitter",
        GIT_COMMITTER_EMAIL="committer@example.com",
        GIT_AUTHOR_DATE="1700000000 +0000",
        GIT_COMMITTER_DATE="1700000000 +0000",
        LC_ALL="C",
        TZ="UTC",
    )
    if home is not None:
        env["HOME"] = str(home)
    return env


def use_git_identity(monkeypatch) -> None:
    """Give this process git_env()'s identities, dates and config isolation, so that what refscope writes
    (reflog entries) carries the same identity and date git's runs get."""
    for key, value in git_env().items():
        if key.startswith(("GIT_COMMITTER_", "GIT_AUTHOR_", "GIT_CONFIG_")):
            monkeypatch.setenv(key, value)


def run_git(
    cwd: Path | str, *args: str, input: bytes | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """git in ``cwd`` as a process (for tests of its exit status and stderr); ``env`` replaces
    ``git_env()`` when given."""
    return subprocess.run(
        [git_binary(), *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env=git_env() if env is None else env,
    )


def git_pipe(cwd: Path | str, *args: str) -> subprocess.Popen:
    """git in ``cwd`` as a running process with its stdin and stdout on pipes (a ``--stdin`` or
    ``--batch`` conversation); the caller kills and waits for it."""
    return subprocess.Popen(
        [git_binary(), *args], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=git_env()
    )


def git(
    cwd: Path | str, *args: str, input: bytes | None = None, check: bool = True, env: dict | None = None
) -> bytes:
    """Run git in ``cwd`` and return its stdout bytes (raises CalledProcessError with stderr); ``env`` is
    added to ``git_env()`` (e.g. ``NO_AUTOCOMPACT``)."""
    proc = run_git(cwd, *args, input=input, env={**git_env(), **env} if env else None)
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return proc.stdout


def git_noauto(cwd: Path | str, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """``git`` with reftable auto-compaction off: each write leaves its own table on the stack."""
    return git(cwd, *args, input=input, check=check, env=NO_AUTOCOMPACT)


def init_repo(path: Path, fmt: str = "files", hash_name: str = "sha1", bare: bool = False) -> Path:
    """``git init`` with the given ref format and object format, plus one commit on main (unless bare)."""
    path.mkdir(parents=True, exist_ok=True)
    args = ["init", "-q", "-b", "main", f"--ref-format={fmt}", f"--object-format={hash_name}"]
    if bare:
        args.append("--bare")
    git(path, *args, ".")
    if not bare:
        (path / "file").write_text("hello\n")
        git(path, "add", "file")
        git(path, "commit", "-q", "-m", "initial")
    return path


def create_refs(repo: Path | str, names, value: bytes | str | None = None) -> bytes:
    """Create every name of ``names`` (bytes or str) in one ``git update-ref --stdin`` transaction, at
    ``value`` (an oid or a revision; default: HEAD's commit), and return that value."""
    if value is None:
        value = git(repo, "rev-parse", "HEAD").strip()
    value = os.fsencode(value)
    lines = b"".join(b"create %s %s\n" % (os.fsencode(n), value) for n in names)
    git(repo, "update-ref", "--stdin", input=lines)
    return value


def start_cached_repo(path: Path) -> bool:
    """For a benchmark's cached repository: False when a finished one is at ``path`` (its
    ``.git/bench-done``); else ``path`` is emptied and ``git init``-ed (branch main) and True returned (the
    caller builds it, then writes ``.git/bench-done``)."""
    if (path / ".git" / "bench-done").exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return True


def one_table_reftable(path: Path, n: int, prefix: str) -> Path:
    """A reftable repository (made once: ``.built``) with ``n - 1`` refs ``<prefix><i:07d>`` beside main,
    created in one transaction and compacted into one table."""
    if (path / ".built").exists():
        return path
    init_repo(path, fmt="reftable")
    create_refs(path, (f"{prefix}{i:07d}" for i in range(n - 1)))
    git(path, "pack-refs", "--all")
    (path / ".built").write_text("ok\n")
    return path


def for_each_ref(repo: Path | str, *patterns: str) -> list[tuple[bytes, bytes, bytes, bytes]]:
    """(name, oid, peeled-or-empty, symref-target-or-empty) for every ref git lists, in git's order."""
    fmt = "%(refname)%00%(objectname)%00%(*objectname)%00%(symref)"
    out = git(repo, "for-each-ref", f"--format={fmt}", *patterns)
    rows = []
    for line in out.split(b"\n"):
        if line:
            name, oid, peeled, target = line.split(b"\0")
            rows.append((name, oid, peeled, target))
    return rows


def tree_bytes(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` with its exact content: for asserting that nothing changed."""
    out: dict[str, bytes] = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(path))] = p.read_bytes()
    return out


def ref_storage(path: Path) -> dict[str, bytes]:
    """``tree_bytes`` of a git dir (or of a worktree holding ``.git``) without the object store: git's
    detached auto-maintenance, spawned by the commit that built the repository, may still be writing there
    (maintenance.lock) when a test starts."""
    return {
        k: v
        for k, v in tree_bytes(path).items()
        if not (k.startswith("objects/") or k.startswith(".git/objects/"))
    }


def copy_repo(src: Path, dst: Path) -> Path:
    """A copy of the repository at ``src`` (symlinks kept as links), at ``dst``."""
    shutil.copytree(src, dst, symlinks=True)
    return dst
