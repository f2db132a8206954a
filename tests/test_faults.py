"""OS faults end in the one-line error: every command that reads, over every repository file a reader opens,
replaced by what the OS refuses to read (mode 000, a symlink loop, a directory, a FIFO), in both formats.

The mechanism under test is ``backend.fileio``: every reader opens through it (non-blocking, regular files
only, OSError -> UnreadableFile), so no errno escapes as a traceback and no FIFO blocks. Each cell checks
the exit status, the exact stderr, that nothing under ``.git`` changed, and that the command returns (a
subprocess timeout). Where git hides the damage (a broken loose ref in a listing; a directory where a loose
ref was) refscope does what git does, and the cell says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faultutil import FAULTS, WHY, fingerprint, make_fault, unprivileged
from tests.gitutil import git, git_binary, git_env, init_repo

COMMANDS = ("list", "stack", "verify", "delete", "dump")
KINDS = {"files": ("packed-refs", "loose ref"), "reftable": ("tables.list", "table")}
CELLS = [
    (fmt, kind, fault, cmd)
    for fmt, kinds in KINDS.items()
    for kind in kinds
    for fault in FAULTS
    for cmd in COMMANDS
]
TIMEOUT = 30  # seconds: a FIFO that blocked a reader would hang here


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One repository per format: refs/heads/x (loose in files, packed-refs holding the rest)."""
    out = {}
    for fmt in KINDS:
        repo = init_repo(tmp_path_factory.mktemp(f"faults-{fmt}") / "repo", fmt=fmt)
        git(repo, "branch", "a")
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/x", "HEAD")
        out[fmt] = repo
    return out


def _target(repo: Path, kind: str) -> Path:
    gitdir = repo / ".git"
    if kind == "packed-refs":
        return gitdir / "packed-refs"
    if kind == "loose ref":
        return gitdir / "refs" / "heads" / "x"
    if kind == "tables.list":
        return gitdir / "reftable" / "tables.list"
    return gitdir / "reftable" / (gitdir / "reftable" / "tables.list").read_text().split()[0]


def _argv(cmd: str, repo: Path, target: Path) -> list[str]:
    if cmd == "dump":
        return ["dump", str(target)]
    if cmd == "delete":
        return ["delete", "-C", str(repo), "refs/heads/x"]
    return [cmd, "-C", str(repo)]


def _run(prefix: list[str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "refscope.app", *argv],
        capture_output=True,
        env=git_env(),
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize(
    ("fmt", "kind", "fault", "cmd"), CELLS, ids=["-".join(c).replace(" ", "_") for c in CELLS]
)
def test_unreadable_file_is_one_line(
    bases: dict[str, Path], tmp_path: Path, fmt: str, kind: str, fault: str, cmd: str
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(bases[fmt], repo, symlinks=True)
    target = _target(repo, kind)
    make_fault(target, fault)
    prefix = unprivileged() if fault == "mode000" else []
    before = fingerprint(repo / ".git")

    if (kind, fault, cmd) == ("loose ref", "directory", "delete"):
        # git's delete removes the (empty) directory in the way and the reflog: the oracle is git's result
        oracle = tmp_path / "oracle"
        shutil.copytree(repo, oracle, symlinks=True)
        git(oracle, "update-ref", "-d", "refs/heads/x")
        before = fingerprint(oracle / ".git")

    out = _run(prefix, *_argv(cmd, repo, target))

    err = out.stderr.decode()
    assert "Traceback" not in err
    assert fingerprint(repo / ".git") == before
    why = WHY[fault]
    if kind != "loose ref" or cmd == "dump":
        if cmd == "verify":
            assert out.returncode == 1, err
            assert any(line.startswith(f"error: {target}") for line in out.stdout.decode().splitlines())
            assert err.count("\n") == 1 and err.startswith("refscope verify: ") and "stopped early" not in err
        else:
            assert (out.returncode, err) == (1, f"refscope: {target}: couldn't read: {why}\n")
        return
    # A loose ref: what git does. Listing hides the broken ref (git: "ignoring broken ref", exit 0); a
    # directory is no ref at all (git's delete succeeds); a delete of the unreadable ref is refused.
    if cmd == "list":
        want = subprocess.run(
            [*prefix, git_binary(), "-C", str(repo), "for-each-ref", "--format=%(objectname) %(refname)"],
            capture_output=True,
            env=git_env(),
            timeout=TIMEOUT,
        )
        assert (out.returncode, out.stdout) == (want.returncode, want.stdout) == (0, want.stdout)
        assert b"refs/heads/x" not in out.stdout and b"refs/heads/a" in out.stdout
    elif cmd == "stack":
        assert (out.returncode, err) == (0, "")
    elif fault == "directory":
        assert out.returncode == 0, err
    elif cmd == "verify":
        assert out.returncode == 1, err
        assert any(line.startswith(f"error: {target}") for line in out.stdout.decode().splitlines())
    else:
        assert (out.returncode, err) == (1, f"refscope: {target}: unable to resolve reference: {why}\n")
