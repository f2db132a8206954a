"""Child processes under ``strace -f -c``: the ``"strace"`` source, for ``children=True`` when the kernel's
counters are not allowed. strace slows the children down, so their times are distorted; the report says so
only through its source."""

# ruff: noqa: SIM105  (contextlib.suppress would cost an import on the CLI path)
from __future__ import annotations

import os

from .ledger import tls

_strace_path: str | None | bool = False  # False: not looked up yet


def strace_path() -> str | None:
    """Where strace is (looked up once), or None."""
    global _strace_path
    if _strace_path is False:
        import shutil

        _strace_path = shutil.which("strace")
    return _strace_path  # type: ignore[return-value]


def child_argv(argv: list[str]) -> list[str]:
    """The argv to start a child with so the running ``measure(..., children=True)`` counts it.

    With perf counters (or no measure running) this is ``argv`` unchanged: inherited counters see the child.
    Under the strace fallback it prefixes ``strace -f -c`` writing to a file the measure reads at its end.
    Engines that spawn processes call this unconditionally.
    """
    active = getattr(tls, "active", None)
    if active is None or active.straced is None:
        return list(argv)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="refscope-strace-", suffix=".txt")
    os.close(fd)
    active.straced.append(path)
    return [strace_path() or "strace", "-f", "-qq", "-c", "-U", "name,calls", "-o", path, "--", *argv]


def parse_strace_files(paths: list[str]) -> dict[str, int]:
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
