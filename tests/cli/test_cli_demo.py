"""``refscope --demo`` in a real terminal (a pty): its temporary repositories are gone after ``q``;
``--demo-dir`` keeps them where asked."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.terminal import type_in_pty


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, TMPDIR=str(tmp), TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    return env


def test_demo_removes_its_repositories(tmp_path: Path) -> None:
    code, screen = type_in_pty(["--demo", "--no-watch"], _env(tmp_path), b"q", b"refs")
    assert code == 0, screen[-2000:]
    assert b"refs" in screen
    assert list(tmp_path.iterdir()) == []


def test_demo_dir_keeps_them(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    code, screen = type_in_pty(
        ["--demo", "reftable", "--demo-dir", str(keep), "--no-watch"], _env(tmp_path), b"q", b"refs"
    )
    assert code == 0, screen[-2000:]
    assert sorted(p.name for p in keep.iterdir()) == ["files", "reftable"]
    assert (keep / "reftable" / ".git" / "reftable" / "tables.list").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
