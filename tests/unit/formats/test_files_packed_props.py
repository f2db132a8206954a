"""Property tests (hypothesis) for the packed-refs reader and the bulk listing path.

Invariants: every record written is found (lookup, seek, row index, prefix ranges) with its oid and peeled
value, in name order whatever the file order; the records tile the file after the header; a mutated file
either reads or raises CorruptStore (never another exception); and the bulk path accepts a run only when
every name in it is valid, producing exactly the (oid, name) pairs of the run.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend.errors import CorruptStore
from refscope.backend.formats.packed import PackedRefs
from refscope.backend.listing import bulk_json, bulk_run, plain_run_ok
from refscope.backend.refname import check_refname

COMPONENT = st.text(alphabet="abcXYZ019-_.@{}/é", min_size=1, max_size=6).map(lambda s: s.encode())
NAME = st.lists(COMPONENT, min_size=1, max_size=4).map(lambda cs: b"refs/" + b"/".join(cs))
VALID_NAME = NAME.filter(lambda n: check_refname(n) is None and b"//" not in n)
OID = st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode())
SETTINGS = settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


def _file(records, header: bytes | None) -> bytes:
    out = [header] if header is not None else []
    for name, oid, peeled in records:
        out.append(oid + b" " + name + b"\n")
        if peeled is not None:
            out.append(b"^" + peeled + b"\n")
    return b"".join(out)


@SETTINGS
@given(
    st.dictionaries(VALID_NAME, st.tuples(OID, st.one_of(st.none(), OID)), min_size=0, max_size=40),
    st.sampled_from(["sorted", "unsorted", "noheader"]),
    st.randoms(use_true_random=False),
    st.lists(NAME, max_size=5),
)
def test_reader_finds_every_record(refs, mode, rnd, probes) -> None:
    records = [(n, o, p) for n, (o, p) in refs.items()]
    records.sort()
    header = b"# pack-refs with: peeled fully-peeled sorted \n"
    if mode != "sorted":
        rnd.shuffle(records)
        header = b"# pack-refs with: peeled \n" if mode == "unsorted" else None
    data = _file(records, header)
    p = PackedRefs.from_bytes(data)
    names = sorted(refs)
    assert [r.name for r in p.iter_from(b"")] == names
    assert len(p) == len(names)
    assert [bytes(p.name_at(s)) for s in p.starts()] == names
    pos = p.header_end
    for r in p.iter_records():  # file order; records tile the body
        assert r.offset == pos
        pos += r.length
    assert pos == len(data)
    for n, (oid, peeled) in refs.items():
        rec = p.lookup(n)
        assert rec is not None and (rec.oid, rec.peeled) == (oid, peeled)
        start, end = p.locate(n)
        assert data[start:end].startswith(oid + b" " + n + b"\n")
    for probe in probes:
        assert (p.lookup(probe) is not None) == (probe in refs)
        assert [r.name for r in p.iter_from(probe)] == [n for n in names if n >= probe]
        rng = p.row_range(probe)
        assert [names[i] for i in rng] == [n for n in names if n.startswith(probe)]


@SETTINGS
@given(
    st.dictionaries(VALID_NAME, st.tuples(OID, st.one_of(st.none(), OID)), min_size=1, max_size=15),
    st.data(),
)
def test_mutations_read_or_raise_corrupt(refs, data) -> None:
    records = sorted((n, o, p) for n, (o, p) in refs.items())
    raw = bytearray(_file(records, b"# pack-refs with: peeled fully-peeled sorted \n"))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from([0x0A, 0x20, 0x5E, 0x00, 0x67, 0x2F, ord("a")]))
    cut = data.draw(st.integers(0, len(raw)))
    blob = bytes(raw[:cut]) if data.draw(st.booleans()) else bytes(raw)
    try:
        p = PackedRefs.from_bytes(blob)
        for r in p.iter_records():
            assert len(r.oid) == 40 and r.name and b"\n" not in r.name and b"\0" not in r.name
            assert r.peeled is None or len(r.peeled) == 40
        p.lookup(records[0][0])
    except CorruptStore as err:
        assert err.file and err.what


LINE_NAME = st.one_of(
    VALID_NAME,
    NAME,
    st.binary(min_size=0, max_size=12).map(lambda b: b"refs/" + b),
)


@SETTINGS
@given(st.lists(st.tuples(LINE_NAME, OID), min_size=1, max_size=20))
def test_bulk_path_only_for_valid_runs(lines) -> None:
    run = b"".join(oid + b" " + name + b"\n" for name, oid in lines if b"\n" not in name)
    if not run:
        return
    if plain_run_ok(run, 40):
        parsed = []
        for name, oid in lines:
            if b"\n" in name:
                continue
            assert check_refname(name) is None, name
            parsed.append({"oid": oid.decode(), "name": name.decode(), "peeled": None, "target": None})
        out = [json.loads(x) for x in bulk_json(run).decode().splitlines()]
        assert out == parsed


def test_bulk_path_accepts_plain_runs() -> None:
    run = b"".join(b"%040x refs/heads/topic-%d\n" % (i, i) for i in range(50))
    assert plain_run_ok(run, 40)
    for bad in (
        b"refs/heads/a..b",
        b"refs/heads/a/",
        b"/refs/x",
        b"refs/x.lock",
        b"refs/@{x",
        b"refs/.x",
        b"@",
    ):
        assert not plain_run_ok(run + b"%040x " % 1 + bad + b"\n", 40), bad
    assert not plain_run_ok(b"%039x refs/heads/x\n" % 1, 40)
    assert not plain_run_ok(b"%040x refs/heads/x y\n" % 1, 40)
    # a later line's oid one digit short or long, in upper case, or followed by an empty or dotted name
    for line in (b"%039x refs/heads/y\n", b"%041x refs/heads/y\n", b"%040X refs/heads/y\n", b"%040x \n"):
        assert not plain_run_ok(run + line % 0xABC, 40), line
    for name in (b"refs/heads/y.", b"refs/heads/y/.z", b".refs/y", b"refs/heads//y"):
        assert not plain_run_ok(run + b"%040x " % 1 + name + b"\n", 40), name
    # a name holding 40 hex digits between separators cannot stand in for a broken oid field
    assert not plain_run_ok(run + b"%039x refs/%040x/z\n" % (1, 2), 40)


@SETTINGS
@given(st.lists(st.tuples(LINE_NAME, OID, st.one_of(st.none(), OID)), min_size=1, max_size=20), st.booleans())
def test_bulk_run_with_peeled_lines(lines, as_json) -> None:
    lines = [t for t in lines if b"\n" not in t[0]]
    run = b"".join(o + b" " + n + b"\n" + (b"^" + p + b"\n" if p else b"") for n, o, p in lines)
    out = bulk_run(run, 40, as_json)
    if out is None:
        return
    assert all(check_refname(n) is None for n, _, _ in lines)
    if as_json:
        got = [json.loads(x) for x in out.decode().splitlines()]
        want = [
            {"oid": o.decode(), "name": n.decode(), "peeled": p.decode() if p else None, "target": None}
            for n, o, p in lines
        ]
        assert got == want
    else:
        assert out == b"".join(o + b" " + n + b"\n" for n, o, _ in lines)
