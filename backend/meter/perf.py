"""The kernel's counters: ``perf_event_open`` tracepoint events, one set per thread (the ``"perf"`` source).

A set is ``raw_syscalls:sys_enter`` (the total), ``syscalls:sys_enter_<name>`` for each of :data:`EVENTS`
(the breakdown; the rest is reported as ``other``) and a task-clock counter (the CPU time of the window),
bound to the calling thread, opened once per thread and enabled only around the operation. With
``children=True`` a second set opened with ``inherit`` also counts every process (and thread) started inside
the operation.

The process-wide part (:class:`Setup`: the ``syscall()`` entry point, the tracepoint ids under tracefs, a
trial open) is probed once, on the first measure. Import cost matters on the CLI's paths: ``_ctypes`` (not
the ~3 ms ``ctypes`` package), ``fcntl`` and ``resource`` load then, not at import.
"""

from __future__ import annotations

import _weakref
import os
import time
from _operator import sub as _sub

from . import keeper
from .ledger import BYTES, PERF_OPEN, extra_calls, ledger, tls

# Per-syscall tracepoints counted for the breakdown: those ref storage, Python and git use. Anything else
# shows up in the total and as "other". Each one costs a little on every enable, disable and context switch
# while counting, so the list stays short. Event names as the kernel spells them; reported under strace's names.
EVENTS = (
    "openat", "open", "read", "pread64", "readv", "write", "pwrite64", "writev", "newfstatat", "newfstat",
    "newstat", "newlstat", "statx", "lseek", "mmap", "munmap", "mprotect", "brk", "close", "rename", "renameat",
    "renameat2", "unlink", "unlinkat", "fsync", "fdatasync", "getdents64", "flock", "fcntl", "mkdir", "mkdirat",
    "rmdir", "ftruncate", "access", "faccessat", "faccessat2", "readlink", "getcwd", "ioctl", "futex", "clone",
    "clone3", "vfork", "execve", "wait4", "pipe2", "dup2", "rt_sigaction", "rt_sigprocmask", "poll",
    "exit_group", "clock_gettime", "getrusage", "perf_event_open",
)  # fmt: skip
_STRACE_NAME = {"newfstat": "fstat", "newstat": "stat", "newlstat": "lstat"}

_PERF_TYPE_SOFTWARE = 1
_PERF_COUNT_SW_TASK_CLOCK = 1
_PERF_TYPE_TRACEPOINT = 2
CPU = "(cpu)"  # the task-clock counter's name in a set: CPU time in ns, never a syscall
_PERF_FORMAT_GROUP = 8
_PERF_FLAG_FD_CLOEXEC = 8
IOC_ENABLE = 0x2400  # _IO('$', 0)
IOC_DISABLE = 0x2401  # _IO('$', 1)
_NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "arm64": 241, "i686": 336, "riscv64": 241}
_COUNTERS_MIN_FDS = 16


class Setup:
    """What every thread's counters need; computed on the first measure, reset in a forked child."""

    __slots__ = (
        "ok",
        "reason",
        "syscall",
        "get_errno",
        "nr",
        "total_id",
        "events",
        "ioctl",
        "clock_in_window",
    )

    def __init__(self) -> None:
        self.ok = False
        self.clock_in_window = False
        self.reason = "not probed"
        self.events: list[tuple[str, int]] = []


setup: Setup | None = None  # see get_setup()


def get_setup() -> Setup:
    """The process-wide setup, probed on first use."""
    global setup
    if setup is None:
        setup = _probe()
    return setup


def _tracing_dirs() -> list[str]:
    forced = os.environ.get("REFSCOPE_TRACEFS")
    if forced is not None:
        return [forced]
    return ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]


def _tracepoint_id(events_dir: str, event: str) -> int | None:
    """The id of tracepoint ``event`` (``raw_syscalls/sys_enter``...), or None when it cannot be read."""
    from ..errors import UnreadableFile
    from ..fileio import read_prefix

    try:
        return int(read_prefix(f"{events_dir}/{event}/id", 64))
    except (OSError, UnreadableFile, ValueError):
        return None


def _probe() -> Setup:
    """Find the tracepoint ids (mounting tracefs when root and nothing is mounted) and load syscall()."""
    s = Setup()
    nr = _NR_PERF_EVENT_OPEN.get(os.uname().machine)
    if nr is None:
        s.reason = f"perf_event_open: unknown syscall number on {os.uname().machine}"
        return s
    import _ctypes

    class _Long(_ctypes._SimpleCData):
        _type_ = "l"

    class _Libc:
        _handle = _ctypes.dlopen(None, 0)

    class _Func(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = _Long

    libc = _Libc()
    syscall = _Func(("syscall", libc))
    s.nr = nr
    s.syscall = lambda *args: syscall(*(_Long(a) if isinstance(a, int) else a for a in args))
    s.get_errno = _ctypes.get_errno

    dirs = _tracing_dirs()
    events_dir = _find_events(dirs)
    may_mount = os.environ.get("REFSCOPE_METER_MOUNT", "1") != "0" and "REFSCOPE_TRACEFS" not in os.environ
    if events_dir is None and may_mount and os.geteuid() == 0:
        # Root with nothing mounted (a fresh machine): mount tracefs where the kernel documents it.
        mount = _Func(("mount", libc))
        mount(b"nodev", b"/sys/kernel/tracing", b"tracefs", _Long(0), None)
        events_dir = _find_events(dirs)
    if events_dir is None:
        s.reason = "tracepoints unavailable: no readable tracefs events (" + ", ".join(dirs) + ")"
        return s
    total = _tracepoint_id(events_dir, "raw_syscalls/sys_enter")
    if total is None:
        s.reason = f"tracepoints unavailable: cannot read {events_dir}/raw_syscalls/sys_enter/id"
        return s
    s.total_id = total
    for ev in EVENTS:
        config = _tracepoint_id(events_dir, f"syscalls/sys_enter_{ev}")
        if config is not None:
            s.events.append((_STRACE_NAME.get(ev, ev), config))
    import fcntl

    s.ioctl = fcntl.ioctl
    # A trial open on this thread decides whether the kernel lets us count (perf_event_paranoid, seccomp...).
    fd = _perf_open(s, s.total_id, disabled=True, inherit=False, group=False, group_fd=-1)
    if fd < 0:
        s.reason = f"perf_event_open refused: {os.strerror(-fd)}"
        return s
    # Does reading the clock make a syscall here (no vDSO for this clocksource)? Then the measure's clock
    # readings must stay outside the counting window.
    s.ioctl(fd, IOC_ENABLE, 0)
    time.perf_counter_ns()
    s.ioctl(fd, IOC_DISABLE, 0)
    s.clock_in_window = int.from_bytes(os.read(fd, 8), "little") == 1  # only the DISABLE ioctl
    os.close(fd)
    s.ok = True
    s.reason = f"perf_event_open tracepoints ({len(s.events)} syscalls by name) under {events_dir}"
    return s


def _find_events(dirs: list[str]) -> str | None:
    for d in dirs:
        if os.path.exists(f"{d}/events/raw_syscalls/sys_enter/id"):
            return f"{d}/events"
    return None


def _perf_open(
    s: Setup,
    config: int,
    *,
    disabled: bool,
    inherit: bool,
    group: bool,
    group_fd: int,
    type_: int = _PERF_TYPE_TRACEPOINT,
) -> int:
    """perf_event_open(attr, pid=0 (this thread), cpu=-1, group_fd, CLOEXEC): the fd, or -errno."""
    flags = (1 if disabled else 0) | (2 if inherit else 0)
    read_format = _PERF_FORMAT_GROUP if group else 0
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size, config, sample_period, sample_type,
    # read_format, flag bits (disabled=bit 0, inherit=bit 1), wakeup_events, bp_type, config1.
    attr = (
        type_.to_bytes(4, "little")
        + (64).to_bytes(4, "little")
        + config.to_bytes(8, "little")
        + bytes(16)
        + read_format.to_bytes(8, "little")
        + flags.to_bytes(8, "little")
        + bytes(16)
    )
    fd = s.syscall(s.nr, attr, 0, -1, group_fd, _PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        return -s.get_errno()
    return fd


class Counters:
    """One thread's tracepoint counters: ``names[i]`` counted by ``fds[i]``; index 0 is the total.

    Without inherit they form one group read with a single ``read`` (PERF_FORMAT_GROUP). The kernel does not
    allow group reads of inherited counters, so with inherit they are still one group (one ioctl enables
    them all) but each fd is read on its own, after the group is disabled. The group's last member, when the
    kernel allows it, is a task-clock counter (``cpu``): the CPU time of the window (children included with
    inherit), so the measure needs no clock syscalls of its own.
    """

    __slots__ = ("fds", "names", "inherit", "last", "depth", "tids", "cpu", "_size", "__weakref__")

    def __init__(self, s: Setup, inherit: bool) -> None:
        self.inherit = inherit
        self.fds: list[int] = []
        budget = _event_budget(len(s.events))
        if budget < 0:
            raise OSError(0, "too few file descriptors to spare for counters")
        self.names: list[str] = [""]
        self.depth = 0
        group = not inherit
        leader = _perf_open(s, s.total_id, disabled=True, inherit=inherit, group=group, group_fd=-1)
        if leader < 0:
            raise OSError(-leader, f"perf_event_open raw_syscalls:sys_enter: {os.strerror(-leader)}")
        self.fds.append(leader)
        events = s.events[:budget]
        if not inherit:  # (an inheriting set is opened under kids_counters' exact accounting)
            ledger()[PERF_OPEN] += 1 + len(events)
        for name, config in events:
            fd = _perf_open(s, config, disabled=False, inherit=inherit, group=group, group_fd=leader)
            if fd >= 0:
                self.fds.append(fd)
                self.names.append(name)
        if not inherit:
            ledger()[PERF_OPEN] += 1
        fd = _perf_open(
            s,
            _PERF_COUNT_SW_TASK_CLOCK,
            disabled=False,
            inherit=inherit,
            group=group,
            group_fd=leader,
            type_=_PERF_TYPE_SOFTWARE,
        )
        self.cpu = fd >= 0
        if self.cpu:
            self.fds.append(fd)
            self.names.append(CPU)
        self._size = 8 * (len(self.fds) + 1)
        self.last = [0] * len(self.fds)
        keeper.live[id(self)] = _weakref.ref(self)  # weak: a finished thread's set must still be collected
        keeper.ensure_exit_hook()

    @property
    def nreads(self) -> int:
        """Syscalls one :meth:`read` makes."""
        return len(self.fds) if self.inherit else 1

    @property
    def read_bytes(self) -> int:
        """Bytes one :meth:`read` returns: they show up in the thread's rchar and must be taken out."""
        return 8 * len(self.fds) if self.inherit else self._size

    def read(self) -> list[int]:
        if self.inherit:
            return [int.from_bytes(os.read(fd, 8), "little") for fd in self.fds]
        return memoryview(os.read(self.fds[0], self._size)).cast("Q").tolist()[1:]

    def close(self) -> None:
        fds, self.fds = self.fds, []
        try:
            keeper.live.pop(id(self), None)
            keeper.retire(fds)
        except (AttributeError, TypeError):  # interpreter teardown (globals gone): the kernel closes them
            pass

    def __del__(self) -> None:
        self.close()


def _event_budget(wanted: int) -> int:
    """How many per-syscall counters a set may hold: each is a file descriptor, and a process running with a
    small RLIMIT_NOFILE must keep its descriptors for its own work (then only the total is counted); -1: not
    even the total and the task clock, below ``_COUNTERS_MIN_FDS``, where those two sets' four descriptors
    would be a third of what the work has (git deletes a thousand packed refs at ``ulimit -n 8``)."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft >= 4096:
        return wanted
    if soft < _COUNTERS_MIN_FDS:
        return -1
    return max(0, min(wanted, (soft - 64) // 8))


def counters(children: bool) -> Counters | None:
    """This thread's counter set (opened on first use, then reused), or None when perf is unavailable."""
    if children:
        return _kids_counters()
    ctr = getattr(tls, "own", None)
    if ctr is None:
        s = get_setup()
        ctr = False
        if s.ok:
            try:
                ctr = Counters(s, inherit=False)
            except OSError:
                ctr = False
        tls.own = ctr
    return ctr or None


def _kids_counters() -> Counters | None:
    """The inheriting set, reopened when threads appeared since it was opened.

    Inherited counters follow every thread this thread starts, not only child processes, and the kernel
    enables the copies with the original: a worker thread started after the set was opened would be counted
    by every later ``children=True`` measure. So the set remembers which threads existed when it was opened
    (none of them inherited it) and is reopened when a new one is alive. The listing and any reopening are
    syscalls of this thread: inside an enclosing measure's window they are counted exactly (its own counters
    read around them) and taken out of its figures.
    """
    ctr = getattr(tls, "kids", None)
    if ctr is False:
        return None
    if ctr is not None and ctr.depth:
        return ctr
    own = getattr(tls, "own", None)
    if own and own.depth:
        r0 = own.read()
        ctr = _refresh_kids(ctr)
        r1 = own.read()
        ex = extra_calls()
        for name, d in zip(own.names, map(_sub, r1, r0), strict=True):
            if d and name != CPU:
                ex.append((name, d))
        # the first read entered before its own capture: inside the window but not in the difference
        ex.append(("read", 1))
        ex.append(("", 1))
        ledger()[BYTES] += 2 * own.read_bytes
    else:
        ctr = _refresh_kids(ctr)
    return ctr or None


def _refresh_kids(ctr: Counters | bool | None) -> Counters | bool:
    tids = os.listdir("/proc/self/task")  # before opening: threads listed here cannot have inherited
    if ctr and ctr.tids.issuperset(tids):
        return ctr
    if ctr:
        ctr.close()
    s = get_setup()
    ctr = False
    if s.ok:
        try:
            ctr = Counters(s, inherit=True)
            ctr.tids = set(tids)
        except OSError:
            ctr = False
    tls.kids = ctr
    return ctr


def forget_after_fork() -> None:
    """A failed probe is retried in a forked child (it may run with other rights); a good one stays."""
    global setup
    if setup is not None and not setup.ok:
        setup = None
