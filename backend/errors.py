"""Typed errors. Every error knows the file it is about and, for corruption, the byte offset.

The CLI turns any of these into exactly one line, ``refscope: <file>: <what>``, and exit status 1;
the TUI shows them in place. Nothing else should escape the backend.
"""

from __future__ import annotations

LINE_LIMIT = 4096  # characters of a one-line error at most (git's die() formats into 4096 bytes)


class RefscopeError(Exception):
    """Base of every error the backend raises on purpose."""

    def __init__(self, file: str | None, what: str, offset: int | None = None) -> None:
        super().__init__(file, what, offset)
        self.file = file
        self.what = what
        self.offset = offset

    def __str__(self) -> str:
        text = self.what if self.offset is None else f"{self.what} (at byte {self.offset})"
        return f"{self.file}: {text}" if self.file else text

    @property
    def brief(self) -> str:
        """``what`` cut to LINE_LIMIT characters, as the CLI's line is: what ``--json`` reports."""
        w = self.what
        return w if len(w) <= LINE_LIMIT else w[: LINE_LIMIT - 3] + "..."

    def cli_line(self) -> str:
        """The one line the CLI prints: ``refscope: <file>: <what>``, with nothing a terminal would obey."""
        from .display import printable

        line = f"refscope: {self}"
        if len(line) > LINE_LIMIT:  # a 100 MB name quoted in a message: cut, as git's die() cuts
            line = line[: LINE_LIMIT - 3] + "..."
        return printable(line)


def name_text(name: bytes) -> str:
    """A ref name (or path) in a message: git prints its bytes; a ``str`` message carries them as UTF-8,
    U+FFFD for what is not. One helper for every message that names a ref."""
    return name.decode("utf-8", "replace")


def from_untyped(err: BaseException) -> RefscopeError:
    """A typed error for an OSError or MemoryError that escaped every reader and writer (the CLI's last
    resort): the file it names, if any, and what happened."""
    if isinstance(err, MemoryError):
        return RefscopeError(None, "out of memory")
    what = os_reason(err)
    file = getattr(err, "filename", None)
    if isinstance(file, bytes):
        import os

        file = os.fsdecode(file)
    return RefscopeError(file, what)


def os_reason(err: BaseException) -> str:
    """What an OS error says happened: its ``strerror`` (git's wording for the errno), else its text."""
    return getattr(err, "strerror", None) or str(err) or type(err).__name__


class NotARepository(RefscopeError):
    """No git directory was found where discovery looked."""


class DubiousOwnership(RefscopeError):
    """The repository belongs to another user and ``safe.directory`` does not allow it."""


class UnsupportedFormat(RefscopeError):
    """A storage format, version or hash refscope does not handle (e.g. unknown refStorage)."""


class CorruptStore(RefscopeError):
    """On-disk data that git would reject (or that refscope checks more strictly).

    Each one is remembered against the file it names (``remember_damage``, by identity: device, inode,
    size, times), for the life of the process: a read that found a file damaged -- a listing that hit one
    bad block of a table, say -- taints writes onto that file even when the write itself would read only
    healthy parts of it (``known_damage``). One rule for the TUI, where the listing and the commit share a
    process.

    Why at construction and not where a store catches it: the decoders raise it from many places, most of
    them deep inside lazy iterators that the views drive (a row decoded on scroll, a block the filter
    reaches), long after the store handed its snapshot out; no store frame is on the stack to record it,
    and a finding that was shown but not recorded would let a later commit write over the damage. Every
    finding is constructed, so construction is the one place none is missed."""

    def __init__(self, file: str | None, what: str, offset: int | None = None) -> None:
        super().__init__(file, what, offset)
        remember_damage(file, what, offset)


# (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) of a file some read found corrupt -> (file, what,
# offset) of the first error found there. A file rewritten in place or replaced gets another identity, so a
# repaired file is clean.
_DAMAGED: dict[tuple[int, ...], tuple[str, str, int | None]] = {}


def _identity(path: str) -> tuple[int, ...] | None:
    import os

    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def remember_damage(file: str | None, what: str, offset: int | None) -> None:
    """Record that ``file`` (as it is now) holds damage (the first finding per file identity is kept;
    not the error itself: its traceback would pin frames)."""
    if file:
        key = _identity(file)
        if key is not None:
            _DAMAGED.setdefault(key, (file, what, offset))


def known_damage(path: str) -> tuple[str, str, int | None] | None:
    """(file, what, offset) of the error an earlier read in this process found in the file at ``path``
    (as it is now), or None. Costs nothing while no read has found damage anywhere."""
    if not _DAMAGED:
        return None
    key = _identity(path)
    return None if key is None else _DAMAGED.get(key)


class BadFilter(RefscopeError):
    """A TUI filter term that names nothing to test against (``merged:REF`` with no such ref or commit):
    the filter is refused, the list stays as it was."""


class InvalidRefName(RefscopeError):
    """A name that fails git's check-ref-format rules."""


class TransactionRefused(RefscopeError):
    """A commit that did not happen; nothing on disk changed."""


class StaleValue(TransactionRefused):
    """An expected old value did not match under the lock ("is at X but expected Y")."""


class LockBusy(TransactionRefused):
    """A lock file could not be created within the configured timeout."""


class UnreadableFile(CorruptStore):
    """A file a reader needs exists but cannot be read: permissions, a symlink loop, an I/O error, or
    not a regular file (a directory, a FIFO, a device). A store that fails to read is refused for writes,
    so this is a kind of CorruptStore; ``backend.fileio`` raises it with git's wording, ``couldn't read:
    <why>``. ``errno``: the error number (EISDIR for a directory), None for another kind of file that is
    not regular."""

    def __init__(self, file: str | None, why: str, errno: int | None = None) -> None:
        super().__init__(file, f"couldn't read: {why}")
        self.why = why
        self.errno = errno


class ConfigError(RefscopeError):
    """A config file git itself would refuse to read."""


class BadLine(RefscopeError):
    """A line that is not ``REF [OLD_OID]`` (``backend.queuefile``; ``offset`` is None; the line number is
    in ``what``, the line itself in ``line``)."""

    def __init__(self, file: str | None, what: str, line: bytes = b"") -> None:
        super().__init__(file, what)
        self.line = line


class FsckError(RefscopeError):
    """A check of an fsck walk (``formats/reftable/fsck.py``) that the readers do not make failed inside
    one block: key order, a reserved log type. Raised and caught within the walk, which reports it as a
    finding on that block and goes on with the next; not a CorruptStore, so it taints no later write."""


class RecordError(ValueError):
    """A reftable record that does not decode (a key or value running past the records, a bad prefix
    length...), with the in-block offset of the fault. Raised by ``formats.reftable.record``'s decoders;
    the block decoders turn it into CorruptStore naming the file (a ValueError, not a RefscopeError: it
    never leaves the decoders)."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(what, offset)
        self.what = what
        self.offset = offset


class VarintError(RecordError):
    """A reftable varint that does not decode (truncated, or over 64 bits): ``get_varint``'s."""


class EntryTooBig(ValueError):
    """A reftable record does not fit into one block of the chosen size (the writer's)."""


class Outdated(TransactionRefused):
    """The stack changed under a compaction (git's REFTABLE_OUTDATED_ERROR): benign, nothing written."""


class FormatError(RefscopeError):
    """A ``--format`` or ``--sort`` git would refuse (in git's words), or an atom git knows that
    refscope does not print (naming it)."""

    def __init__(self, what: str) -> None:
        super().__init__(None, what)


class CountError(ValueError):
    """A ``--count`` git refuses (``refformat.count``); the message is git's (a usage error: exit 2, as
    git's 129)."""


class UnsupportedDate(FormatError):
    """A date format git knows that refscope does not print (``human``, ``format:``, ``-local``)."""

    """A line of a queue file that is not ``REF [OLD_OID]`` (``offset`` is None; the line number is in
    ``what``)."""


class UpdateInputError(TransactionRefused):
    """A line of git's ``update-ref --stdin`` language that git itself dies on (``what`` is git's text
    after ``fatal: ``): nothing was locked or written."""
