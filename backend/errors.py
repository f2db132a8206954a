"""Typed errors. Every error knows the file it is about and, for corruption, the byte offset.

The CLI turns any of these into exactly one line, ``refscope: <file>: <what>``, and exit status 1;
the TUI shows them in place. Nothing else should escape the backend.
"""

from __future__ import annotations


class RefscopeError(Exception):
    """Base of every error the backend raises on purpose."""

    def __init__(self, file: str | None, what: str, offset: int | None = None) -> None:
        super().__init__(file, what, offset)
        self.file = file
        self.what = what
        self.offset = offset

    def __str__(self) -> str:
        where = self.file or "refscope"
        if self.offset is not None:
            return f"{where}: {self.what} (at byte {self.offset})"
        return f"{where}: {self.what}"

    def cli_line(self) -> str:
        """The one line the CLI prints: ``refscope: <file>: <what>``, with nothing a terminal would obey."""
        return printable(f"refscope: {self}")


class NotARepository(RefscopeError):
    """No git directory was found where discovery looked."""


class DubiousOwnership(RefscopeError):
    """The repository belongs to another user and ``safe.directory`` does not allow it."""


class UnsupportedFormat(RefscopeError):
    """A storage format, version or hash refscope does not handle (e.g. unknown refStorage)."""


class CorruptStore(RefscopeError):
    """On-disk data that git would reject (or that refscope checks more strictly)."""


class InvalidRefName(RefscopeError):
    """A name that fails git's check-ref-format rules."""


class TransactionRefused(RefscopeError):
    """A commit that did not happen; nothing on disk changed."""


class StaleValue(TransactionRefused):
    """An expected old value did not match under the lock ("is at X but expected Y")."""


class LockBusy(TransactionRefused):
    """A lock file could not be created within the configured timeout."""


def printable(line: str) -> str:
    """``line`` with everything a terminal would obey made visible: C0/C1 controls, bidi and other format
    characters, line separators, raw (surrogateescape'd) bytes. Messages quote ref names, paths and file
    bytes; none of them may move the cursor, retitle the terminal, reorder the text or split the line."""
    if line.isprintable():
        return line
    out = []
    for ch in line:
        cp = ord(ch)
        if ch.isprintable():
            out.append(ch)
        elif 0xDC80 <= cp <= 0xDCFF:
            out.append(f"\\x{cp - 0xDC00:02x}")
        elif cp < 0x100:
            out.append(f"\\x{cp:02x}")
        else:
            out.append(f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")
    return "".join(out)
