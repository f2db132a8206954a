"""core.fsync: the native engines fsync exactly what git fsyncs, and only when ``reference`` is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.txn import Transaction

from tests.support.git import git, init_repo
from tests.support.txn import open_txn_store


@pytest.mark.parametrize("setting", [None, "reference", "committed", "none", "pack,index"])
def test_fsync_follows_core_fsync(tmp_path: Path, ref_format: str, setting: str | None) -> None:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    git(repo, "branch", "gone")
    if ref_format == "files":
        git(repo, "pack-refs", "--all")
    if setting:
        git(repo, "config", "core.fsync", setting)
    txn = Transaction(open_txn_store(repo))
    txn.delete(b"refs/heads/gone")
    report = txn.commit().report
    if report.source != "perf":  # only the kernel's per-syscall counts can say how many fsyncs ran
        return
    fsyncs = report.syscalls_by_name.get("fsync", 0) + report.syscalls_by_name.get("fdatasync", 0)
    wanted = setting in ("reference", "committed")
    if not wanted:
        assert fsyncs == 0
    elif ref_format == "files":
        assert fsyncs == 1  # packed-refs.new (the branch has no reflog left to append to)
    else:
        assert fsyncs == 2  # the new table and tables.list.lock
