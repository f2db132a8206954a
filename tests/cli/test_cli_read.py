"""``refscope list/stack/dump`` as a user runs them: output shapes, one-line errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import create_refs, git, git_env, init_repo


@pytest.fixture(scope="module")
def files_repo(tmp_path_factory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("cli") / "r")
    git(repo, "tag", "-a", "-m", "t", "v1")
    git(repo, "branch", "b")
    git(repo, "pack-refs", "--all")
    git(repo, "branch", "loose")
    return repo


@pytest.fixture(scope="module")
def rt_repo(tmp_path_factory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("clirt") / "r", fmt="reftable")
    git(repo, "tag", "-a", "-m", "t", "v1")
    git(repo, "branch", "b")
    return repo


def test_list_from_cwd_and_dash_c(files_repo: Path) -> None:
    a = refscope("list", cwd=files_repo)
    b = refscope("list", "-C", str(files_repo))
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout
    assert a.stdout == git(files_repo, "for-each-ref", "--format=%(objectname) %(refname)")


def test_list_reftable(rt_repo: Path) -> None:
    out = refscope("list", "--json", "-C", str(rt_repo))
    assert out.returncode == 0
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert [r["name"] for r in rows] == git(rt_repo, "for-each-ref", "--format=%(refname)").decode().split()


def test_not_a_repository(tmp_path: Path) -> None:
    env = git_env()
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    out = refscope("list", cwd=tmp_path, env=env)
    assert out.returncode == 1 and out.stdout == b""
    assert out.stderr.decode() == (
        f"refscope: {tmp_path}: not a git repository (or any of the parent directories): .git\n"
    )
    out = refscope("list", "-C", str(tmp_path / "missing"))
    assert out.returncode == 1 and out.stderr.count(b"\n") == 1 and out.stderr.startswith(b"refscope: ")


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--bogus"),
        ("list", "-C"),
        ("stack", "extra"),
        ("dump",),
        ("dump", "a", "b"),
        ("dump", "-x", "f"),
    ],
)
def test_usage_errors_exit_2(args, files_repo: Path) -> None:
    out = refscope(*args, cwd=files_repo)
    assert out.returncode == 2 and out.stderr.startswith(b"usage: refscope ")


def test_stack_files_and_reftable(files_repo: Path, rt_repo: Path) -> None:
    out = refscope("stack", "--json", "-C", str(files_repo))
    info = json.loads(out.stdout)
    assert (
        info["format"] == "files" and info["sorted"] and info["loose"] == 1
    )  # the branch made after pack-refs
    assert info["records"] == len((files_repo / ".git/packed-refs").read_bytes().splitlines()) - 2
    out = refscope("stack", "--json", "-C", str(rt_repo))
    info = json.loads(out.stdout)
    tables = info["stacks"][0]["tables"]
    names = (rt_repo / ".git/reftable/tables.list").read_text().split()
    assert [t["name"] for t in tables] == names
    assert refscope("stack", "-C", str(rt_repo)).stdout.startswith(b"stack: ")


def test_dump_packed_refs_offsets(files_repo: Path) -> None:
    path = files_repo / ".git/packed-refs"
    data = path.read_bytes()
    out = refscope("dump", "--json", str(path))
    obj = json.loads(out.stdout)
    assert obj["format"] == "packed-refs" and obj["header_end"] == data.index(b"\n") + 1
    for r in obj["records"]:
        chunk = data[r["offset"] : r["offset"] + r["length"]]
        assert chunk.startswith(f"{r['oid']} {r['name']}\n".encode())
        if r["peeled"]:
            assert chunk.endswith(f"^{r['peeled']}\n".encode())
    assert sum(r["length"] for r in obj["records"]) == len(data) - obj["header_end"]
    plain = refscope("dump", str(path)).stdout.decode().splitlines()
    assert plain[1].startswith("@0 header") and len(plain) == 2 + len(obj["records"])


def test_dump_reftable(rt_repo: Path) -> None:
    name = (rt_repo / ".git/reftable/tables.list").read_text().split()[0]
    out = refscope("dump", "--json", str(rt_repo / ".git/reftable" / name))
    assert out.returncode == 0
    assert json.loads(out.stdout)["format"] == "reftable"


def test_dump_errors(tmp_path: Path) -> None:
    out = refscope("dump", str(tmp_path / "missing"))
    assert out.returncode == 1 and out.stderr.decode().startswith(f"refscope: {tmp_path / 'missing'}: ")
    bad = tmp_path / "packed-refs"
    bad.write_bytes(b"# junk header\n")
    out = refscope("dump", str(bad))
    assert out.returncode == 1
    assert out.stderr.decode() == f"refscope: {bad}: unexpected line in {bad}: # junk header (at byte 0)\n"


def test_list_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """``refscope list | head -1``: the reader leaves early; refscope ends quietly with 0 (git dies of
    SIGPIPE), whether the break surfaces while it writes or when it flushes on the way out."""
    repo = init_repo(tmp_path / "r")
    create_refs(repo, (b"refs/heads/t%05d" % i for i in range(3000)))
    for extra in ([], ["--json"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "refscope.app", "list", *extra, "-C", str(repo)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_env(),
        )
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait() == 0 and err == b"", err
    r, w = os.pipe()
    os.close(r)  # gone before anything is written: the break surfaces when the buffered output is flushed
    env = git_env()
    env.pop("PYTHONUNBUFFERED", None)  # (the output must stay in the buffer until the exit)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "refscope.app", "delete", "--json", "-C", str(repo), "refs/heads/t00000"],
            stdout=w,
            stderr=subprocess.PIPE,
            env=env,
        )
    finally:
        os.close(w)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    assert (
        git(repo, "for-each-ref", "--count=1", "--format=%(refname)", "refs/heads/t*")
        == b"refs/heads/t00001\n"
    )
