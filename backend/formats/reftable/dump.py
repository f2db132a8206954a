"""Describe one reftable file block by block and record by record, for ``refscope dump``.

API (for app/cmd_dump.py):

``describe(path: str) -> TableDescription``; ``describe_lazily(path)``: the same with ``blocks`` an iterator
    that decodes one block at a time (``refscope dump`` streams: its memory does not grow with the table)
    ``TableDescription`` NamedTuple: ``path``, ``size``, ``header`` (dict: magic, version, block_size,
    min_update_index, max_update_index, hash_id, header_size), ``footer`` (dict: offset, ref_index_position,
    obj_position, obj_id_len, obj_index_position, log_position, log_index_position, crc (int), crc_ok (bool)),
    ``blocks`` (list of ``BlockDescription``).
``BlockDescription`` NamedTuple: ``type`` ("r"/"g"/"o"/"i"), ``section`` ("ref", "ref_index", "obj",
    "obj_index", "log", "log_index"), ``offset`` (file offset of the block; the first block starts at 0 with the
    file header), ``header_offset`` (where the block type byte is), ``length`` (bytes on disk incl. padding; the
    compressed size for log blocks), ``block_len`` (as stored; inflated size for log blocks), ``padding``,
    ``restart_count``, ``restart_offsets``, ``records`` (list of dicts, see ``iter_block_records``).
``iter_block_records(table, block) -> Iterator[dict]``
    One dict per record: ``offset`` (absolute file offset; for log blocks the offset inside the inflated
    block, with ``inflated: True``), ``size``, ``prefix_len``, ``suffix_len``, ``key`` (bytes), ``restart``
    (bool), ``value_type``, and per kind -- ref: ``name, update_index, value, peeled, target``; log:
    ``name, update_index, log_type, old, new, ident_name, email, time, tz, message``; obj: ``prefix`` (hex),
    ``positions``; index: ``last_key, position``.
``to_json_obj(desc) -> dict``: the same as strict JSON wants it, by ``display.json_value`` (bytes as UTF-8
    text, U+FFFD plus ``<key>_b64`` where they are not UTF-8).

Raises CorruptStore(file, what, offset) on anything git would reject (the description up to that point is
lost; ``describe_partial`` returns it together with the error instead).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from ...errors import CorruptStore
from .block import Block, iter_raw_records
from .record import BLOCK_INDEX, BLOCK_LOG, BLOCK_OBJ, BLOCK_REF
from .table import Table


class BlockDescription(NamedTuple):
    type: str
    section: str
    offset: int
    header_offset: int
    length: int
    block_len: int
    padding: int
    restart_count: int
    restart_offsets: list[int]
    records: list[dict]


class TableDescription(NamedTuple):
    path: str
    size: int
    header: dict
    footer: dict
    blocks: list[BlockDescription]


def iter_block_records(table: Table, blk: Block) -> Iterator[dict]:
    """One dict per record of ``blk`` (see the module docstring)."""
    restarts = set(blk.restarts)
    base = 0 if blk.type == BLOCK_LOG else blk.offset
    for raw in iter_raw_records(blk, table.min_update_index):
        d = {
            "offset": base + raw.offset,
            "size": raw.size,
            "prefix_len": raw.prefix_len,
            "suffix_len": raw.suffix_len,
            "key": raw.key,
            "restart": raw.offset in restarts,
            "value_type": raw.extra,
        }
        rec = raw.record
        if blk.type == BLOCK_REF:
            d.update(
                name=rec.name,
                update_index=rec.update_index,
                value=rec.value,
                peeled=rec.peeled,
                target=rec.target,
            )
        elif blk.type == BLOCK_LOG:
            d["inflated"] = True
            d.update(rec._asdict())
        elif blk.type == BLOCK_OBJ:
            d.update(prefix=rec.prefix.hex().encode(), positions=list(rec.positions))
        else:
            d.update(last_key=rec.last_key, position=rec.position)
        yield d


def _header(t: Table) -> dict:
    return {
        "magic": b"REFT",
        "version": t.version,
        "block_size": t.block_size,
        "min_update_index": t.min_update_index,
        "max_update_index": t.max_update_index,
        "hash_id": t.hash_name,
        "header_size": t.header_size,
    }


def _footer(t: Table) -> dict:
    f = t.footer
    return {
        "offset": t.data_end,
        "ref_index_position": f.ref_index_position,
        "obj_position": f.obj_position,
        "obj_id_len": f.obj_id_len,
        "obj_index_position": f.obj_index_position,
        "log_position": f.log_position,
        "log_index_position": f.log_index_position,
        "crc": f.crc,
        "crc_ok": True,  # Table.open refuses a table whose CRC does not match
    }


def _describe_blocks(t: Table, out: list[BlockDescription]) -> None:
    out.extend(_iter_described(t))


def _iter_described(t: Table) -> Iterator[BlockDescription]:
    for section, blk in t.iter_blocks():
        recs = list(iter_block_records(t, blk))
        stored = blk.block_len if blk.type != BLOCK_LOG else blk.full_size
        yield (
            BlockDescription(
                chr(blk.type),
                section,
                blk.offset,
                blk.offset + blk.header_off,
                blk.full_size,
                blk.block_len,
                max(0, blk.full_size - stored),
                len(blk.restarts),
                [(r if blk.type == BLOCK_LOG else blk.offset + r) for r in blk.restarts],
                recs,
            )
        )


def describe_lazily(path: str) -> TableDescription:
    """``describe`` with ``blocks`` an iterator over the blocks, each decoded when it is reached (a
    CorruptStore surfaces there, after the blocks before it)."""
    t = Table.open(path)
    return TableDescription(path, t.size, _header(t), _footer(t), _iter_described(t))  # type: ignore[arg-type]


def block_json(b: BlockDescription) -> dict:
    """One block as ``to_json_obj`` gives it in ``blocks``."""
    return _j(b._asdict())


def describe(path: str) -> TableDescription:
    """The full description of the table at ``path``."""
    t = Table.open(path)
    blocks: list[BlockDescription] = []
    _describe_blocks(t, blocks)
    return TableDescription(path, t.size, _header(t), _footer(t), blocks)


def describe_partial(path: str) -> tuple[TableDescription | None, CorruptStore | None]:
    """Like ``describe`` but returns what could be decoded before the first error, and the error."""
    try:
        t = Table.open(path)
    except CorruptStore as e:
        return None, e
    blocks: list[BlockDescription] = []
    err = None
    try:
        _describe_blocks(t, blocks)
    except CorruptStore as e:
        err = e
    return TableDescription(path, t.size, _header(t), _footer(t), blocks), err


def _j(v):
    from ...display import json_value

    return json_value(v)[0]


def to_json_obj(desc: TableDescription) -> dict:
    """A JSON-ready dict of the description (the one JSON conversion, ``display.json_value``)."""
    return {
        **_j({"path": desc.path}),
        "format": "reftable",
        "size": desc.size,
        "header": _j(desc.header),
        "footer": _j(desc.footer),
        "blocks": [block_json(b) for b in desc.blocks],
    }


__all__ = [
    "BLOCK_INDEX",
    "BlockDescription",
    "TableDescription",
    "describe",
    "describe_lazily",
    "block_json",
    "describe_partial",
    "iter_block_records",
    "to_json_obj",
]
