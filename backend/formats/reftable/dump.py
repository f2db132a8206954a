"""Describe one reftable file block by block and record by record, for ``refscope dump``.

API (for app/cmd_dump.py):
    describe(path: str) -> TableDescription
        NamedTuple with ``header`` (dict), ``footer`` (dict incl. crc and crc_ok), ``blocks`` (list of
        BlockDescription). Each BlockDescription has ``type`` ("r"/"g"/"o"/"i"), ``section``, ``offset``,
        ``length``, ``block_len``, ``restart_count``, ``restart_offsets``, ``records`` (list of dicts:
        ``offset`` (absolute file offset of the record, for log blocks offset inside the inflated block),
        ``prefix_len``, ``suffix_len``, ``key`` (bytes), ``value_type``, plus per-kind fields: ref:
        ``name, update_index, value, peeled, target``; log: ``name, update_index, log_type, old, new,
        ident_name, email, time, tz, message``; obj: ``prefix, positions``; index: ``last_key, position``).
    to_json_obj(desc: TableDescription) -> dict   (bytes decoded with surrogateescape)
Raises CorruptStore(file, what, offset) on anything git would reject.
"""

from __future__ import annotations
