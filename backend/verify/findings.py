"""Findings and the collector of one verify run; the name checks every walker shares.

A finding is a small immutable record (file, byte offset or None, severity, a sentence a git engineer
understands). The collector caps what one file can contribute (a file with DOS line ends or a wrong hash
has one problem per line) and remembers which files had errors: the stack-level and cross-checks judge
by that what they can still say.
"""

from __future__ import annotations

import os
import stat
from typing import NamedTuple

from ..display import needs_escape
from ..errors import UnreadableFile
from ..fileio import map_fd, open_regular, read_fd
from ..formats.reftable.fsck import quoted
from ..refname import check_refname, is_safe_refname

ERROR = "error"
WARNING = "warning"
# Findings shown per file (a file with DOS line ends or a wrong hash has one problem per line).
MAX_PER_FILE = 100
_MAP_ABOVE = 1 << 20


class Finding(NamedTuple):
    """One problem: where (file, byte offset or None), how bad, and a sentence a git engineer understands."""

    file: str
    offset: int | None
    severity: str  # "error" | "warning"
    message: str

    def to_json(self) -> dict:
        return {"file": self.file, "offset": self.offset, "severity": self.severity, "message": self.message}


class Collector:
    """The findings of one verify run, in the order found; which files had errors (the later checks
    judge by it what they can still say); what was read, for the summary line."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.error_files: set[str] = set()
        self.checked = {"refs": 0, "tables": 0, "packed": 0, "loose": 0}
        self.per_file: dict[str, int] = {}

    def _room(self, file: str) -> bool:
        n = self.per_file.get(file, 0) + 1
        self.per_file[file] = n
        if n == MAX_PER_FILE + 1:
            self.findings.append(
                Finding(
                    file,
                    None,
                    WARNING,
                    f"more than {MAX_PER_FILE} findings in this file; the rest are not shown",
                )
            )
        return n <= MAX_PER_FILE

    def error(self, file: str, offset: int | None, message: str) -> None:
        self.error_files.add(file)
        if self._room(file):
            self.findings.append(Finding(file, offset, ERROR, message))

    def warning(self, file: str, offset: int | None, message: str) -> None:
        if self._room(file):
            self.findings.append(Finding(file, offset, WARNING, message))


# --------------------------------------------------------------------------------------------- names


def check_name(
    out: Collector, file: str, offset: int | None, name: bytes, what: str = "ref", where: str = ""
) -> bool:
    """Report a broken, unsafe or terminal-hostile name; True when git would accept the name.

    ``where`` prefixes the message (e.g. "line 12: ")."""
    reason = check_refname(name)
    if reason is not None:
        if not is_safe_refname(name):
            out.error(
                file,
                offset,
                f"{where}{what} name {quoted(name)} {reason} and is unsafe: git dies reading it "
                "('refname is dangerous')",
            )
        else:
            out.error(
                file,
                offset,
                f"{where}{what} name {quoted(name)} {reason}: git ignores this ref "
                "('ignoring ref with broken name')",
            )
        return False
    warn_hostile_name(out, file, offset, name, what, where)
    return True


def warn_hostile_name(
    out: Collector, file: str, offset: int | None, name: bytes, what: str = "ref", where: str = ""
) -> None:
    if name.isascii():
        return  # the common case; an ASCII name that passed check_refname has no control bytes
    text = name.decode("utf-8", "surrogateescape")
    if needs_escape(text):
        out.warning(
            file,
            offset,
            f"{where}{what} name {quoted(name)} is valid for git but contains bytes a terminal may "
            "obey or hide (C1 control, 8-bit CSI, invalid UTF-8, bidi override, line or paragraph "
            "separator, invisible or unassigned character); tools that print it raw "
            "can be spoofed",
        )


def read_all(path: str):
    """The file's bytes: read when small, mapped when large (a huge table or packed-refs is checked
    without copying it into memory; the checks only index and slice). Through ``fileio``: a FIFO or a
    directory raises UnreadableFile, never blocks."""
    fd, st = open_regular(path)
    try:
        if st.st_size > _MAP_ABOVE:
            return map_fd(fd, path, st.st_size)
        return read_fd(fd, path, st.st_size)
    finally:
        os.close(fd)


def read_checked(out: Collector, path: str, st: os.stat_result, what: str):
    """The bytes of ``path`` (whose stat is ``st``), or None after reporting why they cannot be had:
    not a regular file, or unreadable. ``what`` names the file in the message."""
    if not stat.S_ISREG(st.st_mode):
        out.error(path, None, f"{what} is not a regular file")
        return None
    try:
        return read_all(path)
    except (OSError, UnreadableFile) as err:
        out.error(path, None, f"cannot read {what}: {why(err)}")
        return None


def why(err: OSError | UnreadableFile) -> str:
    """What kept a file from being read, as the kernel (or ``fileio``) says it."""
    return err.why if isinstance(err, UnreadableFile) else (err.strerror or str(err))
