"""Which store a repository uses: ``open_store(repo)`` dispatches on ``repo.ref_storage``.

Imports are lazy so a command touching one backend never pays for the other's modules.
"""

from __future__ import annotations

from .errors import UnsupportedFormat
from .repo import Repo


def open_store(repo: Repo):  # -> FilesStore | ReftableStore
    """The ref store of ``repo`` (its worktree's view: per-worktree refs come from ``repo.gitdir``)."""
    if repo.ref_storage == "files":
        from .stores.files import FilesStore

        return FilesStore(repo)
    if repo.ref_storage == "reftable":
        from .stores.reftable import ReftableStore

        return ReftableStore(repo)
    raise UnsupportedFormat(repo.commondir, f"unknown ref storage format '{repo.ref_storage}'")
