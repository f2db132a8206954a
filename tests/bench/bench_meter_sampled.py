"""Issue 14's experiment: one sampled ``raw_syscalls:sys_enter`` counter against the meter's per-syscall set.

    .venv/bin/python tests/bench/bench_meter_sampled.py [--runs N] [--only exact|overhead|openclose]

The alternative to today's ~57 tracepoint counters (and the keeper that makes closing them cheap): ONE
``raw_syscalls:sys_enter`` event with ``sample_period`` 1 and ``PERF_SAMPLE_RAW`` into an mmap'ed ring
buffer; the syscall number is read from each ``PERF_RECORD_SAMPLE`` (the count of the event minus the
records read is the number lost: ``PERF_RECORD_LOST`` only appears once the ring has room again). For
children the event is opened with ``inherit``, one per CPU (the kernel refuses to mmap an inherited
``cpu=-1`` event). :class:`Sampled` is that prototype (full ``ctypes``; it is not the meter).

Prints:
- ``exact``: its per-syscall-number counts against ``strace -f -n`` between two marker syscalls, for file
  work on the own thread and a ``git update-ref --stdin`` child deleting 200 packed refs;
- ``overhead``: 100k ``getpid`` on the own thread and in a child, bare / the meter / sampled (and sampled
  with its records parsed), alternating runs, medians;
- ``openclose``: fresh processes opening, enabling once and closing a meter set (no keeper alive, keeper alive,
  ``REFSCOPE_METER_LINGER=0``) and a sampled counter (with and without another holder of the tracepoint).
  Other processes on the machine holding these tracepoints (other refscope keepers) make closing cheap for
  everyone: the count of perf descriptors other processes hold is printed with each figure, and the same
  sampled counter on ``raw_syscalls:sys_exit`` (which no meter uses) shows what closing the last user costs.
Not collected by pytest (tests/bench is excluded). Needs root (or perf_event_paranoid <= 1) and strace.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import mmap
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.git import git_binary  # noqa: E402

_NR = {"x86_64": 298, "aarch64": 241}[os.uname().machine]
_RECORD = 80  # header 8, raw size 4, raw_syscalls:sys_enter 64 (common 8, id 8, args 48), padding 4
_PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _tracepoint(name: str) -> int:
    for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        try:
            return int(Path(f"{d}/events/{name}/id").read_text())
        except OSError:
            continue
    raise SystemExit("no tracefs")


class Sampled:
    """One sampled sys_enter event (this thread, or inherited on one CPU) and its ring of ``pages`` pages.
    (``event``: another tracepoint, for timing the closing of one that no other process holds.)"""

    def __init__(
        self, pages: int = 256, inherit: bool = False, cpu: int = -1, event: str = "raw_syscalls/sys_enter"
    ) -> None:
        flags = 1 | (2 if inherit else 0) | (1 << 14)  # disabled, inherit, watermark
        watermark = pages * _PAGE - _PAGE  # no wakeups: nobody polls
        attr = struct.pack("<IIQQQQQII", 2, 64, _tracepoint(event), 1, 1 << 10, 0, flags, watermark, 0)
        attr += bytes(64 - len(attr))
        args = (ctypes.c_long(_NR), attr, ctypes.c_long(0), ctypes.c_long(cpu), ctypes.c_long(-1))
        fd = _libc.syscall(*args, ctypes.c_long(8))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.fd = fd
        self.size = pages * _PAGE
        self.ring = mmap.mmap(fd, _PAGE + self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.view = memoryview(self.ring)
        self.meta = self.view[:_PAGE].cast("Q")  # data_head at byte 1024, data_tail at 1032
        self.seen = 0

    def enable(self) -> None:
        fcntl.ioctl(self.fd, 0x2400, 0)

    def disable(self) -> None:
        fcntl.ioctl(self.fd, 0x2401, 0)

    def count(self) -> int:
        return int.from_bytes(os.read(self.fd, 8), "little")

    def drain(self) -> tuple[Counter, int]:
        """(syscall number -> calls, records lost) since the last drain."""
        head, tail = self.meta[128], self.meta[129]
        n, a = head - tail, tail % self.size
        if a + n <= self.size:
            data = self.view[_PAGE + a : _PAGE + a + n].tobytes()
        else:
            data = (
                self.view[_PAGE + a : _PAGE + self.size].tobytes()
                + self.view[_PAGE : _PAGE + a + n - self.size]
            )
        self.meta[129] = head
        counts: Counter = Counter()
        k = n // _RECORD
        if n % _RECORD == 0 and data[0::_RECORD].count(9) == k and data[6::_RECORD].count(_RECORD) == k:
            counts.update(t[0] for t in struct.iter_unpack("<20xq52x", data))  # all PERF_RECORD_SAMPLE
        else:
            off = 0
            while off < n:
                kind, _, size = struct.unpack_from("<IHH", data, off)
                if kind == 9:
                    counts[struct.unpack_from("<q", data, off + 20)[0]] += 1
                off += size
        total = self.count()
        lost = total - self.seen - sum(counts.values())
        self.seen = total
        return counts, lost

    def close(self) -> None:
        self.meta.release()
        self.view.release()
        self.ring.close()
        os.close(self.fd)


def _median_ms(v: list[int]) -> float:
    return statistics.median(v) / 1e6


# ---------------------------------------------------------------------------------------------------------
# exact: per syscall number against strace -n

_EXACT_CHILD = r"""
import os, subprocess, sys
sys.path.insert(0, {root!r})
from tests.bench.bench_meter_sampled import Sampled
mode, repo, git = sys.argv[1:4]
rings = [Sampled(512)] if mode == "own" else [Sampled(512, True, c) for c in range(os.cpu_count())]
def op():
    if mode == "own":
        d = repo + "/d"
        os.makedirs(d, exist_ok=True)
        for i in range(50):
            fd = os.open(f"{{d}}/f{{i}}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, b"x" * 100); os.fsync(fd); os.close(fd)
            os.rename(f"{{d}}/f{{i}}", f"{{d}}/g{{i}}")
        for n in os.listdir(d):
            os.stat(f"{{d}}/{{n}}"); os.unlink(f"{{d}}/{{n}}")
        [bytes(100000) for _ in range(30)]
    else:
        subprocess.run([git, "update-ref", "--stdin"], cwd=repo, check=True,
                       input=b"".join(b"delete refs/heads/b%04d\n" % i for i in range(200)))
for r in rings:
    r.drain()
for r in rings:
    r.enable()
os.access("/refscope-marker-begin", os.F_OK)
op()
os.access("/refscope-marker-end", os.F_OK)
for r in rings:
    r.disable()
got, lost = {{}}, 0
for r in rings:
    c, n = r.drain()
    lost += n
    for k, v in c.items():
        got[k] = got.get(k, 0) + v
print(repr((got, lost, len(rings))))
"""


def exact(git: str) -> None:
    import ast

    with tempfile.TemporaryDirectory() as tmp:
        repo = f"{tmp}/repo"
        subprocess.run([git, "init", "-q", repo], check=True)
        ident = ["-c", "user.name=a", "-c", "user.email=a@b"]
        subprocess.run([git, "-C", repo, *ident, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
        head = subprocess.run(
            [git, "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        creates = "".join(f"create refs/heads/b{i:04d} {head}\n" for i in range(2000)).encode()
        subprocess.run([git, "-C", repo, "update-ref", "--stdin"], input=creates, check=True)
        subprocess.run([git, "-C", repo, "pack-refs", "--all"], check=True)
        script = Path(tmp) / "child.py"
        script.write_text(_EXACT_CHILD.format(root=str(ROOT)))
        line = re.compile(r"^(\d+)\s+\[\s*(\d+)\]\s+\w+\(")
        for mode in ("own", "kids"):
            trace = f"{tmp}/trace-{mode}"
            argv = ["strace", "-f", "-qq", "-n", "-o", trace, sys.executable, str(script), mode, repo, git]
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            got, lost, rings = ast.literal_eval(out.strip().splitlines()[-1])
            lines = Path(trace).read_text().splitlines()
            b = next(i for i, ln in enumerate(lines) if "refscope-marker-begin" in ln)
            e = next(i for i, ln in enumerate(lines) if "refscope-marker-end" in ln)
            tid = lines[b].split()[0]
            st: Counter = Counter()
            for ln in lines[b : e + 1]:
                m = line.match(ln)
                if m and (mode == "kids" or m.group(1) == tid):
                    st[int(m.group(2))] += 1
            # the DISABLE ioctls entered while counting (one per ring), outside strace's markers
            got[16] = got.get(16, 0) - rings
            got = {k: v for k, v in got.items() if v}
            diff = {
                k: (got.get(k, 0), st.get(k, 0)) for k in set(got) | set(st) if got.get(k, 0) != st.get(k, 0)
            }
            print(
                f"exact {mode:4s}: {sum(got.values())} syscalls sampled, strace {sum(st.values())}, lost {lost}, ",
                end="",
            )
            print("per number: identical" if not diff else f"differences (nr: sampled, strace) {diff}")


# ---------------------------------------------------------------------------------------------------------
# overhead: per counted syscall


def overhead(runs: int) -> None:
    from refscope.backend.meter import measure

    n = 100_000
    getpid = os.getpid

    def own() -> None:
        for _ in range(n):
            getpid()

    child = [sys.executable, "-S", "-c", f"import os\nfor _ in range({n}): os.getpid()"]

    def kids() -> None:
        subprocess.run(child, check=True)

    for label, work, children in (("own thread", own, False), ("child", kids, True)):
        rings = [Sampled(2048)] if not children else [Sampled(2048, True, c) for c in range(os.cpu_count())]
        with measure("prime", children=children):
            work()
        res: dict[str, list[int]] = {"bare": [], "meter": [], "sampled": [], "sampled+parse": []}
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            work()
            res["bare"].append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            with measure("x", children=children) as m:
                work()
            res["meter"].append(time.perf_counter_ns() - t0)
            t0 = time.perf_counter_ns()
            for r in rings:
                r.enable()
            work()
            for r in rings:
                r.disable()
            t1 = time.perf_counter_ns()
            lost = sum(r.drain()[1] for r in rings)
            t2 = time.perf_counter_ns()
            res["sampled"].append(t1 - t0)
            res["sampled+parse"].append(t2 - t0)
        calls = m.report.syscalls_total
        bare = statistics.median(res["bare"])
        print(f"overhead, {n} getpid ({label}, {calls} syscalls counted; sampled lost {lost}):")
        for k, v in res.items():
            med = statistics.median(v)
            print(f"  {k:14s} median {med / 1e6:8.1f} ms   +{(med - bare) / calls:6.0f} ns per syscall")
        for r in rings:
            r.close()


# ---------------------------------------------------------------------------------------------------------
# open/close: fresh processes

_METER = (
    "import time; from refscope.backend.meter import keeper, measure, perf; perf.get_setup()\n"
    "t = time.perf_counter()\nwith measure('x'): pass\n"
    "t1 = time.perf_counter(); keeper.close_all(); print((t1 - t) * 1e3, (time.perf_counter() - t1) * 1e3)"
)
_SAMPLED = (
    "import os, sys, time; sys.path.insert(0, {root!r}); from tests.bench.bench_meter_sampled import Sampled\n"
    "t = time.perf_counter(); s = Sampled(256); s.enable(); s.disable(); s.drain()\n"
    "t1 = time.perf_counter(); s.close(); print((t1 - t) * 1e3, (time.perf_counter() - t1) * 1e3)"
)


def _others_perf_fds() -> int:
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            n += sum(
                os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
                for fd in os.listdir(f"/proc/{pid}/fd")
            )
        except OSError:
            continue
    return n


def openclose(runs: int) -> None:
    rt = tempfile.mkdtemp(prefix="refscope-bench-meter-")
    lock = f"{rt}/refscope-meter-{os.getuid()}.keeper"
    env = dict(os.environ, XDG_RUNTIME_DIR=rt)
    env.pop("REFSCOPE_METER_LINGER", None)

    def keepers() -> list[int]:
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == lock for fd in os.listdir(f"/proc/{pid}/fd")):
                    out.append(int(pid))
            except OSError:
                continue
        return out

    def end_keepers() -> None:  # only ours: they hold our lock file
        for pid in keepers():
            os.kill(pid, 9)
            while os.path.exists(f"/proc/{pid}"):
                time.sleep(0.01)

    def run(code: str, **extra: str) -> tuple[float, float, float, int]:
        others = _others_perf_fds()
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True, check=True
        )
        wall = (time.perf_counter() - t0) * 1e3
        o, c = map(float, out.stdout.split())
        return wall, o, c, others

    sampled = _SAMPLED.format(root=str(ROOT))
    res: dict[str, list[tuple[float, float, float, int]]] = {}
    for _ in range(runs):
        end_keepers()
        res.setdefault("meter, no keeper alive", []).append(run(_METER))
        res.setdefault("meter, keeper alive", []).append(run(_METER))
        end_keepers()
        res.setdefault("meter, REFSCOPE_METER_LINGER=0", []).append(run(_METER, REFSCOPE_METER_LINGER="0"))
        res.setdefault("meter, LINGER=0, the next one at once", []).append(
            run(_METER, REFSCOPE_METER_LINGER="0")
        )
        time.sleep(2.5)  # the detached closers finish
        res.setdefault("sampled", []).append(run(sampled))
        # raw_syscalls:sys_exit, same record path, but no meter holds it: what closing the last user costs
        alone = sampled.replace("Sampled(256)", "Sampled(256, event='raw_syscalls/sys_exit')")
        res.setdefault("sampled sys_exit, nobody else holds it", []).append(run(alone))
        holder = subprocess.Popen(
            [sys.executable, "-c", sampled.replace("s.close()", "print(0, 0, flush=True); sys.stdin.read()")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        holder.stdout.readline()
        res.setdefault("sampled, another process holds sys_enter", []).append(run(sampled))
        holder.stdin.close()
        holder.wait()
    end_keepers()
    shutil.rmtree(rt, ignore_errors=True)
    print("open/close (fresh processes; medians):")
    for k, v in res.items():
        wall, o, c, others = (statistics.median(x[i] for x in v) for i in range(4))
        print(
            f"  {k:40s} open+enable {o:6.2f} ms  close {c:6.2f} ms  process {wall:6.1f} ms  (others hold {others:.0f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--only", choices=("exact", "overhead", "openclose"))
    args = ap.parse_args()
    if args.only in (None, "exact"):
        exact(git_binary())
    if args.only in (None, "overhead"):
        overhead(args.runs)
    if args.only in (None, "openclose"):
        openclose(args.runs)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
