"""What an operation cost: wall and CPU time, syscalls counted by the kernel, bytes read and written.

See :mod:`.measuring` for how the figures are taken.
"""

from .measuring import EVENTS, SOURCES, OpReport, child_argv, measure, parse_strace_summary, status

__all__ = ["EVENTS", "SOURCES", "OpReport", "child_argv", "measure", "parse_strace_summary", "status"]
