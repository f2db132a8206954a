"""The reftable ref store (see ``snapshot``): its public names, whichever module of the package holds them."""

from .rowindex import INDEX_STATS, SPLICE_MAX, BaseRows
from .rows import block_names_suspect, hidden_in, is_current_worktree_ref, pairs_plain, ref_from, value_key
from .snapshot import ReftableSnapshot, ReftableStore, values_sorted

__all__ = [
    "INDEX_STATS",
    "SPLICE_MAX",
    "BaseRows",
    "ReftableSnapshot",
    "ReftableStore",
    "block_names_suspect",
    "hidden_in",
    "is_current_worktree_ref",
    "pairs_plain",
    "ref_from",
    "value_key",
    "values_sorted",
]
