"""Taking back the reflog appends of a files finish that failed half way.

The files engine writes every reflog entry of a transaction before it renames any lock into place
(``update/files.py``): when one entry cannot be written (disk full, EACCES, a symlink loop), the entries
before it are taken back, so that the refusal leaves every byte as it was -- git's own finish, which
appends and renames ref by ref, would have left the refs before it moved. The journal records what each
append did, so that nothing is stat'ed ahead on the hot path.
"""

from __future__ import annotations

import os


class Appended:
    """One reflog append: its file, whether the append created it (with the directories in ``made``), and
    how many bytes reached it; or (``moved_from``) a rename's reflog moved to ``path``."""

    __slots__ = ("path", "created", "made", "written", "moved_from", "via")

    def __init__(self, path: str, created: bool, made: list[str]) -> None:
        self.path = path
        self.created = created
        self.made = made
        self.written = 0
        self.moved_from: str | None = None
        self.via: str | None = None  # a nested rename's temp file: update/nested.py


class ReflogJournal:
    """What a finish did to reflogs so far, newest last."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[Appended] = []

    def appended(self, path: str, created: bool, made: list[str]) -> Appended:
        done = Appended(path, created, made)
        self.entries.append(done)
        return done

    def moved(self, old: str, new: str, made: list[str]) -> None:
        done = Appended(new, False, made)
        done.moved_from = old
        self.entries.append(done)

    def moved_via(self, old: str, new: str, tmp: str) -> None:
        """Record a nested rename's reflog moved from ``old`` to ``new`` through ``tmp``."""
        done = Appended(new, False, [])
        done.moved_from = old
        done.via = tmp
        self.entries.append(done)

    def undo(self) -> None:
        """Newest first: a moved reflog goes back, a created one is unlinked with the directories made for
        it, an existing one is truncated to its size before. Best effort: the file system that refused one
        append may refuse this too."""
        for done in reversed(self.entries):
            if done.via is not None:
                from .nested import undo_move

                undo_move(done.path, done.moved_from, done.via)
                continue
            try:
                if done.moved_from is not None:
                    os.rename(done.path, done.moved_from)
                elif done.created:
                    os.unlink(done.path)
                elif done.written:
                    size = os.stat(done.path).st_size
                    os.truncate(done.path, max(0, size - done.written))
            except OSError:
                pass
            for d in reversed(done.made):
                try:
                    os.rmdir(d)
                except OSError:
                    break
        self.entries = []


def missing_dirs(d: str) -> list[str]:
    """The directories ``os.makedirs(d)`` will create, outermost first."""
    out = []
    while d and not os.path.isdir(d):
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out[::-1]
