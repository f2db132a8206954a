"""The ``packed-refs`` file: ``file`` (mapping, header, records, seek), ``rowindex`` (the row index, its
derivation after a rewrite, the hidden-name scan), ``check`` (the whole-file check a rewrite needs)."""

from .file import (
    HEADER_PREFIX,
    Offsets,
    PackedRecord,
    PackedRefs,
    changed_span,
    checked_names,
)

__all__ = [
    "HEADER_PREFIX",
    "Offsets",
    "PackedRecord",
    "PackedRefs",
    "changed_span",
    "checked_names",
]
