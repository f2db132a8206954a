"""Signals during a 10k-ref ``refscope delete --stdin``: every lock and temp file is released, the process dies
by the signal, and the transaction is all or nothing.

The delete runs armed with ``REFSCOPE_CRASH_PAUSE=k`` (engines/crashpoint.py): it stops itself just before its
k-th on-disk step; the test sends the signal, then SIGCONT, so the signal lands at exactly that step. Before
the commit point (files: the first step of the finish; reftable: the rename of tables.list) nothing may have
changed; from it on the transaction completes first (lockfile.py, "Signals"). Either way: no ``.lock``, no
``packed-refs.new``, no temp or unlisted table, ``git refs verify`` clean, and the wait status says killed by
that signal, as git's own handlers re-raise it. SIGKILL, which nothing can catch, leaves the locks git would
leave, and ``refscope verify`` reports every one of them.

Also: ``--engine git`` (the signal reaches git, whose handlers remove its locks, and refscope waits for it),
the TUI (its commit runs in a worker thread, the handlers in the main thread under Textual's event loop), and
the registry itself (empty after every outcome, so no signal can remove a published file).

The 10k-ref repositories are built (and the delete traced) once per module; each case runs on a copy, and a
case that changed nothing hands its copy to the next. (Hard-linked copies would be cheaper to make, but
creating files beside 10k hard-linked ones made every ``openat`` ten times slower here.)
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.git import ROOT, copy_repo, create_refs, for_each_ref, git, git_binary, git_env, init_repo

N = 10_000
NAMES = [b"refs/heads/k%05d" % i for i in range(N)]
STDIN = b"".join(n + b"\n" for n in NAMES)


# -- the bases -------------------------------------------------------------------------------------------
def _build(path: Path, kind: str, names: list[bytes]) -> Path:
    repo = init_repo(path, fmt="reftable" if kind == "reftable" else "files")
    if kind == "loose":  # no reflogs: half the files to copy per case (the packed base keeps them)
        git(repo, "config", "core.logAllRefUpdates", "false")
    create_refs(repo, names)
    if kind == "packed":
        git(repo, "pack-refs", "--all")
        # a tenth of them loose again over their packed records (at another commit: git writes no loose file
        # for an unchanged value): the finish unlinks loose files too
        other = git(repo, "commit-tree", "-p", "HEAD", "-m", "second", "HEAD^{tree}").strip()
        git(
            repo, "update-ref", "--stdin", input=b"".join(b"update %s %s\n" % (n, other) for n in names[::10])
        )
    if kind == "reftable":
        # two small tables on top, written without compaction: the commit's auto-compaction has work to do
        # (and steps to stop at)
        for extra in ("refs/heads/extra-1", "refs/heads/extra-2"):
            subprocess.run(
                [git_binary(), "update-ref", extra, "HEAD"],
                cwd=repo,
                env={**git_env(), "GIT_TEST_REFTABLE_AUTOCOMPACTION": "false"},
                check=True,
            )
    return repo


def _run_delete(repo: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "refscope.app.cli", "delete", "-C", str(repo), "--stdin", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),  # SIGQUIT: no core file
    )


def _steps(base: Path, tmp: Path, stdin: bytes, after: list) -> list[str]:
    """The labels of every step of the delete, traced once on a copy."""
    repo = copy_repo(base, tmp / "traced")
    trace = tmp / "trace.txt"
    proc = _run_delete(repo, {**git_env(), "REFSCOPE_CRASH_TRACE": str(trace)})
    _out, err = proc.communicate(stdin)
    assert proc.returncode == 0, err
    assert for_each_ref(repo) == after
    return [line.split(" ", 1)[1] for line in trace.read_text().splitlines()]


class Base:
    """A 10k-ref repository, its refs before and after the delete, the steps of the delete and where its
    commit point is (the first step whose action is never undone)."""

    def __init__(self, kind: str, root: Path, names: list[bytes] = NAMES) -> None:
        self.kind = kind
        self.root = root
        self.pool: list[Path] = []
        self.copies = 0
        self.repo = _build(root / kind, kind, names)
        self.before = for_each_ref(self.repo)
        gone = set(names)
        self.after = [r for r in self.before if r[0] not in gone]
        (root / f"{kind}-trace").mkdir()
        self.steps = _steps(self.repo, root / f"{kind}-trace", b"".join(n + b"\n" for n in names), self.after)
        if kind == "reftable":
            self.commit_at = self.steps.index("rename tables.list") + 2  # after that step's action
        else:
            self.commit_at = 1 + next(
                i for i, s in enumerate(self.steps) if s.startswith(("unlink reflog ", "reflog "))
            )

    def checkout(self, tmp: Path) -> Path:
        """A copy of the base to run one case on: one handed back clean by an earlier case, or a new one."""
        if self.pool:
            return self.pool.pop()
        self.copies += 1
        return copy_repo(self.repo, tmp / f"{self.kind}-copy-{self.copies}")

    def checkin(self, repo: Path) -> None:
        """A case left ``repo`` with the base's refs and no leftovers: the next case may start from it."""
        self.pool.append(repo)

    def step(self, label: str, nth: int = 0) -> int:
        """The 1-based number of the ``nth`` step whose label is ``label`` or starts with ``label``."""
        hits = [i + 1 for i, s in enumerate(self.steps) if s == label or s.startswith(label)]
        return hits[nth]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("signals")
    made: dict[str, Base] = {}

    def get(kind: str) -> Base:
        if kind not in made:
            made[kind] = Base(kind, root)
        return made[kind]

    return get


# -- the points --------------------------------------------------------------------------------------------
# (label, nth) of the steps to stop at: SIGTERM at every one
POINTS = {
    "loose": [
        ("lock refs/", 0),
        ("lock refs/", N // 2),
        ("unlink reflog ", 0),  # the commit point: the finish begins
        ("unlink refs/", N // 2),
    ],
    "packed": [
        ("lock refs/", N // 2),
        ("lock packed-refs", 0),
        ("create packed-refs.new", 0),
        ("write packed-refs.new", 0),  # the last step before the commit point
        ("unlink reflog ", N // 2),
        ("rename packed-refs.new", 0),
    ],
    "reftable": [
        ("lock tables.list", 0),
        ("create table temp", 0),
        ("rename table", 0),
        ("rename tables.list", 0),  # the commit point is this step's action
        ("compaction: write temp", 0),
        ("compaction: rename tables.list", 0),
        ("compaction: unlink", 0),
    ],
}
# the other signals: each at one point before the commit point and one after
PAIRS = {
    "loose": (("lock refs/", N // 2), ("unlink refs/", N // 2)),
    "packed": (("write packed-refs.new", 0), ("rename packed-refs.new", 0)),
    "reftable": (("write table", 0), ("compaction: write temp", 0)),
}
OTHERS = {"loose": ("SIGQUIT", "SIGUSR1"), "packed": ("SIGHUP", "SIGINT", "SIGPIPE"), "reftable": ("SIGHUP", "SIGINT", "SIGPIPE")}  # fmt: skip
CASES = [(k, "SIGTERM", label, nth) for k, pts in POINTS.items() for label, nth in pts] + [
    (k, sig, *point) for k, pair in PAIRS.items() for sig in OTHERS[k] for point in pair
]


def _leftovers(repo: Path) -> list[str]:
    """Lock files, packed-refs.new, temp tables and tables not listed in tables.list."""
    out = []
    gitdir = repo / ".git"
    for d, dirs, files in os.walk(gitdir):
        if d == str(gitdir):
            dirs[:] = [x for x in dirs if x != "objects"]
        for f in files:
            if f.endswith(".lock") or f.endswith(".new") or ".temp." in f:
                out.append(os.path.join(d, f))
    rdir = gitdir / "reftable"
    if rdir.is_dir():
        listed = set((rdir / "tables.list").read_text().split())
        out += [str(rdir / f) for f in os.listdir(rdir) if f.endswith(".ref") and f not in listed]
    return sorted(out)


def _deliver(repo: Path, at: int, sig: int) -> tuple[int, bytes]:
    """Run the delete stopped at step ``at``; deliver ``sig`` there. Returns (wait status, stderr)."""
    proc = _run_delete(repo, {**git_env(), "REFSCOPE_CRASH_PAUSE": str(at)})
    proc.stdin.write(STDIN)
    proc.stdin.close()
    _pid, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status
    os.kill(proc.pid, sig)  # pending while stopped: delivered at the step, before its action
    os.kill(proc.pid, signal.SIGCONT)
    _pid, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0  # reaped here
    err = proc.stderr.read()
    proc.stderr.close()
    return status, err


@pytest.mark.parametrize(("kind", "signame", "label", "nth"), CASES)
def test_signal_releases_every_lock(
    bases, tmp_path: Path, kind: str, signame: str, label: str, nth: int
) -> None:
    base = bases(kind)
    sig = getattr(signal, signame)
    at = base.step(label, nth)
    repo = base.checkout(base.root)
    status, err = _deliver(repo, at, sig)
    where = (kind, signame, at, base.steps[at - 1])
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == sig, (where, status, err)
    assert _leftovers(repo) == [], where
    git(repo, "refs", "verify")
    committed = at >= base.commit_at
    assert for_each_ref(repo) == (base.after if committed else base.before), where
    if not committed:
        base.checkin(repo)  # nothing changed: the next case can run on it (a copy costs 20k files)


def test_points_straddle_the_commit_point(bases) -> None:
    """The cases above cover both sides of each format's commit point (a test that cannot fail is none)."""
    for kind, pair in PAIRS.items():
        base = bases(kind)
        before, after = (base.step(*p) for p in pair)
        assert before < base.commit_at <= after, (kind, before, base.commit_at, after)


# -- SIGKILL ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["loose", "reftable"])
def test_sigkill_leaves_git_s_leftovers_and_verify_reports_them(bases, tmp_path: Path, kind: str) -> None:
    base = bases(kind)
    at = base.step("lock refs/", N // 2) if kind == "loose" else base.step("write tables.list.lock")
    repo = copy_repo(base.repo, tmp_path / "r")
    proc = _run_delete(repo, {**git_env(), "REFSCOPE_CRASH_AT": str(at)})
    proc.communicate(STDIN)
    assert proc.returncode == -signal.SIGKILL
    left = _leftovers(repo)
    locks = [p for p in left if p.endswith(".lock")]
    # what git leaves when killed there: every lock taken so far (and reftable's written temp table)
    assert len(locks) == (N // 2 if kind == "loose" else 1), len(locks)
    assert for_each_ref(repo) == base.before
    out = subprocess.run(
        [sys.executable, "-m", "refscope.app.cli", "verify", "-C", str(repo), "--json"],
        capture_output=True,
        env=git_env(),
    )
    reported = {
        json.loads(line)["file"] for line in out.stdout.splitlines() if b"lock file left behind" in line
    }
    assert {os.path.realpath(p) for p in locks} <= {os.path.realpath(p) for p in reported}


# -- the git engine ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["loose", "packed"])
def test_signal_reaches_the_git_child(bases, tmp_path: Path, kind: str) -> None:
    """``--engine git``: git holds the locks. SIGTERM to refscope alone (not its process group) is passed
    to git, whose handlers remove its locks; refscope waits for it, then dies by the signal."""
    base = bases(kind)
    repo = copy_repo(base.repo, tmp_path / "r")
    first = repo / ".git" / "refs" / "heads" / "k00000.lock"  # git locks in name order, 10k in all
    proc = _run_delete(repo, git_env(), "--engine", "git")
    proc.stdin.write(STDIN)
    proc.stdin.close()
    deadline = time.monotonic() + 60
    while not first.exists():  # git has begun to lock: deliver the signal now
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.001)  # (leave the cores to git)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait() == -signal.SIGTERM
    proc.stderr.close()
    assert not _git_children(repo), "git outlived refscope"
    # git's handlers remove every lock on its list; a lock whose open() had returned but was not yet on the
    # list when the signal came stays (git's own window, in create_tempfile; git alone, killed the same way,
    # leaves one in most runs)
    assert len(_leftovers(repo)) <= 1, _leftovers(repo)
    for p in _leftovers(repo):
        os.unlink(p)
    git(repo, "refs", "verify")
    assert for_each_ref(repo) == base.before  # git was still taking its locks


def _git_children(repo: Path) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"update-ref" in cmd and os.fsencode(str(repo)) in cmd:
                found.append(int(pid))
    return found


# -- the TUI ---------------------------------------------------------------------------------------------
TUI_SCRIPT = """
import asyncio, sys
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.screens.dialogs import ConfirmCommit
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from tests.support.tui import set_filter, wait_for

async def main():
    repo = discover(sys.argv[1])
    app = RefscopeApp(open_store(repo), repo=repo, repo_path=sys.argv[1], meter=FakeMeter(), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await set_filter(pilot, app, "refs/heads/k")
        await pilot.press("a")
        await wait_for(pilot, lambda: len(app.queue) == int(sys.argv[2]))
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("y")
        await asyncio.sleep(60)  # the commit worker stops the process at its step; the signal ends it

asyncio.run(main())
"""


@pytest.mark.parametrize("kind", ["packed", "reftable"])
@pytest.mark.parametrize("phase", [0, 1])
def test_signal_during_a_tui_commit(tmp_path: Path, kind: str, phase: int) -> None:
    """The TUI commits in a worker thread under Textual's event loop; handlers run in the main thread. A
    SIGTERM at a step of the worker's commit releases its locks (before the commit point) or lets it
    complete (after), and the TUI dies by the signal."""
    n = 300
    base = Base(kind, tmp_path, [b"refs/heads/k%03d" % i for i in range(n)])
    pair = {
        "packed": (("lock refs/", n // 2), ("unlink reflog ", n // 2)),
        "reftable": (("write table", 0), ("compaction: write temp", 0)),
    }[kind]
    at = base.step(*pair[phase])
    assert (at >= base.commit_at) == bool(phase)
    repo = copy_repo(base.repo, tmp_path / "r")
    env = {**git_env(), "REFSCOPE_CRASH_PAUSE": str(at), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", TUI_SCRIPT, str(repo), str(n)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _pid, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), (status, proc.stderr.read())
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    _pid, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, (status, proc.stderr.read())
    proc.stderr.close()
    assert _leftovers(repo) == []
    git(repo, "refs", "verify")
    if phase:
        assert for_each_ref(repo) == base.after
    else:
        # The handler runs in the main thread, the commit in the worker, which resumes with SIGCONT at once:
        # on a quiet machine the handler comes first even for a 300-ref table, but on a loaded one (a
        # fresh-clone CI run beside benchmarks) the worker took the 150 locks left, and committed, before
        # the main thread ran it. All or nothing either way; the CLI's signal tests, where the commit runs
        # in the main thread, hold the release before the commit point exactly.
        assert for_each_ref(repo) in (base.before, base.after)


# -- the registry ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["native", "git"])
def test_registry_is_empty_after_every_outcome(tmp_path: Path, ref_format: str, engine: str) -> None:
    """What a signal would remove is exactly what is live: nothing once a transaction has committed (a
    published table or packed-refs left on the list would be unlinked by the next signal) or was refused
    (stale value, busy lock); and the handlers are in place once a transaction has run."""
    import _signal

    from refscope.backend import lockfile
    from refscope.backend.errors import LockBusy, StaleValue

    from tests.support.txn import build_repo, open_txn_store

    repo = build_repo(tmp_path / "r", ref_format, "sha1", worktree=False)
    zero_ish = b"1" * 40

    def txn():
        from refscope.backend.txn import Transaction

        return Transaction(open_txn_store(repo), engine, allow_checked_out=True)

    t = txn()
    t.delete(b"refs/heads/p02", zero_ish)
    with pytest.raises(StaleValue):
        t.commit()
    assert lockfile.live_paths() == []
    lock = repo / ".git" / ("refs/heads/p03.lock" if ref_format == "files" else "reftable/tables.list.lock")
    lock.write_bytes(b"")
    t = txn()
    t.delete(b"refs/heads/p03")
    with pytest.raises(LockBusy):
        t.commit()
    lock.unlink()
    assert lockfile.live_paths() == []
    t = txn()
    for name in (b"refs/heads/p03", b"refs/heads/l02", b"refs/heads/nested/dir/n1", b"refs/tags/v1"):
        t.delete(name)
    assert t.commit().committed
    assert lockfile.live_paths() == []
    assert _signal.getsignal(signal.SIGTERM) is lockfile._on_signal
    assert _signal.getsignal(signal.SIGHUP) is lockfile._on_signal
