"""``refscope dump [--json] FILE``: one packed-refs or reftable file, record by record, with offsets.

packed-refs: the header (traits) and every record: offset, length, oid, name, peeled.
reftable:    header, every block (type, offset, length, restart count) and every record (offset,
             prefix length, name, value, update index) and the footer, as described by
             ``formats.reftable.dump``.
The kind is decided by content: a file starting with ``REFT`` is a reftable. ``--json`` prints one
JSON object; plain output is one line per block / record, names escaped.
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope dump [--json] FILE"


def _parse(argv: list[str]) -> tuple[str, bool] | None:
    as_json = False
    files: list[str] = []
    for arg in argv:
        if arg == "--json":
            as_json = True
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE + "\n")
            sys.exit(0)
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            files.append(arg)
    if len(files) != 1:
        return None
    return files[0], as_json


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
    """The packed-refs file as a JSON-ready dict (names with surrogateescape)."""
    from refscope.backend.errors import RefscopeError
    from refscope.backend.formats.packed import PackedRefs

    p = PackedRefs.open(path)
    if p.stat is None:  # gone since it was opened to look at its kind
        raise RefscopeError(path, "No such file or directory")

    def s(b):
        return None if b is None else b.decode("utf-8", "surrogateescape")

    return {
        "path": path,
        "format": "packed-refs",
        "size": p.size,
        "header": s(bytes(p.buf[: p.header_end]).rstrip(b"\n")) if p.header_end else None,
        "header_end": p.header_end,
        "traits": [s(t) for t in p.traits],
        "sorted": p.sorted,
        "peeled": p.peeled_trait,
        "records": [
            {
                "offset": r.offset,
                "length": r.length,
                "oid": s(r.oid),
                "name": s(r.name),
                "peeled": s(r.peeled),
            }
            for r in p.iter_records()
        ],
    }


def run(argv: list[str]) -> int:
    parsed = _parse(argv)
    if parsed is None:
        sys.stderr.write(USAGE + "\n")
        return 2
    path, as_json = parsed
    import json
    import os

    from refscope.backend.display import escape_name

    def esc(text: str | None) -> str:
        return "-" if text is None else escape_name(os.fsencode(text))

    if _is_reftable(path):
        from refscope.backend.formats.reftable.dump import describe, to_json_obj

        obj = to_json_obj(describe(path))
        if as_json:
            sys.stdout.write(json.dumps(obj) + "\n")
            return 0
        out = [f"reftable {esc(path)} size {obj['size']}", f"header {json.dumps(obj['header'])}"]
        for b in obj["blocks"]:
            out.append(
                f"block {b['type']} ({b['section']}) offset {b['offset']} length {b['length']}"
                f" block_len {b['block_len']} restarts {b['restart_count']} records {len(b['records'])}"
            )
            for r in b["records"]:
                fields = []
                for k, v in r.items():
                    if k in ("offset",):
                        continue
                    if isinstance(v, str) and k in ("key", "name", "target", "last_key", "message"):
                        v = esc(v)
                    fields.append(f"{k}={v}")
                out.append(f"  @{r['offset']} " + " ".join(fields))
        out.append(f"footer {json.dumps(obj['footer'])}")
        sys.stdout.write("\n".join(out) + "\n")
        return 0

    obj = packed_description(path)
    if as_json:
        sys.stdout.write(json.dumps(obj) + "\n")
        return 0
    out = [f"packed-refs {esc(path)} size {obj['size']}"]
    if obj["header"] is not None:
        out.append(f"@0 header ({obj['header_end']} bytes) traits: {' '.join(obj['traits']) or '(none)'}")
    for r in obj["records"]:
        line = f"@{r['offset']} len {r['length']} {r['oid']} {esc(r['name'])}"
        if r["peeled"]:
            line += f" ^{r['peeled']}"
        out.append(line)
    sys.stdout.write("\n".join(out) + "\n")
    return 0
