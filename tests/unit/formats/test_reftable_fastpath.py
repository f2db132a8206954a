"""The fast ref-block decoders (``_decode_fast``, ``ref_block_pairs``) against the fully checked one.

They must agree byte for byte with ``_decode_checked`` on every block it accepts, and on every block it
rejects they must give up (None), so that ``decode_ref_block`` raises exactly the checked decoder's
CorruptStore. Tables come from refscope's writer (git's layout); corruption is random byte damage.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from refscope.backend import parallel
from refscope.backend.errors import CorruptStore
from refscope.backend.formats.reftable.block import (
    _decode_checked,
    _decode_fast,
    decode_ref_block,
    ref_block_pairs,
)
from refscope.backend.formats.reftable.record import RefRecord
from refscope.backend.formats.reftable.table import Table
from refscope.backend.formats.reftable.writer import write_table
from refscope.backend.refname import is_valid_refname
from refscope.backend.repo import discover
from refscope.backend.stores.reftable import ReftableStore, block_names_suspect, pairs_plain, ref_from

from tests.support.git import git, git_env, git_noauto, init_repo
from tests.support.listing import listed

_HS = {"sha1": 20, "sha256": 32}


def _table(names: list[bytes], kinds: list[int], deltas: list[int], hash_name: str, block_size: int) -> Table:
    hs = _HS[hash_name]
    refs = []
    for k, (name, kind, d) in enumerate(zip(names, kinds, deltas, strict=True)):
        oid = (b"%02x" % (k % 251 + 1)) * hs
        if kind == 0:
            refs.append(RefRecord(name, 1 + d, 0))
        elif kind == 1:
            refs.append(RefRecord(name, 1 + d, 1, oid))
        elif kind == 2:
            refs.append(RefRecord(name, 1 + d, 2, oid, (b"%02x" % (k % 13 + 3)) * hs))
        else:
            refs.append(RefRecord(name, 1 + d, 3, None, None, b"refs/heads/t%d" % k))
    data = write_table(
        refs,
        [],
        hash_name=hash_name,
        min_update_index=1,
        max_update_index=1 + max(deltas, default=0),
        block_size=block_size,
        version=2 if hash_name == "sha256" else 1,
    )
    return Table.from_bytes(data, "t.ref")


def _blocks(t: Table):
    return [t.block_at(off) for off in t.ref_block_offsets()]


def _expected_pairs(rb) -> list[bytes] | None:
    if any(m & 7 != 1 for m in rb.meta):
        return None
    out = []
    for j, name in enumerate(rb.names):
        out += [rb.oid(j), name]
    return out


def _agree(blk, min_ui: int = 1) -> None:
    """Fast paths equal the checked decoder, or give up; errors are the checked decoder's."""
    try:
        want = _decode_checked(blk, min_ui)
    except CorruptStore as e:
        assert (
            _decode_fast(blk.data, blk.header_off + 4, blk.restart_off, blk.restarts, blk.hash_size) is None
        )
        assert ref_block_pairs(blk) is None
        with pytest.raises(CorruptStore) as got:
            decode_ref_block(blk, min_ui)
        assert (got.value.file, str(got.value), got.value.offset) == (e.file, str(e), e.offset)
        return
    got = decode_ref_block(blk, min_ui)
    assert (got.names, got.meta, got.tombstones, got.symrefs, got.simple) == (
        want.names,
        want.meta,
        want.tombstones,
        want.symrefs,
        want.simple,
    )
    pairs = ref_block_pairs(blk)
    if pairs is not None:
        assert pairs == _expected_pairs(want)


_name_part = st.text("abz-_./@{~", min_size=1, max_size=6).map(str.encode)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_name_part, min_size=1, max_size=4),
            st.sampled_from([0, 1, 1, 1, 1, 2, 3]),
            st.sampled_from([0, 1, 5, 127, 128, 300, 16383, 16384, 70000]),
        ),
        min_size=1,
        max_size=120,
        unique_by=lambda r: tuple(r[0]),
    ),
    st.sampled_from(["sha1", "sha256"]),
    st.sampled_from([1024, 4096]),
    st.integers(0, 200),
)
def test_fast_decoders_agree(recs, hash_name, block_size, pad):
    """Short and long names (prefixes over 127 bytes), suffixes over 15 bytes, all value types,
    update-index deltas of 1, 2 and 3 varint bytes, both hashes."""
    long = b"refs/" + b"x" * pad + b"/"
    names = sorted({long + b"/".join(parts) for parts, _k, _d in recs})
    kinds = {long + b"/".join(parts): k for parts, k, _d in recs}
    deltas = {long + b"/".join(parts): d for parts, _k, d in recs}
    t = _table(names, [kinds[n] for n in names], [deltas[n] for n in names], hash_name, block_size)
    seen = []
    for blk in _blocks(t):
        _agree(blk)
        seen += decode_ref_block(blk, 1).names
    assert seen == names


def test_fast_paths_taken_for_common_blocks():
    """A table like git's pack-refs output takes the fast paths (the point of them)."""
    names = sorted(b"refs/heads/feature/team-%02d/branch-%07d" % (i % 41, i) for i in range(3000))
    t = _table(names, [1] * len(names), [i % 200 for i in range(len(names))], "sha1", 4096)
    for blk in _blocks(t):
        fast = _decode_fast(blk.data, blk.header_off + 4, blk.restart_off, blk.restarts, 20)
        assert fast is not None and fast[0] == _decode_checked(blk, 1).names
        assert ref_block_pairs(blk) == _expected_pairs(_decode_checked(blk, 1))


@pytest.mark.parametrize("seed", range(6))
def test_fast_decoders_on_damaged_blocks(seed):
    """Random byte damage anywhere in a block: the fast paths never accept what the checked decoder
    rejects, and agree with it where it accepts."""
    rnd = random.Random(seed)
    names = sorted(b"refs/%s/%07d" % (rnd.choice([b"heads", b"tags", b"pull/x"]), i) for i in range(600))
    kinds = [rnd.choice([1, 1, 1, 1, 2, 0, 3]) for _ in names]
    deltas = [rnd.choice([0, 3, 200, 20000]) for _ in names]
    t = _table(names, kinds, deltas, "sha1", 1024)
    blocks = _blocks(t)
    for _ in range(400):
        blk = rnd.choice(blocks)
        data = bytearray(blk.data)
        for _k in range(rnd.randint(1, 3)):
            p = rnd.randrange(blk.header_off + 4, blk.restart_off)
            data[p] = rnd.choice([0, 1, 0x7F, 0x80, 0x81, 0xFF, rnd.randrange(256)])
        damaged = type(blk)(
            blk.file,
            blk.offset,
            blk.type,
            blk.header_off,
            blk.block_len,
            bytes(data),
            blk.restart_off,
            blk.restarts,
            blk.full_size,
            blk.hash_size,
        )
        _agree(damaged)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.binary(max_size=12).map(lambda b: b"refs/" + b)
        | st.sampled_from(
            [b"@", b".x", b"a.", b"/a", b"", b"refs/a/", b"refs//a", b"refs/x.lock", b'refs/"q']
        ),
        min_size=1,
        max_size=8,
    )
)
def test_plain_check_never_misses(names):
    """``pairs_plain`` passes only valid names of printable ASCII without '"'; ``block_names_suspect``
    never passes an invalid name."""
    if pairs_plain(names):
        assert all(is_valid_refname(n) and all(0x20 < c < 0x7F and c != 0x22 for c in n) for n in names)
    assert block_names_suspect(names) or all(is_valid_refname(n) for n in names)


# --- a big base table with newer tables above it (the usual live stack) ---------------------------------


@pytest.fixture(scope="module")
def overlay_repo(tmp_path_factory, git_bin) -> Path:
    """3000 refs packed into one table, then small tables: deletions of base refs (tombstones), updates,
    creations inside and after the base's range, symrefs (one dangling), an annotated tag, a null-oid-free
    re-creation of a deleted ref."""
    path = init_repo(tmp_path_factory.mktemp("ov") / "r", fmt="reftable")
    git(path, "config", "maintenance.auto", "false")
    head = git(path, "rev-parse", "HEAD").strip().decode()
    git_noauto(path, "commit", "-q", "--allow-empty", "-m", "second")
    second = git(path, "rev-parse", "HEAD").strip().decode()
    git(path, "tag", "-a", "-m", "annotated", "t0", head)
    tag = git(path, "rev-parse", "t0").strip().decode()
    lines = "".join(f"create refs/heads/b/{i:05d} {head}\n" for i in range(0, 6000, 2))
    lines += "".join(f"create refs/tags/many/{i:04d} {tag}\n" for i in range(400))  # peeled records
    git(path, "update-ref", "--stdin", input=lines.encode())
    git(path, "pack-refs")
    batches = [
        [f"delete refs/heads/b/{i:05d}" for i in range(10, 400, 14)],
        [f"update refs/heads/b/{i:05d} {second}" for i in range(1000, 1300, 6)],
        [f"create refs/heads/b/{i:05d} {second}" for i in range(2001, 2101, 2)],
        [f"create refs/heads/zz/{i} {head}" for i in range(5)] + [f"create refs/heads/a0 {second}"],
        [f"delete refs/heads/b/{i:05d}" for i in range(5990, 6000, 2)],
        ["create refs/heads/b/00010 " + second],
    ]
    for b in batches:
        git_noauto(path, "update-ref", "--stdin", input="".join(x + "\n" for x in b).encode())
    git_noauto(path, "symbolic-ref", "refs/heads/b/03001", "refs/heads/b/03000")
    git_noauto(path, "symbolic-ref", "refs/heads/b/03003", "refs/heads/nowhere")
    git_noauto(path, "tag", "-a", "-m", "t", "v1", head)
    return path


def _row(r) -> tuple:
    return (r.name, r.oid, r.peeled, r.target)


def test_overlay_stack_bulk_paths(overlay_repo):
    snap = ReftableStore(discover(str(overlay_repo))).snapshot()
    assert len(snap.tables) > 3 and snap._base() is snap.tables[0]
    streamed = [(n, t.name, rb.offset, j) for n, t, rb, j in snap._stream(b"")]
    want = [_row(_ref_row(snap, *s)) for s in streamed]
    # columns from the bulk path equal the per-row stream, from the start and from inside
    for start in (
        b"",
        b"refs/heads/b/01000",
        b"refs/heads/b/02050",
        b"refs/heads/b/05999",
        b"refs/heads/zz/",
    ):
        got = []
        for names, oids, peeled, targets in snap.iter_columns(start):
            for j, name in enumerate(names):
                got.append((name, oids[j], peeled[j] if peeled else None, targets[j] if targets else None))
        assert got == [w for w in want if w[0] >= start]
    # the row index built block by block equals the stream, after a partial build too
    fresh = ReftableStore(discover(str(overlay_repo))).snapshot()
    fresh.row(5)
    assert len(fresh) == len(want)
    assert [_row(fresh.row(i)) for i in range(len(fresh))] == want
    assert [(r.location.file, r.location.offset) for r in map(fresh.row, range(len(fresh)))] == [
        (s[1], s[2]) for s in streamed
    ]


def _ref_row(snap, name, tname, off, j):
    t = next(t for t in snap._all_tables if t.name == tname)
    return ref_from(name, t, t.ref_block(off), j)


@pytest.mark.parametrize("as_json", [False, True])
def test_overlay_stack_list_equals_git(overlay_repo, as_json):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "refscope.app",
            "list",
            *(["--json"] if as_json else []),
            "-C",
            str(overlay_repo),
        ],
        capture_output=True,
        env=git_env(),
        check=True,
    ).stdout
    if as_json:
        rows = [json.loads(line) for line in out.decode().splitlines()]
        lines = [f"{r['oid']} {r['name']} {r['peeled'] or ''}" for r in rows]
        want = git(overlay_repo, "for-each-ref", "--format=%(objectname) %(refname) %(*objectname)")
        assert "\n".join(lines) + "\n" == want.decode()
        assert [r["target"] for r in rows if r["target"]] == ["refs/heads/b/03000"]
    else:
        assert out == git(overlay_repo, "for-each-ref", "--format=%(objectname) %(refname)")


# --- refscope list on two cores ---------------------------------------------------------------------------


def _list_split(capfd, path: Path, as_json: bool, split: bytes | None) -> bytes:
    return listed(capfd, ReftableStore(discover(str(path))).snapshot(), as_json, split, "columns")


@pytest.mark.parametrize("as_json", [False, True])
def test_split_listing_equals_one_process(overlay_repo, capfd, as_json):
    """Any split point (inside the base, at its start, after its end, a name that is not a ref) gives
    the same bytes as one process, in order."""
    whole = _list_split(capfd, overlay_repo, as_json, None)
    if not as_json:
        assert whole == git(overlay_repo, "for-each-ref", "--format=%(objectname) %(refname)")
    snap = ReftableStore(discover(str(overlay_repo))).snapshot()
    assert snap.split_name(min_size=0) is not None
    for split in (
        snap.split_name(min_size=0),
        b"refs/heads/b/02051",
        b"refs/",
        b"refs/zzz",
        b"refs/heads/b/0",
    ):
        assert _list_split(capfd, overlay_repo, as_json, split) == whole
    assert not _has_children()


def _has_children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def test_split_listing_second_half_corrupt(overlay_repo, tmp_path, capfd):
    """A corrupt block in the child's half: the parent lists that half itself and raises the same error
    as one process would, after the first half."""
    path = tmp_path / "r"
    shutil.copytree(overlay_repo, path, symlinks=True)
    snap = ReftableStore(discover(str(path))).snapshot()
    base = snap.tables[0]
    offs = base.ref_block_offsets()
    victim = offs[-2]
    blk = base.block_at(victim)
    raw = bytearray(Path(base.path).read_bytes())
    raw[victim + blk.restart_off] = 0xFF  # the first restart offset now points past the records
    Path(base.path).write_bytes(bytes(raw))
    split = ReftableStore(discover(str(path))).snapshot().tables[0].ref_block(offs[len(offs) // 2]).names[-1]
    errors = []
    for how in (None, split):
        try:
            _list_split(capfd, path, True, how)
        except CorruptStore as e:
            errors.append((e.file, str(e), e.offset, capfd.readouterr().out.count("\n")))
    assert len(errors) == 2 and errors[0][:3] == errors[1][:3]
    assert not _has_children()


def test_split_listing_reader_gone(overlay_repo, capfd):
    """The reader closes the pipe: BrokenPipeError (the CLI exits quietly on it), the child reaped."""
    from refscope.backend import listing

    snap = ReftableStore(discover(str(overlay_repo))).snapshot()
    r, w = os.pipe()
    saved = os.dup(1)
    os.close(r)
    os.dup2(w, 1)
    try:
        out = listing.Out()
        out.stream = open(1, "wb", closefd=False)  # noqa: SIM115
        with pytest.raises(BrokenPipeError):
            listing.split_listing(snap, True, out, snap.split_name(min_size=0), "columns")
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(w)
    assert not _has_children()


@pytest.mark.parametrize("as_json", [False, True])
def test_list_command_splits(overlay_repo, capfd, monkeypatch, as_json):
    """``refscope list`` itself takes the split path on a big enough table and prints what git does."""
    from refscope.app import cmd_list
    from refscope.backend import listing

    calls = []
    real = listing.split_listing
    monkeypatch.setattr(listing, "SPLIT_MIN", 0)
    monkeypatch.setattr(listing, "split_listing", lambda *a: calls.append(a[3]) or real(*a))
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    assert cmd_list.run([*(["--json"] if as_json else []), "-C", str(overlay_repo)]) == 0
    got = capfd.readouterr().out.encode()
    assert calls
    if as_json:
        got = b"".join(
            b"%s %s\n" % (r["oid"].encode(), r["name"].encode()) for r in map(json.loads, got.splitlines())
        )
    assert got == git(overlay_repo, "for-each-ref", "--format=%(objectname) %(refname)")
    assert not _has_children()


def test_overlay_names_and_shared_table_index(overlay_repo):
    """iter_names of a base + overlay stack equals the stream; a second snapshot over the same tables
    (as a refresh makes) builds the same row index from the base table's listed-block cache."""
    from refscope.backend.stores.reftable import ReftableSnapshot

    store = ReftableStore(discover(str(overlay_repo)))
    snap = store.snapshot()
    streamed = [n for n, _t, _rb, _j in snap._stream(b"")]
    assert list(snap.iter_names()) == streamed
    assert list(snap.iter_names(b"refs/heads/b/02050")) == [n for n in streamed if n >= b"refs/heads/b/02050"]
    assert len(snap) == len(streamed)
    assert snap.tables[0].listed_cache
    again = ReftableSnapshot(store, snap.stack, snap.worktree_stack)
    assert len(again) == len(snap)
    assert (list(again._rows_t), list(again._rows_b), list(again._rows_r)) == (
        list(snap._rows_t),
        list(snap._rows_b),
        list(snap._rows_r),
    )
