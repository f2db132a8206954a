"""The shared test helpers the update tests use, from wherever the tests' layout keeps them: this branch's
base has them at ``tests/*.py``; main's restructured layout (``tests/support/``, ``tests/git/``) at their new
places. One import site, so the update tests follow the layout without edits when merged."""

from __future__ import annotations

try:  # main's layout
    from tests.git.test_concurrency_txn import GitWorker
    from tests.git.test_crash_txn import fast_copy, leftover_files
    from tests.support.faults import fingerprint
    from tests.support.git import copy_repo, for_each_ref, git, git_binary, git_env, init_repo
    from tests.support.txn import (
        build_repo,
        check_clean,
        files_layout,
        leftovers,
        open_txn_store,
        reflogs,
        reftable_files,
        state,
    )
except ImportError:  # this branch's base
    from tests.faultutil import fingerprint
    from tests.gitutil import for_each_ref, git, git_binary, git_env, init_repo
    from tests.test_concurrency_txn import GitWorker
    from tests.test_crash_txn import fast_copy, leftover_files
    from tests.test_txn_support import (
        build_repo,
        check_clean,
        copy_repo,
        files_layout,
        leftovers,
        open_txn_store,
        reflogs,
        reftable_files,
        state,
    )

__all__ = [
    "GitWorker",
    "build_repo",
    "check_clean",
    "copy_repo",
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
    "state",
]
