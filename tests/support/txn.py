"""Shared helpers of the transaction tests: generated repositories, copies, and git-side comparisons."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from tests.support.git import copy_repo, for_each_ref, git, git_binary, git_env, init_repo

LEFTOVER_SUFFIXES = (".lock", ".new")


def build_repo(path: Path, fmt: str, hash_name: str, *, worktree: bool = True, n_branches: int = 24) -> Path:
    """A repository with every shape a deletion meets: packed-only, loose-only and loose-over-packed
    branches, annotated tags (peeled), refs with reflogs, nested names, a symref, and a linked worktree
    (relative paths, so copies stay self-contained) with a per-worktree ref."""
    init_repo(path, fmt=fmt, hash_name=hash_name)
    git(path, "config", "worktree.useRelativePaths", "true")
    head = git(path, "rev-parse", "HEAD").strip()
    (path / "file").write_text("second\n")
    git(path, "commit", "-q", "-am", "second")
    second = git(path, "rev-parse", "HEAD").strip()
    lines = []
    for i in range(n_branches):
        lines.append(b"create refs/heads/p%02d %s" % (i, head))
    for i in range(6):
        lines.append(b"create refs/heads/nested/dir/n%d %s" % (i, head))
        lines.append(b"create refs/remotes/origin/r%d %s" % (i, second))
    git(path, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    for i in range(4):
        git(path, "tag", "-a", "-m", f"tag {i}", f"v{i}", "HEAD~1" if i % 2 else "HEAD")
    git(path, "tag", "light", "HEAD~1")
    git(path, "pack-refs", "--all")
    # loose-only, and loose over packed (a different value than the packed record)
    lines = [b"create refs/heads/l%02d %s" % (i, second) for i in range(8)]
    lines += [b"update refs/heads/p%02d %s" % (i, second) for i in range(0, n_branches, 3)]
    lines += [b"create refs/tags/loose-tag %s" % head]
    git(path, "update-ref", "-m", "loose batch", "--stdin", input=b"\n".join(lines) + b"\n")
    git(path, "symbolic-ref", "refs/heads/sym", "refs/heads/p01")
    git(path, "branch", "-q", "wt-branch", "HEAD~1")
    if worktree:
        git(path, "worktree", "add", "-q", "wt", "wt-branch")
        git(path / "wt", "update-ref", "refs/bisect/bad", head)
    return path


def git_delete(
    repo: Path, items: list[tuple[bytes, bytes | None]], no_deref: bool = False
) -> subprocess.CompletedProcess:
    """Plain ``git update-ref --stdin -z`` (the oracle), returning the process."""
    data = b"".join(b"delete %s\0%s\0" % (n, o or b"") for n, o in items)
    argv = [git_binary(), "update-ref", "--stdin", "-z"]
    if no_deref:
        argv.insert(2, "--no-deref")
    return subprocess.run(argv, cwd=repo, input=data, capture_output=True, env=git_env())


def reflogs(repo: Path, fmt: str, scratch: Path) -> dict[str, bytes]:
    """Every reflog as files would hold it: files directly, reftable after ``git refs migrate`` on a copy."""
    if fmt == "reftable":
        if scratch.exists():
            shutil.rmtree(scratch)
        copy_repo(repo, scratch)
        # git cannot migrate repositories with worktrees: compare the main stack's reflogs only
        shutil.rmtree(scratch / ".git" / "worktrees", ignore_errors=True)
        shutil.rmtree(scratch / "wt", ignore_errors=True)
        git(scratch, "refs", "migrate", "--ref-format=files")
        repo = scratch
    out = {}
    for base in (repo / ".git" / "logs", repo / ".git" / "worktrees" / "wt" / "logs"):
        if base.is_dir():
            for p in sorted(base.rglob("*")):
                if p.is_file():
                    out[str(p.relative_to(repo))] = p.read_bytes()
    return out


def reftable_files(repo: Path) -> list[tuple[str, bytes]]:
    """Every table of every stack as (name without its random suffix, bytes), in tables.list order."""
    out = []
    for d in (repo / ".git" / "reftable", repo / ".git" / "worktrees" / "wt" / "reftable"):
        if (d / "tables.list").exists():
            for name in (d / "tables.list").read_text().split():
                out.append((name.rsplit("-", 1)[0], (d / name).read_bytes()))
    return out


def files_layout(repo: Path) -> tuple[bytes, list[str]]:
    """packed-refs bytes and every path (files and directories) under refs/ and logs/ of the files backend."""
    git_dir = repo / ".git"
    packed = git_dir / "packed-refs"
    paths = []
    for sub in ("refs", "logs", "worktrees/wt/refs", "worktrees/wt/logs"):
        base = git_dir / sub
        if base.is_dir():
            paths += sorted(str(p.relative_to(git_dir)) for p in base.rglob("*"))
    return (packed.read_bytes() if packed.exists() else b""), paths


def leftovers(repo: Path) -> list[str]:
    """Lock files, packed-refs.new and reftable temp files left anywhere under the git dir."""
    out = []
    for p in (repo / ".git").rglob("*"):
        name = p.name
        if name.endswith(LEFTOVER_SUFFIXES) or ".temp." in name:
            if "objects" in p.parts or name == "index.lock":
                continue
            out.append(str(p.relative_to(repo)))
    return sorted(out)


def state(repo: Path) -> tuple:
    """What git sees: for-each-ref in the main worktree and in the linked one (per-worktree refs)."""
    main = for_each_ref(repo)
    wt = for_each_ref(repo / "wt", "refs/bisect") if (repo / "wt").exists() else []
    return main, wt


def fsck(repo: Path) -> tuple[int, bytes]:
    proc = subprocess.run(
        [git_binary(), "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True, env=git_env()
    )
    return proc.returncode, proc.stderr


def check_clean(repo: Path, oracle: Path | None = None) -> None:
    """git refs verify passes; git fsck passes, or says exactly what it says about git's own result
    (deleting through a symref leaves it dangling with a reflog: git's fsck flags that in both)."""
    git(repo, "refs", "verify")
    ours = fsck(repo)
    if oracle is None:
        assert ours == (0, b""), ours
    else:
        assert ours == fsck(oracle)


def open_txn_store(path: Path):
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    return open_store(discover(str(path), git_env()))


class GitWorker(threading.Thread):
    """Runs git commands in a loop until stopped; remembers which of its refs exist at the end."""

    def __init__(self, repo: Path, kind: str, tag: str) -> None:
        super().__init__(daemon=True)
        self.repo = repo
        self.kind = kind
        self.tag = tag
        self.stop = threading.Event()
        self.exists: dict[bytes, bool] = {}
        self.runs = 0
        self.failures = 0

    def git(self, *args: str) -> bool:
        proc = subprocess.run([git_binary(), *args], cwd=self.repo, capture_output=True, env=git_env())
        self.runs += 1
        if proc.returncode != 0:
            self.failures += 1
        return proc.returncode == 0

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            if self.kind == "churn":
                name = f"refs/heads/git/{self.tag}-{i % 7}"
                if self.exists.get(name.encode()):
                    if self.git("update-ref", "-d", name):
                        self.exists[name.encode()] = False
                elif self.git("update-ref", name, "HEAD"):
                    self.exists[name.encode()] = True
            elif self.kind == "create":
                name = f"refs/heads/git/{self.tag}-{i}"
                if self.git("update-ref", name, "HEAD"):
                    self.exists[name.encode()] = True
            else:  # pack / compact
                self.git("pack-refs", "--all")
                time.sleep(0.005)


def fast_copy(src: Path, dst: Path) -> Path:
    """A copy sharing the object store (a symlink): only the ref storage is written by these tests."""
    shutil.copytree(
        src, dst, symlinks=True, ignore=lambda d, names: ["objects"] if d.endswith(".git") else []
    )
    os.symlink(src / ".git" / "objects", dst / ".git" / "objects")
    return dst


def leftover_files(repo: Path) -> tuple[list[Path], list[Path]]:
    locks, others = [], []
    for p in (repo / ".git").rglob("*"):
        if "objects" in p.parts or not p.is_file() or p.name == "index.lock":
            continue
        if p.name.endswith(".lock"):
            locks.append(p)
        elif p.name.endswith(".new") or ".temp." in p.name:
            others.append(p)
    return locks, others


def run_armed_child(at: int, commit) -> int:
    """Fork; the child runs ``commit()`` armed (engines/crashpoint.py) to die at step ``at`` and exits 0
    when it returned, 3 when it raised. Returns the child's wait status."""
    from refscope.backend.engines import crashpoint

    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            crashpoint.arm(at=at)
            commit()
            code = 0
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return status


@contextmanager
def concurrent_git(repo: Path):
    """Three GitWorkers (churning, creating, packing) running in ``repo`` for the ``with`` block; stopped
    and joined at its end. Yields the workers (their runs, failures and the names they made)."""
    workers = [GitWorker(repo, "churn", "a"), GitWorker(repo, "create", "c"), GitWorker(repo, "pack", "p")]
    for w in workers:
        w.start()
    try:
        yield workers
    finally:
        for w in workers:
            w.stop.set()
        for w in workers:
            w.join(timeout=30)


def crash_source(root: Path, fmt: str) -> Path:
    """The repository the crash tests kill commits in (``root/repo``): eight branches, and in reftable
    a small stack so that the commit's auto-compaction has work to do (and steps to be killed at)."""
    src = build_repo(root / "repo", fmt, "sha1", worktree=False, n_branches=8)
    if fmt == "reftable":
        git(src, "update-ref", "refs/heads/extra-1", "HEAD")
        git(src, "update-ref", "refs/heads/extra-2", "HEAD")
    return src


# how long a concurrency test lets its git workers and transactions race before it stops them
DEADLINE_S = 20.0


def identity_repo(tmp_path: Path, monkeypatch, fmt: str) -> Path:
    """A repository of ``fmt`` under ``tmp_path``, git's identity fixed for the test (its reflogs)."""
    from tests.support.git import use_git_identity

    use_git_identity(monkeypatch)
    return init_repo(tmp_path / "repo", fmt=fmt)


def until_deadline(n: int):
    """``range(n)``, cut off once DEADLINE_S has passed since the first step: a race's rounds."""
    t0 = time.monotonic()
    for i in range(n):
        if time.monotonic() - t0 > DEADLINE_S:
            return
        yield i


def terminate_when_paused(proc) -> int:
    """SIGTERM ``proc`` once it has stopped itself (``REFSCOPE_CRASH_PAUSE``: SIGSTOP at a chosen step),
    then let it run to meet the signal: its exit status."""
    import signal
    import time

    for _ in range(2000):  # until it has stopped itself at its step
        with open(f"/proc/{proc.pid}/stat") as f:
            if f.read().split(") ", 1)[1].startswith("T"):
                break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    return proc.wait()
