"""Small places where refscope read a repository differently from git, each against git 2.55 itself:
symref chains at git's depth limit, ``-C`` (cumulative, ``-C ''`` a no-op, before or after the command),
``GIT_DIR=''``, and verify's warning about names a terminal may obey (the same predicate as the escaper)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refscope.app import cmd_bench, cmd_tui
from refscope.backend.display import escape_name

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, ref_storage, run_git

FORMAT = "--format=%(objectname) %(refname)"


@pytest.fixture
def chain(tmp_path: Path, ref_format: str) -> Path:
    """refs/heads/s1 .. s7: s<k> is k symref hops from refs/heads/t0 (HEAD one hop from main)."""
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    git(repo, "update-ref", "refs/heads/t0", "HEAD")
    prev = "refs/heads/t0"
    for k in range(1, 8):
        git(repo, "symbolic-ref", f"refs/heads/s{k}", prev)
        prev = f"refs/heads/s{k}"
    return repo


def test_symref_chains_stop_where_gits_do(chain: Path) -> None:
    theirs = run_git(chain, "for-each-ref", FORMAT)
    assert theirs.returncode == 0
    names = [line.split(b" ")[1] for line in theirs.stdout.splitlines()]
    assert b"refs/heads/s4" in names and b"refs/heads/s5" not in names  # git: 5 reads at most
    proc = refscope("list", cwd=chain)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, theirs.stdout, b"")
    proc = refscope("list", "--json", cwd=chain)
    assert [json.loads(line)["name"].encode() for line in proc.stdout.splitlines()] == names


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """tmp/a/repo, a repository two levels down; tests run from tmp."""
    repo = init_repo(tmp_path / "a" / "repo")
    git(repo, "update-ref", "refs/heads/x", "HEAD")
    return tmp_path


@pytest.mark.parametrize(
    "dirs",
    [
        ["-C", "a", "-C", "repo"],
        ["-Ca", "-Crepo"],
        ["-C", "", "-C", "a", "-C", "", "-C", "repo", "-C", ""],
        ["-C", "a/repo/..", "-C", "repo"],
        ["-C", "a", "-C", "repo", "-C", "."],
    ],
)
@pytest.mark.parametrize("where", ["before", "after", "split"])
def test_dash_c_is_cumulative_and_empty_is_a_no_op(nested: Path, dirs: list[str], where: str) -> None:
    # (git takes "-Cpath" glued only after the command; refscope takes it in both places)
    git_dirs = [a for d in dirs for a in (("-C", d[2:]) if d.startswith("-C") and d != "-C" else (d,))]
    theirs = run_git(nested, *git_dirs, "for-each-ref", FORMAT)
    assert theirs.returncode == 0 and b"refs/heads/x" in theirs.stdout
    if where == "before":
        argv = [*dirs, "list"]
    elif where == "after":
        argv = ["list", *dirs]
    else:
        cut = 2 if dirs[0] == "-C" else 1
        argv = [*dirs[:cut], "list", *dirs[cut:]]
    proc = refscope(*argv, cwd=nested)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, theirs.stdout, b"")


@pytest.mark.parametrize("command", ["list", "stack", "verify", "delete"])
def test_every_command_takes_dash_c_as_git_does(nested: Path, command: str) -> None:
    repo = nested / "a" / "repo"
    extra = ["refs/heads/x"] if command == "delete" else []
    before = ref_storage(repo / ".git")
    # a step that is not a directory: the one line names that step, as git's "cannot change to"
    assert run_git(nested, "-C", "a", "-C", "nope", "status").stderr == (
        b"fatal: cannot change to 'nope': No such file or directory\n"
    )
    for argv in ([command, "-C", "a", "-C", "nope", *extra], ["-C", "a", "-C", "nope", command, *extra]):
        proc = refscope(*argv, cwd=nested)
        assert (proc.returncode, proc.stdout) == (1, b"")
        assert proc.stderr == b"refscope: nope: cannot change to 'nope': No such file or directory\n"
    assert ref_storage(repo / ".git") == before
    proc = refscope("-C", "a", command, "-C", "", "-C", "repo", *extra, cwd=nested)
    assert proc.returncode == 0, proc.stderr
    if command == "delete":
        assert git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/x") == b""


def test_argparse_commands_fold_dash_c(nested: Path) -> None:
    """The TUI and bench parse -C with argparse: the same rule through the same function."""
    want = str(nested / "a" / "repo")
    import os

    cwd = os.getcwd()
    os.chdir(nested)
    try:
        assert os.path.realpath(cmd_tui.parse(["-C", "a", "-C", "", "-C", "repo"]).path) == want
        assert cmd_tui.parse([]).path is None
        args = cmd_bench._parse(["-C", "a", "-C", "repo", "refs/heads/x"])
        assert os.path.realpath(args.path) == want
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("command", ["list", "stack", "verify", "delete"])
def test_empty_git_dir_is_not_a_repository(tmp_path: Path, ref_format: str, command: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    env = {**git_env(), "GIT_DIR": ""}
    theirs = run_git(repo, "for-each-ref", env=env)
    assert (theirs.returncode, theirs.stderr) == (128, b"fatal: not a git repository: ''\n")
    before = ref_storage(repo / ".git")
    proc = refscope(command, *(["refs/heads/main"] if command == "delete" else []), env=env, cwd=repo)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, b"", b"refscope: not a git repository: ''\n")
    assert ref_storage(repo / ".git") == before


# Characters to try in a name: what the display escapes (C1, bidi, line/paragraph separators, zero-width,
# format, private use, unassigned) and what it shows as is (Latin, CJK, no-break space, combining mark).
CHARS = [
    "\u0085",
    "\u009b",
    "\u061c",
    "\u200b",
    "\u200e",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u2066",
    "\u2069",
    "\u00ad",
    "\ue000",
    "\ufeff",
    "\U000e0001",
    "\u0378",
    "\u00e9",
    "\u00a0",
    "\u4e2d",
    "\u0301",
    "\U0001f600",
]


def test_verify_warns_exactly_about_what_the_display_escapes(tmp_path: Path, ref_format: str) -> None:
    repo = init_repo(tmp_path / "repo", fmt=ref_format)
    names = [f"refs/heads/n{i:02d}-{ch}-x".encode() for i, ch in enumerate(CHARS)]
    git(repo, "update-ref", "--stdin", input=b"".join(b"create %s HEAD\n" % n for n in names))
    proc = refscope("verify", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stdout
    warned = {
        f["message"].split("'")[1]
        for f in map(json.loads, proc.stdout.splitlines())
        if f["severity"] == "warning"
    }
    escaped = {escape_name(n) for n in names if escape_name(n) != n.decode()}
    assert warned == escaped
    assert {"refs/heads/n05-\\u2028-x", "refs/heads/n06-\\u2029-x"} <= warned
    assert "refs/heads/n15-\u00e9-x" not in warned
