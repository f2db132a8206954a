"""The ``branch.<old>`` config section of a renamed branch moved to ``branch.<new>``, as ``git branch -m``
does after renaming (config.c ``repo_config_copy_or_rename_section_in_file``, ported line for line: which
headers match and how the new one is written decide the config's bytes, which must be git's)."""

from __future__ import annotations

from ..errors import TransactionRefused
from .commands import Rename

# -- the branch's config section --------------------------------------------------------------------------
_SPACE = b" \t\n\r"  # git's isspace


def _section_match(buf: bytes, name: bytes) -> int:
    """git's section_name_match (config.c): the length of ``buf``'s ``[section "sub"]`` header and the
    blanks after it when it names ``name`` (``section.sub``), else 0."""
    b = buf + b"\0"
    n = name + b"\0"
    if b[0] != 0x5B:
        return 0
    i, j, dot = 1, 0, False
    while b[i] and b[i] != 0x5D:
        if not dot and b[i] in _SPACE:
            dot = True
            j += 1
            if n[j - 1] != 0x2E:
                break
            i += 1
            while b[i] and b[i] in _SPACE:
                i += 1
            if b[i] != 0x22:
                break
            i += 1
            continue
        if b[i] == 0x5C and dot:
            i += 1
        elif b[i] == 0x22 and dot:
            i += 1
            while b[i] and b[i] in _SPACE:
                i += 1
            break
        j += 1
        if b[i] != n[j - 1]:
            break
        i += 1
    if b[i] == 0x5D and n[j] == 0:
        i += 1
        while b[i] and b[i] in _SPACE:
            i += 1
        return i
    return 0


def _section_header(name: bytes) -> bytes:
    """git's store_create_section: ``[branch "x/y"]`` with ``"`` and ``\\`` escaped."""
    sect, dot, sub = name.partition(b".")
    if not dot:
        return b"[%s]\n" % sect
    return b'[%s "%s"]\n' % (sect, sub.replace(b"\\", b"\\\\").replace(b'"', b'\\"'))


def rename_section(data: bytes, old: bytes, new: bytes) -> tuple[bytes, int]:
    """git's repo_config_rename_section on a config file's bytes: every ``old`` section header becomes
    ``new``'s (a key on the header's line moves to a line of its own, tab-indented); (bytes, how many)."""
    out = []
    found = 0
    start = 0
    n = len(data)
    while start < n:
        end = data.find(b"\n", start)
        end = n if end < 0 else end + 1
        line = data[start:end]
        start = end
        i = 0
        while i < len(line) and line[i] in _SPACE:
            i += 1
        if i < len(line) and line[i] == 0x5B:
            offset = _section_match(line[i:], old)
            if offset > 0:
                found += 1
                out.append(_section_header(new))
                rest = line[i + offset :]
                line = b"\t" + rest if rest else b""
        out.append(line)
    return b"".join(out), found


class ConfigMove:
    """The ``branch.<old>`` sections of the renamed branches moved to ``branch.<new>`` in the repository's
    config, as ``git branch -m`` does after the rename: ``config.lock`` taken and written before the refs'
    commit (a busy or unwritable config refuses the transaction first, changing nothing), renamed into
    place after it."""

    def __init__(self, repo, renames: list[Rename]) -> None:
        import os

        self.path = os.path.join(repo.commondir, "config")
        self.moves = [
            (b"branch." + r.old_name[11:], b"branch." + r.name[11:])
            for r in renames
            if r.old_name.startswith(b"refs/heads/") and r.name.startswith(b"refs/heads/")
        ]
        self.lock = ""

    def prepare(self) -> None:
        import os

        from ..engines.crashpoint import step

        if not self.moves:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                parts = []
                while chunk := os.read(fd, 1 << 16):
                    parts.append(chunk)
            finally:
                os.close(fd)
            data = b"".join(parts)
        except FileNotFoundError:
            return
        except OSError as err:
            raise TransactionRefused(self.path, f"could not read config file: {err.strerror}") from None
        new = data
        found = 0
        for old, name in self.moves:
            new, k = rename_section(new, old, name)
            found += k
        if not found:
            return
        from ..lockfile import try_create, unable_to_lock_message

        lock = self.path + ".lock"
        step("lock config")
        fd = try_create(lock)  # (registered: a signal removes it; git takes it without a timeout)
        if fd < 0:
            import errno

            from ..errors import LockBusy

            cls = LockBusy if fd == -errno.EEXIST else TransactionRefused
            raise cls(
                lock, f"could not lock config file {self.path}: " + unable_to_lock_message(self.path, -fd)
            )
        self.lock = lock
        try:
            os.fchmod(fd, os.stat(self.path).st_mode & 0o7777)
            step("write config lock")
            os.write(fd, new)
        finally:
            os.close(fd)

    def commit(self) -> None:
        from ..engines.crashpoint import step
        from ..lockfile import rename

        if self.lock:
            step("commit config")
            rename(self.lock, self.path)
            self.lock = ""

    def rollback(self) -> None:
        from ..lockfile import remove

        if self.lock:
            remove(self.lock)
            self.lock = ""
