"""Signals during ``refscope update``: the process stops itself just before its k-th on-disk step
(``REFSCOPE_CRASH_PAUSE=k``), the test sends SIGTERM then SIGCONT. The process dies by that signal, leaves no
lock, ``.new`` or temp file, git reads a clean repository, and the transaction is all or nothing: before the
commit point nothing changed, from it on (files: the finish, held by ``lockfile.committing``; reftable: the
rename of ``tables.list``) the transaction completes first."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.update import (
    copy_repo,
    create_refs,
    for_each_ref,
    git,
    git_env,
    init_repo,
    leftovers,
    terminate_when_paused,
)


def make(root: Path, fmt: str) -> tuple[Path, bytes]:
    repo = init_repo(root / "base", fmt=fmt)
    head = create_refs(repo, (b"refs/heads/old-%03d" % i for i in range(40)))
    if fmt == "files":
        git(repo, "pack-refs", "--all")
    data = b"".join(b"create refs/heads/new/%03d %s\n" % (i, head) for i in range(60))
    data += b"".join(b"delete refs/heads/old-%03d %s\n" % (i, head) for i in range(0, 40, 4))
    return repo, data


def run(repo: Path, data: bytes, env_extra: dict) -> subprocess.Popen:
    env = git_env() | env_extra
    proc = subprocess.Popen(
        [sys.executable, "-m", "refscope.app", "-C", str(repo), "update"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    proc.stdin.write(data)
    proc.stdin.close()
    return proc


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_sigterm_at_steps(fmt: str, tmp_path: Path) -> None:
    base, data = make(tmp_path, fmt)
    traced = copy_repo(base, tmp_path / "traced")
    trace = tmp_path / "trace"
    proc = run(traced, data, {"REFSCOPE_CRASH_TRACE": str(trace)})
    assert proc.wait() == 0, proc.stderr.read()
    steps = trace.read_text().splitlines()
    after = for_each_ref(traced)
    before = for_each_ref(base)
    n = len(steps)
    for k in sorted({1, 2, n // 3, n // 2, (2 * n) // 3, n - 2, n - 1, n}):
        repo = copy_repo(base, tmp_path / f"k{k}")
        proc = run(repo, data, {"REFSCOPE_CRASH_PAUSE": str(k)})
        status = terminate_when_paused(proc)
        assert status == -signal.SIGTERM, (k, steps[k - 1], status, proc.stderr.read())
        assert leftovers(repo) == [], (k, steps[k - 1])
        git(repo, "refs", "verify")
        assert for_each_ref(repo) in (before, after), (k, steps[k - 1])
