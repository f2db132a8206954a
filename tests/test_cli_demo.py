"""``refscope --demo`` in a real terminal (a pty): its temporary repositories are gone after ``q``;
``--demo-dir`` keeps them where asked."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path


def run_in_pty(args: list[str], env: dict[str, str], keys: bytes, ready: bytes) -> tuple[int, bytes]:
    """Run refscope on a pty of 100x30, wait until ``ready`` is on screen, type ``keys``, collect all."""
    import fcntl
    import struct
    import termios

    pid, fd = os.forkpty()
    if pid == 0:  # child
        os.execve(sys.executable, [sys.executable, "-m", "refscope.app", *args], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    seen = b""
    sent = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not sent and ready in seen:
            time.sleep(0.3)
            os.write(fd, keys)
            sent = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), seen


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(tmp), TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    return env


def test_demo_removes_its_repositories(tmp_path: Path) -> None:
    code, screen = run_in_pty(["--demo", "--no-watch"], _env(tmp_path), b"q", b"refs")
    assert code == 0, screen[-2000:]
    assert b"refs" in screen
    assert list(tmp_path.iterdir()) == []


def test_demo_dir_keeps_them(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    code, screen = run_in_pty(
        ["--demo", "reftable", "--demo-dir", str(keep), "--no-watch"], _env(tmp_path), b"q", b"refs"
    )
    assert code == 0, screen[-2000:]
    assert sorted(p.name for p in keep.iterdir()) == ["files", "reftable"]
    assert (keep / "reftable" / ".git" / "reftable" / "tables.list").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
