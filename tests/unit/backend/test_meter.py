"""The meter's kernel counts against strace's, fallbacks, thread-locality and fd hygiene.

The strace comparison is exact by construction: the measured operation runs in a child Python under
``strace -f``, between two marker syscalls (``access`` of paths that cannot exist) issued *inside* the
measure. The kernel's counters see the operation plus the two markers; strace's lines between the markers on
the same thread (and, for children, every line of the processes started in between) are the operation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from refscope.backend import meter
from refscope.backend.meter import measure, parse_strace_summary

from tests.support.git import create_refs, for_each_ref, git, git_env, init_repo

BEGIN = "/refscope-meter-marker-begin"
END = "/refscope-meter-marker-end"
STRACE = "/usr/bin/strace"


def test_kernel_counters_are_available() -> None:
    """These machines allow tracepoint counters (root); everything below relies on it."""
    assert meter.status()[0] == "perf", meter.status()


_CHILD = """
import json, os, sys
from refscope.backend.meter import measure
{setup}
def prepare(run):
{prepare}
def op(run):
{op}
prepare(0)
op(0)  # warm: first-call costs (imports, allocations) are not what is compared
prepare(1)
with measure("warm", children={children}):
    pass
with measure("op", children={children}) as m:
    os.access({begin!r}, os.F_OK)
    op(1)
    os.access({end!r}, os.F_OK)
from refscope.backend.meter import ledger as _l, procio as _p
fds = [_l.tls.io.fd] if getattr(_l.tls, "io", None) else []
fds += [_p.proc_self_io.fd] if _p.proc_self_io else []
for ctr in (getattr(_l.tls, "own", None), getattr(_l.tls, "kids", None)):
    fds += ctr.fds if ctr else []
with open(sys.argv[1], "w") as f:
    json.dump(dict(m.report.to_json(), meter_fds=fds), f)
"""

_LINE = re.compile(r"^(\d+)\s+(?:(\w+)\(|<\.\.\. (\w+) resumed>|(\+\+\+|---))")


_METER_CALL = re.compile(
    r"^\d+\s+(?:(?:pread64|read|ioctl)\((\d+),|clock_gettime\(CLOCK_THREAD_CPUTIME_ID|getrusage\(RUSAGE_CHILDREN)"
)


def strace_between_markers(
    trace: str, children: bool, meter_fds: list[int] | None = None
) -> tuple[dict[str, int], int]:
    """Syscalls strace saw between the markers: ({name: calls}, tid of the measuring thread).

    Each syscall counts once (an ``<unfinished ...>`` line counts, its ``<... resumed>`` line doesn't);
    signal and exit lines are not syscalls. With ``children``, lines of every other pid inside the window
    count too (processes started by the operation), including their ``<... resumed>`` halves' openers.
    With ``meter_fds``, the bookkeeping of measures nested in the operation (reads of the counters and of
    /proc io, the thread CPU clock, children's rusage) is left out, as the enclosing measure leaves it out.
    """
    lines = trace.splitlines()
    begin = next(i for i, ln in enumerate(lines) if BEGIN in ln)
    end = next(i for i, ln in enumerate(lines) if END in ln)
    tid = lines[begin].split()[0]
    counts: dict[str, int] = {}
    for ln in lines[begin + 1 : end]:
        m = _LINE.match(ln)
        assert m, f"unparsed strace line: {ln!r}"
        pid, name = m.group(1), m.group(2)
        if name is None:  # resumed half, signal or exit
            continue
        if pid != tid and not children:
            continue
        if meter_fds is not None and pid == tid:
            mm = _METER_CALL.match(ln)
            if mm and (mm.group(1) is None or int(mm.group(1)) in meter_fds):
                continue
        counts[name] = counts.get(name, 0) + 1
    return counts, int(tid)


def run_compared(
    tmp_path: Path,
    op: str,
    setup: str = "",
    children: bool = False,
    prepare: str = "pass",
    nested: bool = False,
):
    """Run ``op`` (Python statements; ``run`` is 0 for the warm-up call, 1 measured; ``prepare`` runs
    unmeasured before each) measured in a child Python under strace: (kernel report, strace counts).
    ``nested``: the operation contains measures of its own (their bookkeeping is excluded on both sides)."""
    script = tmp_path / "child.py"
    script.write_text(
        _CHILD.format(
            setup=textwrap.dedent(setup),
            op=textwrap.indent(textwrap.dedent(op), "    "),
            prepare=textwrap.indent(textwrap.dedent(prepare), "    "),
            children=children,
            begin=BEGIN,
            end=END,
        )
    )
    out = tmp_path / "report.json"
    trace = tmp_path / "trace.txt"
    subprocess.run(
        [STRACE, "-f", "-qq", "-o", str(trace), "--", sys.executable, str(script), str(out)],
        check=True,
        cwd=tmp_path,
    )
    report = json.loads(out.read_text())
    counts, _ = strace_between_markers(trace.read_text(), children, report["meter_fds"] if nested else None)
    return report, counts


def without_markers(report: dict) -> tuple[dict[str, int], int]:
    """The kernel's figures minus the two marker syscalls (``access``)."""
    by_name = dict(report["syscalls"]["by_name"])
    by_name["access"] -= 2
    if not by_name["access"]:
        del by_name["access"]
    return by_name, report["syscalls"]["total"] - 2


def test_known_file_read_equals_strace(tmp_path: Path) -> None:
    data = tmp_path / "known"
    data.write_bytes(b"x" * 10000)
    report, st = run_compared(
        tmp_path,
        op=f"""
        fd = os.open({str(data)!r}, os.O_RDONLY)
        os.pread(fd, 4096, 0)
        os.pread(fd, 8192, 4096)
        os.close(fd)
        """,
    )
    by_name, total = without_markers(report)
    assert report["syscalls"]["source"] == "perf"
    assert by_name == st
    assert total == sum(st.values())
    # the allocator may grow the heap for the read buffers (brk/mmap) at any call: both sides see it
    assert {k: v for k, v in st.items() if k not in ("brk", "mmap", "munmap")} == {
        "openat": 1,
        "pread64": 2,
        "close": 1,
    }
    assert report["bytes_read"] == 10000
    assert report["bytes_written"] == 0


def test_mixed_operation_equals_strace(tmp_path: Path) -> None:
    """Python-level work with allocations, directory listing, writes and renames: every syscall by name."""
    report, st = run_compared(
        tmp_path,
        setup="import shutil",
        op=f"""
        d = {str(tmp_path / "d")!r}
        os.makedirs(d, exist_ok=True)
        for i in range(20):
            fd = os.open(d + "/f%d.lock" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            os.write(fd, b"y" * (i + 1) * 1000)
            os.fsync(fd)
            os.close(fd)
            os.rename(d + "/f%d.lock" % i, d + "/f%d" % i)
        names = os.listdir(d)
        blob = [bytes(100000) for _ in range(30)]
        for n in names:
            os.stat(d + "/" + n)
        shutil.rmtree(d)
        """,
    )
    by_name, total = without_markers(report)
    assert sum(st.values()) == total
    # names outside the meter's list are lumped as "other"
    st_listed = {k: v for k, v in st.items() if k in by_name}
    other = sum(v for k, v in st.items() if k not in by_name)
    assert by_name.pop("other", 0) == other
    assert by_name == st_listed
    assert st["rename"] == 20 and st["fsync"] == 20
    assert report["bytes_written"] == sum((i + 1) * 1000 for i in range(20))


@pytest.fixture(scope="module")
def packed_repo(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("meter") / "repo", fmt="files")
    create_refs(repo, (f"refs/heads/b{i:04d}" for i in range(300)))
    git(repo, "pack-refs", "--all")
    return repo


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_native_commit_equals_strace(tmp_path: Path, git_bin: str, fmt: str) -> None:
    """A native engine commit (TXN's Transaction, with its own nested measures), snapshot already open."""
    repo = init_repo(tmp_path / "repo", fmt=fmt)
    head = create_refs(repo, (f"refs/heads/b{i:04d}" for i in range(300))).decode()
    if fmt == "files":
        git(repo, "pack-refs", "--all")
    report, st = run_compared(
        tmp_path,
        setup=f"""
        from refscope.backend.repo import discover
        from refscope.backend.store import open_store
        from refscope.backend.txn import Transaction
        store = open_store(discover({str(repo)!r}))
        txns = {{}}
        """,
        prepare=f"""
        t = txns[run] = Transaction(store, engine="native")
        t.delete(b"refs/heads/b%04d" % (6 + run), {head!r}.encode())
        t.snapshot
        """,
        op="""
        res = txns[run].commit()
        assert res.committed
        """,
        nested=True,
    )
    by_name, total = without_markers(report)
    assert report["syscalls"]["source"] == "perf"
    assert by_name == st
    assert total == sum(st.values())
    assert st.get("rename", 0) >= 1
    names = [r[0] for r in for_each_ref(repo)]
    assert b"refs/heads/b0006" not in names and b"refs/heads/b0007" not in names
    assert b"refs/heads/b0008" in names


def test_git_child_equals_strace_within_margin(tmp_path: Path, packed_repo: Path, git_bin: str) -> None:
    """A git-engine style child: `git update-ref --stdin` deleting one packed ref, counted through inherit.

    Margin: the kernel and strace agree exactly on every syscall of every process started inside the
    window; we allow 2 syscalls for a wait4/SIGCHLD restart that ptrace can introduce.
    """
    import shutil

    work = tmp_path / "repo"
    shutil.copytree(packed_repo, work, symlinks=True)
    head = git(work, "rev-parse", "refs/heads/b0007").strip().decode()
    refs = ["refs/heads/b0006", "refs/heads/b0007"]
    env = git_env()
    report, st = run_compared(
        tmp_path,
        setup="import subprocess",
        op=f"""
        subprocess.run([{git_bin!r}, "update-ref", "--stdin"], cwd={str(work)!r}, env={env!r},
                       input=b"start\\ndelete %s {head}\\nprepare\\ncommit\\n" % {refs!r}[run].encode(),
                       stdout=subprocess.DEVNULL, check=True)
        """,
        children=True,
    )
    by_name, total = without_markers(report)
    assert report["children"] is True and report["syscalls"]["source"] == "perf"
    st_total = sum(st.values())
    assert abs(total - st_total) <= 2, (total, st_total, by_name, st)
    for name in ("openat", "rename", "unlink", "write", "execve", "close"):
        assert abs(by_name.get(name, 0) - st.get(name, 0)) <= 1, (name, by_name, st)
    assert st["rename"] >= 1  # packed-refs.lock -> packed-refs
    packed = (work / ".git" / "packed-refs").read_bytes()
    assert b"refs/heads/b0007" not in packed and b"refs/heads/b0008" in packed


def test_own_thread_only(tmp_path: Path) -> None:
    """Another thread hammering syscalls (stat, getppid) during the measure adds nothing."""
    path = tmp_path / "f"
    path.write_bytes(b"z" * 100)
    stop = threading.Event()

    def noisy() -> None:
        while not stop.is_set():
            os.getppid()
            os.stat(path)

    t = threading.Thread(target=noisy)
    t.start()
    try:
        for _ in range(5):
            with measure("mine") as m:
                fd = os.open(path, os.O_RDONLY)
                os.pread(fd, 100, 0)
                os.close(fd)
                time.sleep(0.01)  # the other thread runs meanwhile (clock_nanosleep counts as "other")
            # the GIL handoff between the two threads is real work of this thread (futex); nothing else is
            by_name = dict(m.report.syscalls_by_name)
            futex = by_name.pop("futex", 0)
            assert by_name == {"openat": 1, "pread64": 1, "close": 1, "other": 1}
            assert m.report.syscalls_total == 4 + futex
            assert m.report.bytes_read == 100
    finally:
        stop.set()
        t.join()


def test_counts_on_other_threads_use_their_own_counters() -> None:
    results: list[meter.OpReport] = []

    def work() -> None:
        with measure("t") as m:
            os.getppid()
            os.getppid()
        results.append(m.report)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # futex: the GIL changing hands while the threads run at once is each thread's own syscall
    futex = [r.syscalls_by_name.get("futex", 0) for r in results]
    assert [r.syscalls_total - f for r, f in zip(results, futex, strict=True)] == [2] * 4
    assert all(r.source == "perf" and r.syscalls_by_name.get("other") == 2 for r in results)


@pytest.mark.parametrize("outer_children", [False, True])
@pytest.mark.parametrize("inner_children", [False, True])
def test_nested_measures_are_exact(tmp_path: Path, outer_children: bool, inner_children: bool) -> None:
    """Phases measured inside a commit: each figure is exact, the meter's own syscalls taken out."""
    path = tmp_path / "f"
    path.write_bytes(b"n" * 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        for source in ("perf", "proc"):
            with measure("outer", children=outer_children, source=source) as outer:
                os.pread(fd, 100, 0)
                with measure("inner", children=inner_children, source=source) as inner:
                    os.pread(fd, 10, 0)
                    with measure("innermost", source=source) as innermost:
                        os.pread(fd, 1, 0)
                    os.pread(fd, 10, 0)
                os.pread(fd, 100, 0)
            by_name = {"perf": "pread64", "proc": "reads"}[source]
            assert innermost.report.syscalls_by_name == {by_name: 1}
            assert inner.report.syscalls_by_name == {by_name: 3}
            assert outer.report.syscalls_by_name == {by_name: 5}
            assert (outer.report.bytes_read, inner.report.bytes_read, innermost.report.bytes_read) == (
                221,
                21,
                1,
            )
    finally:
        os.close(fd)


def _open_fds() -> set[int]:
    """This process's descriptors. Tests compare sets, not counts: a file an earlier test left to the
    collector (or a thread of its ending) may close meanwhile, which is no leak of ours."""
    import gc

    gc.collect()
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def test_no_fd_leak_over_2000_measures(tmp_path: Path) -> None:
    with measure("prime"):
        pass
    with measure("prime", children=True):
        pass
    before = _open_fds()
    for _ in range(1000):
        with measure("x") as m:
            os.getppid()
        with measure("y", children=True):
            pass
    assert m.report.syscalls_total == 1
    assert _open_fds() <= before


def test_threads_release_their_counters() -> None:
    with measure("prime"):
        pass
    with measure("prime", children=True):  # opens the process-wide /proc/self/io once
        pass
    from refscope.backend.meter import keeper

    keeper.hand_off_retired()  # what earlier tests retired
    before = _open_fds()

    def work() -> None:
        with measure("t"):
            pass
        with measure("t", children=True):
            pass

    for _ in range(30):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    # A finished thread's counters are retired, not closed on the spot (closing costs RCU grace periods):
    # at most _RETIRED_MAX wait at any time, and handing them off releases every one of them.
    assert len(_open_fds() - before) <= keeper.RETIRED_MAX
    keeper.hand_off_retired()
    assert _open_fds() <= before


def test_empty_measure_counts_nothing() -> None:
    for children in (False, True):
        with measure("empty", children=children) as m:
            pass
        assert m.report.syscalls_total == 0, m.report
        assert m.report.syscalls_by_name == {}
        assert m.report.bytes_read == 0 and m.report.bytes_written == 0


def _child_report(tmp_path: Path, code: str, env: dict[str, str], no_caps: bool = False) -> dict:
    script = tmp_path / "fallback.py"
    script.write_text(textwrap.dedent(code))
    argv = [sys.executable, str(script)]
    if no_caps:
        argv = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *argv]
    out = subprocess.run(argv, env=env, capture_output=True, check=True, cwd=tmp_path)
    return json.loads(out.stdout)


_FALLBACK = """
import json, os, subprocess
from refscope.backend import meter
fd = os.open({path!r}, os.O_RDONLY)
with meter.measure("read") as m:
    os.pread(fd, 50, 0)
    os.pread(fd, 50, 50)
own = m.report.to_json()
with meter.measure("git", children=True) as m:
    subprocess.run(meter.child_argv([{git!r}, "--version"]), stdout=subprocess.DEVNULL, check=True)
print(json.dumps({{"status": meter.status(), "own": own, "kids": m.report.to_json()}}))
"""


def test_forced_proc_falls_back_and_says_so(tmp_path: Path, git_bin: str) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"q" * 100)
    env = dict(os.environ, REFSCOPE_METER="proc")
    got = _child_report(tmp_path, _FALLBACK.format(path=str(path), git=git_bin), env)
    assert got["status"][0] == "proc" and "REFSCOPE_METER=proc" in got["status"][1]
    assert got["own"]["syscalls"] == {"total": 2, "by_name": {"reads": 2}, "source": "proc"}
    assert got["own"]["bytes_read"] == 100
    assert got["kids"]["syscalls"]["source"] == "proc"
    assert got["kids"]["syscalls"]["by_name"]["reads"] > 5  # git reads its config and more


def test_no_tracepoints_falls_back_to_strace_for_children(tmp_path: Path, git_bin: str) -> None:
    """Tracepoints unavailable (no tracefs where we look): own thread on /proc, children under strace."""
    path = tmp_path / "f"
    path.write_bytes(b"q" * 100)
    env = dict(os.environ, REFSCOPE_TRACEFS=str(tmp_path / "no-tracefs"))
    env.pop("REFSCOPE_METER", None)
    got = _child_report(tmp_path, _FALLBACK.format(path=str(path), git=git_bin), env)
    assert "tracepoints unavailable" in got["status"][1]
    assert got["own"]["syscalls"]["source"] == "proc"
    assert got["own"]["syscalls"]["by_name"] == {"reads": 2}
    kids = got["kids"]["syscalls"]
    assert kids["source"] == "strace"
    # strace -c of `git --version` itself: the exec'd git, from execve to exit_group
    assert kids["by_name"]["execve"] == 1 and kids["by_name"]["openat"] >= 1
    assert kids["total"] == sum(kids["by_name"].values())


def test_kernel_refusal_falls_back(tmp_path: Path, git_bin: str) -> None:
    """Without capabilities (perf_event_paranoid 2) the kernel refuses tracepoint counters, even when asked
    for perf: the report says "proc", and why."""
    path = tmp_path / "f"
    path.write_bytes(b"q" * 100)
    env = dict(os.environ, REFSCOPE_METER="perf")
    got = _child_report(tmp_path, _FALLBACK.format(path=str(path), git=git_bin), env, no_caps=True)
    assert got["status"][1] == "perf_event_open refused: Permission denied"
    assert got["own"]["syscalls"]["source"] == "proc"
    assert got["own"]["syscalls"]["by_name"] == {"reads": 2}


def test_parse_strace_summary_both_layouts() -> None:
    default = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.00    0.000040           2        17           openat
 10.00    0.000010           2         4         4 access
------ ----------- ----------- --------- --------- ----------------
100.00    0.000100           4        21         4 total
"""
    assert parse_strace_summary(default) == {"openat": 17, "access": 4, "total": 21}
    short = """syscall              calls
---------------- ---------
openat                  17
access                   4
---------------- ---------
total                   21
"""
    assert parse_strace_summary(short) == {"openat": 17, "access": 4, "total": 21}


def test_report_json_shape() -> None:
    with measure("shape") as m:
        os.getppid()
    j = m.report.to_json()
    assert set(j) == {"name", "wall_ms", "cpu_ms", "syscalls", "bytes_read", "bytes_written", "children"}
    assert set(j["syscalls"]) == {"total", "by_name", "source"}
    assert j["name"] == "shape" and j["children"] is False
    assert json.loads(json.dumps(j)) == j


def test_first_counters_of_a_thread_opened_inside_a_measure() -> None:
    """A thread's children counters opened for the first time inside its own measure: still exact."""
    got: list[tuple[meter.OpReport, meter.OpReport]] = []

    def work() -> None:
        with measure("outer") as outer:
            os.getppid()
            with measure("kids", children=True) as kids:
                os.getppid()
        got.append((outer.report, kids.report))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    outer, kids = got[0]
    assert (outer.syscalls_total, kids.syscalls_total) == (2, 1)
    assert outer.syscalls_by_name == {"other": 2} and kids.syscalls_by_name == {"other": 1}


def test_children_counters_ignore_threads_started_later() -> None:
    """Inherited counters would follow a worker thread started after they were opened; the set is reopened
    so such a thread's syscalls never count in a ``children=True`` measure."""
    with measure("open the inheriting set", children=True):
        pass
    stop = threading.Event()

    def noisy() -> None:
        while not stop.is_set():
            os.getppid()

    t = threading.Thread(target=noisy)
    t.start()
    try:
        for _ in range(3):
            with measure("kids", children=True) as m:
                os.getppid()
                os.getppid()
                time.sleep(0.02)  # lets the other thread run (GIL released) inside the window
            # getppid x2 and clock_nanosleep ("other"), and the GIL's futex calls on this thread
            futex = m.report.syscalls_by_name.get("futex", 0)
            assert m.report.syscalls_total - futex == 3, m.report
            assert m.report.syscalls_by_name.get("other") == 3
    finally:
        stop.set()
        t.join()


def test_reopening_inheriting_set_inside_a_measure_is_exact() -> None:
    """The reopening (listing threads, opening counters) inside an enclosing measure is taken out of it."""
    with measure("prime", children=True):
        pass
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    keep = threading.Event()
    alive = threading.Thread(target=keep.wait)
    alive.start()  # alive and newer than the set: forces a reopen
    try:
        with measure("outer") as outer:
            os.getppid()
            with measure("kids", children=True) as kids:
                os.getppid()
            os.getppid()
        assert kids.report.syscalls_total - kids.report.syscalls_by_name.get("futex", 0) == 1
        assert outer.report.syscalls_total - outer.report.syscalls_by_name.get("futex", 0) == 3
        assert outer.report.bytes_read == 0
    finally:
        keep.set()
        alive.join()


def test_small_fd_limit_counts_the_total_only(tmp_path: Path) -> None:
    """With RLIMIT_NOFILE 32 the per-syscall counters would take the process's descriptors: only the total."""
    import resource

    code = textwrap.dedent(
        """
        import json, os
        from refscope.backend import meter
        with meter.measure("x") as m:
            fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(20)]  # the program's own descriptors
            for fd in fds:
                os.close(fd)
        print(json.dumps(m.report.to_json()["syscalls"]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        check=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32)),
    )
    assert json.loads(out.stdout) == {"total": 40, "by_name": {"other": 40}, "source": "perf"}


def test_cpu_time_of_the_window(git_bin: str) -> None:
    """CPU time comes from the counters' task-clock (children included with children=True)."""
    with measure("prime"):  # (a first measure probes the tracepoints: CPU outside the window)
        pass
    c0 = time.thread_time_ns()
    with measure("spin") as m:  # (long enough that opening and reading the counters is under 10%)
        sum(i * i for i in range(2_000_000))
    outside = (time.thread_time_ns() - c0) / 1e6
    # (two clocks of the same thread: the counters' task-clock and CLOCK_THREAD_CPUTIME_ID, a few
    # per cent apart either way)
    assert 0.9 * outside <= m.report.cpu_ms <= 1.05 * outside
    with measure("child", children=True) as kids:
        subprocess.run([git_bin, "rev-parse", "--git-dir"], capture_output=True)
    with measure("child", children=True, source="proc") as proc:
        subprocess.run([git_bin, "rev-parse", "--git-dir"], capture_output=True)
    # the same work counted two ways (task-clock of the inherited set; thread clock + children's rusage)
    assert kids.report.cpu_ms > 0.3 and proc.report.cpu_ms > 0.3
    assert 0.3 < kids.report.cpu_ms / proc.report.cpu_ms < 3


def _lock_holders(path: Path) -> list[int]:
    """Pids with ``path`` open (the keeper holds its lock file open for its whole life)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                    pids.append(int(pid))
                    break
            except OSError:
                continue
    return pids


def test_keeper_holds_counters_after_exit_then_leaves(tmp_path: Path) -> None:
    """A CLI process's counters outlive it in one detached keeper (closing the last user of a tracepoint
    costs ~35 ms of RCU grace periods, and opening one meanwhile queues behind it); the keeper holds nothing
    else, a second process finds it alive and closes its own counters itself, and the keeper leaves once
    nobody has used the meter for REFSCOPE_METER_LINGER seconds."""
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path), "REFSCOPE_METER_LINGER": "1.5"}
    code = "from refscope.backend.meter import measure\nwith measure('x'):\n    pass\n"
    lock = tmp_path / f"refscope-meter-{os.getuid()}.keeper"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=30)
    holders = _lock_holders(lock)
    assert len(holders) == 1, holders
    keeper = holders[0]

    def held() -> set[str]:
        return {os.readlink(f"/proc/{keeper}/fd/{fd}") for fd in os.listdir(f"/proc/{keeper}/fd")}

    deadline = time.monotonic() + 10
    while any(f.startswith("pipe:") for f in held()) and time.monotonic() < deadline:
        time.sleep(0.01)  # the pipe that tells it its parent is gone: closed once read
    fds = held()
    assert fds == {str(lock), "anon_inode:[perf_event]"}, fds
    assert len(os.listdir(f"/proc/{keeper}/fd")) == 1 + 1 + len(meter.EVENTS) + 1  # lock, total, names, cpu
    assert os.getsid(keeper) == keeper  # its own session: a ^C in the caller's terminal is not for it
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=30)
    assert _lock_holders(lock) == [keeper]  # no second keeper
    deadline = time.monotonic() + 20
    while os.path.exists(f"/proc/{keeper}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{keeper}/fd"), "the keeper did not leave after its idle time"
    assert _lock_holders(lock) == []
