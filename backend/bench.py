"""The same deletion transaction through every engine, on scratch copies of the ref storage, side by side.

Why: the two mailing-list threads behind refscope measured git's ref writes by hand with hyperfine; this does
it with the meter's kernel counts, and puts refscope's native engine next to git (and any other git binary,
e.g. one built with the packed-refs patch) in one table.

It never touches the real repository: each run gets a fresh scratch git dir holding a copy of the ref storage
only (HEAD, config, packed-refs, refs/, logs/, reftable/), with ``objects/info/alternates`` pointing at the
real object store (read-only, and deletions never need objects). Runs alternate between the engines (the
order rotates every round) so drift in the machine's state hits them all alike.

Rows: ``native`` is the commit (first lock to last unlink, snapshot already open: what the TUI pays);
``native+snapshot`` adds opening the snapshot and checking the packed-refs it will rewrite; each ``git`` row is the whole ``git update-ref --stdin``
process, counted with its child (the git engine's own figure).
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


class BenchResult(NamedTuple):
    repo: str  # the real repository's common dir
    ref_storage: str
    refs_total: int | None  # number of refs in the repository (None if not counted)
    deletions: list[tuple[bytes, bytes | None]]
    runs: int
    source: str  # the meter's source for native rows (git rows say theirs in each report)
    rows: list[EngineResult]


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
    # the commit and what follows it in the same transaction (reftable auto-compaction), as git's figure has;
    # what precedes it (snapshot, the packed-refs check) is the snapshot's cost, in native+snapshot
    after = res.phases[res.phases.index(res.report) :]
    commit = res.report if len(after) == 1 else _sum_reports("native", after)
    return commit, _sum_reports("native+snapshot", res.phases)


def _run_git(gitdir: str, deletions, git: str) -> OpReport:
    """The git engine's report (the whole ``git update-ref --stdin`` process) with ``git`` as the binary."""
    from .repo import discover
    from .store import open_store
    from .txn import Transaction

    store = open_store(discover(gitdir, env=_git_env()))
    t = Transaction(store, engine="git", allow_checked_out=True)
    for name, old in deletions:
        t.delete(name, old)
    from .engines.git import git_binary

    if git == git_binary():
        return t.commit().report
    # another git binary: the engine takes it from the environment (the CLI is single-threaded here)
    saved = os.environ.get("REFSCOPE_GIT")
    os.environ["REFSCOPE_GIT"] = git
    try:
        return t.commit().report
    finally:
        if saved is None:
            del os.environ["REFSCOPE_GIT"]
        else:
            os.environ["REFSCOPE_GIT"] = saved


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
) -> BenchResult:
    """Run the transaction ``runs`` times per engine, alternating; ``gits[0]`` is the reference git."""
    from . import meter
    from .errors import TransactionRefused

    versions = [git_version(g) for g in gits]  # a path that is no git is refused before any work
    deletions = resolve_deletions(repo, deletions)
    refs_total = None
    if count_refs:
        from .store import open_store

        refs_total = len(open_store(repo).snapshot())
    labels = []
    for g, v in zip(gits, versions, strict=True):
        label = f"git {v}"
        if versions.count(v) > 1 or labels.count(label):
            label += f" ({g})"
        labels.append(label)
    native: list[OpReport] = []
    native_open: list[OpReport] = []
    git_reports: list[list[OpReport]] = [[] for _ in gits]
    jobs = ["native", *range(len(gits))]
    root = tempfile.mkdtemp(prefix="refscope-bench-", dir=scratch_root)
    try:
        template = make_template(repo, os.path.join(root, "template"), gits[0])
        n = 0
        for r in range(runs):
            k = r % len(jobs)
            for job in jobs[k:] + jobs[:k]:
                n += 1
                gitdir = scratch_copy(template, os.path.join(root, f"run{n}"))
                if job == "native":
                    commit, whole = _run_native(gitdir, deletions)
                    native.append(commit)
                    native_open.append(whole)
                else:
                    try:
                        git_reports[job].append(_run_git(gitdir, deletions, gits[job]))
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
    return BenchResult(repo.commondir, repo.ref_storage, refs_total, deletions, runs, meter.status()[0], rows)


# ---------------------------------------------------------------------------------------------------------
# Summaries and the table


def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if not n:
        return 0.0
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


class RowSummary(NamedTuple):
    label: str
    runs: int
    wall_median: float
    wall_min: float
    wall_max: float
    cpu_median: float
    cpu_min: float
    cpu_max: float
    syscalls_median: float
    by_name_median: dict[str, float]  # every kind, median over the runs, largest first
    source: str
    wall_ratio: float | None  # to the reference git's median wall
    cpu_ratio: float | None
    syscalls_ratio: float | None


def summarize(result: BenchResult) -> list[RowSummary]:
    """Medians and spreads per row, and each row's ratio to the reference git (the first git row)."""
    base = next((r for r in result.rows if r.engine == "git"), None)
    bw = _median([x.wall_ms for x in base.reports]) if base else 0.0
    bc = _median([x.cpu_ms for x in base.reports]) if base else 0.0
    bs = _median([x.syscalls_total for x in base.reports]) if base else 0.0
    out = []
    for row in result.rows:
        reps = row.reports
        wall = [x.wall_ms for x in reps]
        cpu = [x.cpu_ms for x in reps]
        kinds = sorted({k for x in reps for k in x.syscalls_by_name})
        by = {k: _median([x.syscalls_by_name.get(k, 0) for x in reps]) for k in kinds}
        by = dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0])))
        by = {k: v for k, v in by.items() if v}
        sys_med = _median([x.syscalls_total for x in reps])
        out.append(
            RowSummary(
                row.label,
                len(reps),
                _median(wall),
                min(wall, default=0.0),
                max(wall, default=0.0),
                _median(cpu),
                min(cpu, default=0.0),
                max(cpu, default=0.0),
                sys_med,
                by,
                "+".join(sorted({x.source for x in reps})),
                _median(wall) / bw if bw else None,
                _median(cpu) / bc if bc else None,
                sys_med / bs if bs else None,
            )
        )
    return out


def _num(v: float) -> str:
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def _ms(v: float) -> str:
    return f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def format_table(result: BenchResult, top: int = 5) -> str:
    """The one table ``refscope bench`` prints (plain text, aligned columns)."""
    return "\n".join(format_lines(result, top))


def format_lines(result: BenchResult, top: int = 5) -> list:
    """The table's lines as ``display.Shown`` (names and paths through the display function)."""
    from .display import join, line, path_text

    rows = summarize(result)
    names = join(", ", [n for n, _ in result.deletions[:3]])
    if len(result.deletions) > 3:
        names += f", ... ({len(result.deletions)} refs)"
    refs = f", {result.refs_total} refs" if result.refs_total is not None else ""
    by_source: dict[str, list[str]] = {}
    for row, s in zip(result.rows, rows, strict=True):
        kinds = by_source.setdefault(s.source or result.source, [])
        if row.engine not in kinds:
            kinds.append(row.engine)
    if len(by_source) == 1:
        counted = next(iter(by_source))
    else:
        counted = ", ".join(f"{src} ({'/'.join(kinds)})" for src, kinds in by_source.items())
    head = [
        line("refscope bench: delete ", names),
        line(
            "  in ", path_text(result.repo), f" ({result.ref_storage}{refs}); {result.runs} runs per engine,",
            " alternating; syscalls counted by ", counted,
        ),
    ]  # fmt: skip
    cols = ["engine", "wall ms median [min-max]", "cpu ms median [min-max]", "syscalls", "top kinds"]
    cols += ["wall/git", "cpu/git", "sys/git"]
    table = [cols]
    for r in rows:
        kinds = ", ".join(f"{k} {_num(v)}" for k, v in list(r.by_name_median.items())[:top])
        table.append(
            [
                r.label,
                f"{_ms(r.wall_median)} [{_ms(r.wall_min)}-{_ms(r.wall_max)}]",
                f"{_ms(r.cpu_median)} [{_ms(r.cpu_min)}-{_ms(r.cpu_max)}]",
                _num(r.syscalls_median),
                kinds,
                _ratio(r.wall_ratio),
                _ratio(r.cpu_ratio),
                _ratio(r.syscalls_ratio),
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    right = {1, 2, 3, 5, 6, 7}
    lines = head
    for row in table:
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(line("  ".join(cells).rstrip()))
    return lines


def result_json(result: BenchResult) -> dict:
    """The same figures as the table, for ``--json`` (names stay bytes: ``display.to_json`` encodes them)."""
    return {
        "repo": result.repo,
        "ref_storage": result.ref_storage,
        "refs_total": result.refs_total,
        "deletions": [{"name": n, "old": o} for n, o in result.deletions],
        "runs": result.runs,
        "source": result.source,
        "engines": [
            {
                "label": s.label,
                "engine": row.engine,
                "git": row.git,
                "runs": s.runs,
                "wall_ms": {"median": s.wall_median, "min": s.wall_min, "max": s.wall_max},
                "cpu_ms": {"median": s.cpu_median, "min": s.cpu_min, "max": s.cpu_max},
                "syscalls": {"median": s.syscalls_median, "by_name": s.by_name_median, "source": s.source},
                "ratio_to_git": {"wall": s.wall_ratio, "cpu": s.cpu_ratio, "syscalls": s.syscalls_ratio},
                "reports": [x.to_json() for x in row.reports],
            }
            for s, row in zip(summarize(result), result.rows, strict=True)
        ],
    }
