"""The files store's snapshot is one consistent sequence, refreshed without stale reads, against real git.

Three properties, each once broken:
- refresh never returns a stale value: a loose ref, HEAD or packed-refs rewritten after a snapshot read
  it, keeping (dev, inode, size, mtime) (ext4 reuses a freed inode at once; mtime ticks every few ms),
  is read again (racy-git rule: ctime compared too, and a file not strictly older than the read that
  saw it is re-read), while a refresh over files written long ago reads no file;
- ``len()``, ``row(i)``, ``name_at(i)``, ``prefix_range()``, ``iter_from()`` and iteration agree with each
  other and with ``git for-each-ref`` when git hides records (broken names in packed-refs and loose refs,
  loose null oids, dangling symrefs and symrefs resolving to the null oid, unparsable loose files);
- a packed-refs whose header says ``sorted`` but whose records are not: ``lookup`` finds exactly what
  ``git show-ref --verify`` finds, and the sequence operations raise CorruptStore with git's
  ``git refs verify`` wording (packedRefUnsorted) and the record's offset.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend.errors import CorruptStore
from refscope.backend.formats.loose import is_racy
from refscope.backend.formats.packed import PackedRefs
from refscope.backend.formats.packed.rowindex import _maybe_hidden
from refscope.backend.refname import check_refname
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.git import copy_repo, for_each_ref, git, git_pipe, init_repo, run_git

SORTED = b"# pack-refs with: peeled fully-peeled sorted \n"


def _git_names(repo: Path, *patterns: str) -> list[bytes]:
    """Names ``git for-each-ref`` lists (refname only: a null oid must not make git read an object)."""
    return [n for n in git(repo, "for-each-ref", "--format=%(refname)", *patterns).split(b"\n") if n]


def _oid(repo: Path, rev: str) -> bytes:
    return git(repo, "rev-parse", rev).strip()


def _store(repo: Path):
    return open_store(discover(str(repo)))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, list[bytes]]:
    """A repository with four commits (their oids), copied by tests that change it."""
    path = init_repo(tmp_path_factory.mktemp("cons") / "base")
    for i in range(3):
        git(path, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    oids = [_oid(path, f"HEAD~{i}") for i in range(4)]
    return path, oids


# -- 1. racy refresh ------------------------------------------------------------------------------------


def _rewrite_keeping_identity(path: Path, rewrite) -> os.stat_result:
    """Let ``rewrite()`` (git) replace ``path`` until the file comes back on the same inode and size (ext4
    hands the freed inode straight back; two rewrites alternate), then set mtime back to what it was:
    the state a rewrite within one timestamp tick leaves. Returns the original stat."""
    before = os.stat(path)
    for _ in range(6):
        rewrite()
        now = os.stat(path)
        if now.st_ino == before.st_ino and now.st_size == before.st_size:
            break
    os.utime(path, ns=(now.st_atime_ns, before.st_mtime_ns))
    return before


def test_refresh_rereads_loose_ref_rewritten_with_same_identity(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    a, b, c = base[1][:3]
    git(repo, "update-ref", "refs/heads/x", a.decode())
    store = _store(repo)
    s1 = store.snapshot()
    assert s1.lookup(b"refs/heads/x").oid == a
    path = repo / ".git/refs/heads/x"
    values = iter([c, b] * 3)
    before = _rewrite_keeping_identity(path, lambda: git(repo, "update-ref", "refs/heads/x", next(values)))
    now = os.stat(path)
    assert (now.st_dev, now.st_size, now.st_mtime_ns) == (before.st_dev, before.st_size, before.st_mtime_ns)
    want = _oid(repo, "refs/heads/x")
    s2 = store.refresh(s1)
    assert s2 is not s1
    assert s2.lookup(b"refs/heads/x").oid == want
    assert [r.oid for r in s2 if r.name == b"refs/heads/x"] == [want]


def test_refresh_rereads_packed_refs_and_head_rewritten_with_same_identity(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    oids = base[1]
    git(repo, "update-ref", "refs/heads/p", oids[0].decode())
    git(repo, "pack-refs", "--all")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/aaaa")
    store = _store(repo)
    s1 = store.snapshot()
    assert s1.lookup(b"refs/heads/p").oid == oids[0]
    packed = repo / ".git/packed-refs"
    vals = iter(oids[1:3] * 3)

    def repack() -> None:
        git(repo, "update-ref", "refs/heads/p", next(vals).decode())
        git(repo, "pack-refs", "--all")

    _rewrite_keeping_identity(packed, repack)
    heads = iter([b"refs/heads/bbbb", b"refs/heads/cccc"] * 3)
    _rewrite_keeping_identity(
        repo / ".git/HEAD", lambda: git(repo, "symbolic-ref", "HEAD", next(heads).decode())
    )
    s2 = store.refresh(s1)
    assert s2.lookup(b"refs/heads/p").oid == _oid(repo, "refs/heads/p")
    assert [(r.name, r.oid) for r in s2] == [(n, o) for n, o, _, _ in for_each_ref(repo)]
    assert s2.head().target == git(repo, "symbolic-ref", "HEAD").strip()


def test_refresh_many_rewrites_in_one_git_process(base, tmp_path) -> None:
    """The real race: one ``git update-ref --stdin`` rewrites a ref twice in microseconds after each
    snapshot (same tick, reused inode); every refresh must show what git shows."""
    repo = copy_repo(base[0], tmp_path / "r")
    oids = base[1]
    proc = git_pipe(repo, "update-ref", "--stdin")

    def txn(*values: bytes) -> None:
        for v in values:
            proc.stdin.write(b"start\nupdate refs/heads/x %s\ncommit\n" % v)
        proc.stdin.flush()
        for _ in values:
            assert proc.stdout.readline() == b"start: ok\n"
            assert proc.stdout.readline() == b"commit: ok\n"

    try:
        store = _store(repo)
        txn(oids[0])
        snap = store.snapshot()
        for i in range(40):
            mid, last = oids[1 + i % 2], oids[(i % 3) + 1]
            txn(mid, last)
            snap = store.refresh(snap)
            assert snap.lookup(b"refs/heads/x").oid == last, i
    finally:
        proc.stdin.close()
        proc.wait()
    assert _oid(repo, "refs/heads/x") == snap.lookup(b"refs/heads/x").oid


def test_refresh_of_files_written_long_ago_reads_nothing(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    oids = base[1]
    lines = b"".join(b"create refs/heads/l%d %s\n" % (i, oids[i % 4]) for i in range(5))
    git(repo, "update-ref", "--stdin", input=lines)
    git(repo, "pack-refs")  # packed-refs exists too (loose refs kept: only tags and already packed move)
    gitdir = repo / ".git"
    files = [gitdir / "HEAD", gitdir / "packed-refs", *sorted((gitdir / "refs/heads").iterdir())]
    # racily clean right now: timestamps in the future (as a write in the tick of the read leaves them)
    future = time.time_ns() + 1_000_000_000
    for f in files:
        os.utime(f, ns=(future, future))
    store = _store(repo)
    s1 = store.snapshot()
    entries = dict(s1.loose)
    head, packed = s1.head_file, s1.packed
    s2 = store.refresh(s1)
    assert s2 is s1  # same values...
    assert all(
        s1.loose[n] is not e and s1.loose[n] == e._replace(read_ns=s1.loose[n].read_ns)
        for n, e in entries.items()
    )
    assert s1.head_file is not head  # ...but every racy file was read again (its read time renewed)
    assert s1.packed is packed
    time.sleep(max(0.0, (future - time.time_ns()) / 1e9 + 0.05))  # now older than the clock: one more
    # read of each renews it...
    assert store.refresh(s1) is s1
    entries = dict(s1.loose)
    head, packed_read = s1.head_file, s1.packed.read_ns
    assert packed_read > future
    s3 = store.refresh(s1)  # ...after which a refresh reads no file
    s4 = store.refresh(s3)
    assert s3 is s1 and s4 is s1
    assert all(s1.loose[n] is e for n, e in entries.items())
    assert s1.head_file is head
    assert s1.packed is packed and s1.packed.read_ns == packed_read  # packed-refs not re-opened


def test_is_racy_rule() -> None:
    """mtime/ctime strictly older than the read (by the slack) is clean; otherwise racy; whole-second
    timestamps widen the slack to 2 s."""
    st = os.stat(__file__)
    t = max(st.st_mtime_ns, st.st_ctime_ns)
    if t % 1_000_000_000:
        assert is_racy(st, t) and is_racy(st, t + 10_000_000)
        assert not is_racy(st, t + 10_000_001)
    else:
        assert is_racy(st, t + 2_000_000_000)
        assert not is_racy(st, t + 2_000_000_001)


# -- 2. one consistent sequence ----------------------------------------------------------------------


def _assert_consistent(repo: Path, snap, prefixes=(), starts=()) -> None:
    git_names = _git_names(repo)
    it = [r.name for r in snap]
    n = len(snap)
    rows = [snap.row(i).name for i in range(n)]
    assert rows == it == git_names
    assert [snap.name_at(i) for i in range(n)] == git_names
    assert [snap.row(i - n).name for i in range(n)] == git_names
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            snap.row(bad)
    for p in prefixes:
        r = snap.prefix_range(p)
        want = [m for m in git_names if m.startswith(p)]
        assert [snap.name_at(i) for i in r] == want, p
        if p.endswith(b"/"):  # git's patterns match whole components
            assert want == _git_names(repo, os.fsdecode(p))
    for s in starts:
        assert [r.name for r in snap.iter_from(s)] == [m for m in git_names if m >= s], s
    for i in range(n):
        ref = snap.row(i)
        assert snap.lookup(ref.name) == ref


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_rows_hide_what_git_hides(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    o = base[1][0]
    z = b"0" * 40
    gd = repo / ".git"
    (gd / "refs/heads/main").unlink()
    packed = [
        (b"refs/heads/a", o),
        (b"refs/heads/bad..name", o),  # hidden (broken name)
        (b"refs/heads/has space", o),  # hidden
        (b"refs/heads/main", o),
        (b"refs/heads/null", z),  # a packed null oid is listed by git
        (b"refs/heads/shadowed-by-broken", o),  # a loose unparsable file hides it
        (b"refs/heads/x.lock", o),  # hidden
        (b"refs/tags/v1", o),
        (b"refs/tags/v2..", o),  # hidden
    ]
    _write(gd / "packed-refs", SORTED + b"".join(oid + b" " + n + b"\n" for n, oid in sorted(packed)))
    _write(gd / "refs/heads/lnull", z + b"\n")  # loose null oid: broken, hidden
    _write(gd / "refs/heads/shadowed-by-broken", b"not an oid\n")
    _write(gd / "refs/heads/loose..bad", o + b"\n")  # hidden
    _write(gd / "refs/heads/sym-null", b"ref: refs/heads/null\n")  # resolves to null: hidden
    _write(gd / "refs/heads/sym-dangling", b"ref: refs/heads/nowhere\n")  # hidden
    _write(gd / "refs/heads/sym-bad", b"ref: refs/heads/bad..name\n")  # hidden
    _write(gd / "refs/heads/sym-ok", b"ref: refs/tags/v1\n")
    _write(gd / "refs/tags/v0", o + b"\n")
    snap = _store(repo).snapshot()
    assert _git_names(repo) == [
        b"refs/heads/a",
        b"refs/heads/main",
        b"refs/heads/null",
        b"refs/heads/sym-ok",
        b"refs/tags/v0",
        b"refs/tags/v1",
    ]
    _assert_consistent(
        repo,
        snap,
        prefixes=[b"refs/heads/", b"refs/tags/", b"refs/heads/s", b"refs/heads/bad", b"refs/"],
        starts=[b"", b"refs/heads/b", b"refs/heads/sym", b"refs/tags/v1", b"refs/zzz"],
    )
    assert len(snap.packed) == len(packed) and snap.packed.hidden_rows() == [1, 2, 6, 8]
    # the same records in an unsorted file (sorted in memory) and with no loose refs at all
    for f in [p for p in (gd / "refs").rglob("*") if p.is_file()]:
        f.unlink()
    shuffled = sorted(packed)
    random.Random(7).shuffle(shuffled)
    _write(
        gd / "packed-refs",
        b"# pack-refs with: peeled \n" + b"".join(oid + b" " + n + b"\n" for n, oid in shuffled),
    )
    _assert_consistent(repo, _store(repo).snapshot(), prefixes=[b"refs/heads/", b"refs/tags/"])


NAME_PART = st.sampled_from(
    [b"a", b"b", b"c.", b".d", b"e..f", b"x.lock", b"@{u}", b"s p", b"t~", b"\xc3\xa9", b"@"]
)
ENTRY = st.tuples(
    st.lists(NAME_PART, min_size=1, max_size=3).map(lambda ps: b"refs/heads/" + b"/".join(ps)),
    st.sampled_from(["packed", "packed-null", "loose", "loose-null", "loose-broken", "symref", "both"]),
    st.integers(0, 3),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ENTRY, min_size=1, max_size=14, unique_by=lambda e: e[0]), st.booleans())
def test_rows_match_git_property(base, tmp_path_factory, entries, sorted_trait) -> None:
    """Random mixes of packed and loose refs with broken names and values: rows == iteration == git."""
    repo = copy_repo(base[0], tmp_path_factory.mktemp("prop") / "r")
    oids = base[1]
    gd = repo / ".git"
    (gd / "refs/heads/main").unlink()
    names = [e[0] for e in entries]
    packed, made = [], set()
    for name, kind, k in entries:
        parts = name.split(b"/")
        # a loose file needs a path: skip names that are a directory of another or have unsafe parts
        loose_ok = all(p not in (b"", b".", b"..") for p in parts) and not any(
            m.startswith(name + b"/") or name.startswith(m + b"/") for m in names if m != name
        )
        if kind in ("packed", "packed-null", "both") or not loose_ok:
            packed.append((name, b"0" * 40 if kind == "packed-null" else oids[k]))
        if loose_ok and kind not in ("packed", "packed-null"):
            content = {
                "loose": oids[k] + b"\n",
                "both": oids[(k + 1) % 4] + b"\n",
                "loose-null": b"0" * 40 + b"\n",
                "loose-broken": b"garbage\n",
                "symref": b"ref: " + names[k % len(names)] + b"\n",
            }[kind]
            _write(gd / os.fsdecode(name), content)
            made.add(name)
    packed.sort()
    if not sorted_trait:
        random.Random(len(packed)).shuffle(packed)
    header = SORTED if sorted_trait else b"# pack-refs with: peeled \n"
    _write(gd / "packed-refs", header + b"".join(o + b" " + n + b"\n" for n, o in packed))
    snap = _store(repo).snapshot()
    _assert_consistent(
        repo, snap, prefixes=[b"refs/heads/a", b"refs/heads/b/", b"refs/heads/"], starts=[b"refs/heads/b"]
    )


RECORD_NAME = st.lists(
    st.sampled_from(
        [
            b"a",
            b"b.c",
            b".",
            b"..",
            b"",
            b"x.lock",
            b"@",
            b"@{",
            b"~",
            b"^",
            b" ",
            b"\t",
            b"\x7f",
            b"\xff",
            b"*",
            b"/",
        ]
    ),
    min_size=1,
    max_size=5,
).map(lambda ps: b"refs/" + b"".join(ps))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(RECORD_NAME, st.booleans()), min_size=1, max_size=12))
def test_hidden_prescan_never_misses_a_broken_name(records) -> None:
    """The C-speed chunk check says "maybe hidden" whenever a record's name fails check_refname."""
    data = b"".join(
        b"1" * 40 + b" " + n + b"\n" + (b"^" + b"2" * 40 + b"\n" if p else b"") for n, p in records
    )
    if any(check_refname(n) is not None for n, _ in records):
        assert _maybe_hidden(data, data.count(b"\n"), data.count(b"^"))


# -- 3. a packed-refs that says sorted but is not ---------------------------------------------------------


def test_unsorted_sorted_file_agrees_with_git(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    o = base[1][0]
    gd = repo / ".git"
    (gd / "refs/heads/main").unlink()
    names = [
        b"refs/heads/main",
        b"refs/tags/z",
        b"refs/heads/b",
        b"refs/tags/a",
        b"refs/heads/c",
        b"refs/tags/m",
    ]
    body = b"".join(o + b" " + n + b"\n" for n in names)
    _write(gd / "packed-refs", SORTED + body)
    snap = _store(repo).snapshot()
    for name in [*names, b"refs/heads/none", b"refs/tags/zz"]:
        ok = run_git(repo, "show-ref", "--verify", "-q", name.decode()).returncode == 0
        assert (snap.lookup(name) is not None) == ok, name
    verify = run_git(repo, "refs", "verify")
    assert verify.returncode != 0
    want = verify.stderr.decode().splitlines()[0].removeprefix("error: ")
    offset = len(SORTED) + (42 + len(names[0])) + (42 + len(names[1]))  # the third record
    for op in (
        lambda: list(snap),
        lambda: len(snap) and snap.row(0),
        lambda: snap.prefix_range(b"refs/tags/"),
        lambda: snap.name_at(3),
        lambda: list(snap.iter_from(b"refs/heads/")),
        lambda: snap.packed.validate(),
    ):
        with pytest.raises(CorruptStore) as ei:
            op()
        assert (ei.value.file, ei.value.what, ei.value.offset) == (str(gd / "packed-refs"), want, offset)
    assert want == (
        "packed-refs line 4: packedRefUnsorted: refname 'refs/heads/b' is less than previous refname 'refs/tags/z'"
    )
    # without the trait git sorts in memory: then everything agrees with git
    _write(gd / "packed-refs", b"# pack-refs with: peeled \n" + body)
    _assert_consistent(repo, _store(repo).snapshot(), prefixes=[b"refs/tags/", b"refs/heads/"])


def test_duplicate_names_in_sorted_file_are_refused(base) -> None:
    o = base[1][0]
    data = SORTED + o + b" refs/heads/a\n" + o + b" refs/heads/a\n"
    p = PackedRefs.from_bytes(data)
    with pytest.raises(CorruptStore, match="packedRefUnsorted: refname 'refs/heads/a' is less than previous"):
        p.starts()


def test_dangerous_packed_name_refused_by_every_sequence_operation(base, tmp_path) -> None:
    repo = copy_repo(base[0], tmp_path / "r")
    o = base[1][0]
    gd = repo / ".git"
    (gd / "refs/heads/main").unlink()
    _write(gd / "packed-refs", SORTED + o + b" refs/heads/../evil\n" + o + b" refs/heads/a\n")
    proc = run_git(repo, "for-each-ref")
    assert proc.returncode == 128
    want = proc.stderr.decode().strip().removeprefix("fatal: ")
    assert want == "packed refname is dangerous: refs/heads/../evil"
    snap = _store(repo).snapshot()
    assert len(snap.packed) == 2  # the storage summary still counts records
    for op in (
        lambda: list(snap),
        lambda: len(snap),
        lambda: snap.row(0),
        lambda: snap.prefix_range(b"refs/"),
    ):
        with pytest.raises(CorruptStore) as ei:
            op()
        assert (ei.value.file, ei.value.what, ei.value.offset) == (str(gd / "packed-refs"), want, len(SORTED))
