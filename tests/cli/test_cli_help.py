"""The CLI explains itself as git does: ``--help`` lists every command, each command's help explains each
of its options with an example, ``--version``, ``help COMMAND``, a guess for a mistyped command, and
``-C`` before the command (repeatable, relative, empty = no change)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from refscope.app import cli, help

from tests.support.cli import refscope
from tests.support.git import ROOT, init_repo


def test_top_help_lists_every_command() -> None:
    for flag in ("--help", "-h"):
        out = refscope(flag)
        assert out.returncode == 0 and out.stderr == b""
        text = out.stdout.decode()
        assert text == help.SUMMARY
        for name in cli.COMMANDS:
            assert re.search(rf"^  {name} +\S", text, re.M), name  # each with a one-line description
    assert set(help.COMMANDS) == set(cli.COMMANDS)


def _options(text: str) -> dict[str, str]:
    """The options section: flag -> its explanation."""
    section = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    found: dict[str, str] = {}
    for line in section.splitlines():
        m = re.match(r"^  (\S+(?: [A-Z]+)?)(?: +)(\S.*)$", line)
        if m:
            found[m.group(1).split()[0]] = m.group(2)
    return found


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_command_help_explains_every_option(command: str) -> None:
    text = help.COMMANDS[command]
    for way in ([command, "--help"], [command, "-h"], ["help", command], [command, "--json", "-h"]):
        out = refscope(*way)
        assert out.returncode == 0, way
        assert out.stdout.decode() == text, way
    usage = text.split("\n\n", 1)[0]
    assert usage.startswith(f"usage: refscope {command} ")
    flags = set(re.findall(r"(--?[a-zA-Z][-a-z]*)", usage))
    explained = _options(text)
    assert flags <= set(explained), flags - set(explained)
    assert all(len(why) > 10 for why in explained.values())
    example = text.split("\nexample", 1)[1]
    assert f"refscope {command}" in example
    readme = (ROOT / "README.md").read_text()
    for flag in flags:  # the README's command reference names every option
        assert re.search(rf"refscope {command}\b[^\n]*{re.escape(flag)}", readme), (command, flag)


def test_version() -> None:
    out = refscope("--version")
    assert out.returncode == 0
    want = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert out.stdout == f"refscope version {want}\n".encode()


def test_mistyped_command_gets_a_guess() -> None:
    out = refscope("lsit")
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr == (
        b"refscope: 'lsit' is not a refscope command. See 'refscope --help'.\n\n"
        b"The most similar command is\n\tlist\n"
    )
    out = refscope("help", "\x1b[31mzz")
    assert out.returncode == 2
    assert b"\x1b" not in out.stderr and out.stderr.startswith(b"refscope: '\\x1b[31mzz' is not")


def test_dash_c_before_the_command(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "parent" / "repo")
    after = refscope("list", "-C", str(repo))
    assert after.returncode == 0 and after.stdout
    assert refscope("-C", str(repo), "list").stdout == after.stdout
    # relative to the one before, as git's
    assert refscope("-C", str(tmp_path), "-C", "parent", "-Crepo", "list").stdout == after.stdout
    assert refscope("-C", "", "list", cwd=repo).stdout == after.stdout  # empty: no change
    os.mkdir(tmp_path / "empty")
    missing = refscope("-C", str(tmp_path), "-C", "nonexistent", "list")
    assert missing.returncode == 1 and missing.stdout == b""
    assert (
        missing.stderr
        == b"refscope: nonexistent: cannot change to 'nonexistent': No such file or directory\n"
    )
    assert refscope("-C").returncode == 2
