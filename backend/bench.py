"""The same transaction through every engine, on scratch copies of the ref storage, side by side.

Why: the two mailing-list threads behind refscope measured git's ref writes by hand with hyperfine; this does
it with the meter's kernel counts, and puts refscope's native engine next to git (and any other git binary,
e.g. one built with the packed-refs patch) in one table.

It never touches the real repository: each run gets a fresh scratch git dir holding a copy of the ref storage
only (HEAD, config, packed-refs, refs/, logs/, reftable/), with ``objects/info/alternates`` pointing at the
real object store (read-only: deletions never need objects, updates only read the ones they point at). Runs
alternate between the engines (the order rotates every round) so drift in the machine's state hits them all
alike. Two kinds: ``run_bench`` deletes refs (``Transaction``); ``run_update_bench`` commits any mix of
``update-ref --stdin`` commands (``UpdateTransaction``), with warmup runs and a refusal per row rather than
for the whole bench (a git that cannot do what the transaction asks is a finding, not an error).

Rows: ``native`` is the commit (first lock to last unlink, snapshot already open: what the TUI pays);
``native+snapshot`` adds opening the snapshot and what precedes the lock (checking the packed-refs a deletion
rewrites; an update's object checks and plan); each ``git`` row is the whole ``git update-ref --stdin``
process, counted with its child: for a deletion the git engine's own figure (its input fed through a pipe),
for an update ``git update-ref --stdin -z <input`` with the input in a file, as hyperfine ran the seed's
command (so the row is git's process, not also the bench writing to it). The summaries and tables are
``benchtable``'s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import NamedTuple

from .meter import OpReport


class EngineResult(NamedTuple):
    label: str  # "native", "native+snapshot", "git 2.55.0", ...
    engine: str  # "native" or "git"
    git: str | None  # the git binary of a git row
    reports: list[OpReport]
    refused: str | None = None  # an update bench's row whose engine refused the transaction: its one line


class BenchResult(NamedTuple):
    repo: str  # the real repository's common dir
    ref_storage: str
    refs_total: int | None  # number of refs in the repository (None if not counted)
    deletions: list[tuple[bytes, bytes | None]]
    runs: int
    source: str  # the meter's source for native rows (git rows say theirs in each report)
    rows: list[EngineResult]
    kind: str = "delete"  # or "update" (run_update_bench)
    commands: tuple = ()  # an update bench's ``update.commands.Command`` records (deletions: empty)
    warmup: int = 0  # runs of each engine before the measured ones (not in ``reports``)
    message: bytes = b""  # an update bench's reflog message (-m)


# ---------------------------------------------------------------------------------------------------------
# Scratch copies


_STORAGE_FILES = ("HEAD", "packed-refs", "ORIG_HEAD", "FETCH_HEAD")
_STORAGE_DIRS = ("refs", "logs", "reftable")


def make_template(repo, dest: str, git: str) -> str:
    """A minimal bare git dir at ``dest`` with a copy of ``repo``'s ref storage (see the module docstring).

    Only reads the real repository. The config is copied, then made bare (``core.bare``, no ``core.worktree``)
    so the copy stands on its own; objects come from the real store through alternates.
    """
    src = repo.commondir
    os.makedirs(dest)
    for name in _STORAGE_FILES:
        p = os.path.join(src, name)
        if os.path.isfile(p):
            shutil.copy2(p, os.path.join(dest, name))
    for name in _STORAGE_DIRS:
        p = os.path.join(src, name)
        if os.path.isdir(p):
            shutil.copytree(p, os.path.join(dest, name), symlinks=True)
    os.makedirs(os.path.join(dest, "refs"), exist_ok=True)
    shutil.copy2(os.path.join(src, "config"), os.path.join(dest, "config"))
    cfg = os.path.join(dest, "config")
    env = _git_env()
    subprocess.run([git, "config", "--file", cfg, "core.bare", "true"], check=True, env=env)
    subprocess.run([git, "config", "--file", cfg, "--unset-all", "core.worktree"], env=env)
    os.makedirs(os.path.join(dest, "objects", "info"))
    with open(os.path.join(dest, "objects", "info", "alternates"), "wb") as f:  # a path is bytes
        f.write(os.fsencode(os.path.join(os.path.abspath(src), "objects")) + b"\n")
    return dest


def scratch_copy(template: str, dest: str) -> str:
    """A fresh copy of the template for one run (its files are byte copies; nothing is shared)."""
    shutil.copytree(template, dest, symlinks=True)
    return dest


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    return env


def git_version(git: str) -> str:
    """The version ``git`` reports. A path that cannot be run, or a program that does not answer
    ``version`` as git does ("git version X"), is refused with one line before anything is copied."""
    from .errors import RefscopeError

    try:
        proc = subprocess.run([git, "version"], capture_output=True, env=_git_env(), timeout=60)
    except OSError as err:
        raise RefscopeError(git, f"cannot run: {err.strerror or err}") from None
    except subprocess.TimeoutExpired:
        raise RefscopeError(git, "not a git: 'version' did not answer within 60 s") from None
    out = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not out.startswith("git version "):
        raise RefscopeError(git, "not a git: 'version' did not print 'git version ...'")
    return out.removeprefix("git version ")


# ---------------------------------------------------------------------------------------------------------
# Running


def _run_native(gitdir: str, deletions) -> tuple[OpReport, OpReport]:
    """(commit report, snapshot+commit report) of a native transaction on the scratch copy."""
    from .repo import discover
    from .store import open_store
    from .txn import Transaction

    store = open_store(discover(gitdir, env=_git_env()))
    t = Transaction(store, engine="native", allow_checked_out=True)
    for name, old in deletions:
        t.delete(name, old)
    res = t.commit()
    return _native_rows(res.phases, res.report)


def _run_git(gitdir: str, deletions, git: str) -> OpReport:
    """The git engine's report (the whole ``git update-ref --stdin`` process) with ``git`` as the binary."""
    from .repo import discover
    from .store import open_store
    from .txn import Transaction

    store = open_store(discover(gitdir, env=_git_env()))
    t = Transaction(store, engine="git", allow_checked_out=True)
    for name, old in deletions:
        t.delete(name, old)
    with _git_as(git):
        return t.commit().report


class _git_as:
    """``with _git_as(path):`` the git engine runs ``path`` (it takes its binary from the environment; the
    bench runs one transaction at a time, on one thread)."""

    def __init__(self, git: str) -> None:
        self.git = git
        self.saved: str | None = None

    def __enter__(self) -> None:
        self.saved = os.environ.get("REFSCOPE_GIT")
        os.environ["REFSCOPE_GIT"] = self.git

    def __exit__(self, *exc) -> None:
        if self.saved is None:
            os.environ.pop("REFSCOPE_GIT", None)
        else:
            os.environ["REFSCOPE_GIT"] = self.saved


def _run_native_update(gitdir: str, commands, message: bytes):
    """One native ``UpdateTransaction`` on the scratch copy: its UpdateResult (a refusal raises, as the
    transaction's own)."""
    from .repo import discover
    from .store import open_store
    from .update.txn import UpdateTransaction

    store = open_store(discover(gitdir, env=_git_env()))
    # git update-ref deletes a checked-out branch; so does the bench
    t = UpdateTransaction(store, "native", message=message, allow_checked_out=True)
    t.queue(commands)
    return t.commit()


def _run_git_update(gitdir: str, git: str, input_path: str, message: bytes) -> OpReport:
    """``git update-ref [-m MSG] --stdin -z <input`` in the scratch copy, as hyperfine runs the seed's command:
    the input from a file, not a pipe the bench feeds, so the report is git's process (counted with its
    children) and not also this process writing the input to it. git's refusal raises, in git's words."""
    import subprocess

    from .engines.git import map_error
    from .meter import child_argv, measure

    argv = [git, "--git-dir=" + gitdir, "update-ref"]
    if message:
        argv += ["-m", os.fsdecode(message)]
    argv += ["--stdin", "-z"]
    env = dict(os.environ)  # the committer's identity and date as the caller set them, for both engines
    env.pop("GIT_DIR", None)
    env.pop("GIT_COMMON_DIR", None)
    with open(input_path, "rb") as stdin, measure("commit", children=True) as m:
        proc = subprocess.run(
            child_argv(argv),
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=gitdir,
        )
    if proc.returncode != 0:
        raise map_error(proc.stderr, gitdir)
    return m.report


def _native_rows(phases: list[OpReport], commit: OpReport) -> tuple[OpReport, OpReport]:
    """(the commit and what follows it in the same transaction -- reftable auto-compaction, as git's figure
    has --, every phase): the ``native`` and ``native+snapshot`` rows of one run. What precedes the commit
    (the snapshot, checks, the plan) is the transaction's cost before the lock, in native+snapshot."""
    after = phases[phases.index(commit) :]
    return (commit if len(after) == 1 else _sum_reports("native", after)), _sum_reports(
        "native+snapshot", phases
    )


def _sum_reports(name: str, reports: list[OpReport]) -> OpReport:
    by: dict[str, int] = {}
    for r in reports:
        for k, v in r.syscalls_by_name.items():
            by[k] = by.get(k, 0) + v
    return OpReport(
        name,
        sum(r.wall_ms for r in reports),
        sum(r.cpu_ms for r in reports),
        sum(r.syscalls_total for r in reports),
        by,
        sum(r.bytes_read for r in reports),
        sum(r.bytes_written for r in reports),
        "+".join(sorted({r.source for r in reports})),
        any(r.children for r in reports),
    )


def git_labels(gits: list[str], versions: list[str]) -> list[str]:
    """Each git row's label: ``git <version>``, with the binary's path when two gits share a version."""
    labels: list[str] = []
    for g, v in zip(gits, versions, strict=True):
        label = f"git {v}"
        if versions.count(v) > 1 or labels.count(label):
            label += f" ({g})"
        labels.append(label)
    return labels


def resolve_deletions(repo, names: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
    """Fill in each missing old value from the real repository's current snapshot (read only)."""
    from .errors import TransactionRefused
    from .store import open_store

    snap = open_store(repo).snapshot()
    out = []
    for name, old in names:
        if old is None:
            ref = snap.lookup(name)
            if ref is None:
                raise TransactionRefused("bench", f"no such ref '{name.decode('utf-8', 'replace')}'")
            old = ref.oid
        out.append((name, old))
    return out


def run_bench(
    repo,
    deletions: list[tuple[bytes, bytes | None]],
    gits: list[str],
    runs: int = 5,
    scratch_root: str | None = None,
    count_refs: bool = True,
    warmup: int = 0,
) -> BenchResult:
    """Run the transaction ``runs`` times per engine (after ``warmup`` runs each, not kept), alternating;
    ``gits[0]`` is the reference git."""
    from . import meter
    from .errors import TransactionRefused

    versions = [git_version(g) for g in gits]  # a path that is no git is refused before any work
    deletions = resolve_deletions(repo, deletions)
    refs_total = None
    if count_refs:
        from .store import open_store

        refs_total = len(open_store(repo).snapshot())
    labels = git_labels(gits, versions)
    native: list[OpReport] = []
    native_open: list[OpReport] = []
    git_reports: list[list[OpReport]] = [[] for _ in gits]
    jobs = ["native", *range(len(gits))]
    root = tempfile.mkdtemp(prefix="refscope-bench-", dir=scratch_root)
    try:
        template = make_template(repo, os.path.join(root, "template"), gits[0])
        n = 0
        for r in range(warmup + runs):
            k = r % len(jobs)
            for job in jobs[k:] + jobs[:k]:
                n += 1
                gitdir = scratch_copy(template, os.path.join(root, f"run{n}"))
                if job == "native":
                    commit, whole = _run_native(gitdir, deletions)
                    if r >= warmup:
                        native.append(commit)
                        native_open.append(whole)
                else:
                    try:
                        report = _run_git(gitdir, deletions, gits[job])
                        if r >= warmup:
                            git_reports[job].append(report)
                    except TransactionRefused as err:
                        # say which git refused (an old one may not know the repository's format)
                        who = labels[job] if gits[job] in labels[job] else f"{labels[job]} ({gits[job]})"
                        raise TransactionRefused("bench", f"{who}: {err.what}") from None
                shutil.rmtree(gitdir)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        EngineResult("native", "native", None, native),
        EngineResult("native+snapshot", "native", None, native_open),
    ]
    rows += [
        EngineResult(lab, "git", g, reps) for lab, g, reps in zip(labels, gits, git_reports, strict=True)
    ]
    return BenchResult(
        repo.commondir, repo.ref_storage, refs_total, deletions, runs, meter.status()[0], rows, warmup=warmup
    )


def run_update_bench(
    repo,
    commands,
    gits: list[str],
    *,
    runs: int,
    warmup: int = 0,
    scratch_root: str | None = None,
    message: bytes = b"",
    count_refs: bool = True,
) -> BenchResult:
    """Commit ``commands`` (``update.commands.Command`` records, as ``UpdateTransaction.queue`` takes them)
    ``warmup`` + ``runs`` times per engine, each run on a fresh scratch copy, alternating with the order
    rotating every round; only the last ``runs`` are kept. ``gits[0]`` is the reference git (the ratios'
    base). An engine that refuses the transaction is run no more: its rows carry the refusal's one line
    (``EngineResult.refused``) and no reports. ``message``: the reflog message (``-m``)."""
    from . import meter
    from .errors import RefscopeError

    versions = [git_version(g) for g in gits]  # a path that is no git is refused before any work
    commands = tuple(commands)
    refs_total = None
    if count_refs:
        from .store import open_store

        refs_total = len(open_store(repo).snapshot())
    labels = git_labels(gits, versions)
    jobs: list[int | None] = [None, *range(len(gits))]  # None: the native engine; i: gits[i]
    reports: dict[int | None, list[OpReport]] = {job: [] for job in jobs}
    native_whole: list[OpReport] = []
    refused: dict[int | None, str] = {}
    from .update.commands import Command

    renames = sum(type(c) is not Command for c in commands)
    if renames:  # update-ref's language has no rename (refscope's Rename records are git branch -m's)
        for i in range(len(gits)):
            refused[i] = f"git update-ref --stdin has no rename (the transaction renames {renames})"
    root = tempfile.mkdtemp(prefix="refscope-bench-", dir=scratch_root)
    try:
        template = make_template(repo, os.path.join(root, "template"), gits[0])
        input_path = os.path.join(root, "input")
        if not renames:
            from .update.gitfeed import encode

            with open(input_path, "wb") as f:  # written once, read by every git run
                f.write(encode(commands))
        n = 0
        for r in range(warmup + runs):
            k = r % len(jobs)
            for job in jobs[k:] + jobs[:k]:
                if job in refused:
                    continue
                n += 1
                gitdir = scratch_copy(template, os.path.join(root, f"run{n}"))
                try:
                    if job is None:
                        res = _run_native_update(gitdir, commands, message)
                    else:
                        report = _run_git_update(gitdir, gits[job], input_path, message)
                except RefscopeError as err:
                    refused[job] = err.what if err.offset is None else f"{err.what} (at byte {err.offset})"
                    continue
                finally:
                    shutil.rmtree(gitdir, ignore_errors=True)
                if r < warmup:
                    continue
                if job is None:
                    commit, whole = _native_rows(res.phases, res.report)
                    reports[None].append(commit)
                    native_whole.append(whole)
                else:
                    reports[job].append(report)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = [
        EngineResult("native", "native", None, reports[None], refused.get(None)),
        EngineResult("native+snapshot", "native", None, native_whole, refused.get(None)),
    ]
    rows += [
        EngineResult(lab, "git", g, reports[i], refused.get(i))
        for i, (lab, g) in enumerate(zip(labels, gits, strict=True))
    ]
    return BenchResult(
        repo.commondir,
        repo.ref_storage,
        refs_total,
        [],
        runs,
        meter.status()[0],
        rows,
        "update",
        commands,
        warmup,
        message,
    )


# ---------------------------------------------------------------------------------------------------------
# The table (``benchtable`` makes it; this name is what the TUI calls)


def format_table(result: BenchResult, top: int = 5) -> str:
    """The one table ``refscope bench`` prints (plain text, aligned columns)."""
    from .benchtable import format_table as table

    return table(result, top)
