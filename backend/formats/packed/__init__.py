"""The ``packed-refs`` file: ``file`` (mapping, header, records, seek: ``PackedRefs``), ``rowindex`` (the
row index, its derivation after a rewrite, the hidden-name scan), ``check`` (the whole-file check a
rewrite needs). ``PackedRefs`` is one class; the two other modules hold its bases."""

from .check import checked_names
from .file import HEADER_PREFIX, PackedRecord, PackedRefs
from .rowindex import Offsets, changed_span

__all__ = ["HEADER_PREFIX", "Offsets", "PackedRecord", "PackedRefs", "changed_span", "checked_names"]
