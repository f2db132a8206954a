"""The fsck mode of the reftable parsers: every problem of one table, each at its file offset.

Why a mode of the parsers and not a walker of its own: git's ``reftable/fsck.c`` checks tables with the
readers that serve lookups, so that what a check accepts is what a read accepts and there is one decoder of
the format. Blocks here are parsed by ``block.parse_block`` and their records decoded by
``block.iter_raw_records``, the decoders every reader and dump uses; what they reject becomes a finding on
that block, and the walk goes on with the next block wherever its position can still be known. Around them
this module checks what a reader never needs to look at but git's writer guarantees: the header and footer
with every fault named (a reader stops at the first), padding, keys ascending within and across blocks,
update indexes inside the header's range, the order of the sections, the footer's positions, and the index
and obj entries against the blocks they point at.

Findings go to two callables, ``error(offset, message)`` and ``warning(offset, message)``; the walk itself
never raises for anything in the bytes.
"""

from __future__ import annotations

import re
from binascii import crc32
from collections.abc import Callable
from typing import NamedTuple

from ...display import escape_name
from ...errors import CorruptStore, FsckError
from ...model import HASH_RAWSZ
from .block import Block, iter_raw_records, parse_block
from .table import FOOTER_SIZE, HASH_ID_OF, HEADER_SIZE, Footer

Report = Callable[[int | None, str], None]
BLOCK_NAMES = {"r": "ref", "g": "log", "o": "obj", "i": "index"}
_SECTIONS = re.compile(r"(r*)(i*)(o*)(i*)(g*)(i*)")
_REVERSED = 0xFFFFFFFFFFFFFFFF  # log keys store the update index reversed
_HASH_NAMES = {hid: name for name, hid in HASH_ID_OF.items()}  # the header's hash id -> hash name


def quoted(name: bytes) -> str:
    """A ref name for a message: escaped (the one display function) and quoted, long ones cut."""
    text = escape_name(name)
    if len(text) > 160:
        text = text[:160] + "..."
    return "'" + text + "'"


class CheckedBlock(NamedTuple):
    """One block as the walk found it. ``records`` per type: ref (name, value_type, value, peeled, target,
    update_index), log (key, log_type), obj (key, positions, file offset), index (key, position, file
    offset). ``restart_off`` is -1 for log blocks (their restart table is compressed); ``data_end`` is the
    file offset after the block's bytes (the compressed bytes of a log block), before any padding."""

    offset: int
    type: str  # 'r' 'g' 'o' 'i'
    first_key: bytes
    last_key: bytes
    next_offset: int
    records: list
    header_off: int = 0  # the file header's size for the first block, else 0
    block_len: int = 0
    restart_off: int = -1
    data_end: int = 0


class TableInfo(NamedTuple):
    """What the check learned about one table, for the stack-level checks above it."""

    path: str
    ok: bool  # header and footer readable
    hash_name: str
    min_update_index: int
    max_update_index: int
    refs: list  # (name, value_type, value_hex, peeled_hex, target, update_index, block_offset)
    blocks: list[CheckedBlock]


def check_table(data, path: str, error: Report, warning: Report) -> TableInfo:
    """Check one table's bytes (bytes or a mapping), reporting every finding; never raises for the bytes."""
    return _Check(data, path, error, warning).run()


class _Check:
    def __init__(self, data, path: str, error: Report, warning: Report) -> None:
        self.data = data
        self.path = path
        self.err = error
        self.warn = warning
        self.refs: list = []
        self.blocks: list[CheckedBlock] = []

    # -- header and footer: every fault named, where a reader stops at the first
    def run(self) -> TableInfo:
        d = self.data
        n = len(d)
        bad = TableInfo(self.path, False, "", 0, 0, [], self.blocks)
        if n >= 4 and d[:4] != b"REFT":
            self.err(0, f"bad magic '{escape_name(bytes(d[:4]))}': a reftable starts with 'REFT'")
            return bad
        if n < 5:
            self.err(n, f"file is {n} bytes, too short for a reftable header: truncated")
            return bad
        version = d[4]
        if version not in HEADER_SIZE:
            self.err(4, f"unsupported reftable version {version} (git reads 1 and 2)")
            return bad
        hsz, fsz = HEADER_SIZE[version], FOOTER_SIZE[version]
        if n < hsz + fsz:
            self.err(
                n,
                f"file is {n} bytes, shorter than a version {version} header plus footer "
                f"({hsz + fsz} bytes): truncated",
            )
            return bad
        block_size = int.from_bytes(d[5:8], "big")
        min_ui, max_ui = int.from_bytes(d[8:16], "big"), int.from_bytes(d[16:24], "big")
        hash_name = "sha1"
        if version == 2:
            hid = bytes(d[24:28])
            if hid not in _HASH_NAMES:
                self.err(
                    24, f"unknown hash id '{escape_name(hid)}' in the header (git knows 'sha1' and 's256')"
                )
                return bad
            hash_name = _HASH_NAMES[hid]
        foot = n - fsz
        if d[foot : foot + hsz] != d[:hsz]:
            if d[foot : foot + 4] != b"REFT":
                self.err(
                    foot, "the footer does not start with 'REFT': the file is truncated or has bytes appended"
                )
            else:
                self.err(
                    foot,
                    "the footer does not repeat the header (magic, version, block size, update "
                    "indexes, hash id)",
                )
            return bad
        crc_have = int.from_bytes(d[n - 4 : n], "big")
        crc_want = crc32(d[foot : n - 4])
        if crc_have != crc_want:
            self.err(n - 4, f"footer CRC-32 is {crc_have:08x} but the footer's bytes give {crc_want:08x}")
            return bad
        at = foot + hsz
        ref_index, obj_word, obj_index, log_pos, log_index = (
            int.from_bytes(d[at + 8 * i : at + 8 * i + 8], "big") for i in range(5)
        )
        self.footer = Footer(ref_index, obj_word >> 5, obj_word & 31, obj_index, log_pos, log_index, crc_have)
        self.hsz, self.block_size, self.foot = hsz, block_size, foot
        self.min_ui, self.max_ui, self.hash_name = min_ui, max_ui, hash_name
        self.hash_size = HASH_RAWSZ[hash_name]
        obj_id_len = self.footer.obj_id_len
        ok = True
        self.positions_bad = False
        if min_ui > max_ui:
            self.err(8, f"min_update_index {min_ui} is greater than max_update_index {max_ui}")
        if self.footer.obj_position and not obj_id_len:
            self.err(at + 8, "the footer has an obj section but obj_id_len 0; git refuses the table")
            ok = False
        if obj_id_len > self.hash_size:
            self.err(at + 8, f"obj_id_len {obj_id_len} exceeds the hash size {self.hash_size}")
        for label, pos, field in (
            ("ref_index_position", ref_index, at),
            ("obj_position", self.footer.obj_position, at + 8),
            ("obj_index_position", obj_index, at + 16),
            ("log_position", log_pos, at + 24),
            ("log_index_position", log_index, at + 32),
        ):
            if pos >= foot and pos:
                self.err(
                    field,
                    f"footer {label} {pos} points past the last block (the footer starts at {foot}): the "
                    "table lost bytes or the footer is wrong",
                )
                self.positions_bad = True
        if block_size and block_size < hsz + 4 + 2 + 1:
            self.warn(5, f"block size {block_size} is too small to hold any record")
        if ok:
            self.walk()
        return TableInfo(self.path, True, hash_name, min_ui, max_ui, self.refs, self.blocks)

    # -- blocks, through the parser
    def walk(self) -> None:
        d = self.data
        off = 0
        blocks = self.blocks
        self.failed: set[int] = set()  # offsets of blocks that did not decode
        self.walk_broken = False  # the walk stopped early: later blocks were never seen
        while off < self.foot:
            header_off = self.hsz if off == 0 else 0
            if off + header_off + 4 > self.foot:
                self.err(off, f"block header at {off} runs into the footer: the table is truncated")
                break
            typ = chr(d[off + header_off])
            if typ not in BLOCK_NAMES:
                self.walk_broken = True
                self.err(
                    off + header_off,
                    f"unknown block type '{escape_name(bytes([d[off + header_off]]))}' "
                    f"(0x{d[off + header_off]:02x}) at {off}; git expects r, g, o or i",
                )
                break
            try:
                blk = self.block(off, header_off, typ)
            except (CorruptStore, FsckError) as bad:
                self.err(bad.offset, f"{BLOCK_NAMES[typ]} block at {off}: {bad.what}")
                # Without a trustworthy length the next block can only be found by the block size.
                self.failed.add(off)
                nxt = self._fallback_next(off, typ)
                if nxt is None:
                    self.walk_broken = True
                    break
                off = nxt
                continue
            blocks.append(blk)
            off = blk.next_offset
        else:
            if off > self.foot:
                self.err(self.foot, f"the last block runs {off - self.foot} bytes into the footer")
        self.check_layout(blocks)

    def _fallback_next(self, off: int, typ: str) -> int | None:
        if typ == "g" or self.block_size == 0:
            return None
        nxt = off + self.block_size
        return nxt if nxt < self.foot else None

    def block(self, off: int, header_off: int, typ: str) -> CheckedBlock:
        d = self.data
        if typ != "g":
            self._layout_warnings(off, header_off, typ)
        # The parser's errors name no file here: a check is not a read, and a CorruptStore naming a file
        # marks it damaged for the rest of the process (``errors.known_damage``), which would refuse a
        # later write that reads none of the damaged bytes (damage in the obj section, say).
        blk = parse_block(d, off, header_off, self.block_size, self.foot, len(d), self.hash_size, None)
        records = self.records(blk, typ)
        first = records[0][0] if records else b""
        last = records[-1][0] if records else b""
        nxt = off + blk.full_size
        end = off + blk.block_len
        if typ == "g":
            return CheckedBlock(off, typ, first, last, nxt, records, header_off, blk.block_len, -1, nxt)
        return CheckedBlock(
            off, typ, first, last, nxt, records, header_off, blk.block_len, off + blk.restart_off, end
        )

    def _layout_warnings(self, off: int, header_off: int, typ: str) -> None:
        """A ref, obj or index block longer than the table's block size, or padded with bytes that are
        not NUL: git reads both, its writer makes neither. Judged before the block is parsed (a block
        whose records are damaged still gets these), when its length is one the parser accepts."""
        d = self.data
        block_len = int.from_bytes(d[off + header_off + 1 : off + header_off + 4], "big")
        end = off + block_len
        if block_len < header_off + 4 + 2 or end > self.foot:
            return  # the parser reports the length
        size = self.block_size
        if size and block_len > size:
            self.warn(
                off + header_off + 1,
                f"{BLOCK_NAMES[typ]} block at {off}: block_len {block_len} exceeds the "
                f"table's block size {size}",
            )
        # padded when the table is aligned, the block shorter than the block size and the next byte NUL
        # (the parser's rule for where the next block starts)
        if size and block_len < size and not (end < len(d) and d[end] != 0):
            pad = d[end : min(off + size, self.foot)]
            if pad.count(0) != len(pad):
                self.warn(end, f"padding after the {BLOCK_NAMES[typ]} block at {off} is not all NUL bytes")

    def records(self, blk: Block, typ: str) -> list:
        """Every record of the block as the parser decodes it, with the checks a reader does not make.
        Offsets in messages are file offsets; a log block's records are reported at the block (its
        bytes are inflated)."""
        if typ == "r":
            return self.ref_records(blk)
        base = blk.offset
        log = typ == "g"
        max_ui = self.max_ui
        out: list = []
        prev = b""  # the parser refuses empty keys: every key sorts after this
        for raw in iter_raw_records(blk, self.min_ui):
            key = raw.key
            rec_at = base if log else base + raw.offset
            if key <= prev:
                raise self.disorder(key, prev, rec_at)
            prev = key
            rec = raw.record
            if log:
                if raw.extra > 1:
                    raise FsckError(
                        self.path,
                        f"log record of {quoted(rec.name)}: log type {raw.extra} is not 0 or 1",
                        rec_at,
                    )
                # Below min is legal (a log deletion or replacement names the entry's own index); git's
                # writer refuses only indexes above the table's max.
                if rec.update_index > max_ui:
                    self.warn(
                        rec_at,
                        f"log record of {quoted(rec.name)} has update index {rec.update_index}, above the "
                        f"table's max_update_index {max_ui} (git's writer refuses that)",
                    )
                out.append((key, raw.extra))
            elif typ == "o":
                positions = rec.positions
                for j in range(1, len(positions)):
                    if positions[j] == positions[j - 1]:
                        self.warn(rec_at, f"obj record {key.hex()}: repeated block position {positions[j]}")
                out.append((key, list(positions), rec_at))
            else:
                out.append((key, rec.position, rec_at))
        return out

    def ref_records(self, blk: Block) -> list:
        """``records`` for a ref block (most of a table's records: the loop kept short)."""
        base = blk.offset
        max_ui = self.max_ui
        out: list = []
        add = out.append
        prev = b""
        for raw in iter_raw_records(blk, self.min_ui):
            key = raw.key
            if key <= prev:
                raise self.disorder(key, prev, base + raw.offset)
            prev = key
            _, ui, vt, value, peeled, target = raw.record
            if ui > max_ui:
                self.warn(
                    base + raw.offset,
                    f"ref {quoted(key)} has update index {ui}, above the table's max_update_index {max_ui}",
                )
            add((key, vt, value, peeled, target, ui))
        return out

    def disorder(self, key: bytes, prev: bytes, at: int) -> FsckError:
        return FsckError(
            self.path,
            f"record key {quoted(key)} does not sort after the previous key {quoted(prev)} "
            "(keys must be unique and ascending)",
            at,
        )

    # -- whole-table layout, indexes, obj entries, key order across blocks
    def check_layout(self, blocks: list[CheckedBlock]) -> None:
        by_off = {b.offset: b for b in blocks}
        if self.walk_broken or self.failed:
            # Positions, index and obj entries can only be judged against a complete walk; what broke
            # the walk is already reported.
            self._check_entries_partial(blocks)
            return
        order = "".join(b.type for b in blocks)
        m = _SECTIONS.fullmatch(order)
        if m is None:
            # find the first block out of place
            for i in range(1, len(blocks)):
                if not re.fullmatch(r"r*i*o*i*g*i*", order[: i + 1]):
                    self.err(
                        blocks[i].offset,
                        f"{BLOCK_NAMES[blocks[i].type]} block at {blocks[i].offset} is "
                        "out of place (sections must be ref, ref index, obj, obj index, log, log index)",
                    )
                    break
            return
        # Which 'i' run belongs to which section depends on what precedes it.
        idx = 0
        sections: dict[str, list[CheckedBlock]] = {}
        for label, grp in zip(("r", "ri", "o", "oi", "g", "gi"), m.groups(), strict=True):
            sections[label] = blocks[idx : idx + len(grp)]
            idx += len(grp)
        if not sections["r"] and sections["ri"]:
            self.err(sections["ri"][0].offset, "index block without ref blocks before it")
        if not sections["o"] and sections["oi"]:
            self.err(sections["oi"][0].offset, "index block after the ref index without obj blocks")
        if not sections["g"] and sections["gi"]:
            self.err(sections["gi"][0].offset, "index block after the obj section without log blocks")
        f = self.footer
        foot_hsz = self.foot + self.hsz
        if not self.positions_bad:
            self._check_pos("obj_position", f.obj_position, sections["o"], foot_hsz + 8, first=True)
            self._check_pos("log_position", f.log_position, sections["g"], foot_hsz + 24, first=True)
            self._check_pos("ref_index_position", f.ref_index_position, sections["ri"], foot_hsz)
            self._check_pos("obj_index_position", f.obj_index_position, sections["oi"], foot_hsz + 16)
            self._check_pos("log_index_position", f.log_index_position, sections["gi"], foot_hsz + 32)
        # key order across blocks of one section
        for label in ("r", "o", "g"):
            prev: CheckedBlock | None = None
            for b in sections[label]:
                if prev is not None and b.records and prev.records and b.first_key <= prev.last_key:
                    self.err(
                        b.offset,
                        f"{BLOCK_NAMES[b.type]} block at {b.offset} starts with "
                        f"{self._key_text(label, b.first_key)}, which does not sort after the last key "
                        f"{self._key_text(label, prev.last_key)} of the block before",
                    )
                if b.records:
                    prev = b
        # index entries
        for label, target in (("ri", "r"), ("oi", "o"), ("gi", "g")):
            for ib in sections[label]:
                for key, bpos, rec_at in ib.records:
                    tb = by_off.get(bpos)
                    if tb is None or tb.type not in (target, "i"):
                        self.err(
                            rec_at,
                            f"index entry {self._key_text(target, key)} points at {bpos}, which is "
                            f"not the start of a {BLOCK_NAMES[target]} or index block",
                        )
                    elif tb.last_key != key:
                        self.err(
                            rec_at,
                            f"index entry {self._key_text(target, key)} does not equal the last key "
                            f"{self._key_text(target, tb.last_key)} of the block at {bpos}",
                        )
        # obj entries
        if sections["o"]:
            refblocks = {b.offset: b for b in sections["r"]}
            for ob in sections["o"]:
                for key, positions, rec_at in ob.records:
                    if len(key) != self.footer.obj_id_len:
                        self.warn(
                            rec_at,
                            f"obj record {key.hex()} is {len(key)} bytes, but obj_id_len is "
                            f"{self.footer.obj_id_len}",
                        )
                    hexkey = key.hex().encode()
                    for bpos in positions:
                        rb = refblocks.get(bpos)
                        if rb is None:
                            self.err(
                                rec_at,
                                f"obj record {key.hex()} points at {bpos}, which is not the start "
                                "of a ref block",
                            )
                            continue
                        if not any(
                            (r[2] is not None and r[2].startswith(hexkey))
                            or (r[3] is not None and r[3].startswith(hexkey))
                            for r in rb.records
                        ):
                            self.err(
                                rec_at,
                                f"obj record {key.hex()} points at the ref block at {bpos}, which "
                                "holds no ref with that object id",
                            )
        for b in sections["r"]:
            for name, vt, value, peeled, target, ui in b.records:
                self.refs.append((name, vt, value, peeled, target, ui, b.offset))

    def _check_entries_partial(self, blocks: list[CheckedBlock]) -> None:
        """After a broken walk: index/obj entries pointing at blocks that were read must still match."""
        by_off = {b.offset: b for b in blocks}
        for ib in blocks:
            if ib.type != "i":
                continue
            for key, bpos, rec_at in ib.records:
                tb = by_off.get(bpos)
                if tb is not None and tb.type != "i" and tb.last_key != key:
                    self.err(
                        rec_at,
                        f"index entry {self._key_text(tb.type, key)} does not equal the last key "
                        f"{self._key_text(tb.type, tb.last_key)} of the block at {bpos}",
                    )

    def _key_text(self, label: str, key: bytes) -> str:
        if label in ("o", "oi"):
            return key.hex()
        if label in ("g", "gi") and len(key) > 9:
            return f"{quoted(key[:-9])}@{_REVERSED - int.from_bytes(key[-8:], 'big')}"
        return quoted(key)

    def _check_pos(
        self, label: str, pos: int, blocks: list[CheckedBlock], at: int, first: bool = False
    ) -> None:
        offsets = [b.offset for b in blocks]
        if pos == 0:
            if first and blocks and blocks[0].offset != 0:
                self.err(at, f"footer {label} is 0 but the table has such blocks (first at {offsets[0]})")
            elif not first and len(blocks) > 0:
                self.warn(at, f"footer {label} is 0 but the table has index blocks at {offsets}")
            return
        if first:
            if not blocks or offsets[0] != pos:
                self.err(
                    at,
                    f"footer {label} is {pos}, but the first such block is at "
                    f"{offsets[0] if blocks else 'nowhere'}",
                )
        elif pos not in offsets:
            self.err(at, f"footer {label} is {pos}, which is not the start of an index block of that section")
