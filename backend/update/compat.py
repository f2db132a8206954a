"""Names this package takes from modules other helpers are restructuring, at their new place or their old one.

This package was written on a base cut before issue 14's moves reached it (``engines.stack_io.Stack`` became
``StackWriter`` over ``formats.reftable.merged``; ``txn.checked_out_worktrees`` moved to ``effects``). One
import site, so that it works on either side of the merge; once merged, the fallbacks can go.
"""

from __future__ import annotations

try:
    from ..engines.stack_io import StackWriter as Stack
except ImportError:  # the base this branch was cut from
    from ..engines.stack_io import Stack
try:
    from ..formats.reftable.merged import SEEK_LIMIT
except ImportError:
    from ..engines.stack_io import SEEK_LIMIT
try:
    from ..effects import checked_out_worktrees
except ImportError:
    from ..txn import checked_out_worktrees

__all__ = ["SEEK_LIMIT", "Stack", "checked_out_worktrees"]
