"""The shared test helpers the update tests use, in one import: the transaction fixtures of ``support.txn``
and git's own helpers."""

from __future__ import annotations

from tests.support.faults import fingerprint
from tests.support.git import (
    copy_repo,
    create_refs,
    for_each_ref,
    git,
    git_binary,
    git_env,
    init_repo,
    use_git_identity,
)
from tests.support.txn import (
    GitWorker,
    build_repo,
    check_clean,
    concurrent_git,
    crash_source,
    fast_copy,
    files_layout,
    leftover_files,
    leftovers,
    open_txn_store,
    reflogs,
    reftable_files,
    run_armed_child,
    state,
    terminate_when_paused,
)

__all__ = [
    "GitWorker",
    "build_repo",
    "check_clean",
    "concurrent_git",
    "crash_source",
    "copy_repo",
    "create_refs",
    "fast_copy",
    "files_layout",
    "fingerprint",
    "for_each_ref",
    "git",
    "git_binary",
    "git_env",
    "init_repo",
    "leftover_files",
    "leftovers",
    "open_txn_store",
    "reflogs",
    "reftable_files",
    "run_armed_child",
    "state",
    "terminate_when_paused",
    "use_git_identity",
]
