"""Copy and open: what a user does next with a ref (lazygit's copy and "view in git log").

The clipboard gets the ref's exact text (``display.clipboard_text``, sent by ``App.copy_to_clipboard`` as
OSC 52); ``git log`` runs with the
app suspended, git's own pager in front, with the repository's git ($REFSCOPE_GIT, else git).
"""

from __future__ import annotations

import os


def git_log_command(repo, name: bytes) -> list[bytes]:
    """``git -C <worktree or gitdir> log --decorate --end-of-options <name> --`` as bytes (a name is
    bytes; ``--end-of-options`` and ``--`` keep any name a revision, never an option or a path)."""
    from refscope.backend.engines.git import git_binary

    where = getattr(repo, "worktree", None) or repo.gitdir
    return [
        os.fsencode(git_binary()),
        b"-C",
        os.fsencode(where),
        b"log",
        b"--decorate",
        b"--end-of-options",
        name,
        b"--",
    ]
