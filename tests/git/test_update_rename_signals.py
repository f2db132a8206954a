"""Signals during a transaction with renames: the process stops itself just before its k-th on-disk step
(``REFSCOPE_CRASH_PAUSE=k``), the test sends SIGTERM then SIGCONT. It dies by that signal, leaves no lock
(config.lock and the worktrees' HEAD.lock included), ``.new`` or temp file, git reads a clean repository,
and the transaction is all or nothing, config included: the refs and the moved config section are both
there or neither (once config.lock is written, a signal waits for both)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.update import (
    build_repo,
    copy_repo,
    for_each_ref,
    git,
    git_env,
    leftovers,
    terminate_when_paused,
)

DRIVER = """
import os, sys
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.update.commands import Command, Rename
from refscope.backend.update.txn import UpdateTransaction

repo = sys.argv[1]
txn = UpdateTransaction(open_store(discover(repo, dict(os.environ))))
head = txn.resolver()(b"HEAD")
zero = b"0" * len(head)
txn.queue([
    Command("create", b"refs/heads/c1", head, zero, None, None, False),
    Rename(b"refs/heads/main", b"refs/heads/x/trunk", None),
    Rename(b"refs/heads/wt-branch", b"refs/heads/wt2", None),
    Command("delete", b"refs/heads/l02", zero, None, None, None, False),
])
txn.commit()
"""


def run(repo: Path, env_extra: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(repo)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git_env() | env_extra,
    )


def look(repo: Path) -> tuple:
    heads = (git(repo, "symbolic-ref", "HEAD"), git(repo / "wt", "symbolic-ref", "HEAD"))
    return for_each_ref(repo), heads, (repo / ".git" / "config").read_bytes()


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_sigterm_at_every_step_of_a_rename(fmt: str, tmp_path: Path) -> None:
    base = build_repo(tmp_path / "base", fmt, "sha1", n_branches=8)
    git(base, "config", "branch.main.remote", "origin")
    traced = copy_repo(base, tmp_path / "traced")
    trace = tmp_path / "trace"
    proc = run(traced, {"REFSCOPE_CRASH_TRACE": str(trace)})
    assert proc.wait() == 0, proc.stderr.read()
    steps = trace.read_text().splitlines()
    before, after = look(base), look(traced)
    assert before != after
    for k in range(1, len(steps) + 1):
        repo = copy_repo(base, tmp_path / f"k{k}")
        proc = run(repo, {"REFSCOPE_CRASH_PAUSE": str(k)})
        status = terminate_when_paused(proc)
        where = (k, steps[k - 1])
        assert status == -signal.SIGTERM, (*where, status, proc.stderr.read())
        assert leftovers(repo) == [], where
        git(repo, "refs", "verify")
        assert look(repo) in (before, after), where
