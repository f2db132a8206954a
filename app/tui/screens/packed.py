"""The packed-refs file record by record, as it is on disk, following rewrites live.

Constructor (for TUI-MAIN):
    PackedScreen(snapshot, focus_name: bytes | None = None, *, store=None, follow: bool = True)
        snapshot: a files-store snapshot (its ``commondir``/packed-refs is shown);
        focus_name: put the cursor on this ref's record (or where it would be, if it is not packed);
        store: the FilesStore; with ``follow`` the view refreshes itself when git rewrites packed-refs
        (the app's one live feed, ``live``) and the change feed says which records appeared, vanished or changed and which loose refs shadow records.
    The screen dismisses with the name (bytes) of the record under the cursor, so
    ``app.push_screen(PackedScreen(...), callback)`` can move the main list back to it ("jump back").
    ``apply_snapshot(snapshot)`` lets an app that already watches push newer snapshots in.
Keys: escape back (returns the name under the cursor); n/N next/previous shadowed record (after a ``/``
search: next/previous match); r reload; the movement keys and ``/`` of every list (``widgets.rows``).
"""

from __future__ import annotations

import time
from typing import Any

from refscope.backend.diff import packed_records_diff
from refscope.backend.display import escape_name, join, line
from refscope.backend.model import HASH_HEXSZ
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import get_current_worker

from ..live import follow
from ..models.format import count, field, size
from ..models.packed_rows import PackedIndex, PackedSource, PreviewIndex, packed_of, packed_path, shadowing
from ..widgets.rows import ListSource, RowsView
from ..workers import work
from .base import ViewScreen, short_path


class PackedScreen(ViewScreen):
    """Raw packed-refs records in file order, with header, traits, size, order and loose shadows."""

    DEFAULT_CSS = """
    PackedScreen #packed-info { height: auto; padding: 0 1; background: $boost; }
    PackedScreen #packed-records { height: 1fr; }
    PackedScreen #packed-feed-box { height: 8; border-top: solid $primary; }
    PackedScreen #packed-feed-title { height: 1; padding: 0 1; color: $text-accent; text-style: bold; }
    """
    BINDINGS = [
        Binding("n", "next_shadow(1)", "Next shadowed"),
        Binding("N", "next_shadow(-1)", "Prev shadowed", show=False),
        Binding("r", "reload", "Reload"),
    ]

    def __init__(
        self, snapshot: Any, focus_name: bytes | None = None, *, store: Any = None, follow: bool = True
    ) -> None:
        super().__init__(title="packed-refs")
        self.snapshot = snapshot
        self.focus_name = focus_name
        self.store = store
        self.follow = follow and store is not None
        self.index: PackedIndex | None = None
        self.shadowed: dict[bytes, str] = {}
        self.feed: list[Text] = []
        self._follower: Any = None
        self._load_seq = 0
        self._clock = time.strftime

    def compose_body(self) -> ComposeResult:
        yield Static("", id="packed-info")
        yield RowsView(id="packed-records")
        with Vertical(id="packed-feed-box"):
            yield Static("changes", id="packed-feed-title")
            yield RowsView(id="packed-feed")

    @property
    def records(self) -> RowsView:
        return self.query_one("#packed-records", RowsView)

    def on_mount(self) -> None:
        self.set_title(Text(f"packed-refs — {short_path(self.snapshot.commondir)}/packed-refs"))
        self.set_status("indexing records…")
        self.records.focus()
        self.load(self.snapshot, first=True)
        if self.follow:
            self._follower = follow(self, self.store, self.snapshot, self.apply_snapshot)

    def on_unmount(self) -> None:
        if self._follower is not None:
            self._follower.stop()

    # ---- loading --------------------------------------------------------------------------------------
    def apply_snapshot(self, snapshot: Any, paths: tuple = ()) -> None:
        """A newer snapshot of the same repository (from the live feed or a reload)."""
        if snapshot is self.snapshot:
            return
        self.load(snapshot, first=False)

    def action_reload(self) -> None:
        if self.store is not None:
            self.reload()

    @work(thread=True, exclusive=True, group="packed-reload", description="reload")
    def reload(self) -> None:
        """``r``: re-read the store off the UI thread (a failure shows in the status line)."""
        fresh = self.store.refresh(self.snapshot)
        self.app.call_from_thread(self.apply_snapshot, fresh)

    @work(thread=True, exclusive=True, group="packed-load", description="index packed-refs")
    def load(self, snapshot: Any, first: bool) -> None:
        worker = get_current_worker()
        self._load_seq += 1
        seq = self._load_seq
        path = packed_path(snapshot)
        packed = packed_of(snapshot)
        old = self.index
        if not first and old is not None and _same_file(old.packed, packed):
            index = old
        else:
            index = PackedIndex(packed, path)
            if first:  # a screenful now, from the focused record if any; the row index follows
                span = packed.locate(self.focus_name) if self.focus_name is not None else None
                preview = PreviewIndex(packed, span[0] if span else None)
                self.app.call_from_thread(self._show_preview, preview)
            index.build(None, lambda: worker.is_cancelled)
        if worker.is_cancelled:
            return
        shadow = shadowing(snapshot, index)
        # rows first (the new file is on screen at once), then the record diff (two passes over both files)
        if worker.is_cancelled or seq != self._load_seq:
            return  # a newer snapshot is being loaded; it diffs against what is on screen now
        self.app.call_from_thread(self._show, snapshot, index, shadow, first, old)
        if index.peeled_count < 0:
            index.count_peeled()
            if not worker.is_cancelled:
                self.app.call_from_thread(self._show_info)
        if not first and old is not None and index is not old:
            # the backend's diff of the two files' differing middles (records with their ^peeled lines)
            appeared, vanished, changed = packed_records_diff(old.packed, index.packed, peeled=True)
            if not worker.is_cancelled:
                self.app.call_from_thread(self._rewritten, old, index, appeared, vanished, changed)

    def _show_preview(self, preview: PreviewIndex) -> None:
        if self.index is None:
            self.records.set_source(
                PackedSource(preview, preview.count, {}, _hexlen(self.snapshot)), cursor=0
            )

    def _show(
        self,
        snapshot: Any,
        index: PackedIndex,
        shadow: dict,
        first: bool,
        old: PackedIndex | None,
    ) -> None:
        self.snapshot = snapshot
        self.index = index
        old_shadow = self.shadowed
        self.shadowed = shadow
        view = self.records
        keep = view.cursor
        keep_name = None
        if old is not None and 0 <= keep < old.count:
            keep_name = old.record(keep).name
        view.set_source(PackedSource(index, index.count, shadow, _hexlen(snapshot)))
        view.marked = set(shadow)
        self._show_info()
        self.set_status(f"{count(index.count)} records · escape returns to the ref under the cursor")
        if first:
            if self.focus_name is not None:
                self.jump_to(self.focus_name)
            else:
                view.move_to(0)
        elif keep_name is not None:
            row = index.row_of(keep_name)
            view.move_to(row if row is not None else index.insertion_row(keep_name))
        if not first:
            new_sh = sorted(set(shadow) - set(old_shadow))
            gone_sh = sorted(set(old_shadow) - set(shadow))
            if new_sh or gone_sh:
                line = Text(f"{self._clock('%H:%M:%S')} loose refs: ", style="")
                if new_sh:
                    line.append(
                        f"{len(new_sh)} now shadow packed records ({_names(new_sh)}) ", style="magenta"
                    )
                if gone_sh:
                    line.append(f"{len(gone_sh)} no longer shadow ({_names(gone_sh)})")
                self._add_feed(line)
                view.flash(new_sh)

    def _rewritten(
        self,
        old: PackedIndex,
        new: PackedIndex,
        appeared: list[bytes],
        vanished: list[bytes],
        changed: list[bytes],
    ) -> None:
        if self.index is not new:  # an even newer file is already shown; its own diff follows
            return
        self._feed_rewrite(old, new, appeared, vanished, changed)
        self.records.flash(appeared + changed)

    def _feed_rewrite(
        self,
        old: PackedIndex | None,
        new: PackedIndex,
        appeared: list[bytes],
        vanished: list[bytes],
        changed: list[bytes],
    ) -> None:
        before = old.count if old is not None else 0
        line = Text(
            f"{self._clock('%H:%M:%S')} packed-refs rewritten: {count(before)} → {count(new.count)} records"
        )
        line.append(f"  +{len(appeared)}", style="green")
        line.append(f" −{len(vanished)}", style="red")
        line.append(f" ~{len(changed)}", style="yellow")
        if appeared:
            line.append(f"  appeared: {_names(appeared)}", style="green")
        if vanished:
            line.append(f"  vanished: {_names(vanished)}", style="red")
        if changed:
            line.append(f"  changed: {_names(changed)}", style="yellow")
        self._add_feed(line)

    def _add_feed(self, line: Text) -> None:
        self.feed.insert(0, line)
        feed = self.query_one("#packed-feed", RowsView)
        feed.set_source(ListSource(self.feed, keys=list(range(len(self.feed), 0, -1))), cursor=0)
        feed.flash([len(self.feed)])

    def _show_info(self) -> None:
        index = self.index
        assert index is not None
        traits = getattr(index.packed, "traits", ()) or ()
        trait_text = join(" ", traits) or line("(none)")  # traits are bytes from the file: escaped
        info = Text(no_wrap=True)
        header = index.header
        info.append("header  ", style="bold")
        info.append(escape_name(header) if header else "(no header line)", style="cyan")
        info.append("\ntraits  ", style="")
        field(info, trait_text)
        info.append("\nfile    ", style="bold")
        info.append(
            f"{size(index.file_size)} ({count(index.file_size)} bytes), {count(index.count)} records, "
            + (
                f"{count(index.peeled_count)} with ^peeled"
                if index.peeled_count >= 0
                else "counting ^peeled…"
            )
        )
        info.append("\norder   ", style="bold")
        promised = bool(getattr(index.packed, "sorted", False))
        if index.actually_sorted:
            info.append(
                "sorted" + (" (as the header promises)" if promised else " (header does not say so)"),
                style="green",
            )
        else:
            info.append(
                f"NOT sorted: record {index.first_unsorted} is out of order"
                + (" although the header says sorted" if promised else " (git sorts it in memory)"),
                style="bold red",
            )
        info.append("\nloose   ", style="bold")
        info.append(
            f"{count(len(self.shadowed))} packed records shadowed by loose refs (L)",
            style="magenta" if self.shadowed else "",
        )
        self.query_one("#packed-info", Static).update(info)

    # ---- navigation -----------------------------------------------------------------------------------
    def jump_to(self, name: bytes) -> bool:
        """Cursor on ``name``'s record; if it is not packed, on the place it would be. True when found."""
        if self.index is None:
            self.focus_name = name
            return False
        row = self.index.row_of(name)
        view = self.records
        if row is None:
            view.move_to(self.index.insertion_row(name), center=True)
            self.set_status(f"{escape_name(name)} has no packed record (loose only or missing)")
            return False
        view.move_to(row, center=True)
        return True

    def current_name(self) -> bytes | None:
        if self.index is None or not self.index.count:
            return None
        row = self.records.cursor
        return self.index.record(row).name if row < self.index.count else None

    def action_next_shadow(self, direction: int) -> None:
        if not self.shadowed or self.index is None:
            return
        rows = sorted(r for r in (self.index.row_of(n) for n in self.shadowed) if r is not None)
        cur = self.records.cursor
        if direction > 0:
            nxt = next((r for r in rows if r > cur), rows[0])
        else:
            nxt = next((r for r in reversed(rows) if r < cur), rows[-1])
        self.records.move_to(nxt)

    def action_back(self) -> None:
        self.dismiss(self.current_name())


def _same_file(a: Any, b: Any) -> bool:
    return a.identity() == b.identity()


def _hexlen(snapshot: Any) -> int:
    return HASH_HEXSZ[snapshot.hash_name]


def _names(names: list[bytes], limit: int = 4) -> str:
    shown = ", ".join(escape_name(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
