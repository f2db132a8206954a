"""The figures of a ``bench.BenchResult``: summaries per row, the table ``refscope bench`` prints, its JSON.

Apart from ``bench`` (which runs the transactions) because the two kinds of bench show their figures
differently: a deletion bench keeps its original table (medians and [min-max], ratios to the reference git),
an update bench is shown as hyperfine shows a benchmark -- mean +- sigma, min ... max, the median, the runs and
warmup runs -- with hyperfine's summary ("native ran 3.10 +- 0.20 times faster than git 2.55.0"), since the
seed posts it follows were measured with hyperfine; syscalls and CPU come from the meter in both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .bench import BenchResult


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


def _counted_by(result: BenchResult, sources: list[str]) -> str:
    """Which meter source counted which engine's rows, for the header ("perf", "proc (native), strace (git)")."""
    by_source: dict[str, list[str]] = {}
    for row, source in zip(result.rows, sources, strict=True):
        if row.refused is not None and not row.reports:
            continue
        kinds = by_source.setdefault(source or result.source, [])
        if row.engine not in kinds:
            kinds.append(row.engine)
    if len(by_source) <= 1:
        return next(iter(by_source), result.source)
    return ", ".join(f"{src} ({'/'.join(kinds)})" for src, kinds in by_source.items())


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
    if result.kind == "update":
        return update_lines(result, min(top, 4))
    from .display import join, line, path_text

    rows = summarize(result)
    names = join(", ", [n for n, _ in result.deletions[:3]])
    if len(result.deletions) > 3:
        names += f", ... ({len(result.deletions)} refs)"
    refs = f", {result.refs_total} refs" if result.refs_total is not None else ""
    counted = _counted_by(result, [s.source for s in rows])
    head = [
        line("refscope bench: delete ", names),
        line(
            "  in ", path_text(result.repo), f" ({result.ref_storage}{refs}); {result.runs} runs per engine",
            f" after {_count(result.warmup, 'warmup run')}," if result.warmup else ",",
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
    if result.kind == "update":
        return update_json(result)
    return {
        "repo": result.repo,
        "ref_storage": result.ref_storage,
        "refs_total": result.refs_total,
        "deletions": [{"name": n, "old": o} for n, o in result.deletions],
        "runs": result.runs,
        "warmup": result.warmup,
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


# ---------------------------------------------------------------------------------------------------------
# The update bench, hyperfine's way


class Spread(NamedTuple):
    """hyperfine's figures of one quantity over the runs (ms): sigma is the sample standard deviation."""

    mean: float
    stddev: float
    median: float
    min: float
    max: float


def spread(values: list[float]) -> Spread | None:
    if not values:
        return None
    import statistics

    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Spread(statistics.fmean(values), sd, _median(values), min(values), max(values))


class Relative(NamedTuple):
    """A row against the reference git, on means (hyperfine's summary): ``ratio`` = git's mean / the row's
    (above 1: the row is faster), ``stddev`` propagated from both rows' relative spreads."""

    ratio: float
    stddev: float


def relative(row: Spread | None, base: Spread | None) -> Relative | None:
    if row is None or base is None or row.mean <= 0 or base.mean <= 0:
        return None
    ratio = base.mean / row.mean
    return Relative(ratio, ratio * ((row.stddev / row.mean) ** 2 + (base.stddev / base.mean) ** 2) ** 0.5)


class UpdateRow(NamedTuple):
    label: str
    engine: str
    git: str | None
    runs: int
    refused: str | None
    wall: Spread | None  # None: no run measured (refused)
    cpu: Spread | None
    syscalls_median: float
    by_name_median: dict[str, float]  # every kind, median over the runs, largest first
    source: str
    wall_vs_git: Relative | None  # against ``base`` (None for the base itself and unmeasured rows)
    cpu_vs_git: Relative | None


def summarize_update(result: BenchResult) -> tuple[list[UpdateRow], str | None]:
    """Each row's spreads, and the label of the git row every ratio is against: the first git row that
    ran (the reference git, unless it refused), or None."""
    base = next((r for r in result.rows if r.engine == "git" and r.reports), None)
    base_wall = spread([x.wall_ms for x in base.reports]) if base else None
    base_cpu = spread([x.cpu_ms for x in base.reports]) if base else None
    out = []
    for row in result.rows:
        reps = row.reports
        wall = spread([x.wall_ms for x in reps])
        cpu = spread([x.cpu_ms for x in reps])
        kinds = sorted({k for x in reps for k in x.syscalls_by_name})
        by = {k: _median([x.syscalls_by_name.get(k, 0) for x in reps]) for k in kinds}
        by = {k: v for k, v in sorted(by.items(), key=lambda kv: (-kv[1], kv[0])) if v}
        mine = row is base
        out.append(
            UpdateRow(
                row.label,
                row.engine,
                row.git,
                len(reps),
                row.refused,
                wall,
                cpu,
                _median([x.syscalls_total for x in reps]),
                by,
                "+".join(sorted({x.source for x in reps})),
                None if mine else relative(wall, base_wall),
                None if mine else relative(cpu, base_cpu),
            )
        )
    return out, base.label if base else None


def _verbs(commands) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in commands:
        verb = getattr(c, "verb", None) or type(c).__name__.lower()  # a Rename record has no verb
        out[verb] = out.get(verb, 0) + 1
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _pm(s: Spread | None, what: str) -> str:
    if s is None:
        return ""
    places = len(_ms(s.mean).partition(".")[2])  # sigma to the mean's precision, as hyperfine prints it
    return {
        "mean": f"{_ms(s.mean)} ± {s.stddev:.{places}f}",
        "range": f"{_ms(s.min)} … {_ms(s.max)}",
        "median": _ms(s.median),
    }[what]


def _faster(label: str, base: str, wall: Relative, cpu: Relative | None) -> list:
    """hyperfine's summary line, the faster one named first; CPU said beside it (the steadier figure on a
    loaded machine)."""
    first, second = (label, base) if wall.ratio >= 1 else (base, label)
    r, sd = (wall.ratio, wall.stddev) if wall.ratio >= 1 else (1 / wall.ratio, wall.stddev / wall.ratio**2)
    parts = [first, f" ran {r:.2f} ± {sd:.2f} times faster than ", second]
    if cpu is not None:
        c, csd = (cpu.ratio, cpu.stddev) if wall.ratio >= 1 else (1 / cpu.ratio, cpu.stddev / cpu.ratio**2)
        if c >= 1:
            parts.append(f" (CPU: {c:.2f} ± {csd:.2f} times less)")
        else:
            parts.append(f" (CPU: {1 / c:.2f} ± {csd / c**2:.2f} times more)")
    return parts


def update_lines(result: BenchResult, top: int = 4) -> list:
    """An update bench's table as ``display.Shown`` lines: a header, one row per engine (hyperfine's
    figures, the meter's syscalls), then hyperfine's summary against the reference git."""
    from .display import join, line, path_text

    rows, base = summarize_update(result)
    verbs = ", ".join(f"{v} {n}" for v, n in _verbs(result.commands).items())
    names = [c.name for c in result.commands[:3]]
    shown = join(", ", names) if names else line("(nothing)")
    if len(result.commands) > 3:
        shown = line(shown, ", ...")
    refs = f", {result.refs_total} refs" if result.refs_total is not None else ""
    warm = f" after {_count(result.warmup, 'warmup run')}" if result.warmup else ""
    counted = _counted_by(result, [r.source for r in rows])
    out = [
        line(f"refscope bench: update-ref --stdin, {_count(len(result.commands), 'command')} ({verbs}): ", shown),
        line(
            "  in ", path_text(result.repo), f" ({result.ref_storage}{refs}); {_count(result.runs, 'run')} per engine{warm},",
            " alternating; syscalls counted by ", counted,
        ),
        line(
            "  native: the commit, first lock to last unlink, auto-compaction included; native+snapshot: the whole"
            " transaction; git: the whole process, its input from a file"
        ),
    ]  # fmt: skip
    cols = [
        "engine",
        "runs",
        "wall ms mean ± σ",
        "min … max",
        "median",
        "cpu ms mean ± σ",
        "median",
        "syscalls",
    ]
    cols.append("top kinds")
    table = [cols]
    for r in rows:
        if r.refused is not None and not r.runs:
            table.append([r.label, "0", None, r.refused])
            continue
        kinds = ", ".join(f"{k} {_num(v)}" for k, v in list(r.by_name_median.items())[:top])
        table.append(
            [
                r.label,
                str(r.runs),
                _pm(r.wall, "mean"),
                _pm(r.wall, "range"),
                _pm(r.wall, "median"),
                _pm(r.cpu, "mean"),
                _pm(r.cpu, "median"),
                _num(r.syscalls_median),
                kinds,
            ]
        )
    widths = [max(len(row[i]) for row in table if i == 0 or row[2] is not None) for i in range(len(cols))]
    right = {1, 2, 3, 4, 5, 6, 7}
    for row in table:
        if row[2] is None:  # a refused row: its one line after the runs
            cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1])]
            out.append(line("  ".join(cells), "  refused: ", row[3]))
            continue
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append(line("  ".join(cells).rstrip()))
    summary = [r for r in rows if r.wall_vs_git is not None]
    if base is not None and summary:
        out.append(line(""))
        out.append(line("Summary (means, against ", base, "):"))
        for r in summary:
            out.append(line("  ", *_faster(r.label, base, r.wall_vs_git, r.cpu_vs_git)))
    return out


def _spread_json(s: Spread | None) -> dict | None:
    return None if s is None else {k: round(v, 3) for k, v in s._asdict().items()}


def _relative_json(r: Relative | None) -> dict | None:
    return None if r is None else {k: round(v, 3) for k, v in r._asdict().items()}


def update_json(result: BenchResult) -> dict:
    """An update bench for ``--json`` (the shape ``refscope help bench`` and the README document)."""
    rows, base = summarize_update(result)
    return {
        "kind": "update",
        "repo": result.repo,
        "ref_storage": result.ref_storage,
        "refs_total": result.refs_total,
        "commands": len(result.commands),
        "verbs": _verbs(result.commands),
        "message": result.message,
        "runs": result.runs,
        "warmup": result.warmup,
        "source": result.source,
        "relative_to": base,
        "engines": [
            {
                "label": r.label,
                "engine": r.engine,
                "git": r.git,
                "runs": r.runs,
                "refused": r.refused,
                "wall_ms": _spread_json(r.wall),
                "cpu_ms": _spread_json(r.cpu),
                "syscalls": {"median": r.syscalls_median, "by_name": r.by_name_median, "source": r.source},
                "relative": {"wall": _relative_json(r.wall_vs_git), "cpu": _relative_json(r.cpu_vs_git)},
                "reports": [x.to_json() for x in row.reports],
            }
            for r, row in zip(rows, result.rows, strict=True)
        ],
    }
