"""Row sources for the table view: the blocks of one reftable file, and the records inside one block.

Blocks are listed from their headers (``Table.iter_blocks``, no record decoding), so a 1M-ref table lists
its blocks without decoding a million records; a block's records are decoded when that block is opened
(``block.iter_raw_records``: offsets, prefix/suffix lengths, keys, values), which shows prefix compression
and restart points exactly as they are stored.
"""

from __future__ import annotations

from typing import Any

from refscope.backend.display import line
from refscope.backend.formats.reftable.record import split_log_key
from rich.text import Text

from .format import bytes_text, field, git_date, hexstr

BLOCK_NAMES = {"r": "ref", "g": "log", "o": "obj", "i": "index"}


class BlockSource:
    """One row per block: #, type, section, offset, bytes on disk, block_len (inflated for logs), restarts."""

    header = Text(
        f"{'#':>4} {'type':<5} {'section':<9} {'offset':>9} {'disk':>5} {'len':>5} {'rst':>3}", no_wrap=True
    )

    def __init__(self, blocks: list[tuple[str, Any]]) -> None:
        self.blocks = blocks
        self.width = self.header.cell_len

    def __len__(self) -> int:
        return len(self.blocks)

    def row_text(self, i: int) -> Text:
        section, blk = self.blocks[i]
        letter = chr(blk.type)
        t = Text(no_wrap=True)
        t.append(f"{i:>4} ", style="bold")
        style = {"r": "green", "g": "cyan", "o": "magenta", "i": "yellow"}.get(letter, "")
        t.append(f"{letter} {BLOCK_NAMES.get(letter, '?'):<3} ", style=style)
        t.append(f"{section:<9} {blk.offset:>9} {blk.full_size:>5} {blk.block_len:>5} {len(blk.restarts):>3}")
        return t


def _value_text(rec: Any, kind: str, hexw: int) -> Text:
    t = Text(no_wrap=True)
    if kind == "r":
        vt = rec.value_type
        t.append(f"{vt} ", style="bold")
        t.append(f"{rec.update_index:>6} ", style="cyan")
        if vt == 0:
            t.append("deletion (tombstone)", style="red")
        elif vt == 3:
            field(t, line("→ ", bytes_text(rec.target or b"", 100)), style="magenta")
        else:
            field(t, hexstr(rec.value, hexw), style="yellow")
            if vt == 2:
                field(t, line(" ^", hexstr(rec.peeled, hexw)), style="dim yellow")
    elif kind == "g":
        t.append(f"{rec.log_type} ", style="bold")
        t.append(f"{rec.update_index:>6} ", style="cyan")
        if rec.log_type == 0:
            t.append("deletion of this log entry", style="red")
        else:
            field(t, line(hexstr(rec.old, 12), " → ", hexstr(rec.new, 12), " "), style="yellow")
            field(t, line(bytes_text(rec.ident_name, 30), " <", bytes_text(rec.email, 40), "> "))
            t.append(f"{git_date(rec.time, rec.tz)} ", style="dim")
            field(t, bytes_text(rec.message.rstrip(b"\n"), 80))
    elif kind == "o":
        if not rec.positions:
            t.append("no positions stored (too many blocks: readers scan the ref blocks)", style="dim")
            return t
        t.append(f"{len(rec.positions)} block{'s' if len(rec.positions) != 1 else ''}: ", style="bold")
        t.append(", ".join(str(p) for p in rec.positions[:16]) + (" …" if len(rec.positions) > 16 else ""))
    else:
        t.append("→ block at ", style="dim")
        t.append(str(rec.position), style="bold")
    return t


KEY_MAX = 120  # widest key column; a longer key is cut with an ellipsis


class RecordSource:
    """One row per record of one block: offset, restart mark, prefix length, suffix length, key (shared prefix
    dim, stored suffix bright), then the value by kind (ref: value type, update index, value; log: the reflog
    entry; obj: block positions; index: child block position)."""

    def __init__(self, blk: Any, records: list[Any], hexw: int = 0) -> None:
        self.blk = blk
        self.records = records
        self.kind = chr(blk.type)
        self.restarts = set(blk.restarts)
        self.hexw = hexw
        key_head = {
            "r": "key (ref name)",
            "g": "key (name \\0 ~update index)",
            "o": "key (oid prefix)",
            "i": "key (last key of block)",
        }[self.kind]
        value_head = {
            "r": "vt     ui value",
            "g": "lt     ui old → new, who, when, message",
            "o": "positions",
            "i": "position",
        }[self.kind]
        # the key column is as wide as the block's longest key (a block holds at most a few hundred
        # records), so every value starts in the same column however long a name is
        self.key_w = min(KEY_MAX, max([len(key_head)] + [sum(map(len, self._key(r))) for r in records]))
        self.header = Text(
            f"{'offset':>8} R {'pfx':>4} {'sfx':>4}  {key_head:<{self.key_w}} {value_head}", no_wrap=True
        )
        self.width = 200

    def _key(self, raw: Any) -> tuple[str, str]:
        """(shared prefix, stored suffix) of a record's key, as shown."""
        key = raw.key
        if self.kind == "o":
            return key[: raw.prefix_len].hex(), key[raw.prefix_len :].hex()
        parts = split_log_key(key) if self.kind == "g" else None
        if parts is not None:
            name, index = parts
            return (
                bytes_text(name[: raw.prefix_len], KEY_MAX),
                bytes_text(name[raw.prefix_len :], KEY_MAX) + "\\0~" + index.hex(),
            )
        return bytes_text(key[: raw.prefix_len], KEY_MAX), bytes_text(key[raw.prefix_len :], KEY_MAX)

    def __len__(self) -> int:
        return len(self.records)

    def search_key(self, i: int) -> bytes:
        """``/`` matches the record's name (a ref block's key; a log key without its update index), the
        row's text in obj and index blocks (whose keys are oids and positions)."""
        key = self.records[i].key
        if self.kind == "r":
            return key
        parts = split_log_key(key) if self.kind == "g" else None
        if parts is not None:
            return parts[0]
        return self.row_text(i).plain.encode("utf-8", "surrogateescape")

    def row_text(self, i: int) -> Text:
        raw = self.records[i]
        t = Text(no_wrap=True)
        t.append(f"{raw.offset:>8} ", style="dim")
        t.append("R " if raw.offset in self.restarts else "  ", style="bold red")
        t.append(f"{raw.prefix_len:>4} {raw.suffix_len:>4}  ")
        shared, stored = self._key(raw)
        key = Text(no_wrap=True)
        key.append(shared, style="dim")
        key.append(stored, style="bold")
        key.truncate(self.key_w, overflow="ellipsis", pad=True)
        t.append_text(key)
        t.append(" ")
        t.append_text(_value_text(raw.record, self.kind, self.hexw))
        return t


def decode_block(blk: Any, min_update_index: int) -> list[Any]:
    from refscope.backend.formats.reftable.block import iter_raw_records

    return list(iter_raw_records(blk, min_update_index))
