"""What an operation cost: wall and CPU time, syscalls counted by the kernel, bytes read and written.

refscope's promise is that every operation shows its cost, so the CLI, the TUI and the benchmarks all wrap their
work in ``measure(name)``::

    with measure("commit") as m:
        ...
    m.report  # OpReport, set on exit

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

Import cost matters (the CLI's whole-process targets): this module imports only builtins, ``os``, ``time`` and
``typing``; ``_ctypes`` (not the ~3 ms ``ctypes`` package), ``fcntl`` and ``resource`` load on first use.
"""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import _thread
import _weakref
import os
import time
from _operator import sub as _sub
from collections import namedtuple
from itertools import compress as _compress

SOURCES = ("perf", "strace", "proc")

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
_CPU = "(cpu)"  # the task-clock counter's name in a set: CPU time in ns, never a syscall
_PERF_FORMAT_GROUP = 8
_PERF_FLAG_FD_CLOEXEC = 8
_IOC_ENABLE = 0x2400  # _IO('$', 0)
_IOC_DISABLE = 0x2401  # _IO('$', 1)
_NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "arm64": 241, "i686": 336, "riscv64": 241}


class OpReport(
    namedtuple(
        "OpReport",
        "name wall_ms cpu_ms syscalls_total syscalls_by_name bytes_read bytes_written source children",
    )
):
    """The cost of one operation (see the module docstring for what each source counts):
    ``syscalls_by_name`` is a dict name -> count; times in ms; ``children``: whether child processes count."""

    __slots__ = ()

    def syscalls_json(self) -> dict:
        """The DESIGN.md shape of the syscall figures: ``{"total", "by_name", "source"}``."""
        return {"total": self.syscalls_total, "by_name": dict(self.syscalls_by_name), "source": self.source}

    def to_json(self) -> dict:
        """A JSON-ready dict: ``{"name", "wall_ms", "cpu_ms", "syscalls": {...}, "bytes_read", ...}``."""
        return {
            "name": self.name,
            "wall_ms": round(self.wall_ms, 3),
            "cpu_ms": round(self.cpu_ms, 3),
            "syscalls": self.syscalls_json(),
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "children": self.children,
        }


# ---------------------------------------------------------------------------------------------------------
# Process-wide setup (lazy, once): the syscall() entry point and the tracepoint ids.


class _Setup:
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


_setup: _Setup | None = None
_strace_path: str | None | bool = False  # False: not looked up yet


def _tracing_dirs() -> list[str]:
    forced = os.environ.get("REFSCOPE_TRACEFS")
    if forced is not None:
        return [forced]
    return ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]


def _read_small(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 64)
    except OSError:
        return None
    finally:
        os.close(fd)


def _probe() -> _Setup:
    """Find the tracepoint ids (mounting tracefs when root and nothing is mounted) and load syscall()."""
    s = _Setup()
    nr = _NR_PERF_EVENT_OPEN.get(os.uname().machine)
    if nr is None:
        s.reason = f"perf_event_open: unknown syscall number on {os.uname().machine}"
        return s
    try:
        import _ctypes
    except ImportError as err:  # pragma: no cover - CPython always has it on Linux
        s.reason = f"no _ctypes: {err}"
        return s

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
    total = _read_small(f"{events_dir}/raw_syscalls/sys_enter/id")
    if total is None:
        s.reason = f"tracepoints unavailable: cannot read {events_dir}/raw_syscalls/sys_enter/id"
        return s
    s.total_id = int(total)
    for ev in EVENTS:
        raw = _read_small(f"{events_dir}/syscalls/sys_enter_{ev}/id")
        if raw is not None:
            s.events.append((_STRACE_NAME.get(ev, ev), int(raw)))
    import fcntl

    s.ioctl = fcntl.ioctl
    # A trial open on this thread decides whether the kernel lets us count (perf_event_paranoid, seccomp...).
    fd = _perf_open(s, s.total_id, disabled=True, inherit=False, group=False, group_fd=-1)
    if fd < 0:
        s.reason = f"perf_event_open refused: {os.strerror(-fd)}"
        return s
    # Does reading the clock make a syscall here (no vDSO for this clocksource)? Then the measure's clock
    # readings must stay outside the counting window.
    s.ioctl(fd, _IOC_ENABLE, 0)
    time.perf_counter_ns()
    s.ioctl(fd, _IOC_DISABLE, 0)
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
    s: _Setup,
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


def _get_setup() -> _Setup:
    global _setup
    if _setup is None:
        _setup = _probe()
    return _setup


def status(children: bool = False) -> tuple[str, str]:
    """(the source a measure on this thread would use now, why): for headers of bench tables and diagnostics."""
    forced = os.environ.get("REFSCOPE_METER") or ""
    ctr = None if forced in ("proc", "strace") else _counters(children)
    if ctr is not None:
        return "perf", _get_setup().reason
    why = f"forced by REFSCOPE_METER={forced}" if forced in ("proc", "strace") else _get_setup().reason
    if children and forced != "proc" and _strace() is not None:
        return "strace", why
    return "proc", why


def _strace() -> str | None:
    global _strace_path
    if _strace_path is False:
        import shutil

        _strace_path = shutil.which("strace")
    return _strace_path  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------------
# Per-thread counters.


class _Counters:
    """One thread's tracepoint counters: ``names[i]`` counted by ``fds[i]``; index 0 is the total.

    Without inherit they form one group read with a single ``read`` (PERF_FORMAT_GROUP). The kernel does not
    allow group reads of inherited counters, so with inherit they are still one group (one ioctl enables
    them all) but each fd is read on its own, after the group is disabled. The group's last member, when the
    kernel allows it, is a task-clock counter (``cpu``): the CPU time of the window (children included with
    inherit), so the measure needs no clock syscalls of its own.
    """

    __slots__ = ("fds", "names", "inherit", "last", "depth", "tids", "cpu", "_size", "__weakref__")

    def __init__(self, s: _Setup, inherit: bool) -> None:
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
        if not inherit:  # (an inheriting set is opened under _kids_counters' exact accounting)
            _ledger()[_PERF_OPEN] += 1 + len(events)
        for name, config in events:
            fd = _perf_open(s, config, disabled=False, inherit=inherit, group=group, group_fd=leader)
            if fd >= 0:
                self.fds.append(fd)
                self.names.append(name)
        if not inherit:
            _ledger()[_PERF_OPEN] += 1
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
            self.names.append(_CPU)
        self._size = 8 * (len(self.fds) + 1)
        self.last = [0] * len(self.fds)
        _live[id(self)] = _weakref.ref(self)  # weak: a finished thread's set must still be collected
        _ensure_exit_hook()

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
            _live.pop(id(self), None)
            _retire(fds)
        except (AttributeError, TypeError):  # interpreter teardown (globals gone): the kernel closes them
            pass

    def __del__(self) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------------
# Closing counters without paying for it.
#
# Releasing the last perf user of a tracepoint waits for RCU grace periods while holding the kernel's
# event_mutex: measured here ~35 ms per tracepoint, ~2 s for a full set of 57. Registering a tracepoint
# nobody uses costs ~0.3 ms, and waits for that mutex. So two things are expensive: closing counters nobody
# else holds (a CLI process would exit two seconds late), and opening counters while another process is
# closing its last ones (a `refscope delete` right after another one started 1.8 s late, every open queued
# behind a grace period). With every tracepoint held by another process, a set opens in ~1.5 ms and
# closes in ~0.15 ms.
#
# Hence a keeper: counters are never closed by the thread that used them; their descriptors are retired,
# and at exit (or whenever many have been retired) handed over. If a keeper is alive (it holds an flock on
# :func:`_keeper_path`), every tracepoint has another user and they are closed on the spot, cheaply.
# Otherwise a detached grandchild takes them and becomes the keeper: it holds them, and with them every
# tracepoint, until nobody has used the meter for ``REFSCOPE_METER_LINGER`` seconds (default 60; users touch
# the lock file), then drops the lock and closes them, the grace periods passing in a process nobody waits
# for. It holds no other descriptor (no pipe or terminal stays open on its account) and no counter of it
# counts anything: they belong to threads that have exited.

_retired: list[int] = []
_RETIRED_MAX = 1024
_LINGER_S = 60.0
_live: dict[int, _weakref.ref] = {}  # every open counter set, of every thread
_exit_hook = False


def _ensure_exit_hook() -> None:
    global _exit_hook
    if not _exit_hook:
        import atexit

        atexit.register(_at_exit)
        _exit_hook = True


def _at_exit() -> None:
    for ref in list(_live.values()):
        ctr = ref()
        if ctr is not None:
            ctr.close()
    _hand_off_retired()


def _retire(fds: list[int]) -> None:
    if fds:
        _retired.extend(fds)
        if len(_retired) > _RETIRED_MAX:
            _hand_off_retired()


def _keeper_path() -> str:
    return f"{os.environ.get('XDG_RUNTIME_DIR') or '/tmp'}/refscope-meter-{os.getuid()}.keeper"


def _linger_s() -> float:
    try:
        return max(0.0, float(os.environ.get("REFSCOPE_METER_LINGER", _LINGER_S)))
    except ValueError:
        return _LINGER_S


def _keeper_lock() -> int | None:
    """The keeper's lock file, locked by us (no keeper is alive: we may become it), or None when a keeper
    is alive (its idle clock is reset) or the file cannot be used."""
    import fcntl

    try:
        fd = os.open(_keeper_path(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            os.utime(fd)
        except OSError:
            pass
        os.close(fd)
        return None
    return fd


def _hand_off_retired() -> None:
    """Close every retired descriptor without waiting for the kernel's grace periods (see above)."""
    fds = _retired[:]
    del _retired[:]
    if not fds:
        return
    linger = _linger_s()
    lock = _keeper_lock() if linger else None
    if linger and lock is None:  # a keeper holds every tracepoint: closing ours is cheap
        for fd in fds:
            _close_quietly(fd)
        return
    import fcntl  # noqa: F401  (loaded before forking: the keeper imports nothing itself)

    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        for fd in fds:
            _close_quietly(fd)
        return
    if pid == 0:  # child: fork the keeper and leave at once, so the parent reaps us without waiting
        try:
            if os.fork() == 0:
                _keep(fds, r, lock, linger)
        finally:
            os._exit(0)
    os.close(r)
    for fd in fds:
        _close_quietly(fd)
    if lock is not None:
        os.close(lock)
    os.close(w)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def _keep(fds: list[int], r: int, lock: int | None, linger: float) -> None:
    """The detached grandchild: hold ``fds`` (while the lock says a keeper is alive) until nobody has used the
    meter for ``linger`` seconds, then release the lock first (a newcomer then keeps its own) and close them."""
    keep = sorted({*fds, r} | ({lock} if lock is not None else set()))
    low = 0
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    try:
        os.setsid()  # not in the caller's process group: a ^C there is not meant for us
    except OSError:
        pass
    os.read(r, 1)  # EOF: the parent has closed its copies; ours are the last references
    os.close(r)
    if lock is not None:
        import fcntl

        try:
            os.utime(lock)
            while True:
                idle = time.time() - os.fstat(lock).st_mtime
                if idle >= linger:
                    break
                time.sleep(linger - idle + 0.05)
            fcntl.flock(lock, fcntl.LOCK_UN)
        except OSError:
            pass
    for fd in fds:
        _close_quietly(fd)


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


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


_COUNTERS_MIN_FDS = 16


_tls = _thread._local()


def _counters(children: bool) -> _Counters | None:
    """This thread's counter set (opened on first use, then reused), or None when perf is unavailable."""
    if children:
        return _kids_counters()
    ctr = getattr(_tls, "own", None)
    if ctr is None:
        s = _get_setup()
        ctr = False
        if s.ok:
            try:
                ctr = _Counters(s, inherit=False)
            except OSError:
                ctr = False
        _tls.own = ctr
    return ctr or None


def _kids_counters() -> _Counters | None:
    """The inheriting set, reopened when threads appeared since it was opened.

    Inherited counters follow every thread this thread starts, not only child processes, and the kernel
    enables the copies with the original: a worker thread started after the set was opened would be counted
    by every later ``children=True`` measure. So the set remembers which threads existed when it was opened
    (none of them inherited it) and is reopened when a new one is alive. The listing and any reopening are
    syscalls of this thread: inside an enclosing measure's window they are counted exactly (its own counters
    read around them) and taken out of its figures.
    """
    ctr = getattr(_tls, "kids", None)
    if ctr is False:
        return None
    if ctr is not None and ctr.depth:
        return ctr
    own = getattr(_tls, "own", None)
    if own and own.depth:
        r0 = own.read()
        ctr = _refresh_kids(ctr)
        r1 = own.read()
        extra = _extra()
        for name, d in zip(own.names, map(_sub, r1, r0), strict=True):
            if d and name != _CPU:
                extra.append((name, d))
        # the first read entered before its own capture: inside the window but not in the difference
        extra.append(("read", 1))
        extra.append(("", 1))
        _ledger()[_BYTES] += 2 * own.read_bytes
    else:
        ctr = _refresh_kids(ctr)
    return ctr or None


def _refresh_kids(ctr: _Counters | bool | None) -> _Counters | bool:
    tids = os.listdir("/proc/self/task")  # before opening: threads listed here cannot have inherited
    if ctr and ctr.tids.issuperset(tids):
        return ctr
    if ctr:
        ctr.close()
    s = _get_setup()
    ctr = False
    if s.ok:
        try:
            ctr = _Counters(s, inherit=True)
            ctr.tids = set(tids)
        except OSError:
            ctr = False
    _tls.kids = ctr
    return ctr


def _extra() -> list[tuple[str, int]]:
    """Bookkeeping syscalls counted exactly (by the own set) rather than known in advance: (name, count),
    with "" for the total. Emptied whenever no measure is active on the thread."""
    ex = getattr(_tls, "extra", None)
    if ex is None:
        ex = _tls.extra = []
    return ex


class _IoFile:
    """A /proc io file kept open and re-read with pread (seq files regenerate at offset 0)."""

    __slots__ = ("fd",)

    def __init__(self, path: str) -> None:
        _ledger()[_OPENAT] += 1
        self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> tuple[int, int, int, int, int]:
        """(rchar, wchar, syscr, syscw, bytes this read itself returned)."""
        data = os.pread(self.fd, 512, 0)
        v = data.split()
        # rchar: N / wchar: N / syscr: N / syscw: N / read_bytes ... in this fixed order
        return int(v[1]), int(v[3]), int(v[5]), int(v[7]), len(data)

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


_proc_self_io: _IoFile | None = None


def _io(children: bool) -> _IoFile | None:
    global _proc_self_io
    try:
        if children:
            if _proc_self_io is None:
                _proc_self_io = _IoFile("/proc/self/io")
            return _proc_self_io
        f = getattr(_tls, "io", None)
        if f is None:
            f = _tls.io = _IoFile("/proc/thread-self/io")
        return f
    except OSError:
        return None


def _after_fork_in_child() -> None:
    """Counters and /proc files belong to the parent's thread and process: forget them in a forked child."""
    global _tls, _proc_self_io, _setup
    for ref in _live.values():  # the parent still holds them: our copies close cheaply with this process
        ctr = ref()
        if ctr is not None:
            ctr.fds = []
    _live.clear()
    del _retired[:]
    _tls = _thread._local()
    _proc_self_io = None
    if _setup is not None and not _setup.ok:
        _setup = None


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------------------------------------------------
# The context manager.


class measure:
    """``with measure(name[, children=True]) as m: ...`` then ``m.report`` (an OpReport).

    Nesting works: an inner measure on the same thread reads the already-running counters at its start and
    end (its own reads are subtracted from its figures; the outer figures include them).
    """

    __slots__ = (
        "name",
        "children",
        "report",
        "_forced",
        "_src",
        "_ctr",
        "_nested",
        "_base",
        "_io",
        "_io0",
        "_c0",
        "_ru0",
        "_t0",
        "_straced",
        "_prev",
        "_led0",
        "_ex0",
    )

    def __init__(self, name: str, children: bool = False, source: str | None = None) -> None:
        self.name = name
        self.children = children
        self.report: OpReport | None = None
        self._forced = source

    def __enter__(self) -> measure:
        children = self.children
        if _resource is None:
            _first_use()
        forced = self._forced or _env_source()
        ctr = None if forced in ("proc", "strace") else _counters(children)
        if ctr is not None:
            self._src = "perf"
        elif children and forced != "proc" and _strace() is not None:
            self._src = "strace"
        else:
            self._src = "proc"
        self._ctr = ctr
        self._straced = None
        self._prev = getattr(_tls, "active", None)
        _tls.active = self
        led = _ledger()
        io = self._io = _io(children)
        if io is not None:
            self._io0 = io.read()
            led[_PREAD] += 1
            led[_BYTES] += self._io0[4]
        else:
            self._io0 = None
        if ctr is None or not ctr.cpu:  # CPU time from clocks (the counters' task-clock otherwise)
            if children:
                ru = _resource.getrusage(_resource.RUSAGE_CHILDREN)
                self._ru0 = ru.ru_utime + ru.ru_stime
                led[_GETRUSAGE] += 1
            self._c0 = time.thread_time_ns()
            led[_CLOCK] += 1
        if ctr is None:
            self._led0 = led.copy()
            self._ex0 = len(_extra())
            self._t0 = time.perf_counter_ns()
            return self
        if ctr.depth:
            self._nested = True
            self._base = ctr.read()
            led[_READ] += ctr.nreads
            led[_BYTES] += ctr.read_bytes
            ctr.depth += 1
            self._led0 = led.copy()
            self._ex0 = len(_extra())
            self._t0 = time.perf_counter_ns()
            return self
        self._nested = False
        self._base = ctr.last
        ctr.depth = 1
        ioctl = _setup.ioctl  # type: ignore[union-attr]
        led[_IOCTL] += 1
        self._led0 = led.copy()
        self._ex0 = len(_extra())
        if _setup.clock_in_window:  # type: ignore[union-attr]
            # the clock is read inside the counting window (vDSO: no syscall), so the time reported is the
            # operation's and not the enabling's or disabling's
            ioctl(ctr.fds[0], _IOC_ENABLE, 0)
            self._t0 = time.perf_counter_ns()
        else:
            self._t0 = time.perf_counter_ns()
            ioctl(ctr.fds[0], _IOC_ENABLE, 0)
        return self

    def __exit__(self, *exc: object) -> None:
        ctr = self._ctr
        led = _tls.ledger
        after = None
        extra: list[tuple[str, int]] = []
        if ctr is not None:
            if self._nested:
                after = ctr.read()
                t1 = time.perf_counter_ns()
                inner = list(map(_sub, led, self._led0))
                extra = _tls.extra[self._ex0 :]
                led[_READ] += ctr.nreads
                led[_BYTES] += ctr.read_bytes
            else:
                if _setup.clock_in_window:  # type: ignore[union-attr]
                    t1 = time.perf_counter_ns()
                    _setup.ioctl(ctr.fds[0], _IOC_DISABLE, 0)  # type: ignore[union-attr]
                else:
                    _setup.ioctl(ctr.fds[0], _IOC_DISABLE, 0)  # type: ignore[union-attr]
                    t1 = time.perf_counter_ns()
                inner = list(map(_sub, led, self._led0))
                extra = _tls.extra[self._ex0 :]
                led[_IOCTL] += 1
            ctr.depth -= 1
        else:
            t1 = time.perf_counter_ns()
            inner = list(map(_sub, led, self._led0))
        cpu_ns = 0
        if ctr is None or not ctr.cpu:
            cpu_ns = time.thread_time_ns() - self._c0
            led[_CLOCK] += 1
            if self.children:
                ru = _resource.getrusage(_resource.RUSAGE_CHILDREN)
                cpu_ns += round((ru.ru_utime + ru.ru_stime - self._ru0) * 1e9)
                led[_GETRUSAGE] += 1
        if ctr is not None and not self._nested:
            after = ctr.read()
            ctr.last = after
            led[_READ] += ctr.nreads
            led[_BYTES] += ctr.read_bytes
        io1 = None
        if self._io is not None:
            io1 = self._io.read()
            led[_PREAD] += 1
            led[_BYTES] += io1[4]
        _tls.active = self._prev
        if self._prev is None:
            _tls.extra.clear()

        bytes_read = bytes_written = 0
        if io1 is not None and self._io0 is not None:
            r0, w0, sr0, sw0, n0 = self._io0
            # the first read of the io file counted its own bytes, and so did the counter reads in between
            # and everything nested measures read for their own bookkeeping
            bytes_read = io1[0] - r0 - n0 - inner[_BYTES]
            if ctr is not None:
                bytes_read -= ctr.read_bytes * (2 if self._nested else 1)
            bytes_written = io1[1] - w0
        source = self._src
        if after is not None:
            by_name, total = _deltas(
                ctr, self._base, after, self._nested, inner, [] if ctr.inherit else extra
            )
            if ctr.cpu:
                cpu_ns = after[-1] - self._base[-1]
                by_name.pop(_CPU, None)
        elif source == "strace" and self._straced:
            by_name = _parse_strace_files(self._straced)
            total = by_name.pop("total", sum(by_name.values()))
        else:
            source = "proc"
            total = 0
            by_name = {}
            if io1 is not None and self._io0 is not None:
                # minus the read of the io file itself and the reads nested measures made for themselves
                reads = io1[2] - self._io0[2] - 1 - inner[_PREAD] - inner[_READ]
                writes = io1[3] - self._io0[3]
                total = reads + writes
                by_name = {k: v for k, v in (("reads", reads), ("writes", writes)) if v}
        self.report = OpReport(
            self.name,
            (t1 - self._t0) / 1e6,
            cpu_ns / 1e6,
            total,
            by_name,
            bytes_read,
            bytes_written,
            source,
            self.children,
        )


_resource = None
_environ_data = getattr(os.environ, "_data", None)


def _env_source() -> str:
    """REFSCOPE_METER, looked up on every measure (tests set it) but without os.environ's slow path."""
    if _environ_data is not None:
        v = _environ_data.get(b"REFSCOPE_METER")
        return v.decode() if v else ""
    return os.environ.get("REFSCOPE_METER") or ""


def _first_use() -> None:
    """Module loads that make syscalls (a shared object is opened and read) happen on the first measure of
    the process, which no other measure encloses, so no figure ever contains them."""
    global _resource
    import resource

    _resource = resource
    _get_setup()


# The meter's own syscalls, counted per thread as they are made, so that an enclosing measure can take out
# those of the measures nested inside it: indices into the per-thread ledger (the last is bytes read).
_PREAD, _CLOCK, _GETRUSAGE, _READ, _IOCTL, _OPENAT, _PERF_OPEN, _BYTES = range(8)
_LEDGER_NAMES = ("pread64", "clock_gettime", "getrusage", "read", "ioctl", "openat", "perf_event_open")


def _ledger() -> list[int]:
    led = getattr(_tls, "ledger", None)
    if led is None:
        led = _tls.ledger = [0] * 8
    return led


def _deltas(
    ctr: _Counters, base: list[int], after: list[int], nested: bool, inner: list[int], extra: list
) -> tuple[dict[str, int], int]:
    """Counter differences, minus the meter's own syscalls that fell inside the window.

    Outermost: the DISABLE ioctl enters while counting (1 ``ioctl``). Nested: the counters are read at both
    ends; every fd read of the closing sequence but also the rest of the opening one lands inside, which adds
    up to exactly one ``read`` per fd for the total and for ``read`` (a group read is one fd). ``inner`` holds
    the bookkeeping syscalls of measures nested inside this one (ledger indices), also taken out, and
    ``extra`` those counted exactly as they happened (see ``_kids_counters``).
    """
    diffs = list(map(_sub, after, base))  # C-level loops only: this runs on every measure
    by_name = dict(zip(_compress(ctr.names, diffs), filter(None, diffs), strict=False))
    total = by_name.pop("", 0)
    by_name.pop(_CPU, None)
    own_name, own = ("read", ctr.nreads) if nested else ("ioctl", 1)
    if extra or any(inner):
        ledger = [(own_name, own)]
        ledger += [(name, m) for name, m in zip(_LEDGER_NAMES, inner, strict=False) if m]
        total -= sum([m for _, m in ledger]) + sum([m for name, m in extra if not name])
        ledger += [e for e in extra if e[0]]
    else:
        ledger = ((own_name, own),)
        total -= own
    for name, m in ledger:
        if name in by_name:
            left = by_name[name] - m
            if left > 0:
                by_name[name] = left
            else:
                del by_name[name]
    counted = sum(by_name.values())
    if total > counted:
        by_name["other"] = total - counted
    return by_name, total


# ---------------------------------------------------------------------------------------------------------
# Child processes under strace (the fallback for children=True).


def child_argv(argv: list[str]) -> list[str]:
    """The argv to start a child with so the running ``measure(..., children=True)`` counts it.

    With perf counters (or no measure running) this is ``argv`` unchanged: inherited counters see the child.
    Under the strace fallback it prefixes ``strace -f -c`` writing to a file the measure reads at its end.
    Engines that spawn processes call this unconditionally.
    """
    active = getattr(_tls, "active", None)
    if active is None or active._src != "strace" or not active.children:
        return list(argv)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="refscope-strace-", suffix=".txt")
    os.close(fd)
    if active._straced is None:
        active._straced = []
    active._straced.append(path)
    return [_strace() or "strace", "-f", "-qq", "-c", "-U", "name,calls", "-o", path, "--", *argv]


def _parse_strace_files(paths: list[str]) -> dict[str, int]:
    """Sum ``strace -c -U name,calls`` tables (the ``total`` row under key "total"); removes the files."""
    out: dict[str, int] = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                text = f.read().decode("ascii", "replace")
        except OSError:
            continue
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        out.update({k: out.get(k, 0) + v for k, v in parse_strace_summary(text).items()})
    return out


def parse_strace_summary(text: str) -> dict[str, int]:
    """``{syscall: calls}`` from an ``strace -c`` table (default columns or ``-U name,calls``), plus "total"."""
    out: dict[str, int] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("-"):
            continue
        if header is None:
            if "syscall" in parts and "calls" in parts:
                header = parts
            continue
        if header[0] == "%":  # default columns: % time, seconds, usecs/call, calls, [errors], syscall
            name, calls = parts[-1], parts[3]
        else:
            name, calls = parts[header.index("syscall")], parts[header.index("calls")]
        out[name] = out.get(name, 0) + int(calls)
    return out
