"""``refscope bench``: both engines on scratch copies; the real repository stays byte-identical."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import for_each_ref, git, git_env, init_repo, tree_bytes

N_REFS = 200


@pytest.fixture(scope="module", params=["files", "reftable"])
def bench_repo(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, git_bin: str
) -> Path:
    fmt = request.param
    repo = init_repo(tmp_path_factory.mktemp(f"bench-{fmt}") / "repo", fmt=fmt)
    head = git(repo, "rev-parse", "HEAD").strip().decode()
    lines = "".join(f"create refs/heads/topic/t{i:04d} {head}\n" for i in range(N_REFS))
    git(repo, "update-ref", "--stdin", input=lines.encode())
    if fmt == "files":
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/loose-one", head)  # one loose ref next to the packed ones
    return repo


def snapshot_state(repo: Path) -> tuple[dict[str, bytes], dict[str, tuple[int, int]]]:
    """Every byte under .git, and every path's (inode, mtime): nothing may change, not even a touch."""
    gitdir = repo / ".git"
    stats = {str(p.relative_to(gitdir)): (p.lstat().st_ino, p.lstat().st_mtime_ns) for p in gitdir.rglob("*")}
    return tree_bytes(gitdir), stats


def run_bench(repo: Path, *args: str, stdin: bytes | None = None, scratch: Path | None = None, **env_extra):
    env = dict(git_env(), REFSCOPE_GIT=os.environ["REFSCOPE_GIT"], **env_extra)
    argv = ["bench", "-C", str(repo), *args]
    if scratch is not None:
        argv += ["--scratch", str(scratch)]
    return refscope(*argv, stdin=stdin, env=env)


def test_table_rows_and_real_repo_untouched(bench_repo: Path, git_bin: str, tmp_path: Path) -> None:
    before = snapshot_state(bench_repo)
    refs_before = for_each_ref(bench_repo)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = run_bench(
        bench_repo,
        "--runs",
        "2",
        "--git",
        git_bin,
        "refs/heads/topic/t0007",
        "refs/heads/topic/t0100",
        scratch=scratch,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    fmt = "files" if (bench_repo / ".git" / "packed-refs").exists() else "reftable"
    refs = len(refs_before)
    assert lines[0] == "refscope bench: delete refs/heads/topic/t0007, refs/heads/topic/t0100"
    assert lines[1] == (
        f"  in {bench_repo / '.git'} ({fmt}, {refs} refs); 2 runs per engine, alternating; syscalls counted by perf"
    )
    assert lines[2].split()[:4] == ["engine", "wall", "ms", "median"]
    labels = [ln.split("  ")[0].strip() for ln in lines[3:]]
    version = git(bench_repo, "version").decode().strip().removeprefix("git version ")
    assert labels == [
        "native",
        "native+snapshot",
        f"git {version} ({git_bin})",
        f"git {version} ({git_bin})",
    ]
    # the reference git's ratio to itself
    assert lines[5].split()[-3:] == ["1.00x", "1.00x", "1.00x"]
    assert snapshot_state(bench_repo) == before
    assert for_each_ref(bench_repo) == refs_before
    assert list(scratch.iterdir()) == []


def test_json_figures(bench_repo: Path, git_bin: str) -> None:
    before = snapshot_state(bench_repo)
    old = git(bench_repo, "rev-parse", "refs/heads/topic/t0042").strip()
    proc = run_bench(
        bench_repo, "--runs", "3", "--json", "--stdin", stdin=b"refs/heads/topic/t0042 " + old + b"\n"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["runs"] == 3 and out["source"] == "perf"
    assert out["deletions"] == [{"name": "refs/heads/topic/t0042", "old": old.decode()}]
    engines = {e["label"]: e for e in out["engines"]}
    assert [e["engine"] for e in out["engines"]] == ["native", "native", "git"]
    for e in out["engines"]:
        assert e["runs"] == 3 and len(e["reports"]) == 3
        assert e["syscalls"]["source"] == "perf"
        assert e["wall_ms"]["min"] <= e["wall_ms"]["median"] <= e["wall_ms"]["max"]
        assert e["syscalls"]["median"] > 0
    git_row = out["engines"][2]
    assert git_row["ratio_to_git"] == {"wall": 1.0, "cpu": 1.0, "syscalls": 1.0}
    assert all(r["children"] for r in git_row["reports"])
    # git's process execs and exits; the native commit does neither
    assert git_row["syscalls"]["by_name"]["execve"] >= 1
    assert "execve" not in engines["native"]["syscalls"]["by_name"]
    # both engines really deleted something: each renames a lock into place
    assert engines["native"]["syscalls"]["by_name"].get("rename", 0) >= 1
    assert git_row["syscalls"]["by_name"].get("rename", 0) >= 1
    assert snapshot_state(bench_repo) == before


def test_stale_old_value_is_refused_and_nothing_changes(bench_repo: Path) -> None:
    before = snapshot_state(bench_repo)
    wrong = b"1" * 40
    proc = run_bench(bench_repo, "--runs", "1", "--stdin", stdin=b"refs/heads/topic/t0001 " + wrong + b"\n")
    assert proc.returncode == 1
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.startswith("refscope: ") and err.count("\n") == 1
    assert "expected" in err
    assert snapshot_state(bench_repo) == before


def test_missing_ref_is_an_error(bench_repo: Path) -> None:
    proc = run_bench(bench_repo, "--runs", "1", "refs/heads/no-such-ref")
    assert proc.returncode == 1
    assert proc.stderr.decode() == "refscope: bench: no such ref 'refs/heads/no-such-ref'\n"


@pytest.mark.parametrize(
    "args", [[], ["--stdin", "refs/heads/x"], ["--runs", "0", "refs/heads/x"], ["--bogus", "refs/heads/x"]]
)
def test_usage_errors(bench_repo: Path, args: list[str]) -> None:
    proc = run_bench(bench_repo, *args)
    assert proc.returncode == 2
    assert b"usage: refscope bench" in proc.stderr


def test_scratch_copy_is_minimal_and_standalone(bench_repo: Path, git_bin: str, tmp_path: Path) -> None:
    """The template holds the ref storage only, objects through alternates; git accepts it as a repository."""
    from refscope.backend.bench import make_template
    from refscope.backend.repo import discover

    repo = discover(str(bench_repo))
    tpl = Path(make_template(repo, str(tmp_path / "tpl"), git_bin))
    top = sorted(p.name for p in tpl.iterdir())
    expected = {"HEAD", "config", "objects", "refs"} | (
        {"packed-refs", "logs"} if repo.ref_storage == "files" else {"reftable"}
    )
    assert set(top) == expected
    assert (tpl / "objects" / "info" / "alternates").read_text() == str(
        bench_repo / ".git" / "objects"
    ) + "\n"
    assert for_each_ref(tpl) == for_each_ref(bench_repo)
    assert git(tpl, "rev-parse", "--is-bare-repository") == b"true\n"
    assert git(tpl, "cat-file", "-t", "HEAD") == b"commit\n"


def test_fallback_sources_are_named(bench_repo: Path, tmp_path: Path) -> None:
    """Without tracepoints: native rows on /proc, git rows under strace, and the header says so."""
    before = snapshot_state(bench_repo)
    proc = run_bench(
        bench_repo, "--runs", "1", "refs/heads/topic/t0003", REFSCOPE_TRACEFS=str(tmp_path / "none")
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert lines[1].endswith("syscalls counted by proc (native), strace (git)")
    kinds = lines[3].split("  ")
    assert "writes" in lines[3] and "openat" not in lines[3]  # proc: reads and writes only
    assert "openat" in lines[5] and "newfstatat" in lines[5]  # strace: every syscall of the git process
    assert kinds[0] == "native"
    assert snapshot_state(bench_repo) == before


def test_warmup_runs_are_run_and_not_reported(bench_repo: Path, git_bin: str, tmp_path: Path) -> None:
    """--warmup N: each engine runs N more times first (the extra git's log counts its update-ref calls);
    the header says so and the reports hold the measured runs only."""
    before = snapshot_state(bench_repo)
    log = tmp_path / "calls.log"
    extra = tmp_path / "git-logging"
    extra.write_text(
        f'#!/bin/sh\ncase " $* " in *" update-ref "*) echo update-ref >>"{log}";; esac\nexec "{git_bin}" "$@"\n'
    )
    extra.chmod(0o755)
    proc = run_bench(
        bench_repo, "--runs", "2", "--warmup", "1", "--git", str(extra), "refs/heads/topic/t0009"
    )
    assert proc.returncode == 0, proc.stderr
    assert " 2 runs per engine after 1 warmup run, alternating;" in proc.stdout.decode().splitlines()[1]
    assert log.read_text() == "update-ref\n" * 3
    proc = run_bench(bench_repo, "--json", "--runs", "1", "--warmup", "2", "refs/heads/topic/t0009")
    out = json.loads(proc.stdout)
    assert (out["runs"], out["warmup"]) == (1, 2)
    assert [len(e["reports"]) for e in out["engines"]] == [1, 1, 1]
    assert snapshot_state(bench_repo) == before
