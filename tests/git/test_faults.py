"""OS faults end in the one-line error: every command that reads, over every repository file a reader opens,
replaced by what the OS refuses to read (mode 000, a symlink loop, a directory, a FIFO), in both formats.

The mechanism under test is ``backend.fileio``: every reader opens through it (non-blocking, regular files
only, OSError -> UnreadableFile), so no errno escapes as a traceback and no FIFO blocks. Each cell checks
the exit status, the exact stderr, that nothing under ``.git`` changed, and that the command returns (a
subprocess timeout). Where git hides the damage (a broken loose ref in a listing; a directory where a loose
ref was) refscope does what git does, and the cell says so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import faults as faultutil
from tests.support.cli import refscope
from tests.support.faults import FAULTS, WHY, fill, fingerprint, make_fault, unprivileged
from tests.support.git import create_refs, git, git_binary, git_env, init_repo

COMMANDS = ("list", "stack", "verify", "delete", "dump")
KINDS = {"files": ("packed-refs", "loose ref"), "reftable": ("tables.list", "table")}
CELLS = [
    (fmt, kind, fault, cmd)
    for fmt, kinds in KINDS.items()
    for kind in kinds
    for fault in FAULTS
    for cmd in COMMANDS
]
TIMEOUT = 30  # seconds: a FIFO that blocked a reader would hang here


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One repository per format: refs/heads/x (loose in files, packed-refs holding the rest)."""
    out = {}
    for fmt in KINDS:
        repo = init_repo(tmp_path_factory.mktemp(f"faults-{fmt}") / "repo", fmt=fmt)
        git(repo, "branch", "a")
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/x", "HEAD")
        out[fmt] = repo
    return out


def _target(repo: Path, kind: str) -> Path:
    gitdir = repo / ".git"
    if kind == "packed-refs":
        return gitdir / "packed-refs"
    if kind == "loose ref":
        return gitdir / "refs" / "heads" / "x"
    if kind == "tables.list":
        return gitdir / "reftable" / "tables.list"
    return gitdir / "reftable" / (gitdir / "reftable" / "tables.list").read_text().split()[0]


def _argv(cmd: str, repo: Path, target: Path) -> list[str]:
    if cmd == "dump":
        return ["dump", str(target)]
    if cmd == "delete":
        return ["delete", "-C", str(repo), "refs/heads/x"]
    return [cmd, "-C", str(repo)]


def _run(prefix: list[str], *argv: str) -> subprocess.CompletedProcess:
    return refscope(*argv, prefix=prefix, timeout=TIMEOUT)


@pytest.mark.parametrize(
    ("fmt", "kind", "fault", "cmd"), CELLS, ids=["-".join(c).replace(" ", "_") for c in CELLS]
)
def test_unreadable_file_is_one_line(
    bases: dict[str, Path], tmp_path: Path, fmt: str, kind: str, fault: str, cmd: str
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(bases[fmt], repo, symlinks=True)
    target = _target(repo, kind)
    make_fault(target, fault)
    prefix = unprivileged() if fault == "mode000" else []
    before = fingerprint(repo / ".git")

    if (kind, fault, cmd) == ("loose ref", "directory", "delete"):
        # git's delete removes the (empty) directory in the way and the reflog: the oracle is git's result
        oracle = tmp_path / "oracle"
        shutil.copytree(repo, oracle, symlinks=True)
        git(oracle, "update-ref", "-d", "refs/heads/x")
        before = fingerprint(oracle / ".git")

    out = _run(prefix, *_argv(cmd, repo, target))

    err = out.stderr.decode()
    assert "Traceback" not in err
    assert fingerprint(repo / ".git") == before
    why = WHY[fault]
    if kind != "loose ref" or cmd == "dump":
        if cmd == "verify":
            assert out.returncode == 1, err
            assert any(line.startswith(f"error: {target}") for line in out.stdout.decode().splitlines())
            assert err.count("\n") == 1 and err.startswith("refscope verify: ") and "stopped early" not in err
        else:
            assert (out.returncode, err) == (1, f"refscope: {target}: couldn't read: {why}\n")
        return
    # A loose ref: what git does. Listing hides the broken ref (git: "ignoring broken ref", exit 0); a
    # directory is no ref at all (git's delete succeeds); a delete of the unreadable ref is refused.
    if cmd == "list":
        want = subprocess.run(
            [*prefix, git_binary(), "-C", str(repo), "for-each-ref", "--format=%(objectname) %(refname)"],
            capture_output=True,
            env=git_env(),
            timeout=TIMEOUT,
        )
        assert (out.returncode, out.stdout) == (want.returncode, want.stdout) == (0, want.stdout)
        assert b"refs/heads/x" not in out.stdout and b"refs/heads/a" in out.stdout
    elif cmd == "stack":
        assert (out.returncode, err) == (0, "")
    elif fault == "directory":
        assert out.returncode == 0, err
    elif cmd == "verify":
        assert out.returncode == 1, err
        assert any(line.startswith(f"error: {target}") for line in out.stdout.decode().splitlines())
    else:
        assert (out.returncode, err) == (1, f"refscope: {target}: unable to resolve reference: {why}\n")


# ------------------------------------------------------------------------------------------- disk full


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    """A 24 MiB tmpfs mounted for the test (root only), unmounted afterwards."""
    with faultutil.small_tmpfs(tmp_path / "mnt", "24m") as mnt:
        yield mnt


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_disk_full_refuses_with_one_line(small_tmpfs: Path, fmt: str) -> None:
    repo = init_repo(small_tmpfs / "repo", fmt=fmt)
    create_refs(repo, (b"refs/heads/b%03d" % i for i in range(300)))
    git(repo, "pack-refs", "--all")
    fill(small_tmpfs)
    gitdir = repo / ".git"
    before = fingerprint(gitdir)

    out = _run([], "delete", "-C", str(repo), "refs/heads/b007")

    written = gitdir / "packed-refs.new" if fmt == "files" else gitdir / "reftable"
    assert (out.returncode, out.stderr.decode()) == (
        1,
        f"refscope: {written}: error writing: No space left on device\n",
    )
    assert fingerprint(gitdir) == before  # no lock, no temp file, no new table left behind


# ----------------------------------------------------------------------------- update index overflow


def _set_max_update_index(table: Path, value: int) -> None:
    """Rewrite max_update_index in the table's header and footer (with the footer's CRC-32 fixed)."""
    import struct
    import zlib

    data = bytearray(table.read_bytes())
    footer = len(data) - (68 if data[4] == 1 else 72)
    at = 16  # after magic, version and block size (8 bytes) and min_update_index, in both versions
    for base in (0, footer):
        data[base + at : base + at + 8] = struct.pack(">Q", value)
    data[-4:] = struct.pack(">I", zlib.crc32(bytes(data[footer:-4])))
    table.write_bytes(bytes(data))


def test_update_index_after_the_last_wraps_as_git(tmp_path: Path) -> None:
    """A stack whose newest table ends at update index 2^64-1: git's next update index wraps to 0 (uint64_t)
    and its delete succeeds; refscope's does the same (no OverflowError) and leaves what git leaves."""
    base = init_repo(tmp_path / "base", fmt="reftable")
    git(base, "branch", "a")
    git(base, "pack-refs")
    rdir = base / ".git" / "reftable"
    _set_max_update_index(rdir / (rdir / "tables.list").read_text().split()[-1], (1 << 64) - 1)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)

    out = _run([], "delete", "-C", str(ours), "refs/heads/a")
    git(theirs, "update-ref", "-d", "refs/heads/a")

    assert (out.returncode, "Traceback" in out.stderr.decode()) == (0, False), out.stderr
    names = [(r / ".git/reftable/tables.list").read_text().split() for r in (ours, theirs)]
    assert [[n[:30] for n in ns] for ns in names] == [
        [names[1][0][:30], "0x000000000000-0x000000000000-"]
    ] * 2
    want = git(theirs, "for-each-ref", "--format=%(objectname) %(refname)")
    assert git(ours, "for-each-ref", "--format=%(objectname) %(refname)") == want
    assert _run([], "list", "-C", str(ours)).stdout == want


# ------------------------------------------------------------------------------------------ huge files


def _limited(limit_bytes: int):
    def preexec() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return preexec


def test_huge_sparse_packed_refs_under_an_address_space_limit(tmp_path: Path) -> None:
    """2 GB of packed-refs (its records, then zeros: sparse) under ``ulimit -v 3000000``: the one-line error
    git gives ("unterminated line"), quoting a bounded prefix of the bad line, escaped; no MemoryError."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    with open(packed, "r+b") as f:
        f.truncate(2 << 30)
    out = refscope("list", "-C", str(repo), timeout=TIMEOUT, preexec_fn=_limited(3_000_000 * 1024))
    with open(packed, "rb") as f:
        start = len(f.read(4096).split(b"\0", 1)[0])  # where the zeros begin: the bad line
    zeros = "\\x00" * 75  # the first 75 bytes of the bad line, escaped, and "..."
    want = f"refscope: {packed}: unterminated line in {packed}: {zeros}... (at byte {start})\n"
    assert (out.returncode, out.stderr.decode()) == (1, want)


def test_huge_loose_ref_is_read_bounded(tmp_path: Path) -> None:
    """A loose ref of 2 GB (an oid, LF, then zeros: sparse) is what git says it is -- a valid ref, as git
    parses only up to the whitespace after the oid -- and one of 2 GB of zeros is broken (hidden). Under a
    1 GB address-space limit: a reader that read the whole file could not hold it."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "update-ref", "refs/heads/huge", "HEAD")
    git(repo, "update-ref", "refs/heads/zeros", "HEAD")
    heads = repo / ".git" / "refs" / "heads"
    with open(heads / "huge", "r+b") as f:
        f.truncate(2 << 30)
    with open(heads / "zeros", "r+b") as f:
        f.truncate(0)
        f.truncate(2 << 30)
    head = git(repo, "rev-parse", "HEAD").strip()
    out = refscope("list", "-C", str(repo), timeout=TIMEOUT, preexec_fn=_limited(1 << 30))
    assert (out.returncode, out.stderr) == (0, b"")
    assert out.stdout == b"%s refs/heads/huge\n%s refs/heads/main\n" % (head, head)
    deleted = refscope(
        "delete", "-C", str(repo), "refs/heads/huge", timeout=TIMEOUT, preexec_fn=_limited(1 << 30)
    )
    assert deleted.returncode == 0, deleted.stderr
    assert not (heads / "huge").exists()


# ------------------------------------------------------------------------------- command arguments


@pytest.mark.parametrize(
    ("path", "why"),
    [
        (".", "Is a directory"),
        ("/proc/self/mem", "Input/output error"),
        ("/dev/zero", "not a regular file"),
    ],
)
def test_dump_of_what_is_not_a_ref_file(tmp_path: Path, path: str, why: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "refscope.app", "dump", path],
        cwd=tmp_path,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert (out.returncode, out.stderr.decode(), out.stdout) == (
        1,
        f"refscope: {path}: couldn't read: {why}\n",
        b"",
    )


@pytest.mark.parametrize(
    ("binary", "what"),
    [
        ("/nonexistent/git", "cannot run: No such file or directory"),
        ("/etc/passwd", "cannot run: Permission denied"),
        ("/bin/true", "not a git: 'version' did not print 'git version ...'"),
    ],
)
def test_bench_refuses_a_git_that_is_not_one(tmp_path: Path, binary: str, what: str) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "branch", "a")
    before = fingerprint(repo / ".git")
    out = _run([], "bench", "-C", str(repo), "--git", binary, "--runs", "1", "refs/heads/a")
    assert (out.returncode, out.stderr.decode()) == (1, f"refscope: {binary}: {what}\n")
    assert fingerprint(repo / ".git") == before


# ------------------------------------------------------------------------------ unreadable directories


def test_verify_reports_an_unreadable_reftable_directory(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    rdir = repo / ".git" / "reftable"
    prefix = unprivileged()
    before = fingerprint(repo / ".git")
    rdir.chmod(0)
    try:
        out = _run(prefix, "verify", "-C", str(repo))
        listed = _run(prefix, "list", "-C", str(repo))
    finally:
        rdir.chmod(0o755)
    assert out.returncode == 1
    assert f"error: {rdir}: cannot read the reftable directory: Permission denied\n" in out.stdout.decode()
    assert "stopped early" not in out.stdout.decode() + out.stderr.decode()
    assert (listed.returncode, listed.stderr.decode()) == (
        1,
        f"refscope: {rdir / 'tables.list'}: couldn't read: Permission denied\n",
    )
    assert fingerprint(repo / ".git") == before


def test_write_fault_in_a_native_commit_is_one_line(tmp_path: Path) -> None:
    """``logs/`` unsearchable: the files engine's reflog unlink fails with EACCES. Any OSError of a native
    commit is a refusal of one line naming its file, and the repository is as it was."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "branch", "a")
    logs = repo / ".git" / "logs" / "refs" / "heads"
    prefix = unprivileged()
    before = fingerprint(repo / ".git")
    logs.chmod(0o555)
    try:
        out = _run(prefix, "delete", "-C", str(repo), "refs/heads/a")
    finally:
        logs.chmod(0o755)
    assert (out.returncode, out.stderr.decode()) == (1, f"refscope: {logs / 'a'}: Permission denied\n")
    assert fingerprint(repo / ".git") == before


# ------------------------------------------------------------------------------------- the last resort


def test_cli_last_resort_for_an_untyped_os_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever OSError still escapes a headless command ends in ``refscope: <file>: <what>``, exit 1."""
    import types

    from refscope.app import cli

    mod = types.ModuleType("refscope.app.cmd_faulty")

    def run(argv: list[str]) -> int:
        raise PermissionError(13, "Permission denied", "/some/where\x1b[31m")

    mod.run = run
    sys.modules["refscope.app.cmd_faulty"] = mod
    cli.COMMANDS["faulty"] = "cmd_faulty"
    try:
        assert cli.main(["faulty"]) == 1
    finally:
        del cli.COMMANDS["faulty"], sys.modules["refscope.app.cmd_faulty"]
    assert capsys.readouterr().err == "refscope: /some/where\\x1b[31m: Permission denied\n"
