"""One reftable file from the inside: header and footer fields (with the CRC), sections and their offsets,
every block, and inside the selected block every record as stored (prefix compression, restart points).

Constructor (for TUI-MAIN / StackScreen):
    TableScreen(table, focus_name=None, focus_offset=None)
        table: an open ``backend.formats.reftable.table.Table`` (e.g. one of ``snapshot.tables``), or a path;
        focus_name: open on the ref block holding this ref, the cursor on its record (``focus_offset``, the
        block offset of a ref's ``Location``, saves the lookup).
Keys: up/down (j/k, g/G…) pick a block (its records show on the right); tab switches between blocks and
records; ``/`` searches the focused pane; escape back.
"""

from __future__ import annotations

import os
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Static
from textual.worker import get_current_worker

from ..models.format import count, size
from ..models.table_rows import BlockSource, RecordSource, decode_block
from ..widgets.rows import RowsView
from ..workers import work
from .base import ViewScreen, short_path

BLOCK_SETTLE_S = 0.03
HEADER_SIZE = {1: 24, 2: 28}
FOOTER_SIZE = {1: 68, 2: 72}


def _open(table: Any) -> Any:
    if isinstance(table, str | os.PathLike):
        from refscope.backend.formats.reftable.table import Table

        return Table.open(os.fspath(table))
    return table


def table_info(table: Any) -> Text:
    """Header and footer fields, the sections with their offsets."""
    f = table.footer
    v = table.version
    fsize = FOOTER_SIZE.get(v, 68)
    t = Text(no_wrap=True)
    t.append("header  ", style="bold")
    t.append(
        f"magic REFT · version {v} · block_size {table.block_size} · "
        f"update index {table.min_update_index}..{table.max_update_index}"
    )
    if v == 2:
        t.append(f" · hash id {'sha1' if table.hash_name == 'sha1' else 's256'}")
    t.append(f" · {HEADER_SIZE.get(v, 24)} B\n")
    t.append("footer  ", style="bold")
    t.append(
        f"at {table.size - fsize} ({fsize} B): ref_index {f.ref_index_position} · "
        f"obj {f.obj_position} (id len {f.obj_id_len}) · obj_index {f.obj_index_position} · "
        f"log {f.log_position} · log_index {f.log_index_position} · "
    )
    t.append(f"CRC-32 0x{f.crc:08x} ✓\n", style="green")
    sections = [("ref", 0)]
    for label, pos in (
        ("ref_index", f.ref_index_position),
        ("obj", f.obj_position),
        ("obj_index", f.obj_index_position),
        ("log", f.log_position),
        ("log_index", f.log_index_position),
    ):
        if pos:
            sections.append((label, pos))
    sections.append(("footer", table.size - fsize))
    t.append("sections", style="bold")
    t.append("  " + " · ".join(f"{label} @{pos}" for label, pos in sections))
    t.append(f" · file {size(table.size)} ({count(table.size)} B), {table.hash_name}")
    return t


class TableScreen(ViewScreen):
    """Blocks of one table on the left, the records of the selected block on the right."""

    DEFAULT_CSS = """
    TableScreen #table-info { height: auto; padding: 0 1; background: $boost; }
    TableScreen #table-panes { height: 1fr; }
    TableScreen #table-blocks { width: 51; border-right: solid $primary; }
    TableScreen #table-records { width: 1fr; }
    """
    BINDINGS = [
        Binding("tab", "switch_pane", "Blocks/records"),
    ]

    def __init__(self, table: Any, focus_name: bytes | None = None, focus_offset: int | None = None) -> None:
        super().__init__(title="reftable table")
        self.table = _open(table)
        self.focus_name = focus_name
        self.focus_offset = focus_offset
        self.blocks: list[tuple[str, Any]] = []
        self.records: list[Any] = []
        self._shown_block = -1
        self._pending_block: int | None = None
        self._block_timer: Any = None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="table-info")
        with Horizontal(id="table-panes"):
            yield RowsView(id="table-blocks")
            yield RowsView(id="table-records")

    @property
    def blocks_view(self) -> RowsView:
        return self.query_one("#table-blocks", RowsView)

    @property
    def records_view(self) -> RowsView:
        return self.query_one("#table-records", RowsView)

    def on_mount(self) -> None:
        self.set_title(
            Text(
                f"table {self.table.name} — {short_path(os.path.dirname(os.path.dirname(self.table.path)))}/reftable"
            )
        )
        self.query_one("#table-info", Static).update(table_info(self.table))
        self.blocks_view.focus()
        self.set_status("reading block headers…")
        self.load_blocks()

    @work(thread=True, exclusive=True, group="table-blocks", description="list blocks")
    def load_blocks(self) -> None:
        worker = get_current_worker()
        focus = self.focus_offset
        if focus is None and self.focus_name is not None:  # (a lookup through the index: no scan)
            found = self.table.locate_ref(self.focus_name)
            focus = self.focus_offset = found[0].offset if found is not None else None
        blocks: list[tuple[str, Any]] = []
        shown = False
        for item in self.table.iter_blocks():
            blocks.append(item)
            # the first screenful at once, unless the ref's block is further on (it lands there)
            if not shown and len(blocks) >= 64 and (focus is None or item[1].offset >= focus):
                shown = True
                self.app.call_from_thread(self._show_blocks, list(blocks), False)
            if worker.is_cancelled:
                return
        self.app.call_from_thread(self._show_blocks, blocks, True)

    def _show_blocks(self, blocks: list[tuple[str, Any]], done: bool) -> None:
        self.blocks = blocks
        self.blocks_view.set_source(BlockSource(blocks))
        by_type: dict[str, int] = {}
        for _s, b in blocks:
            by_type[chr(b.type)] = by_type.get(chr(b.type), 0) + 1
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(by_type.items()))
        self.set_status(f"{count(len(blocks))} blocks ({kinds})" + ("" if done else " so far…"))
        if self._shown_block < 0 and blocks:
            self.show_block(self._focus_block(blocks))

    def _focus_block(self, blocks: list[tuple[str, Any]]) -> int:
        """The block at ``focus_offset`` (the ref's block), else the first block."""
        if self.focus_offset is not None:
            for i, (_section, blk) in enumerate(blocks):
                if blk.offset == self.focus_offset:
                    return i
        return 0

    def on_line_list_cursor_moved(self, message: RowsView.CursorMoved) -> None:
        """Decode the block under the cursor once the cursor rests (30 ms): holding pagedown over a
        30,000-block table then only repaints the block list, not every block passed on the way."""
        if message.line_list is not self.blocks_view or message.row == self._shown_block:
            return
        self._pending_block = message.row
        if self._block_timer is not None:
            self._block_timer.stop()
        self._block_timer = self.set_timer(BLOCK_SETTLE_S, self._show_pending)

    def _show_pending(self) -> None:
        self._block_timer = None
        if self._pending_block is not None and self._pending_block != self._shown_block:
            self.show_block(self._pending_block)

    def show_block(self, i: int) -> None:
        if not 0 <= i < len(self.blocks):
            return
        self._shown_block = i
        _section, blk = self.blocks[i]
        self.records = decode_block(blk, self.table.min_update_index)
        self.records_view.set_source(RecordSource(blk, self.records), cursor=0)
        self.records_view.scroll_to(0, 0, animate=False, immediate=True)
        if self.blocks_view.cursor != i:
            self.blocks_view.move_to(i, center=True)
        name, self.focus_name = self.focus_name, None  # landing happens once; later blocks open at the top
        self.focus_offset = None
        if name is not None and chr(blk.type) == "r":
            row = next((k for k, raw in enumerate(self.records) if raw.key == name), None)
            if row is not None:
                self.records_view.move_to(row, center=True)
                self.records_view.focus()

    def action_switch_pane(self) -> None:
        if self.focused is self.blocks_view:
            self.records_view.focus()
        else:
            self.blocks_view.focus()
