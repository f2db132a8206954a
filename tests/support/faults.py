"""Helpers for tests that put a repository file in a state the OS refuses to read.

Root ignores file modes, so a mode-000 file is only unreadable to a process without CAP_DAC_OVERRIDE
and CAP_DAC_READ_SEARCH: ``unprivileged`` prefixes a command with ``setpriv`` dropping both from the
bounding set (what ``setpriv --bounding-set=-dac_override,-dac_read_search`` does from a root shell).
``fingerprint`` records every entry under a git dir (objects aside) with its type, mode and content, so a
test sees a changed byte, a removed lock or a replaced file kind alike.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FAULTS = ("mode000", "symlink-loop", "directory", "fifo")

# What the kernel (or refscope's reader) says about each fault, as the one-line errors print it.
WHY = {
    "mode000": "Permission denied",
    "symlink-loop": "Too many levels of symbolic links",
    "directory": "Is a directory",
    "fifo": "not a regular file",
}


def unprivileged() -> list[str]:
    """The argv prefix that makes file modes apply (nothing when not root). Skips without setpriv."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is missing: root ignores file modes without it")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


def make_fault(path: Path, fault: str) -> None:
    """Replace the file at ``path`` by ``fault`` (one of FAULTS)."""
    if fault == "mode000":
        path.chmod(0)
        return
    path.unlink()
    if fault == "symlink-loop":
        path.symlink_to(path.name)
    elif fault == "directory":
        path.mkdir()
    elif fault == "fifo":
        os.mkfifo(path)
    else:
        raise ValueError(fault)


def fingerprint(gitdir: Path) -> dict[str, tuple]:
    """relative path -> (file type and mode, content or link target) for everything under ``gitdir``
    except objects/."""
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(gitdir):
        if Path(top) == gitdir and "objects" in dirs:
            dirs.remove("objects")
        for name in sorted(dirs + files):
            p = os.path.join(top, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                try:
                    with open(p, "rb") as f:  # as root: mode 000 does not keep the test from reading
                        body: bytes | str | None = f.read()
                except PermissionError:
                    body = "<unreadable>"
            elif stat.S_ISLNK(st.st_mode):
                body = os.readlink(p)
            else:
                body = None
            out[os.path.relpath(p, gitdir)] = (st.st_mode, body)
    return out


@contextmanager
def small_tmpfs(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. "24m") mounted at ``mnt`` for the test (root may mount one here),
    unmounted afterwards; the test is skipped where mounting is refused."""
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


PAGE = 4096


def fill(mnt: Path, pages: int = 0) -> None:
    """Fill ``mnt`` (unbuffered writes until ENOSPC), then give ``pages`` pages back: a new file takes a
    page on tmpfs, so the write of the (pages+1)-th new file fails."""
    path = mnt / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 20, PAGE, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    if pages:
        os.truncate(path, path.stat().st_size - pages * PAGE)
