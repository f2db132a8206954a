"""``refscope verify`` and ``backend.verify`` on real repositories: clean stores stay silent, each problem
class is reported with its file, offset and severity, unsafe names come out escaped, locks are reported
with age and owner hint and removed only when nobody could hold them; verify never writes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from refscope.app.cli import main
from refscope.backend import verify as V
from refscope.backend.errors import LockBusy, TransactionRefused
from refscope.backend.repo import discover

from tests.support.git import create_refs, git, git_binary, git_env, git_pipe, init_repo, ref_storage

OBEYED = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(capfd, *argv: str) -> tuple[int, str, str]:
    capfd.readouterr()
    rc = main(list(argv))
    out, err = capfd.readouterr()
    assert OBEYED.search(out + err) is None, out + err  # nothing a terminal would obey, ever
    return rc, out, err


def verify_cli(capfd, repo: Path, *extra: str) -> tuple[int, str, str]:
    before = ref_storage(repo)
    res = run(capfd, "verify", "-C", str(repo), *extra)
    after = ref_storage(repo)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"verify changed the repository: {changed}"
    return res


_CLEAN = re.compile(r"refscope verify: 0 errors, 0 warnings in [\d,]+ refs? \((files|reftable): [^)]*\)\n")


def assert_clean(res: tuple[int, str, str]) -> None:
    """Exit 0, no finding, and the summary line on stderr (success is not silent)."""
    rc, out, err = res
    assert (rc, out) == (0, ""), res
    assert _CLEAN.fullmatch(err), err


def rich_repo(path: Path, fmt: str, hash_name: str = "sha1") -> Path:
    repo = init_repo(path, fmt=fmt, hash_name=hash_name)
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    lines = b"".join(b"create refs/heads/b/%04d HEAD\n" % i for i in range(300))
    git(repo, "update-ref", "--stdin", input=lines)
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/heads/loose", "HEAD")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
    git(repo, "update-ref", "-d", "refs/heads/b/0007")
    return repo


# --------------------------------------------------------------------------------------------- clean


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
def test_clean_repositories_print_nothing(tmp_path, capfd, ref_format, hash_name):
    repo = rich_repo(tmp_path / "r", ref_format, hash_name)
    rc, out, err = verify_cli(capfd, repo)
    assert_clean((rc, out, err))
    rc, out, err = verify_cli(capfd, repo, "--json")
    assert_clean((rc, out, err))


def test_fresh_repository_with_unborn_head_is_clean(tmp_path, capfd, ref_format):
    repo = init_repo(tmp_path / "r", fmt=ref_format, bare=True)
    assert_clean(verify_cli(capfd, repo))


def test_multi_level_index_and_obj_blocks_are_clean(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="reftable")
    git(repo, "config", "reftable.blockSize", "256")
    git(repo, "config", "reftable.restartInterval", "3")
    lines = b"".join(b"create refs/heads/branch-number-%05d HEAD\n" % i for i in range(1500))
    git(repo, "update-ref", "--stdin", input=lines)
    git(repo, "pack-refs")
    rdir = repo / ".git" / "reftable"
    (table,) = (rdir / "tables.list").read_text().split()
    blocks, findings = V.table_blocks((rdir / table).read_bytes())
    assert findings == []
    types = "".join(b.type for b in blocks)
    assert "o" in types and types.count("i") > 3  # a multi-level ref index
    assert_clean(verify_cli(capfd, repo))


def test_linked_worktree_is_clean_and_checks_its_own_stack(tmp_path, capfd, ref_format):
    repo = rich_repo(tmp_path / "r", ref_format)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt-branch", str(wt))
    git(wt, "update-ref", "refs/worktree/private", "HEAD")
    assert_clean(verify_cli(capfd, wt))
    assert_clean(verify_cli(capfd, repo))
    if ref_format == "reftable":
        lst = repo / ".git" / "worktrees" / "wt" / "reftable" / "tables.list"
        lst.write_bytes(lst.read_bytes().rstrip(b"\n"))
        rc, out, _ = verify_cli(capfd, wt)
        assert rc == 1 and f"error: {lst}@" in out


def test_usage_errors_exit_2(capfd):
    assert run(capfd, "verify", "--bogus")[0] == 2
    assert run(capfd, "verify", "-C")[0] == 2


def test_not_a_repository_is_one_line(tmp_path, capfd):
    rc, out, err = run(capfd, "verify", "-C", str(tmp_path))
    assert rc == 1 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("refscope: ")


# --------------------------------------------------------------------------------------------- findings


def findings(repo: Path) -> list[V.Finding]:
    return V.verify(discover(str(repo)))


def test_output_format_plain_and_json(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    packed.write_bytes(packed.read_bytes() + b"not-an-oid refs/heads/x\n")
    rc, out, err = verify_cli(capfd, repo)
    assert rc == 1
    offset = len(packed.read_bytes()) - len(b"not-an-oid refs/heads/x\n")
    assert out == (
        f"error: {packed}@{offset}: line 3: oid 'not-an-oid refs/heads/x' is 23 characters, not 40; "
        "git dies reading it\n"
    )
    assert err == "refscope verify: 1 error, 0 warnings in 2 refs (files: 1 packed, 1 loose)\n"
    rc, out, _ = verify_cli(capfd, repo, "--json")
    assert rc == 1
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "file": str(packed),
            "offset": offset,
            "severity": "error",
            "message": "line 3: oid 'not-an-oid refs/heads/x' is 23 characters, not 40; git dies reading it",
        }
    ]


def test_loose_ref_problems(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    heads = repo / ".git" / "refs" / "heads"
    (heads / "garbage").write_bytes(b"this is not an oid\n")
    (heads / "no-newline").write_bytes(git(repo, "rev-parse", "HEAD").strip())
    (heads / "bad..name").write_bytes(git(repo, "rev-parse", "HEAD"))
    got = {(Path(f.file).name, f.severity, f.message.split(" ")[0]) for f in findings(repo)}
    assert ("garbage", "error", "loose") in got
    assert ("no-newline", "warning", "loose") in got
    assert ("bad..name", "error", "ref") in got
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 1
    assert "ref name 'refs/heads/bad..name' contains '..': git ignores this ref" in out


def test_warnings_only_exit_0_with_summary(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    git(repo, "symbolic-ref", "refs/heads/dangling", "refs/heads/nowhere")
    rc, out, err = verify_cli(capfd, repo)
    assert rc == 0
    assert out.startswith("warning: ") and "does not exist" in out
    # HEAD, main and the dangling symref, all loose
    assert err == "refscope verify: 0 errors, 1 warning in 3 refs (files: 0 packed, 3 loose)\n"


def test_clean_repository_gets_a_summary(tmp_path, capfd, ref_format):
    """Success is not silence: what was read, as git counts it (for-each-ref's refs plus HEAD)."""
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    create_refs(repo, [f"refs/heads/b{i}".encode() for i in range(30)])
    if ref_format == "files":
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/loose", "HEAD")
    refs = len(git(repo, "for-each-ref").splitlines()) + 1
    rc, out, err = verify_cli(capfd, repo)
    assert (rc, out) == (0, "")
    if ref_format == "files":
        assert err == f"refscope verify: 0 errors, 0 warnings in {refs} refs (files: 31 packed, 2 loose)\n"
    else:
        tables = len((repo / ".git" / "reftable" / "tables.list").read_text().splitlines())
        want = f"refscope verify: 0 errors, 0 warnings in {refs} refs (reftable: {tables} table"
        assert err == want + ("s" if tables != 1 else "") + ")\n"
    rc, out, err2 = verify_cli(capfd, repo, "--json")
    assert (rc, out, err2) == (0, "", err)  # --json: stdout unchanged, the same summary on stderr


def test_leftover_packed_refs_new_is_a_warning(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    new = repo / ".git" / "packed-refs.new"
    new.write_bytes(b"# pack-refs with: peeled fully-peeled sorted \n")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 0 and out.startswith(f"warning: {new}: packed-refs.new left behind")


def test_leftover_rename_journal_is_a_warning(tmp_path, capfd):
    """A refscope rename killed while its reflogs were moving leaves its journal (update/rename_journal.py)."""
    repo = init_repo(tmp_path / "r", fmt="files")
    journal = repo / ".git" / "logs" / "refs" / ".refscope-rename"
    journal.write_bytes(b"plain\0/x\0refs/heads/a\0refs/heads/b\0" + b"10")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 0 and out.startswith(f"warning: {journal}: a rename's journal left behind")


def test_symlinked_packed_refs(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    git(repo, "pack-refs", "--all")
    gd = repo / ".git"
    (gd / "packed-refs").rename(gd / "packed-refs.real")
    os.symlink("packed-refs.real", gd / "packed-refs")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 1
    assert f"error: {gd / 'packed-refs'}: packed-refs is a symbolic link" in out


def test_unsorted_packed_refs_without_sorted_trait_is_a_warning(tmp_path):
    repo = init_repo(tmp_path / "r", fmt="files")
    oid = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git" / "packed-refs").write_bytes(oid + b" refs/heads/z\n" + oid + b" refs/heads/a\n")
    (f,) = [f for f in findings(repo) if "packed-refs" in f.file]
    assert f.severity == "warning" and "not sorted" in f.message


def test_stray_and_temp_files_in_reftable_dir(tmp_path, capfd):
    repo = rich_repo(tmp_path / "r", "reftable")
    rdir = repo / ".git" / "reftable"
    newest = (rdir / "tables.list").read_text().split()[-1]
    shutil.copyfile(rdir / newest, rdir / "0x000000000063-0x000000000063-12345678.ref")
    (rdir / "0x000000000064-0x000000000064-aaaaaaaa.ref.temp.Xy12ab").write_bytes(b"")
    (rdir / "tables.list").write_text((rdir / "tables.list").read_text() + "\n")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 0
    lines = out.splitlines()
    assert any("stray table 0x000000000063-0x000000000063-12345678.ref" in line for line in lines)
    assert any("leftover temporary file" in line for line in lines)
    assert any("tables.list has an empty line" in line for line in lines)
    assert all(line.startswith("warning: ") for line in lines)


def test_update_indexes_must_increase_through_the_stack(tmp_path, capfd):
    repo = rich_repo(tmp_path / "r", "reftable")
    lst = repo / ".git" / "reftable" / "tables.list"
    names = lst.read_text().split()
    assert len(names) >= 2
    lst.write_text("\n".join([names[1], names[0], *names[2:]]) + "\n")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 1
    assert f"error: {lst.parent / names[0]}@8: update indexes must increase through the stack" in out


def test_table_name_disagreeing_with_header_is_a_warning(tmp_path):
    repo = rich_repo(tmp_path / "r", "reftable")
    rdir = repo / ".git" / "reftable"
    names = (rdir / "tables.list").read_text().split()
    renamed = "0x0000000000aa-0x0000000000bb-0badcafe.ref"
    (rdir / names[-1]).rename(rdir / renamed)
    (rdir / "tables.list").write_text("\n".join([*names[:-1], renamed]) + "\n")
    got = [f for f in findings(repo) if f.file.endswith(renamed)]
    assert [f.severity for f in got] == ["warning"]
    assert "name says update indexes 170..187" in got[0].message


def test_dubious_ownership(tmp_path, capfd, monkeypatch):
    repo = init_repo(tmp_path / "r", fmt="files")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 1
    assert out.startswith(f"error: {repo}: detected dubious ownership in repository at '{repo}'")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(repo))
    assert_clean(verify_cli(capfd, repo))


# --------------------------------------------------------------------------------------------- unsafe names

HOSTILE = [
    b"refs/heads/csi-\x9b31m-raw",  # a lone 8-bit CSI byte (not UTF-8)
    "refs/heads/c1-\u009b31m-utf8".encode(),  # U+009B, C1 CSI encoded as UTF-8
    "refs/heads/bidi-\u202egnp.exe".encode(),  # right-to-left override
    b"refs/heads/markup-]bold]-$var-@click",  # markup-looking but legal ('[' is illegal in names)
]


@pytest.fixture
def hostile_repo(tmp_path, ref_format) -> Path:
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    oid = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "--stdin", input=b"".join(b"create " + n + b" " + oid + b"\n" for n in HOSTILE))
    return repo


def test_hostile_names_are_escaped_in_verify(hostile_repo, capfd):
    rc, out, err = verify_cli(capfd, hostile_repo)
    assert rc == 0
    for raw in ("\x9b", "\u009b", "\u202e", "\x1b"):
        assert raw not in out and raw not in err
    assert "refs/heads/csi-\\x9b31m-raw" in out
    assert "refs/heads/c1-\\u009b31m-utf8" in out
    assert "refs/heads/bidi-\\u202egnp.exe" in out
    assert all(line.startswith("warning: ") for line in out.splitlines())
    assert "markup" not in out  # legal and harmless: no finding


def test_hostile_names_are_escaped_in_list(hostile_repo):
    # on a terminal (into a pipe, plain `list` prints git's raw bytes: tests/cli/test_hostile_output.py)
    from tests.support.terminal import run_tty

    rc, raw_out, err = run_tty("list", "-C", str(hostile_repo), env=git_env())
    out = raw_out.decode("utf-8", "surrogateescape")
    assert rc == 0, err
    for raw in ("\x9b", "\u009b", "\u202e"):
        assert raw not in out
    assert "refs/heads/csi-\\x9b31m-raw" in out
    assert "refs/heads/bidi-\\u202egnp.exe" in out
    assert "refs/heads/markup-]bold]-$var-@click" in out


def test_control_characters_in_broken_names_never_reach_the_terminal(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    oid = git(repo, "rev-parse", "HEAD").strip()
    (repo / ".git" / "packed-refs").write_bytes(
        b"# pack-refs with: peeled fully-peeled sorted \n" + oid + b" refs/heads/\x1b]0;pwned\x07title\n"
    )
    rc, out, err = verify_cli(capfd, repo)
    assert rc == 1
    assert "\x1b" not in out and "\x07" not in out
    assert "refs/heads/\\x1b]0;pwned\\x07title" in out


# --------------------------------------------------------------------------------------------- locks


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@contextlib.contextmanager
def reaped(proc: subprocess.Popen):
    """``proc`` for the block, killed and waited for after it."""
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def poll(done, step: float, timeout: float = 5) -> None:
    """Until ``done()`` or ``timeout`` seconds (then the test's own assertions tell)."""
    deadline = time.time() + timeout
    while time.time() < deadline and not done():
        time.sleep(step)


def aged_lock(tmp_path: Path, rel: str, seconds: float):
    """A files repository with an empty lock ``.git/<rel>`` last written ``seconds`` ago: (path, Repo, lock)."""
    repo = init_repo(tmp_path / "r", fmt="files")
    lock = repo / ".git" / rel
    lock.write_bytes(b"")
    age(lock, seconds)
    return repo, discover(str(repo)), lock


def test_stale_lock_is_an_error_with_age_and_owner_hint(tmp_path, capfd, ref_format):
    repo = init_repo(tmp_path / "r", fmt=ref_format)
    lock = repo / ".git" / ("packed-refs.lock" if ref_format == "files" else "reftable/tables.list.lock")
    lock.write_bytes(b"")
    age(lock, 2 * 3600)
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 1
    assert out.startswith(f"error: {lock}: lock file left behind, 2.0 h old (mtime ")
    assert "no process has it open and no git process runs in this repository" in out
    assert lock.exists()  # reported, never removed by verify


def test_fresh_lock_is_a_warning_and_is_not_removed(tmp_path, capfd):
    repo = init_repo(tmp_path / "r", fmt="files")
    lock = repo / ".git" / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    rc, out, _ = verify_cli(capfd, repo)
    assert rc == 0
    assert re.match(rf"warning: {re.escape(str(lock))}: lock file left behind, [0-9] s old \(mtime ", out)
    with pytest.raises(LockBusy, match=r"only [0-9]+ s old"):
        V.remove_stale_lock(str(lock), discover(str(repo)))
    assert lock.exists()


def test_reflog_lock_left_by_reflog_expire_is_found(tmp_path):
    repo = init_repo(tmp_path / "r", fmt="files")
    lock = repo / ".git" / "logs" / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    age(lock, 300)
    got = [f for f in findings(repo) if f.file == str(lock)]
    assert [f.severity for f in got] == ["error"] and "5 min old" in got[0].message


def test_stale_locks_api_and_removal(tmp_path):
    repo, r, lock = aged_lock(tmp_path, "refs/heads/main.lock", 600)
    (info,) = V.stale_locks(r)
    assert info.path == str(lock) and 590 < info.age_s < 700
    assert info.holders == [] and not info.could_be_held()
    removed = V.remove_stale_lock(str(lock), r)
    assert removed.path == str(lock) and not lock.exists()
    assert V.stale_locks(r) == []
    with pytest.raises(TransactionRefused):
        V.remove_stale_lock(str(repo / ".git" / "HEAD"), r)  # not a lock


def test_lock_held_open_by_a_process_is_never_removed(tmp_path):
    repo, r, lock = aged_lock(tmp_path, "packed-refs.lock", 3600)
    with reaped(subprocess.Popen(["sleep", "30"], stdin=open(lock, "rb"))) as holder:  # noqa: SIM115 - the child holds it
        # until the child has exec'd (before that its comm is still pytest's)
        poll(lambda: Path(f"/proc/{holder.pid}/comm").read_text().strip() == "sleep", 0.01)
        (info,) = V.stale_locks(r)
        assert (holder.pid, "sleep") in info.holders
        assert f"held open by pid {holder.pid} (sleep)" in info.owner_hint()
        with pytest.raises(LockBusy, match="lock is in use"):
            V.remove_stale_lock(str(lock), r)
        assert lock.exists()


def test_lock_with_git_running_in_the_repository_is_not_removed(tmp_path):
    repo, r, lock = aged_lock(tmp_path, "refs/heads/main.lock", 3600)
    # A git process sitting in the repository (waiting on stdin) could be the lock's owner.
    with reaped(git_pipe(repo, "cat-file", "--batch")) as proc:
        poll(lambda: V.stale_locks(r)[0].git_processes, 0.02)
        (info,) = V.stale_locks(r)
        assert proc.pid in [pid for pid, _ in info.git_processes]
        with pytest.raises(LockBusy, match="may be in use"):
            V.remove_stale_lock(str(lock), r)
        assert lock.exists()


def test_error_lines_never_carry_hostile_names_raw(tmp_path, capfd, monkeypatch):
    """Every command's one-line error goes through RefscopeError.cli_line, which makes controls, C1 and
    bidi characters visible: here a stale-value refusal quoting a valid name with U+202E."""
    repo = init_repo(tmp_path / "r", fmt="files")
    name = "refs/heads/bidi-\u202egnp.exe"
    git(repo, "update-ref", name, "HEAD")
    stdin = io.TextIOWrapper(io.BytesIO(name.encode() + b" " + b"1" * 40 + b"\n"))
    monkeypatch.setattr("sys.stdin", stdin)
    rc, out, err = run(capfd, "delete", "-C", str(repo), "--stdin")
    assert rc == 1
    assert "'refs/heads/bidi-\\u202egnp.exe'" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "block_size,restart_interval,index_objects",
    [(256, 1, "true"), (1024, 64, "false"), (65536, 16, "true"), (300, 3, "true")],
)
def test_git_tables_of_every_shape_are_clean(tmp_path, capfd, block_size, restart_interval, index_objects):
    """No false positives: tables git writes with odd block sizes, restart intervals, with and without obj
    blocks, log-only tables (a dropped stash), tombstones and symrefs all verify clean."""
    repo = init_repo(tmp_path / "r", fmt="reftable")
    git(repo, "config", "reftable.blockSize", str(block_size))
    git(repo, "config", "reftable.restartInterval", str(restart_interval))
    git(repo, "config", "reftable.indexObjects", index_objects)
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    lines = b"".join(b"create refs/heads/%s/%04d HEAD\n" % (b"x" * (i % 7 + 1), i) for i in range(400))
    git(repo, "update-ref", "--stdin", input=lines)
    git(repo, "pack-refs")
    git(repo, "update-ref", "-d", "refs/heads/xxx/0002")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
    (repo / "file").write_text("stash me\n")
    git(repo, "stash", "-q")
    git(repo, "stash", "drop", "-q")
    assert_clean(verify_cli(capfd, repo))


def test_loose_refs_superset_of_git_refs_verify(tmp_path):
    """Every loose ref ``git refs verify`` flags, verify flags too, at least as severely."""
    repo = init_repo(tmp_path / "r", fmt="files")
    oid = git(repo, "rev-parse", "HEAD").strip()
    heads = repo / ".git" / "refs" / "heads"
    contents = {
        "nonl": oid,
        "trail": oid + b" garbage\n",
        "twonl": oid + b"\n\n",
        "symnonl": b"ref: refs/heads/main",
        "badsym": b"ref: refs/heads/../x\n",
        "abs": b"ref: /etc/passwd\n",
        "escape": b"ref: logs/HEAD\n",
        "symtrail": b"ref: refs/heads/main  \n",
        "garbage": b"not an oid at all\n",
    }
    for name, data in contents.items():
        (heads / name).write_bytes(data)
    os.symlink("../../HEAD", heads / "link")
    proc = subprocess.run([git_binary(), "refs", "verify"], cwd=repo, capture_output=True, env=git_env())
    git_says: dict[str, str] = {}
    for m in re.finditer(r"^(error|warning): refs/heads/([^:]+): ", proc.stderr.decode(), re.M):
        git_says[m.group(2)] = m.group(1)
    assert len(git_says) >= 8
    ours: dict[str, set[str]] = {}
    for f in findings(repo):
        ours.setdefault(Path(f.file).name, set()).add(f.severity)
    for name, severity in git_says.items():
        assert name in ours, name
        if severity == "error":
            assert "error" in ours[name], name


def test_locks_of_config_and_of_every_worktree_are_found(tmp_path):
    """A crashed branch rename can leave config.lock and a linked worktree's HEAD.lock or reftable lock:
    verify names each (they make git fail with 'File exists' as a ref lock does)."""
    for fmt in ("files", "reftable"):
        repo = init_repo(tmp_path / fmt, fmt=fmt)
        git(repo, "commit", "-q", "--allow-empty", "-m", "c")
        git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / f"wt-{fmt}"))
        wt = repo / ".git" / "worktrees" / f"wt-{fmt}"
        locks = [repo / ".git" / "config.lock", wt / "HEAD.lock"]
        if fmt == "reftable":
            locks.append(wt / "reftable" / "tables.list.lock")
        else:
            locks.append(wt / "logs" / "HEAD.lock")
        for lock in locks:
            lock.write_bytes(b"")
            age(lock, 600)
        r = discover(str(repo))
        assert sorted(i.path for i in V.stale_locks(r)) == sorted(map(str, locks))
        assert {f.file for f in findings(repo) if f.severity == "error"} >= set(map(str, locks))
