"""What an operation cost: wall and CPU time, syscalls counted by the kernel, bytes read and written.

refscope's promise is that every operation shows its cost, so the CLI, the TUI and the benchmarks all wrap their
work in ``measure(name)``::

    with measure("commit") as m:
        ...
    m.report  # OpReport, set on exit

The modules: ``measuring`` (the context manager, the counting window, :func:`status`), ``report``
(:class:`OpReport`), ``perf`` (the kernel's counters), ``keeper`` (closing them cheaply), ``procio``
(``/proc`` io files), ``strace`` (the children fallback), ``ledger`` (per-thread state and the meter's own
syscalls).

Where the syscall counts come from (every report names it in ``source``):

``"perf"``
    The kernel's own counters: ``perf_event_open`` tracepoint events ``raw_syscalls:sys_enter`` (the total) and
    ``syscalls:sys_enter_<name>`` (the breakdown, :data:`EVENTS`; the rest is ``other``), bound to the calling
    thread, opened once per thread and enabled only around the operation (one group: one ioctl to enable,
    one to disable, one read). Exact: the tests compare them with strace's, call for call. With
    ``children=True`` a second set opened with ``inherit`` also counts every process (and thread) started inside
    the operation (the git engine); it is reopened when threads appeared since it was opened, since those
    would have inherited it. Tracepoint ids come from tracefs (``/sys/kernel/tracing``, mounted there when
    running as root and nothing is mounted; ``REFSCOPE_METER_MOUNT=0`` forbids that, ``REFSCOPE_TRACEFS=DIR``
    looks elsewhere). Each counter is a file descriptor: under a small RLIMIT_NOFILE only the total is counted.
``"strace"``
    ``children=True`` only, when tracepoints are not allowed: child processes whose argv went through
    :func:`child_argv` run under ``strace -f -c``; the report holds their syscalls (strace slows them down, so the
    times are distorted and say so only through this source).
``"proc"``
    ``/proc/thread-self/io`` (``/proc/self/io`` with ``children=True``): ``syscr``/``syscw``, i.e. only the
    read-family and write-family syscalls, reported as ``reads`` and ``writes``.

``REFSCOPE_METER=perf|strace|proc`` (or ``measure(..., source=...)``) forces a source for tests; a forced source
that cannot work falls back down the list, and the report says what was really used. :func:`status` tells
which source a measure would use and why.

Measures nest (a commit's phases inside the commit): the meter's own syscalls (reading counters, clocks and
/proc) are taken out of every figure, including those of the measures around it. A measure belongs to the
thread that entered it.

Bytes read and written always come from ``rchar``/``wchar`` of the same ``/proc`` file (the thread's own; the
whole process, i.e. all its threads, plus its reaped children with ``children=True``).

Wall time is ``perf_counter_ns`` and CPU time a task-clock counter in the same group (children included with
``children=True``); both are read inside the counting window when the clock needs no syscall (vDSO), so the
time reported is the operation's, not the meter's. Cost (tests/bench/bench_engines.py --overhead, on a 2-CPU
VM under load 6-8): the reported time of a ~1 ms operation is within ~1.5% of the bare operation for up to
~30 syscalls and ~3-5% for 300 (the tracepoints' work on each syscall while counting, ~0.1-0.2 us); the
caller pays in addition a fixed ~40-100 us per measure there (5 syscalls, some Python; ~10-15 us with warm
caches), and nothing while counters are merely open.

Why per-syscall counters and a keeper, not one sampled counter (issue 14's experiment,
tests/bench/bench_meter_sampled.py). The alternative: ONE ``raw_syscalls:sys_enter`` event with
``sample_period`` 1 and ``PERF_SAMPLE_RAW`` into an mmap'ed ring, the syscall number read from each record.
It is exact (per syscall number, against ``strace -f -n``, own thread and children, as long as the ring holds
every record; its count minus the records read is the number lost), and opens in ~0.6 ms instead of ~0.8-1.2
ms. It loses on everything else, measured on a 2-CPU VM, alternating runs, medians:

- each counted syscall costs 4-7 times as much: 100k ``getpid`` on the thread +0.8 us per syscall against
  +0.12-0.25 us for the per-syscall set at load 3, +2.3 us against +0.5 us at load 10; the same in a child
  (inherited): +0.8 against +0.2 us, +2.1 against +0.5 us. Reading the records back in Python adds ~0.3-0.7
  us per syscall at the end of every measure;
- each record is 80 bytes (8 header, 4 size, 64 raw, padding), and the ring cannot be drained inside the
  window without adding syscalls to it (a reader thread would take the GIL from the measured one): a
  52k-syscall ``git update-ref`` needs a 4 MB ring per CPU, 1M syscalls 80 MB of locked memory, and a
  non-root user gets 516 KB (``perf_event_mlock_kb``), ~6.5k syscalls before the breakdown goes inexact;
- the kernel refuses to mmap an inherited per-task event (``cpu=-1``: EINVAL), so counting children takes
  one event and one ring per CPU;
- it is still a tracepoint: closing its last user waits for an RCU grace period (23-44 ms, measured on a
  tracepoint no other process held), so without a keeper every CLI command would exit that much later.
  With other users alive it closes in ~0.05 ms; a per-syscall set with its keeper alive in ~0.2-0.35 ms, and
  handing it to a new keeper (a double fork) ~2 ms at load 2, 11-18 ms at load 9.

Import cost matters (the CLI's whole-process targets): the package imports only builtins, ``os``, ``time``
and ``collections``; ``_ctypes`` (not the ~3 ms ``ctypes`` package), ``fcntl``, ``resource`` and ``fileio`` load
on first use.
"""

from .measuring import measure, status
from .perf import EVENTS
from .report import SOURCES, OpReport
from .strace import child_argv, parse_strace_summary

__all__ = ["EVENTS", "SOURCES", "OpReport", "child_argv", "measure", "parse_strace_summary", "status"]
