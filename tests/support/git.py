"""Driving the real git, the oracle every test compares against.

``REFSCOPE_GIT`` names a reftable-capable git (>= 2.45); ``scripts/test`` provisions one. When it is not
set, ``scripts/provision-git`` is run once (it builds git from Debian's source package if needed).
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def git_env(home: Path | None = None) -> dict[str, str]:
    """A deterministic environment: no system/global config, fixed identities and dates."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
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


def git(cwd: Path | str, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """Run git in ``cwd`` and return its stdout bytes (raises CalledProcessError with stderr)."""
    proc = subprocess.run([git_binary(), *args], cwd=cwd, input=input, capture_output=True, env=git_env())
    if check and proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return proc.stdout


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


def create_refs(repo: Path | str, names, value: bytes | None = None) -> bytes:
    """Create every name of ``names`` in one ``git update-ref --stdin`` transaction, at ``value`` (default:
    HEAD's commit), and return that value."""
    if value is None:
        value = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "--stdin", input=b"".join(b"create %s %s\n" % (n, value) for n in names))
    return value


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
