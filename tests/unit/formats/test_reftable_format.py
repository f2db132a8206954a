"""Reftable format: varints, records, blocks and tables, written by refscope and by git.

- Property tests (hypothesis): varint round trips and overflow, write_table -> Table round trips over random
  records and layouts, decoders that only ever raise CorruptStore on damaged input.
- Differential tests: our writer reproduces git's table files byte for byte; tables we write are read by git
  (for-each-ref, reflog, refs verify, fsck) exactly as intended; git's geometric compaction picks the segment
  ``suggest_compaction_segment`` predicts.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend.errors import CorruptStore, UnsupportedFormat
from refscope.backend.formats.reftable.dump import describe, to_json_obj
from refscope.backend.formats.reftable.policy import (
    compaction_size,
    explain_compaction,
    forecast,
    suggest_compaction_segment,
)
from refscope.backend.formats.reftable.record import (
    LogRecord,
    RefRecord,
    VarintError,
    get_varint,
    put_varint,
    tz_from_minutes,
    tz_minutes,
)
from refscope.backend.formats.reftable.stack import parse_tables_list
from refscope.backend.formats.reftable.table import Table
from refscope.backend.formats.reftable.writer import write_table

from tests.support.git import for_each_ref, git, git_noauto, init_repo, run_git

# --- varints ---------------------------------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varint_round_trip(v):
    enc = put_varint(v)
    assert get_varint(enc, 0, len(enc)) == (v, len(enc))
    assert get_varint(b"x" + enc + b"y", 1, 1 + len(enc)) == (v, 1 + len(enc))


@given(st.binary(min_size=0, max_size=12))
def test_varint_decode_never_crashes(data):
    try:
        v, n = get_varint(data, 0, len(data))
    except VarintError:
        return
    assert 0 <= v < 2**64 and put_varint(v) == data[:n]


def test_varint_limits():
    assert put_varint(127) == b"\x7f" and put_varint(128) == b"\x80\x00"
    with pytest.raises(VarintError, match="overflow"):
        get_varint(b"\xff" * 10 + b"\x00", 0, 11)
    with pytest.raises(VarintError, match="truncated"):
        get_varint(b"\x80", 0, 1)


# --- write_table -> Table round trips --------------------------------------------------------------------

NAME = st.binary(min_size=1, max_size=60).filter(lambda b: b"\0" not in b)
HEX = {"sha1": 40, "sha256": 64}


@st.composite
def tables(draw):
    hash_name = draw(st.sampled_from(["sha1", "sha256"]))
    hexlen = HEX[hash_name]
    oid = st.binary(min_size=hexlen // 2, max_size=hexlen // 2).map(lambda b: b.hex().encode())
    lo = draw(st.integers(min_value=0, max_value=2**40))
    hi = lo + draw(st.integers(min_value=0, max_value=1000))
    names = draw(st.lists(NAME, unique=True, max_size=120))
    refs = []
    for n in names:
        vt = draw(st.integers(0, 3))
        ui = draw(st.integers(lo, hi))
        if vt == 0:
            refs.append(RefRecord(n, ui, 0))
        elif vt == 1:
            refs.append(RefRecord(n, ui, 1, draw(oid)))
        elif vt == 2:
            refs.append(RefRecord(n, ui, 2, draw(oid), draw(oid)))
        else:
            refs.append(RefRecord(n, ui, 3, target=draw(NAME)))
    logs = []
    keys = draw(st.lists(st.tuples(NAME, st.integers(0, hi)), unique=True, max_size=60))
    for n, ui in keys:
        if draw(st.booleans()):
            logs.append(LogRecord(n, ui, 0))
        else:
            msg = draw(st.binary(max_size=40).filter(lambda b: b"\n" not in b)) + b"\n"
            logs.append(
                LogRecord(
                    n, ui, 1, draw(oid), draw(oid), draw(NAME), draw(NAME),
                    draw(st.integers(0, 2**40)), draw(st.integers(-1200, 1400)), msg,
                )
            )  # fmt: skip
    layout = dict(
        block_size=draw(st.sampled_from([512, 1024, 2000, 4096, 65536])),
        restart_interval=draw(st.integers(1, 64)),
        index_objects=draw(st.booleans()),
        version=draw(st.sampled_from([None, 2])),
    )
    return hash_name, lo, hi, refs, logs, layout


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_table_round_trip(case):
    hash_name, lo, hi, refs, logs, layout = case
    data = write_table(refs, logs, hash_name=hash_name, min_update_index=lo, max_update_index=hi, **layout)
    t = Table.from_bytes(data)
    assert (t.hash_name, t.min_update_index, t.max_update_index) == (hash_name, lo, hi)
    want_refs = sorted(refs, key=lambda r: r.name)
    assert list(t.iter_refs()) == want_refs
    want_logs = sorted(logs, key=lambda r: (r.name, -r.update_index))
    assert list(t.iter_logs()) == want_logs
    for r in want_refs[:20]:
        assert t.seek_ref(r.name) == r
        assert [x.name for x in t.iter_refs(r.name)] == [x.name for x in want_refs if x.name >= r.name]
    for n in {lg.name for lg in logs[:10]}:
        assert list(t.iter_logs(n)) == [lg for lg in want_logs if lg.name == n]
    assert t.seek_ref(b"\xff" * 61) is None
    # what we read writes back to the same bytes
    again = write_table(
        t.iter_refs(), t.iter_logs(), hash_name=hash_name, min_update_index=lo, max_update_index=hi, **layout
    )
    assert again == data
    # the dump sees every record exactly once
    d = describe_bytes(data)
    assert sum(len(b["records"]) for b in d["blocks"] if b["section"] == "ref") == len(refs)
    assert sum(len(b["records"]) for b in d["blocks"] if b["section"] == "log") == len(logs)


@given(st.integers(-1439, 1439))
def test_tz_conversion(minutes):
    assert tz_minutes(tz_from_minutes(minutes)) == minutes
    assert tz_from_minutes(-90) == -130 and tz_from_minutes(330) == 530


def describe_bytes(data: bytes, tmp=Path("/tmp")) -> dict:
    p = tmp / f"refscope-rt-{os.getpid()}.ref"
    p.write_bytes(data)
    try:
        return to_json_obj(describe(str(p)))
    finally:
        p.unlink()


def test_empty_table_is_header_and_footer():
    data = write_table([], [], hash_name="sha1", min_update_index=1, max_update_index=1)
    assert len(data) == 24 + 68
    t = Table.from_bytes(data)
    assert list(t.iter_refs()) == [] and list(t.iter_logs()) == [] and not t.has_refs


def test_writer_refuses_bad_input():
    with pytest.raises(ValueError):
        write_table(
            [RefRecord(b"a", 5, 1, b"0" * 40)], hash_name="sha1", min_update_index=1, max_update_index=2
        )
    with pytest.raises(ValueError):
        write_table(
            [RefRecord(b"a", 1, 0), RefRecord(b"a", 1, 0)],
            hash_name="sha1",
            min_update_index=1,
            max_update_index=2,
        )
    with pytest.raises(ValueError, match="multi-line"):
        write_table(
            [], [LogRecord(b"a", 1, 1, b"0" * 40, b"1" * 40, b"n", b"e", 1, 0, b"two\nlines")],
            hash_name="sha1", min_update_index=1, max_update_index=1,
        )  # fmt: skip


# --- damaged input only ever raises CorruptStore -----------------------------------------------------------


def _sample_table() -> bytes:
    refs = [
        RefRecord(b"refs/heads/b%04d" % i, 3, 1 + (i % 3 == 0), b"%040x" % i, b"%040x" % (i * 7))
        for i in range(300)
    ]
    refs = [r if r.value_type == 2 else r._replace(peeled=None) for r in refs]
    refs.append(RefRecord(b"HEAD", 1, 3, target=b"refs/heads/b0001"))
    refs.append(RefRecord(b"refs/heads/gone", 2, 0))
    logs = [
        LogRecord(
            b"refs/heads/b%04d" % i,
            3,
            1,
            b"0" * 40,
            b"%040x" % i,
            b"C O Mitter",
            b"c@x",
            1700000000,
            60,
            b"m\n",
        )
        for i in range(80)
    ] + [LogRecord(b"refs/heads/gone", 2, 0)]
    return write_table(refs, logs, hash_name="sha1", min_update_index=1, max_update_index=3, block_size=1024)


SAMPLE = _sample_table()


def _read_everything(data: bytes) -> None:
    t = Table.from_bytes(data)
    list(t.iter_refs())
    list(t.iter_logs())
    list(t.iter_objs())
    t.blocks()
    t.seek_ref(b"refs/heads/b0100")
    list(t.iter_logs(b"refs/heads/b0050"))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_damaged_tables_raise_only_corrupt_store(data):
    buf = bytearray(SAMPLE)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    if data.draw(st.booleans()) and len(buf) >= 68:
        # keep the footer's CRC valid so the damage reaches the blocks
        f = len(buf) - 68
        buf[f:] = (
            bytes(buf[:24])
            + bytes(buf[f + 24 : f + 64])
            + zlib.crc32(bytes(buf[:24]) + bytes(buf[f + 24 : f + 64])).to_bytes(4, "big")
        )
    try:
        _read_everything(bytes(buf))
    except (CorruptStore, UnsupportedFormat) as e:
        assert e.file and e.what


@pytest.mark.parametrize(
    "mutate, what",
    [
        (lambda b: b"XEFT" + b[4:], "bad magic"),
        (lambda b: b[:4] + b"\x03" + b[5:], "version 3"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC-32"),
        (lambda b: b[:20], "too small"),
        (lambda b: b[:-68] + b"REFX" + b[-64:], "footer magic"),
        (lambda b: b[:24] + b"x" + b[25:], "unknown block type"),
    ],
)
def test_specific_corruptions(mutate, what):
    with pytest.raises((CorruptStore, UnsupportedFormat), match=what):
        _read_everything(mutate(SAMPLE))


def test_block_len_past_end_and_restart_checks():
    b = bytearray(SAMPLE)
    b[25:28] = (0xFFFFFF).to_bytes(3, "big")  # first block's block_len
    with pytest.raises(CorruptStore, match="block_len"):
        _read_everything(bytes(b))
    b = bytearray(SAMPLE)
    t = Table.from_bytes(SAMPLE)
    blk = t.block_at(0)
    end = blk.block_len
    b[end - 2 : end] = b"\x00\x00"  # restart_count 0: git does not check, refscope does
    with pytest.raises(CorruptStore, match="restart_count is 0"):
        _read_everything(bytes(b))
    b = bytearray(SAMPLE)
    b[end - 5 : end - 2] = (end + 10).to_bytes(3, "big")  # last restart offset beyond the records
    with pytest.raises(CorruptStore, match="restart offset"):
        _read_everything(bytes(b))


# --- git reads what we write; we write what git writes ---------------------------------------------------


def _append_table(path: Path, data: bytes, lo: int, hi: int) -> str:
    name = f"0x{lo:012x}-0x{hi:012x}-{0x1234ABCD:08x}.ref"
    d = path / ".git/reftable"
    (d / name).write_bytes(data)
    lst = d / "tables.list"
    lst.write_bytes(lst.read_bytes() + name.encode() + b"\n")
    return name


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
def test_git_reads_our_tables(tmp_path, git_bin, hash_name):
    path = init_repo(tmp_path / "r", fmt="reftable", hash_name=hash_name)
    git(path, "config", "maintenance.auto", "false")
    head = git(path, "rev-parse", "HEAD").strip()
    git(path, "tag", "-a", "-m", "t", "v1")
    tag = git(path, "rev-parse", "v1").strip()
    for i in range(3):
        git_noauto(path, "update-ref", "-m", f"step {i}", "refs/heads/doomed", head)
    git_noauto(path, "update-ref", "refs/heads/keep", head)
    snap_tables = [t for t in (path / ".git/reftable/tables.list").read_text().split()]
    top = max(Table.open(str(path / ".git/reftable" / n)).max_update_index for n in snap_tables)
    ui = top + 1
    # a deletion table the way git writes one: tombstone + a deletion record for every reflog entry
    entries = [
        rec
        for n in snap_tables
        for rec in Table.open(str(path / ".git/reftable" / n)).iter_logs(b"refs/heads/doomed")
    ]
    refs = [
        RefRecord(b"refs/heads/doomed", ui, 0),
        RefRecord(b"refs/heads/new", ui, 1, head),
        RefRecord(b"refs/tags/ours", ui, 2, tag, head),
        RefRecord(b"refs/heads/symbolic", ui, 3, target=b"refs/heads/keep"),
    ]
    logs = [LogRecord(b"refs/heads/doomed", e.update_index, 0) for e in entries]
    zero = b"0" * len(head)
    logs.append(
        LogRecord(
            b"refs/heads/new",
            ui,
            1,
            zero,
            head,
            b"C O Mitter",
            b"committer@example.com",
            1700000000,
            -130,  # git stores -0130 as the number -130
            b"made by refscope",
        )
    )
    data = write_table(
        refs, logs, hash_name=hash_name, min_update_index=ui, max_update_index=ui, block_size=4096
    )
    _append_table(path, data, ui, ui)
    rows = {r[0]: r for r in for_each_ref(path)}
    assert b"refs/heads/doomed" not in rows
    assert rows[b"refs/heads/new"][1] == head
    assert rows[b"refs/tags/ours"][1:3] == (tag, head)
    assert rows[b"refs/heads/symbolic"][3] == b"refs/heads/keep"
    assert run_git(path, "reflog", "exists", "refs/heads/doomed").returncode == 1
    out = git(path, "reflog", "show", "--format=%H|%gn|%ge|%gs|%gd", "--date=raw", "refs/heads/new")
    assert out == head + b"|C O Mitter|committer@example.com|made by refscope|new@{1700000000 -0130}\n"
    assert git(path, "refs", "verify") == b""
    git(path, "fsck", "--no-dangling")
    # and git keeps working on top of our table (append + full compaction)
    git(path, "update-ref", "refs/heads/after", head)
    git(path, "pack-refs")
    assert {r[0] for r in for_each_ref(path)} >= {b"refs/heads/new", b"refs/heads/after", b"refs/tags/ours"}
    assert b"refs/heads/doomed" not in {r[0] for r in for_each_ref(path)}


@pytest.mark.parametrize(
    "hash_name, block_size, restart, index_objects, n",
    [("sha1", 1024, 1, True, 3000), ("sha1", 4096, 16, True, 2000), ("sha256", 2048, 5, False, 1500),
     ("sha1", 65536, 64, True, 4000), ("sha256", 1024, 64, True, 600)],
)  # fmt: skip
def test_writer_reproduces_git_byte_for_byte(
    tmp_path, git_bin, hash_name, block_size, restart, index_objects, n
):
    path = init_repo(tmp_path / "r", fmt="reftable", hash_name=hash_name)
    git(path, "config", "reftable.blockSize", str(block_size))
    git(path, "config", "reftable.restartInterval", str(restart))
    git(path, "config", "reftable.indexObjects", str(index_objects).lower())
    head = git(path, "rev-parse", "HEAD").strip().decode()
    git(path, "tag", "-a", "-m", "t", "v1")
    git(path, "tag", "-a", "-m", "t", "v1n", "v1")
    git(path, "symbolic-ref", "refs/heads/sym", "refs/heads/main")
    lines = "".join(f"create refs/heads/r/{i * 7919 % 100003:06d} {head}\n" for i in range(n))
    git(path, "update-ref", "--stdin", input=lines.encode())
    git(path, "pack-refs")
    (name,) = (path / ".git/reftable/tables.list").read_text().split()
    orig = (path / ".git/reftable" / name).read_bytes()
    t = Table.open(str(path / ".git/reftable" / name))
    out = write_table(
        t.iter_refs(), t.iter_logs(), hash_name=hash_name, min_update_index=t.min_update_index,
        max_update_index=t.max_update_index, block_size=block_size, restart_interval=restart,
        index_objects=index_objects, exact_log_message=True,
    )  # fmt: skip
    assert out == orig
    kinds = {b.section for b in t.blocks()}
    assert "log" in kinds and ("ref_index" in kinds) == (t.footer.ref_index_position > 0)
    if index_objects and t.footer.ref_index_position:
        assert "obj" in kinds


def test_multi_level_index(tmp_path, git_bin):
    """Enough small blocks that the ref index needs more than one level."""
    refs = [RefRecord(b"refs/heads/%07d" % i, 1, 1, b"%040x" % i) for i in range(5000)]
    data = write_table(refs, hash_name="sha1", min_update_index=1, max_update_index=1, block_size=512)
    t = Table.from_bytes(data)
    idx_blocks = [b for b in t.blocks() if b.section == "ref_index"]
    assert len(idx_blocks) > 3
    top = t.block_at(t.footer.ref_index_position)
    assert top.offset > idx_blocks[0].offset  # highest level is written last
    for i in (0, 1, 777, 2000, 4999):
        assert t.seek_ref(b"refs/heads/%07d" % i).value == b"%040x" % i
    assert t.seek_ref(b"refs/heads/9999999") is None
    assert [r.name for r in t.iter_refs(b"refs/heads/0004990")] == [
        b"refs/heads/%07d" % i for i in range(4990, 5000)
    ]
    # git agrees: put it in a repo
    path = init_repo(tmp_path / "r", fmt="reftable")
    head = git(path, "rev-parse", "HEAD").strip()
    refs = [RefRecord(b"refs/heads/%07d" % i, 2, 1, head) for i in range(5000)]
    data = write_table(refs, hash_name="sha1", min_update_index=2, max_update_index=2, block_size=512)
    _append_table(path, data, 2, 2)
    assert len(for_each_ref(path)) == 5001
    assert git(path, "rev-parse", "refs/heads/0003137").strip() == head


# --- tables.list and compaction policy -------------------------------------------------------------------


def test_tables_list_parsing():
    good = b"0x000000000001-0x000000000002-0123abcd.ref\n\n0x000000000003-0x000000000003-ffffffff.ref\n"
    assert parse_tables_list(good, "l") == [
        "0x000000000001-0x000000000002-0123abcd.ref",
        "0x000000000003-0x000000000003-ffffffff.ref",
    ]
    assert parse_tables_list(b"", "l") == []
    for bad in (
        b"0x000000000001-0x000000000002-0123abcd.ref",
        b"0x000000000001-0x000000000002-0123ABCD.ref\n",
        b"../0x000000000001-0x000000000002-0123abcd.ref\n",
        b"0x000000000001-0x000000000002-0123abcd.ref.lock\n",
    ):
        with pytest.raises(CorruptStore):
            parse_tables_list(bad, "l")


@pytest.mark.parametrize(
    "sizes, want",
    [
        ([], None),
        ([10], None),
        ([64, 32, 16, 8, 4, 2, 1], None),
        ([64, 32, 16, 8, 4, 3, 1], (0, 6)),  # git's comment: "64, 32, 16, 8, 4, 3, 1"
        ([128, 32, 16, 8, 4, 3, 1], (1, 6)),
        ([1, 1], (0, 2)),
        ([10, 5, 5], (0, 3)),
        ([100, 10, 10, 10], (1, 4)),
    ],
)
def test_suggest_compaction_segment(sizes, want):
    seg = suggest_compaction_segment(sizes, 2)
    assert seg == want
    seg2, steps = explain_compaction(sizes, 2)
    assert seg2 == seg
    assert all(s.in_segment == (seg is not None and seg[0] <= s.index < seg[1]) for s in steps)


def test_compaction_policy_matches_git(tmp_path, git_bin):
    path = init_repo(tmp_path / "r", fmt="reftable")
    git(path, "config", "maintenance.auto", "false")
    git(path, "pack-refs")
    head = git(path, "rev-parse", "HEAD").strip().decode()
    for k, count in enumerate([40, 3, 30, 1, 2, 9, 1]):
        lines = "".join(f"create refs/heads/t{k}/{i} {head}\n" for i in range(count))
        git_noauto(path, "update-ref", "--stdin", input=lines.encode())
    d = path / ".git/reftable"
    before = (d / "tables.list").read_text().split()
    sizes = [compaction_size(os.stat(d / n).st_size, 1, "sha1") for n in before]
    seg = suggest_compaction_segment(sizes, 2)
    assert seg is not None
    fc = forecast([Table.open(str(d / n)) for n in before], "sha1")
    assert (fc.sizes, fc.segment) == (sizes, seg)
    git(path, "pack-refs", "--auto")
    after = (d / "tables.list").read_text().split()
    start, end = seg
    assert after[:start] == before[:start] and after[start + 1 :] == before[end:]
    merged = Table.open(str(d / after[start]))
    # the replaced tables are gone; their names carry their update-index ranges
    assert merged.min_update_index == int(before[start][2:14], 16)
    assert merged.max_update_index == int(before[end - 1][17:29], 16)
