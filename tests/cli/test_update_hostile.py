"""Hostile bytes through ``refscope update``, against ``git update-ref --stdin`` on a copy: ``-m`` messages
with newlines, control bytes and invalid UTF-8, a committer identity with git's "crud" (``<>``, LF,
leading and trailing ``.,;``), names with control bytes (git's refusal words), names and repository paths
that are not UTF-8, and a 100 MB line (a bounded one-line error, git's 4096-byte cut). Both formats:
reflogs compared byte for byte (files) and as ``git reflog show`` prints them (both)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.faults import fingerprint
from tests.support.update import for_each_ref, git, git_binary, git_env, init_repo

TIMEOUT = 120
FMTS = ["files", "reftable"]


def _pair(tmp_path: Path, fmt: str) -> tuple[Path, Path, bytes]:
    """Two equal repositories (made alike rather than copied: git's detached maintenance may still be
    writing in the first while a copy runs)."""
    ours, theirs = init_repo(tmp_path / "ours", fmt=fmt), init_repo(tmp_path / "theirs", fmt=fmt)
    oid = git(ours, "rev-parse", "HEAD").strip()
    assert git(theirs, "rev-parse", "HEAD").strip() == oid
    return ours, theirs, oid


def _both(ours: Path, theirs: Path, data: bytes, *args: str, env: dict | None = None):
    e = git_env() | (env or {})
    mine = refscope("update", "-C", str(ours), *args, stdin=data, env=e, timeout=TIMEOUT)
    git_run = subprocess.run(
        [git_binary(), "-C", str(theirs), "update-ref", *args, "--stdin"],
        input=data,
        capture_output=True,
        env=e,
        timeout=TIMEOUT,
    )
    return mine, git_run


def _reflog(repo: Path, ref: str) -> bytes:
    return subprocess.run(
        [git_binary(), "-C", str(repo), "reflog", "show", "--format=%H %gd %gn %ge %gs", ref],
        capture_output=True,
        env=git_env(),
        check=True,
    ).stdout


MESSAGES = {
    "newlines-controls": "a\nb\x01c\tx  y\r\x7f",
    "invalid-utf8": os.fsdecode(b"caf\xff\xfe\xc3"),
    "escape-sequence": "\x1b[31mred\x1b]0;title\x07",
}


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("msg", list(MESSAGES), ids=list(MESSAGES))
def test_message_bytes_as_git_writes_them(tmp_path: Path, fmt: str, msg: str) -> None:
    ours, theirs, oid = _pair(tmp_path, fmt)
    mine, theirs_run = _both(ours, theirs, b"create refs/heads/n %s\n" % oid, "-m", MESSAGES[msg])
    assert (mine.returncode, theirs_run.returncode) == (0, 0), mine.stderr
    assert _reflog(ours, "refs/heads/n") == _reflog(theirs, "refs/heads/n")
    if fmt == "files":
        log = Path(".git/logs/refs/heads/n")
        assert (ours / log).read_bytes() == (theirs / log).read_bytes()


IDENTS = {
    "angle-brackets-newline": {"GIT_COMMITTER_NAME": "<ev>il\n.,;", "GIT_COMMITTER_EMAIL": "<a@b>\n"},
    "crud-only-around": {"GIT_COMMITTER_NAME": " ..;<>", "GIT_COMMITTER_EMAIL": "x"},
    "controls": {"GIT_COMMITTER_NAME": "a\x01b\x1b[0m", "GIT_COMMITTER_EMAIL": "e@\x7fx"},
}


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("ident", list(IDENTS), ids=list(IDENTS))
def test_committer_crud_as_git_strips_it(tmp_path: Path, fmt: str, ident: str) -> None:
    ours, theirs, oid = _pair(tmp_path, fmt)
    mine, theirs_run = _both(ours, theirs, b"create refs/heads/n %s\n" % oid, env=IDENTS[ident])
    assert (mine.returncode, theirs_run.returncode) == (0, 0), mine.stderr
    assert _reflog(ours, "refs/heads/n") == _reflog(theirs, "refs/heads/n")
    if fmt == "files":
        log = Path(".git/logs/refs/heads/n")
        assert (ours / log).read_bytes() == (theirs / log).read_bytes()


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize(
    ("data", "args", "shown"),
    [
        (b"create refs/heads/a\x01b %s\n", (), "refs/heads/a\\x01b"),
        (b"create refs/heads/a\x7fb\0%s\0", ("-z",), "refs/heads/a\\x7fb"),
        (b"create refs/heads/a\x1b[31mb %s\n", (), "refs/heads/a\\x1b[31mb"),
    ],
    ids=["soh", "del-z", "escape"],
)
def test_control_bytes_in_a_name_refused_in_gits_words(tmp_path: Path, fmt: str, data, args, shown) -> None:
    ours, theirs, oid = _pair(tmp_path, fmt)
    before = fingerprint(ours / ".git")
    mine, theirs_run = _both(ours, theirs, data % oid, *args)
    assert (mine.returncode, mine.stderr.decode()) == (
        1,
        f"refscope: {ours / '.git'}: invalid ref format: {shown}\n",
    )
    assert theirs_run.returncode == 128
    assert theirs_run.stderr.startswith(b"fatal: invalid ref format: refs/heads/a")
    assert fingerprint(ours / ".git") == before


@pytest.mark.parametrize("fmt", FMTS)
def test_name_that_is_not_utf8_as_git(tmp_path: Path, fmt: str) -> None:
    ours, theirs, oid = _pair(tmp_path, fmt)
    data = b"create refs/heads/\xff\xfe %s\ncreate refs/tags/caf\xc3 %s\n" % (oid, oid)
    mine, theirs_run = _both(ours, theirs, data)
    assert (mine.returncode, theirs_run.returncode) == (0, 0), mine.stderr
    assert for_each_ref(ours) == for_each_ref(theirs)
    assert _reflog(ours, os.fsdecode(b"refs/heads/\xff\xfe")) == _reflog(
        theirs, os.fsdecode(b"refs/heads/\xff\xfe")
    )


@pytest.mark.parametrize("fmt", FMTS)
def test_repository_path_that_is_not_utf8(tmp_path: Path, fmt: str) -> None:
    ours, theirs, oid = _pair(tmp_path / os.fsdecode(b"d\xff\x1b[31m"), fmt)
    mine, theirs_run = _both(ours, theirs, b"create refs/heads/n %s\n" % oid)
    assert (mine.returncode, theirs_run.returncode) == (0, 0), mine.stderr
    assert for_each_ref(ours) == for_each_ref(theirs)
    before = fingerprint(ours / ".git")
    stale = b"update refs/heads/n %s %s\n" % (oid, b"1" * len(oid))
    mine, theirs_run = _both(ours, theirs, stale)
    shown = str(ours / ".git").replace("\udcff", "\\xff").replace("\x1b", "\\x1b")
    why = f"cannot lock ref 'refs/heads/n': is at {oid.decode()} but expected {'1' * len(oid)}"
    assert (mine.returncode, mine.stderr.decode()) == (1, f"refscope: {shown}: {why}\n")
    assert (theirs_run.returncode, theirs_run.stderr.decode()) == (128, f"fatal: {why}\n")
    assert fingerprint(ours / ".git") == before


HUGE = 100 << 20


@pytest.mark.parametrize(
    ("kind", "prefix"),
    [
        ("name", "{gitdir}/refs/heads/aaaa"),
        ("oid", "{gitdir}: create refs/heads/x: invalid <new-oid>: ffff"),
        ("command", "{gitdir}: unknown command: xxxx"),
    ],
)
def test_a_100_mb_line_is_a_bounded_one_line_error(tmp_path: Path, kind: str, prefix: str) -> None:
    """git cuts its fatal line at 4096 bytes; refscope's line is cut at 4096 characters (``...`` marking
    the cut), and the long argument is scanned at C speed (a Python loop over it took 20 s)."""
    repo = init_repo(tmp_path / "repo")
    oid = git(repo, "rev-parse", "HEAD").strip()
    data = {
        "name": b"create refs/heads/" + b"a" * HUGE + b" %s\n" % oid,
        "oid": b"create refs/heads/x " + b"f" * HUGE + b"\n",
        "command": b"x" * HUGE,
    }[kind]
    before = fingerprint(repo / ".git")
    out = refscope("update", "-C", str(repo), stdin=data, timeout=TIMEOUT)
    err = out.stderr.decode()
    assert out.returncode == 1
    assert err.startswith("refscope: " + prefix.format(gitdir=repo / ".git")), err[:200]
    assert err.endswith("...\n") and err.count("\n") == 1 and len(err) == 4097
    assert fingerprint(repo / ".git") == before


@pytest.mark.parametrize("command", ["update", "delete"])
def test_json_errors_are_bounded_as_the_line_is(tmp_path: Path, command: str) -> None:
    """``--json`` reports the error's text cut as the one line is: a megabyte name quoted in a refusal
    does not become a megabyte of JSON."""
    import json

    repo = init_repo(tmp_path / "repo")
    oid = git(repo, "rev-parse", "HEAD").strip()
    name = b"refs/heads/" + b"a" * (1 << 20)
    data = b"create %s %s\n" % (name, oid) if command == "update" else name + b"\n"
    before = fingerprint(repo / ".git")
    out = refscope(command, "-C", str(repo), "--json", "--stdin", stdin=data, timeout=TIMEOUT)
    assert out.returncode == 1
    (report,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert report["committed"] is False
    assert len(report["error"]) <= 4096 and report["error"].endswith("...")
    assert len(out.stderr) == 4097
    assert fingerprint(repo / ".git") == before
