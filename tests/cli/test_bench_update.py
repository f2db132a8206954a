"""``refscope bench --update``: any ``update-ref --stdin`` transaction through the native engine, the
repository's git and extra ``--git`` binaries, on scratch copies, hyperfine's figures; the real repository
stays byte-identical; bad input is refused before anything runs; a refusing engine is a row."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import for_each_ref, git, git_env, init_repo, tree_bytes

N_TOPICS = 30
N_CREATES = 20


@pytest.fixture(scope="module", params=["files", "reftable"])
def repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Topics packed (files) or in a table (reftable) with one loose ref, and a second commit to move main to."""
    fmt = request.param
    path = init_repo(tmp_path_factory.mktemp(f"bench-update-{fmt}") / "repo", fmt=fmt)
    head = git(path, "rev-parse", "HEAD").strip().decode()
    git(path, "update-ref", "--stdin", input="".join(
        f"create refs/heads/topic/t{i:04d} {head}\n" for i in range(N_TOPICS)
    ).encode())  # fmt: skip
    git(path, "pack-refs", "--all")
    tree = git(path, "rev-parse", "HEAD^{tree}").strip().decode()
    second = git(path, "commit-tree", tree, "-p", head, "-m", "second").strip().decode()
    git(path, "update-ref", "refs/heads/loose-one", second)
    git(path, "config", "gc.auto", "0")  # nothing in the background may write while a test compares bytes
    return path


def _oids(repo: Path) -> tuple[str, str]:
    head = git(repo, "rev-parse", "refs/heads/main").strip().decode()
    second = git(repo, "rev-parse", "refs/heads/loose-one").strip().decode()
    return head, second


def mixed_input(repo: Path, term: str = "\n") -> bytes:
    """creates, an update with its old value, a delete and a verify: LF lines, or git's -z form."""
    head, second = _oids(repo)
    if term == "\n":
        lines = [f"create refs/tags/new-{i:03d} {head}" for i in range(N_CREATES)]
        lines += [
            f"update refs/heads/main {second} {head}",
            f"delete refs/heads/topic/t0003 {head}",
            f"verify refs/heads/topic/t0004 {head}",
        ]
        return "".join(x + "\n" for x in lines).encode()
    fields = []
    for i in range(N_CREATES):
        fields += [f"create refs/tags/new-{i:03d}", head]
    fields += ["update refs/heads/main", second, head, "delete refs/heads/topic/t0003", head]
    fields += ["verify refs/heads/topic/t0004", head]
    return "".join(x + "\0" for x in fields).encode()


def state(repo: Path) -> dict[str, bytes]:
    return tree_bytes(repo / ".git")


def bench(repo: Path, *args: str, stdin: bytes | None = None, scratch: Path | None = None):
    env = dict(git_env(), REFSCOPE_GIT=os.environ["REFSCOPE_GIT"])
    argv = ["bench", "-C", str(repo), *args]
    if scratch is not None:
        argv += ["--scratch", str(scratch)]
    return refscope(*argv, stdin=stdin, env=env)


def logging_git(tmp_path: Path, git_bin: str, *, refuse: bool = False) -> tuple[str, Path]:
    """A --git that is the built git behind a script writing its first argument per call to a log (or,
    with ``refuse``, dying on update-ref as git dies: ``fatal: ...``, exit 128)."""
    log = tmp_path / "calls.log"
    script = tmp_path / ("git-refusing" if refuse else "git-logging")
    body = f'#!/bin/sh\nfor a in "$@"; do case "$a" in --*) ;; *) echo "$a" >>"{log}"; break;; esac; done\n'
    if refuse:
        body += 'case " $* " in *" update-ref "*) echo "fatal: not today" >&2; exit 128;; esac\n'
    body += f'exec "{git_bin}" "$@"\n'
    script.write_text(body)
    script.chmod(0o755)
    return str(script), log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


SUMMARY = re.compile(
    r"^  (?P<first>.+) ran \d+\.\d\d ± \d+\.\d\d times faster than (?P<second>.+)"
    r" \(CPU: \d+\.\d\d ± \d+\.\d\d times (less|more)\)$"
)


def test_table_shape_rows_for_every_engine_and_repo_untouched(
    repo: Path, git_bin: str, tmp_path: Path
) -> None:
    before = state(repo)
    refs_before = for_each_ref(repo)
    link = tmp_path / "patched" / "git"  # named git: git reads a command from a "git-<name>" argv[0]
    link.parent.mkdir()
    link.symlink_to(git_bin)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = bench(
        repo, "--update", "--runs", "2", "--warmup", "1", "--git", str(link), stdin=mixed_input(repo),
        scratch=scratch,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    fmt = "files" if (repo / ".git" / "packed-refs").exists() else "reftable"
    assert lines[0] == (
        f"refscope bench: update-ref --stdin, {N_CREATES + 3} commands (create {N_CREATES}, update 1, delete 1,"
        " verify 1): refs/tags/new-000, refs/tags/new-001, refs/tags/new-002, ..."
    )
    assert lines[1] == (
        f"  in {repo / '.git'} ({fmt}, {len(refs_before)} refs); 2 runs per engine after 1 warmup run,"
        " alternating; syscalls counted by perf"
    )
    assert lines[2].startswith("  native: the commit, first lock to last unlink")
    assert lines[3].split("  ")[0] == "engine"
    assert re.sub(" {2,}", "|", lines[3]).split("|") == [
        "engine", "runs", "wall ms mean ± σ", "min … max", "median", "cpu ms mean ± σ", "median", "syscalls",
        "top kinds",
    ]  # fmt: skip
    version = git(repo, "version").decode().strip().removeprefix("git version ")
    ref_git = f"git {version} ({git_bin})"
    rows = lines[4:8]
    labels = [r.split("  ")[0] for r in rows]
    assert labels == ["native", "native+snapshot", ref_git, f"git {version} ({link})"]
    for r in rows:
        cells = re.split(" {2,}", r[len(r.split("  ")[0]) :].strip())
        assert cells[0] == "2"  # runs
        assert re.fullmatch(r"\d+\.\d+ ± \d+\.\d+", cells[1]), r
        assert re.fullmatch(r"\d+\.\d+ … \d+\.\d+", cells[2]), r
        lo, hi = (float(x) for x in cells[2].split(" … "))
        assert lo <= float(cells[3]) <= hi
        assert float(cells[6]) > 0  # syscalls (a median of two runs may be a half)
    assert lines[8] == ""
    assert lines[9] == f"Summary (means, against {ref_git}):"
    summary = [SUMMARY.match(x) for x in lines[10:]]
    assert len(summary) == 3 and all(summary), lines[10:]
    for m, label in zip(summary, ["native", "native+snapshot", f"git {version} ({link})"], strict=True):
        assert {m["first"], m["second"]} == {label, ref_git}
    assert state(repo) == before
    assert for_each_ref(repo) == refs_before
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("runs,warmup", [(1, 0), (3, 2)])
def test_runs_and_warmup_are_honoured(
    repo: Path, git_bin: str, tmp_path: Path, runs: int, warmup: int
) -> None:
    """Each engine runs warmup + runs transactions, only the last ``runs`` reported: the extra git's log
    counts its update-ref calls (after its one ``version``), the JSON its reports."""
    extra, log = logging_git(tmp_path, git_bin)
    proc = bench(
        repo, "--update", "--json", "--runs", str(runs), "--warmup", str(warmup), "--git", extra,
        stdin=mixed_input(repo),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert calls(log) == ["version"] + ["update-ref"] * (warmup + runs)
    out = json.loads(proc.stdout)
    assert (out["runs"], out["warmup"]) == (runs, warmup)
    assert [len(e["reports"]) for e in out["engines"]] == [runs] * 4
    assert [e["runs"] for e in out["engines"]] == [runs] * 4


def test_json_shape_nul_input_and_message(repo: Path, git_bin: str) -> None:
    before = state(repo)
    proc = bench(
        repo, "--update", "-z", "-m", "bench it", "--json", "--runs", "2", stdin=mixed_input(repo, "\0")
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == [
        "kind", "repo", "ref_storage", "refs_total", "commands", "verbs", "message", "runs", "warmup", "source",
        "relative_to", "engines",
    ]  # fmt: skip
    version = git(repo, "version").decode().strip().removeprefix("git version ")
    assert out["kind"] == "update" and out["repo"] == str(repo / ".git")
    assert out["commands"] == N_CREATES + 3
    assert out["verbs"] == {"create": N_CREATES, "update": 1, "delete": 1, "verify": 1}
    assert out["message"] == "bench it"
    assert (out["runs"], out["warmup"], out["source"]) == (2, 0, "perf")
    assert out["relative_to"] == f"git {version}"
    assert [(e["label"], e["engine"], e["git"]) for e in out["engines"]] == [
        ("native", "native", None),
        ("native+snapshot", "native", None),
        (f"git {version}", "git", os.environ["REFSCOPE_GIT"]),
    ]
    for e in out["engines"]:
        assert list(e) == [
            "label", "engine", "git", "runs", "refused", "wall_ms", "cpu_ms", "syscalls", "relative", "reports",
        ]  # fmt: skip
        assert e["refused"] is None and e["runs"] == 2 and len(e["reports"]) == 2
        for key in ("wall_ms", "cpu_ms"):
            s = e[key]
            assert list(s) == ["mean", "stddev", "median", "min", "max"]
            assert s["min"] <= s["median"] <= s["max"] and s["min"] <= s["mean"] <= s["max"]
            assert s["stddev"] >= 0
        assert list(e["syscalls"]) == ["median", "by_name", "source"] and e["syscalls"]["source"] == "perf"
        # every engine wrote: a lock renamed into place (files: the refs; reftable: tables.list)
        assert e["syscalls"]["by_name"].get("rename", 0) >= 1
        assert all(r["bytes_written"] > 0 for r in e["reports"])
    native, whole, git_row = out["engines"]
    assert git_row["relative"] == {"wall": None, "cpu": None}
    for e in (native, whole):
        for key in ("wall", "cpu"):
            rel = e["relative"][key]
            assert list(rel) == ["ratio", "stddev"] and rel["ratio"] > 0
            mean = e["wall_ms" if key == "wall" else "cpu_ms"]["mean"]
            base = git_row["wall_ms" if key == "wall" else "cpu_ms"]["mean"]
            assert rel["ratio"] == pytest.approx(base / mean, rel=0.01)
    assert all(r["children"] for r in git_row["reports"])
    assert git_row["syscalls"]["by_name"]["execve"] >= 1
    assert "execve" not in native["syscalls"]["by_name"]
    # the whole transaction costs at least its commit
    assert whole["syscalls"]["median"] >= native["syscalls"]["median"]
    assert state(repo) == before


def test_git_rows_run_the_seeds_command_with_the_input_from_a_file(
    repo: Path, git_bin: str, tmp_path: Path
) -> None:
    """Each git row is ``git --git-dir=<scratch> update-ref -m MSG --stdin -z <input``: the input a regular
    file (as hyperfine's ``<input``), the same bytes every run, in git's -z form."""
    log = tmp_path / "argv.log"
    extra = tmp_path / "git-argv"
    extra.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" update-ref "*) printf "%s|" "$@" >>"{log}"; '
        f'if [ -f /dev/stdin ]; then echo " file" >>"{log}"; else echo " other" >>"{log}"; fi; '
        f'cat >"{tmp_path}/input-$$"; exec "{git_bin}" "$@" <"{tmp_path}/input-$$";; esac\n'
        f'exec "{git_bin}" "$@"\n'
    )
    extra.chmod(0o755)
    proc = bench(
        repo, "--update", "-m", "a message", "--runs", "2", "--git", str(extra), stdin=mixed_input(repo)
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused" not in proc.stdout.decode()
    runs = log.read_text().splitlines()
    assert len(runs) == 2
    for line in runs:
        argv, stdin = line.rsplit("| ", 1)
        argv = argv.split("|")
        assert argv[0].startswith("--git-dir=") and argv[0] != f"--git-dir={repo / '.git'}"
        assert argv[1:] == ["update-ref", "-m", "a message", "--stdin", "-z"]
        assert stdin == "file"
    inputs = {p.read_bytes() for p in tmp_path.glob("input-*")}
    (data,) = inputs
    assert data.startswith(b"start\0create refs/tags/new-000\0") and data.endswith(b"prepare\0commit\0")


def test_a_refusing_git_is_a_row_the_others_are_measured(repo: Path, git_bin: str, tmp_path: Path) -> None:
    before = state(repo)
    refusing, log = logging_git(tmp_path, git_bin, refuse=True)
    proc = bench(repo, "--update", "--runs", "3", "--git", refusing, stdin=mixed_input(repo))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    version = git(repo, "version").decode().strip().removeprefix("git version ")
    row = next(x for x in lines if x.startswith(f"git {version} ({refusing})"))
    assert re.fullmatch(rf"git {version} \({re.escape(refusing)}\) +0  refused: not today", row)
    assert calls(log) == ["version", "update-ref"]  # refused once: not run again
    assert re.search(r"^native +3 ", "\n".join(lines), re.M)
    ref_git = re.escape(f"git {version} ({git_bin})")  # two gits of one version: each named by its path
    assert re.search(rf"^{ref_git} +3 ", "\n".join(lines), re.M)
    # the summary names the measured rows only
    assert not any(refusing in x for x in lines[lines.index("") :])
    assert state(repo) == before


def test_a_transaction_every_engine_refuses(repo: Path) -> None:
    """A stale old value: refused by each engine under its locks in the scratch copy, each row saying so
    with git's words; exit 1, and the real repository unchanged."""
    before = state(repo)
    head, second = _oids(repo)
    stale = f"update refs/heads/main {head} {second}\n".encode()
    proc = bench(repo, "--update", "--runs", "2", stdin=stale)
    assert proc.returncode == 1
    assert proc.stderr == b"refscope bench: every engine refused the transaction\n"
    lines = proc.stdout.decode().splitlines()
    want = f"refused: cannot lock ref 'refs/heads/main': is at {head} but expected {second}"
    refused = [x for x in lines[4:] if x]
    assert len(refused) == 3
    for x in refused:
        assert re.fullmatch(r"\S+(?: \S+)? +0  " + re.escape(want), x), x
    assert not any(x.startswith("Summary") for x in lines)
    stale = f"update refs/heads/main {head} {second}\n".encode()
    out = json.loads(bench(repo, "--update", "--json", "--runs", "1", stdin=stale).stdout)
    assert out["relative_to"] is None
    for e in out["engines"]:
        assert e["refused"] == want.removeprefix("refused: ")
        assert e["runs"] == 0 and e["reports"] == [] and e["wall_ms"] is None and e["cpu_ms"] is None
    assert state(repo) == before


@pytest.mark.parametrize(
    "args,data,message",
    [
        ([], b"create refs/heads/x\n", "refscope bench: bad input: create refs/heads/x: missing <new-oid>"),
        (
            [],
            b"frobnicate refs/heads/x\n",
            "refscope bench: bad input: unknown command: frobnicate refs/heads/x",
        ),
        (
            ["-z"],
            b"create refs/heads/x\0",
            "refscope bench: bad input: create refs/heads/x: unexpected end of input when reading <new-oid>",
        ),
        (
            [],
            b"create refs/heads/a..b " + b"1" * 40 + b"\n",
            "refscope bench: bad input: invalid ref format: refs/heads/a..b",
        ),
        (
            [],
            b"start\ncommit\nstart\ncommit\n",
            "refscope bench: the input holds 2 transactions; bench runs one",
        ),
        ([], b"", "refscope bench: the input holds no command to bench"),
        (
            ["-m", ""],
            b"verify refs/heads/main\n",
            "refscope bench: Refusing to perform update with empty message.",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_runs(
    repo: Path, git_bin: str, tmp_path: Path, args: list[str], data: bytes, message: str
) -> None:
    before = state(repo)
    extra, log = logging_git(tmp_path, git_bin)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = bench(repo, "--update", *args, "--git", extra, stdin=data, scratch=scratch)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.decode() == message + "\n"
    assert calls(log) == []  # not even asked its version
    assert list(scratch.iterdir()) == []
    assert state(repo) == before


@pytest.mark.parametrize(
    "args",
    [
        ["--update", "refs/heads/x"],
        ["-z", "refs/heads/x"],
        ["-m", "msg", "--stdin"],
        ["--update", "--warmup", "-1"],
        ["--update", "--runs", "0"],
    ],
)
def test_usage_errors(repo: Path, args: list[str]) -> None:
    proc = bench(repo, *args, stdin=b"")
    assert proc.returncode == 2
    assert b"usage: refscope bench" in proc.stderr
    assert proc.stdout == b""


def test_the_seeds_recipe_into_a_fresh_reftable_repository(tmp_path: Path, git_bin: str) -> None:
    """The seed's experiment at a small scale: creates into an empty reftable repository, each run on a
    fresh copy of the empty stack (on the same copy a second run would be refused: the refs exist)."""
    fresh = tmp_path / "fresh"
    git(tmp_path, "init", "-q", "--ref-format=reftable", str(fresh))
    blob = git(fresh, "hash-object", "-w", "--stdin", input=b"x\n").strip().decode()
    before = state(fresh)
    data = "".join(f"create refs/tags/foo-{i} {blob}\n" for i in range(1, 2001)).encode()
    proc = bench(fresh, "--update", "--json", "--runs", "2", stdin=data)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ref_storage"] == "reftable" and out["refs_total"] == 0 and out["verbs"] == {"create": 2000}
    native, _whole, git_row = out["engines"]
    assert native["refused"] is None and git_row["refused"] is None
    assert native["runs"] == git_row["runs"] == 2
    # git 2.55 re-checks the stack for every ref; the native commit checks it once
    assert git_row["syscalls"]["median"] > 2000
    assert native["syscalls"]["median"] < 200
    assert state(fresh) == before
    assert for_each_ref(fresh) == []
