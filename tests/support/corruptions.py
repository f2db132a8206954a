"""A corpus of corrupted ref stores, built from real git repositories.

Each ``Corruption`` damages a copy of a base repository (``build_base``: files with a packed-refs file,
reftable SHA-1 and SHA-256 stacks whose oldest table has ref blocks, a ref index, an obj block, log
blocks and a log index) and returns the path of the file it damaged. Case ids are symbolic ("truncate
the table at the restart table of the second ref block") and resolved against the actual table when
applied, so collecting tests builds nothing.

Used by ``tests/git/test_corrupt_stores.py`` (verify/list/delete on every case) and the fuzzers.
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from refscope.backend.verify import table_blocks

from tests.support.git import git, init_repo

BASES = ("files", "reftable", "reftable256")
MISSING_TABLE = "0x0000000000ff-0x0000000000ff-0badf00d.ref"


def build_base(root: Path, kind: str) -> Path:
    """A repository whose storage has every structure worth damaging (deterministic: fixed dates)."""
    fmt = "files" if kind == "files" else "reftable"
    hash_name = "sha256" if kind == "reftable256" else "sha1"
    repo = init_repo(root, fmt=fmt, hash_name=hash_name)
    git(repo, "commit", "--allow-empty", "-q", "-m", "second")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0")
    lines = [b"create refs/heads/feature/a-long-branch-name-%04d HEAD\n" % i for i in range(600)]
    lines += [b"create refs/heads/topic/%03d HEAD\n" % i for i in range(5)]
    lines += [b"create refs/tags/lw-%02d HEAD~1\n" % i for i in range(40)]
    git(repo, "update-ref", "--stdin", input=b"".join(lines))
    git(repo, "pack-refs", "--all")
    git(repo, "update-ref", "refs/heads/after-pack", "HEAD")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
    return repo


class Corruption(NamedTuple):
    id: str
    base: str  # one of BASES
    apply: Callable[[Path, dict[str, Path]], Path]  # (repo copy, bases) -> the damaged file
    # The damage lies in the obj section, which nothing but verify reads (no listing, no lookup, no
    # write; git's neither): a delete may proceed as git's would, but must leave the damaged bytes
    # exactly as they were. Everything else: the delete must refuse.
    delete_may_pass: bool = False
    # For damage inside one block of the oldest table ("r1", "g0"...): the test deletes a ref whose
    # record (or reflog) lives in that block, so the delete has to read the damaged bytes.
    block: str | None = None


DEFAULT_TARGET = b"refs/heads/topic/003"


def delete_target(case: Corruption, bases: dict[str, Path]) -> bytes:
    """The ref the corruption test deletes: one whose bytes the damage touches, when it is local."""
    if case.block is None:
        return DEFAULT_TARGET
    b = _pick(_blocks(big_table(bases[case.base])), case.block)
    key = b.records[0][0]
    return key[:-9] if b.type == "g" else key


# --------------------------------------------------------------------------------------------- helpers


def reftable_dir(repo: Path) -> Path:
    return repo / ".git" / "reftable"


def table_names(repo: Path) -> list[str]:
    return (reftable_dir(repo) / "tables.list").read_text().split()


def big_table(repo: Path) -> Path:
    """The oldest (compacted) table: the one with every block type."""
    return reftable_dir(repo) / table_names(repo)[0]


def _blocks(path: Path) -> list:
    blocks, findings = table_blocks(path.read_bytes(), str(path))
    assert not findings, findings
    return blocks


def _pick(blocks: list, which: str):
    """'r0' first ref block, 'r1', 'rlast', 'ri' ref index, 'o0', 'g0', 'g1', 'glast', 'gi' log index."""
    typ, pos = which[0], which[1:]
    types = "".join(b.type for b in blocks)
    if which in ("ri", "gi"):
        owner = "r" if which == "ri" else "g"
        last_owner = max(i for i, t in enumerate(types) if t == owner)
        return blocks[last_owner + 1]
    group = [b for b in blocks if b.type == typ]
    return group[-1] if pos == "last" else group[int(pos)]


def _write(path: Path, data: bytes) -> None:
    # Keep the inode (like an in-place corruption on disk): truncate and rewrite.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def truncate_at(path: Path, offset: int) -> None:
    _write(path, path.read_bytes()[:offset])


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    _write(path, bytes(data))


def _footer_start(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    version = data[4]
    hsz, fsz = (24, 68) if version == 1 else (28, 72)
    return len(data) - fsz, hsz


# --------------------------------------------------------------------------------------------- reftable


def _trunc_header(field_end: int) -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        truncate_at(t, field_end)
        return t

    return apply


def _trunc_block(which: str, point: str) -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        b = _pick(_blocks(t), which)
        start = b.offset + b.header_off
        at = {
            "start": b.offset if b.offset else start,
            "type": start + 1,
            "header": start + 4,
            "records": start + 4 + (b.data_end - start - 4) // 2,
            "restarts": b.restart_off,
            "count": b.data_end - 2,
            "end": b.data_end - 1,
        }[point]
        truncate_at(t, at)
        return t

    return apply


def _cut_block(which: str, point: str) -> Callable:
    """Drop the bytes from a point inside a block up to the footer, keeping the (valid) footer: the
    table is shorter than its blocks say, but its footer and CRC still look right."""

    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        b = _pick(_blocks(t), which)
        start = b.offset + b.header_off
        at = {
            "header": start + 4,
            "records": start + 4 + (b.data_end - start - 4) // 2,
            "restarts": b.restart_off,
            "end": b.data_end - 1,
        }[point]
        data = t.read_bytes()
        foot, _ = _footer_start(t)
        _write(t, data[:at] + data[foot:])
        return t

    return apply


def _trunc_footer(point: str) -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        foot, hsz = _footer_start(t)
        size = t.stat().st_size
        fields = {"start": foot, "magic": foot + 4, "header": foot + hsz}
        for i, name in enumerate(("ref_index", "obj", "obj_index", "log", "log_index")):
            fields[name] = foot + hsz + 8 * (i + 1)
        fields["last"] = size - 1
        truncate_at(t, fields[point] if point != "crc" else size - 4)
        return t

    return apply


def _footer_points_at(field: int, which: str) -> Callable:
    """Footer field ``field`` (0 ref_index_position ... 4 log_index_position; obj_position keeps its
    obj_id_len bits) set to the offset of block ``which``, CRC-32 fixed: a footer that reads cleanly but
    sends a seek into the wrong section, while a linear walk never looks at it."""

    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        off = _pick(_blocks(t), which).offset
        data = bytearray(t.read_bytes())
        foot, hsz = _footer_start(t)
        at = foot + hsz + 8 * field
        old = int.from_bytes(data[at : at + 8], "big")
        data[at : at + 8] = ((off << 5) | (old & 31) if field == 1 else off).to_bytes(8, "big")
        data[-4:] = zlib.crc32(bytes(data[foot:-4])).to_bytes(4, "big")
        _write(t, bytes(data))
        return t

    return apply


def _flip_at(locate: Callable[[Path, list], int], mask: int = 0x01, base_table: str = "big") -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        t = big_table(repo) if base_table == "big" else reftable_dir(repo) / table_names(repo)[-1]
        flip(t, locate(t, _blocks(t)), mask)
        return t

    return apply


def _tables_list_edit(edit: Callable[[bytes], bytes], named: str = "tables.list") -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        lst = reftable_dir(repo) / "tables.list"
        _write(lst, edit(lst.read_bytes()))
        return lst if named == "tables.list" else reftable_dir(repo) / named

    return apply


def _sha256_table_in_sha1_stack(repo: Path, bases: dict) -> Path:
    """Replace the newest table with the SHA-256 base's newest table (same update-index range)."""
    other = bases["reftable256"]
    name = table_names(other)[-1]
    names = table_names(repo)
    shutil.copyfile(reftable_dir(other) / name, reftable_dir(repo) / name)
    os.unlink(reftable_dir(repo) / names[-1])
    lst = reftable_dir(repo) / "tables.list"
    _write(lst, ("\n".join(names[:-1] + [name]) + "\n").encode())
    return reftable_dir(repo) / name


def reftable_cases() -> list[Corruption]:
    cases: list[Corruption] = []
    add = cases.append
    for name, end in (("magic", 2), ("version", 4), ("block-size", 5), ("min-index", 8), ("max-index", 16)):
        add(Corruption(f"reftable-truncate-header-{name}", "reftable", _trunc_header(end)))
    add(Corruption("reftable-truncate-header-hash-id", "reftable256", _trunc_header(24)))
    add(Corruption("reftable-truncate-empty", "reftable", _trunc_header(0)))
    for which in ("r0", "r1", "rlast", "ri", "o0"):
        for point in ("start", "type", "header", "records", "restarts", "count", "end"):
            if which == "r0" and point == "start":
                continue  # same as truncating inside the header
            add(Corruption(f"reftable-truncate-{which}-{point}", "reftable", _trunc_block(which, point)))
    for which in ("g0", "g1", "glast", "gi"):
        points = ("start", "type", "header", "records", "end")
        if which == "gi":
            points = (*points, "restarts", "count")
        for point in points:
            add(Corruption(f"reftable-truncate-{which}-{point}", "reftable", _trunc_block(which, point)))
    for which in ("r0", "r1", "rlast", "ri", "o0", "g0", "glast", "gi"):
        for point in ("header", "records", "restarts", "end"):
            if point == "restarts" and which[0] == "g" and which != "gi":
                continue
            add(Corruption(f"reftable-cut-{which}-{point}", "reftable", _cut_block(which, point)))
    for point in (
        "start",
        "magic",
        "header",
        "ref_index",
        "obj",
        "obj_index",
        "log",
        "log_index",
        "crc",
        "last",
    ):
        add(Corruption(f"reftable-truncate-footer-{point}", "reftable", _trunc_footer(point)))

    def block_hdr(which: str, delta: int) -> Callable[[Path, list], int]:
        return lambda t, bl: _pick(bl, which).offset + _pick(bl, which).header_off + delta

    def restart(which: str, delta: int) -> Callable[[Path, list], int]:
        return lambda t, bl: _pick(bl, which).restart_off + delta

    # (name, where, mask); the damaged block (if one) is the name's last "-r1"/"-g0"-style part.
    flips = [
        ("magic", lambda t, bl: 0, 0x01),
        ("magic-footer", lambda t, bl: _footer_start(t)[0] + 1, 0x20),
        ("version", lambda t, bl: 4, 0x02),
        ("version-zero", lambda t, bl: 4, 0x01),
        ("block-size", lambda t, bl: 6, 0x10),
        ("crc", lambda t, bl: t.stat().st_size - 1, 0x01),
        ("footer-log-position", lambda t, bl: _footer_start(t)[0] + _footer_start(t)[1] + 31, 0x01),
        ("block-type-r0", block_hdr("r0", 0), 0x01),
        ("block-type-r1", block_hdr("r1", 0), 0x04),
        ("block-type-ri", block_hdr("ri", 0), 0x02),
        ("block-type-g0", block_hdr("g0", 0), 0x08),
        ("block-len-r1-high", block_hdr("r1", 1), 0x80),
        ("block-len-r1-low", block_hdr("r1", 3), 0x01),
        ("block-len-r0-mid", block_hdr("r0", 2), 0x02),
        ("block-len-g0-low", block_hdr("g0", 3), 0x01),
        ("block-len-g1-high", block_hdr("g1", 1), 0x40),
        ("restart-count-r1", lambda t, bl: _pick(bl, "r1").data_end - 1, 0x01),
        ("restart-count-r1-zero", lambda t, bl: _pick(bl, "r1").data_end - 1, 0x00),  # replaced below
        ("restart-offset-r1-first", restart("r1", 2), 0x01),
        ("restart-offset-r1-second", restart("r1", 5), 0x04),
        ("restart-offset-r0-high", restart("r0", 0), 0x80),
        ("varint-prefix-r1", block_hdr("r1", 4), 0x80),
        ("varint-suffix-r1", block_hdr("r1", 5), 0x40),
        ("varint-suffix-r0", block_hdr("r0", 5), 0x01),
        ("varint-prefix-ri", block_hdr("ri", 4), 0x81),
        ("varint-obj-count", block_hdr("o0", 4 + 2 + 2), 0x80),
        ("index-position", lambda t, bl: _pick(bl, "ri").restart_off - 1, 0x08),
        ("zlib-g0", lambda t, bl: (_pick(bl, "g0").offset + _pick(bl, "g0").data_end) // 2, 0x10),
        ("zlib-glast-adler", lambda t, bl: _pick(bl, "glast").data_end - 1, 0x01),
        ("zlib-g1-header", block_hdr("g1", 4), 0x20),
    ]
    lazy = ("varint-obj-count",)  # the obj section: a delete never reads it
    for name, locate, mask in flips:
        if name == "restart-count-r1-zero":
            continue
        may_pass = name.startswith(lazy)
        block = next((p for p in name.split("-") if p in ("r0", "r1", "g0", "g1", "glast")), None)
        add(Corruption(f"reftable-flip-{name}", "reftable", _flip_at(locate, mask), may_pass, block))

    def zero_restart_count(repo: Path, bases: dict) -> Path:
        t = big_table(repo)
        b = _pick(_blocks(t), "r1")
        data = bytearray(t.read_bytes())
        data[b.data_end - 2 : b.data_end] = b"\0\0"
        _write(t, bytes(data))
        return t

    # The footer's section pointers at blocks of another section. The delete target is the first ref
    # of the first block: found without the index, so only a check of the footer itself catches it.
    for field, label, which in (
        (0, "ref-index", "r1"),
        (0, "ref-index", "rlast"),
        (0, "ref-index", "g0"),
        (1, "obj", "r1"),
        (2, "obj-index", "g0"),
        (3, "log", "ri"),
        (4, "log-index", "g1"),
    ):
        add(
            Corruption(
                f"reftable-footer-{label}-at-{which}", "reftable", _footer_points_at(field, which), block="r0"
            )
        )
    add(Corruption("reftable-restart-count-zero", "reftable", zero_restart_count, block="r1"))

    def swap_ref_blocks(repo: Path, bases: dict) -> Path:
        """Two whole ref blocks trade places: every block is valid, only the order across blocks (and the
        index entries) give it away."""
        t = big_table(repo)
        blocks = _blocks(t)
        r1, r2 = _pick(blocks, "r1"), _pick(blocks, "r2")
        data = bytearray(t.read_bytes())
        a, b = bytes(data[r1.offset : r1.next_offset]), bytes(data[r2.offset : r2.next_offset])
        assert len(a) == len(b)
        data[r1.offset : r1.next_offset], data[r2.offset : r2.next_offset] = b, a
        _write(t, bytes(data))
        return t

    add(Corruption("reftable-swap-ref-blocks", "reftable", swap_ref_blocks, block="r1"))
    add(Corruption("reftable-flip-hash-id", "reftable256", _flip_at(lambda t, bl: 24, 0x01)))
    add(
        Corruption(
            "reftable-flip-hash-id-footer", "reftable256", _flip_at(lambda t, bl: _footer_start(t)[0] + 25)
        )
    )
    add(
        Corruption(
            "tables-list-missing-table",
            "reftable",
            _tables_list_edit(lambda b: b + MISSING_TABLE.encode() + b"\n", MISSING_TABLE),
        )
    )
    add(
        Corruption(
            "tables-list-dotdot-config", "reftable", _tables_list_edit(lambda b: b + b"../../config\n")
        )
    )
    add(Corruption("tables-list-no-final-newline", "reftable", _tables_list_edit(lambda b: b.rstrip(b"\n"))))
    add(Corruption("tables-list-garbage-name", "reftable", _tables_list_edit(lambda b: b + b"garbage\n")))
    add(Corruption("reftable-sha256-table-in-sha1-stack", "reftable", _sha256_table_in_sha1_stack))
    add(
        Corruption(
            "tables-list-terminal-escape",
            "reftable",
            _tables_list_edit(lambda b: b + b"\x1b]0;pwned\x07\x1b[2J\xc2\x9b31m\n"),
        )
    )
    return cases


# --------------------------------------------------------------------------------------------- packed-refs


def _packed_edit(edit: Callable[[bytes], bytes]) -> Callable:
    def apply(repo: Path, bases: dict) -> Path:
        p = repo / ".git" / "packed-refs"
        _write(p, edit(p.read_bytes()))
        return p

    return apply


def _rename_ref(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        needle = b" " + old + b"\n"
        assert needle in data
        return data.replace(needle, b" " + new + b"\n")

    return edit


def _bad_hex(data: bytes) -> bytes:
    header_end = data.index(b"\n") + 1
    return data[: header_end + 5] + b"z" + data[header_end + 6 :]


def _orphan_peeled(data: bytes) -> bytes:
    header_end = data.index(b"\n") + 1
    oid = data[header_end : data.index(b" ", header_end)]
    return data[:header_end] + b"^" + oid + b"\n" + data[header_end:]


def _swap_lines(a: bytes, b: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        lines = data.split(b"\n")
        ia = next(i for i, line in enumerate(lines) if line.endswith(b" " + a))
        ib = next(i for i, line in enumerate(lines) if line.endswith(b" " + b))
        lines[ia], lines[ib] = lines[ib], lines[ia]
        return b"\n".join(lines)

    return edit


def packed_cases() -> list[Corruption]:
    t1, t2 = b"refs/heads/topic/001", b"refs/heads/topic/002"
    edits = [
        ("bad-header", lambda d: b"# pack-refs without: peeled sorted" + d[d.index(b"\n") :]),
        ("bad-header-no-space", lambda d: b"#pack-refs with: peeled" + d[d.index(b"\n") :]),
        ("bad-hex", _bad_hex),
        ("short-oid", lambda d: _short_oid(d, t1)),
        ("orphan-peeled", _orphan_peeled),
        ("double-peeled", _double_peeled),
        ("nul-in-name", _rename_ref(t1, t1 + b"\0x")),
        ("dotdot-in-name", _rename_ref(t1, t1 + b"..x")),
        ("control-char-name", _rename_ref(t1, t1 + b"\x01")),
        ("escape-char-name", _rename_ref(t1, t1 + b"\x1b[31m")),
        ("unsafe-name", _rename_ref(t1, b"refs/heads/../../config")),
        ("crlf", lambda d: d.replace(b"\n", b"\r\n")),
        ("no-final-newline", lambda d: d.rstrip(b"\n")),
        ("unsorted-under-sorted", _swap_lines(t1, t2)),
        ("duplicate-ref", _duplicate(t1)),
        ("empty-line", lambda d: d.replace(b"\n", b"\n\n", 2)),
        ("terminal-escape-header", lambda d: b"#\x1b]0;pwned\x07\x1b[2J" + d[d.index(b"\n") :]),
        ("terminal-escape-oid", lambda d: d.replace(b"\n", b"\n\x1b[2J\xc2\x9b31m\xe2\x80\xae", 1)),
    ]
    # refscope's delete splices packed-refs (records other than the deleted one pass through unparsed),
    # so it checks the whole file first: every one of these, a name git only hides included, makes the
    # delete refuse (verify reports them all as errors; a store that does not read cleanly is not
    # rewritten).
    return [Corruption(f"packed-{name}", "files", _packed_edit(edit)) for name, edit in edits]


def _short_oid(data: bytes, name: bytes) -> bytes:
    i = data.index(b" " + name + b"\n")
    start = data.rindex(b"\n", 0, i) + 1
    return data[:start] + data[start + 1 :]


def _duplicate(name: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        i = data.index(b" " + name + b"\n")
        start = data.rindex(b"\n", 0, i) + 1
        end = i + len(name) + 2
        return data[:end] + data[start:end] + data[end:]

    return edit


def _double_peeled(data: bytes) -> bytes:
    i = data.index(b"\n^") + 1
    eol = data.index(b"\n", i) + 1
    return data[:eol] + data[i:eol] + data[eol:]


def all_cases() -> list[Corruption]:
    return reftable_cases() + packed_cases()
