"""``refscope dump [--json] FILE``: one packed-refs or reftable file, record by record, with offsets.

packed-refs: the header (traits) and every record: offset, length, oid, name, peeled.
reftable:    header, every block (type, offset, length, restart count) and every record (offset,
             prefix length, name, value, update index) and the footer, as described by
             ``formats.reftable.dump``.
The kind is decided by content: a file starting with ``REFT`` is a reftable. ``--json`` prints one
JSON object (``display.to_json``: a field whose bytes are not UTF-8, such as a binary obj key, has U+FFFD
in its text and its bytes in ``<field>_b64``); plain output is one line per block / record, every field
through the display function.
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope dump [--json] FILE"


def _is_reftable(path: str) -> bool:
    """Does the file start with ``REFT``? Opened through ``fileio``: a directory, FIFO, device or
    unreadable file is refused with one line (a FIFO never blocks)."""
    import os

    from refscope.backend.errors import RefscopeError
    from refscope.backend.fileio import open_regular, read_fd

    try:
        fd, st = open_regular(path)
    except (FileNotFoundError, NotADirectoryError) as err:
        raise RefscopeError(path, err.strerror) from None
    try:
        return read_fd(fd, path, 4, 4) == b"REFT"
    finally:
        os.close(fd)


def packed_description(path: str) -> dict:
    """The packed-refs file as a dict; fields read from the file stay bytes (``display`` shows them and
    turns them into JSON). ``records`` is a generator: a dump streams them."""
    from refscope.backend.errors import RefscopeError
    from refscope.backend.formats.packed import PackedRefs

    p = PackedRefs.open(path)
    if p.stat is None:  # gone since it was opened to look at its kind
        raise RefscopeError(path, "No such file or directory")
    rows = (
        {"offset": r.offset, "length": r.length, "oid": r.oid, "name": r.name, "peeled": r.peeled}
        for r in p.iter_records()
    )
    return {
        "path": path,
        "format": "packed-refs",
        "size": p.size,
        "header": bytes(p.buf[: p.header_end]).rstrip(b"\n") if p.header_end else None,
        "header_end": p.header_end,
        "traits": list(p.traits),
        "sorted": p.sorted,
        "peeled": p.peeled_trait,
        "records": rows,
    }


_BATCH = 4096  # lines or JSON items written at a time: memory stays bounded at any file size
_BATCH_CHARS = 1 << 20


def _stream_json(obj: dict, key: str, items, convert) -> None:
    """``to_json(obj)`` with ``obj[key]`` (its last field, a list of dicts) streamed from ``items``:
    the same bytes as the whole document encoded at once, written a batch at a time."""
    from refscope.backend.display import to_json

    head = to_json({**obj, key: []})
    assert head.endswith("[]}")
    out = sys.stdout
    out.write(head[:-2])
    batch: list[str] = []
    size = 0
    first = True
    for item in items:
        text = to_json(convert(item))
        batch.append(text)
        size += len(text)
        if len(batch) >= _BATCH or size >= _BATCH_CHARS:  # an item may be a whole block of records
            out.write(("" if first else ", ") + ", ".join(batch))
            first = False
            batch = []
            size = 0
    if batch:
        out.write(("" if first else ", ") + ", ".join(batch))
    out.write("]}\n")


def _stream_lines(lines) -> None:
    from refscope.backend.display import emit

    batch = []
    for item in lines:
        batch.append(item)
        if len(batch) >= _BATCH:
            emit(batch)
            batch = []
    emit(batch)


def run(argv: list[str]) -> int:
    from .args import parse

    opts = parse(argv, operands=True, cd=False, double_dash=False)
    if opts is None or len(opts.operands) != 1:
        sys.stderr.write(USAGE + "\n")
        return 2
    (path,), as_json = opts.operands, "--json" in opts.flags
    from refscope.backend.display import emit, join, line, path_text, show, to_json

    def field(v: object):
        return "None" if v is None else show(v)  # every record field, bytes or not, through the escaper

    if _is_reftable(path):
        from refscope.backend.formats.reftable.dump import block_json, describe_lazily

        desc = describe_lazily(path)
        if as_json:
            _stream_json(to_json_obj_head(desc), "blocks", desc.blocks, block_json)
            return 0
        emit([line("reftable ", path_text(path), " size ", desc.size), line("header ", to_json(desc.header))])
        _stream_lines(_table_lines(desc.blocks, field))
        emit([line("footer ", to_json(desc.footer))])
        return 0

    obj = packed_description(path)
    if as_json:
        _stream_json(obj, "records", obj["records"], lambda r: r)
        return 0
    head = [line("packed-refs ", path_text(path), " size ", obj["size"])]
    if obj["header"] is not None:
        head.append(
            line(f"@0 header ({obj['header_end']} bytes) traits: ", join(" ", obj["traits"]) or "(none)")
        )
    emit(head)
    _stream_lines(_packed_lines(obj["records"]))
    return 0


def to_json_obj_head(desc) -> dict:
    """The table's JSON document without its blocks (``formats.reftable.dump.to_json_obj``'s order)."""
    from refscope.backend.formats.reftable.dump import to_json_obj

    return to_json_obj(desc._replace(blocks=[]))


def _table_lines(blocks, field):
    from refscope.backend.display import join, line

    for b in blocks:
        yield line(
            f"block {b.type} ({b.section}) offset {b.offset} length {b.length}",
            f" block_len {b.block_len} restarts {b.restart_count} records {len(b.records)}",
        )
        for r in b.records:
            fields = [line(k, "=", field(v)) for k, v in r.items() if k != "offset"]
            yield line(f"  @{r['offset']} ", join(" ", fields))


def _packed_lines(records):
    from refscope.backend.display import line

    for r in records:
        parts = [f"@{r['offset']} len {r['length']} ", r["oid"], " ", r["name"]]
        if r["peeled"]:
            parts += [" ^", r["peeled"]]
        yield line(*parts)
