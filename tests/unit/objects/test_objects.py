"""The object database against git's own ``cat-file``: every object of generated repositories (loose and
packed, OFS and REF deltas, index v1 and 64-bit offsets, multi-pack-index, alternates, SHA-1 and SHA-256)
read byte for byte, commit-graphs (single and chains) against ``git log``, tips against ``git log -1``,
and damage as a typed error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend.errors import CorruptStore
from refscope.backend.objects import commitgraph
from refscope.backend.objects.commitgraph import open_commit_graph
from refscope.backend.objects.odb import Odb
from refscope.backend.objects.tips import MISSING, Tips

from tests.support.git import git, init_repo
from tests.support.history import history

HASHES = ("sha1", "sha256")


def _all_objects(repo: Path) -> list[tuple[bytes, str, bytes]]:
    """(oid, type, content) of every object git can see, from ``cat-file --batch``."""
    ids = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split()
    out = git(repo, "cat-file", "--batch", input=b"\n".join(ids) + b"\n")
    objects = []
    pos = 0
    for oid in ids:
        nl = out.index(b"\n", pos)
        got_oid, kind, size = out[pos:nl].split()
        assert got_oid == oid
        content = out[nl + 1 : nl + 1 + int(size)]
        objects.append((oid, kind.decode(), content))
        pos = nl + 1 + int(size) + 1
    return objects


def _odb(repo: Path, hash_name: str, env: dict | None = None) -> Odb:
    gitdir = repo / ".git" if (repo / ".git").is_dir() else repo
    return Odb(str(gitdir / "objects"), hash_name, env or {})


def _assert_same(repo: Path, hash_name: str, odb: Odb | None = None) -> int:
    odb = odb or _odb(repo, hash_name)
    objects = _all_objects(repo)
    for oid, kind, content in objects:
        assert odb.read(oid) == (kind, content), oid
        assert odb.info(oid) == (kind, len(content)), oid
    # the bulk path (dict indexes, offset order) in a fresh database, with one id that is not there
    missing = b"0" * len(objects[0][0])
    bulk = Odb(odb.dirs[0], hash_name, {}).read_many([oid for oid, _, _ in objects] + [missing])
    assert bulk == {**{oid: (kind, content) for oid, kind, content in objects}, missing: None}
    return len(objects)


LAYOUTS = ["loose", "packed", "deltas", "ref-deltas", "index-v1", "large-offsets", "midx", "mixed"]


@pytest.mark.parametrize(
    ("hash_name", "layout"),
    # index v1 holds SHA-1 ids only
    [(h, lay) for h in HASHES for lay in LAYOUTS if not (lay == "index-v1" and h == "sha256")],
)
def test_every_object_reads_as_git_reads_it(tmp_path, hash_name, layout):
    repo = init_repo(tmp_path / "r", hash_name=hash_name)
    history(repo)
    pack_dir = repo / ".git" / "objects" / "pack"
    if layout == "loose":
        for p in pack_dir.glob("*.pack"):
            data = p.read_bytes()
            p.unlink()
            p.with_suffix(".idx").unlink()
            git(repo, "unpack-objects", "-q", input=data)
    elif layout == "packed":
        git(repo, "repack", "-adq", "--window=0")
    elif layout == "deltas":
        git(repo, "repack", "-adfq", "--depth=50", "--window=50")
    elif layout == "ref-deltas":
        git(repo, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--depth=50", "--window=50")
    elif layout in ("index-v1", "large-offsets"):
        git(repo, "repack", "-adfq", "--depth=20", "--window=20")
        (pack,) = pack_dir.glob("*.pack")
        pack.with_suffix(".idx").unlink()
        version = "1" if layout == "index-v1" else "2,0x100"
        git(repo, "index-pack", f"--index-version={version}", str(pack))
    elif layout in ("midx", "mixed"):
        git(repo, "repack", "-adfq", "--depth=20", "--window=20")
        git(repo, "commit", "-q", "--allow-empty", "-m", "second pack")
        git(repo, "repack", "-dq")
        if layout == "midx":
            git(repo, "multi-pack-index", "write")
            assert (pack_dir / "multi-pack-index").exists()
        git(repo, "commit", "-q", "--allow-empty", "-m", "loose one")
    assert _assert_same(repo, hash_name) > 100
    if layout == "deltas":
        kinds = git(repo, "verify-pack", "-v", *map(str, pack_dir.glob("*.idx")))
        assert b" delta" in kinds or b"chain length" in kinds


@pytest.mark.parametrize("hash_name", HASHES)
def test_alternates_are_followed_recursively_and_once(tmp_path, hash_name):
    base = init_repo(tmp_path / "base", hash_name=hash_name)
    history(base, 12)
    git(base, "repack", "-adq")
    mid = tmp_path / "mid"
    git(tmp_path, "clone", "-q", "--shared", str(base), str(mid))
    git(mid, "commit", "-q", "--allow-empty", "-m", "in mid")
    git(mid, "repack", "-dlq")
    top = tmp_path / "top"
    git(tmp_path, "clone", "-q", "--shared", str(mid), str(top))
    git(top, "commit", "-q", "--allow-empty", "-m", "in top")
    # a relative path and a repeated entry, as people write them
    alt = top / ".git" / "objects" / "info" / "alternates"
    alt.write_text(
        f"# comment\n{os.path.relpath(mid / '.git' / 'objects', top / '.git' / 'objects')}\n"
        f"{mid / '.git' / 'objects'}\n"
    )
    odb = _odb(top, hash_name)
    assert len(odb.dirs) == 3
    assert _assert_same(top, hash_name, odb) > 40
    assert not list((top / ".git" / "objects" / "pack").glob("*.pack"))


def test_environment_alternates(tmp_path):
    base = init_repo(tmp_path / "base")
    history(base, 5)
    other = init_repo(tmp_path / "other")
    head = git(base, "rev-parse", "main").strip()
    env = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(base / ".git" / "objects")}
    assert _odb(other, "sha1").read(head) is None
    assert _odb(other, "sha1", env).read(head)[0] == "commit"


@pytest.mark.parametrize("hash_name", HASHES)
@pytest.mark.parametrize("split", [False, True])
def test_commit_graph_matches_git_log(tmp_path, hash_name, split):
    repo = init_repo(tmp_path / "r", hash_name=hash_name)
    history(repo, 30)
    if split:
        git(repo, "commit-graph", "write", "--reachable", "--split")
        git(repo, "commit", "-q", "--allow-empty", "-m", "more")
        git(repo, "commit-graph", "write", "--reachable", "--split=no-merge")
        assert (repo / ".git/objects/info/commit-graphs/commit-graph-chain").read_text().count("\n") == 2
    else:
        git(repo, "commit-graph", "write", "--reachable")
    graph = open_commit_graph(str(repo / ".git" / "objects"), 20 if hash_name == "sha1" else 32)
    log = git(repo, "log", "--all", "--format=%H %ct %P").decode().splitlines()
    assert graph.total == len(log)
    for line in log:
        oid, when, *parents = line.split()
        pos = graph.position(bytes.fromhex(oid))
        assert graph.oid(pos).hex() == oid
        t, ps, _ = graph.commit(pos)
        assert t == int(when)
        assert [graph.oid(p).hex() for p in ps] == parents
    assert graph.position(b"\1" * (20 if hash_name == "sha1" else 32)) is None
    every = list(range(graph.total))[::-1]  # (the bulk times, by C passes or layer by layer)
    assert graph.times(every) == [graph.commit(p)[0] for p in every]
    assert graph.times([]) == []
    with pytest.raises(CorruptStore):
        graph.times([0, graph.total])


@pytest.mark.parametrize("block", [7, 8192])
def test_commit_graph_hex_positions_match_git_log(tmp_path, monkeypatch, block):
    # built a block at a time (a worker thread must not hold the GIL for the whole graph): blocks of 7
    # over 31 commits in two layers end inside each layer and at its end
    monkeypatch.setattr(commitgraph, "POSITIONS_BLOCK", block)
    repo = init_repo(tmp_path / "r")
    history(repo, 30)
    git(repo, "commit-graph", "write", "--reachable", "--split")
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    git(repo, "commit-graph", "write", "--reachable", "--split=no-merge")
    graph = open_commit_graph(str(repo / ".git" / "objects"), 20)
    assert len(graph.layers) == 2
    log = git(repo, "log", "--all", "--format=%H").decode().split()
    positions = graph.hex_positions()
    assert sorted(positions) == sorted(h.encode() for h in log)
    for h, pos in positions.items():
        assert graph.oid(pos).hex().encode() == h


def test_no_commit_graph_is_none(tmp_path):
    repo = init_repo(tmp_path / "r")
    assert open_commit_graph(str(repo / ".git" / "objects"), 20) is None


@pytest.mark.parametrize("hash_name", HASHES)
def test_tips_peel_and_describe_as_git_log_does(tmp_path, hash_name):
    repo = init_repo(tmp_path / "r", hash_name=hash_name)
    history(repo, 20)
    git(repo, "repack", "-adfq", "--depth=10")
    tips = Tips(_odb(repo, hash_name))
    refs = git(repo, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)").decode().splitlines()
    for line in refs:
        oid, kind, name = line.split()
        tip = tips.tip(oid.encode())
        assert tip.kind == kind
        peeled = git(repo, "rev-parse", f"{name}^{{}}").strip()
        assert tip.peeled == peeled
        assert tip.peeled_kind == git(repo, "cat-file", "-t", peeled).strip().decode()
        if tip.peeled_kind == "commit":
            ct, an, ae, s = (
                git(repo, "log", "-1", "--format=%ct%x00%an%x00%ae%x00%s", peeled).rstrip(b"\n").split(b"\0")
            )
            assert (tip.committer.time, tip.author.name, tip.author.email, tip.subject) == (
                int(ct),
                an,
                ae,
                s,
            )
            assert (
                tip.committer.tz == git(repo, "log", "-1", "--format=%cd", "--date=format:%z", peeled).strip()
            )
        else:
            assert tip.committer is None
    assert tips.tip(b"0" * len(refs[0].split()[0])) is MISSING


def test_a_tag_whose_target_is_missing_is_typed(tmp_path):
    repo = init_repo(tmp_path / "r")
    body = b"object " + b"1" * 40 + b"\ntype commit\ntag gone\ntagger T <t@x> 1 +0000\n\nmsg\n"
    oid = git(repo, "hash-object", "-t", "tag", "-w", "--literally", "--stdin", input=body).strip()
    tip = Tips(_odb(repo, "sha1")).tip(oid)
    assert (tip.kind, tip.peeled) == ("tag", None)


def _packed_repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = init_repo(tmp_path / "r")
    history(repo, 15)
    git(repo, "repack", "-adfq", "--depth=10")
    (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
    return repo, pack, pack.with_suffix(".idx")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["pack", "idx"]), where=st.floats(0, 1), value=st.integers(0, 255))
def test_damage_is_a_corrupt_store_or_a_right_answer(tmp_path_factory, which, where, value):
    """A byte changed anywhere in a pack or its index: every read returns the original answer, None (an id
    or fanout entry changed), another object of the pack (an offset changed: git, which checks no CRC on
    reads, returns it too) or raises CorruptStore -- never another exception, never a hang."""
    tmp = tmp_path_factory.mktemp("dmg")
    global _DAMAGE_BASE
    if _DAMAGE_BASE is None:
        src = tmp_path_factory.mktemp("base")
        repo, _, _ = _packed_repo(src)
        _DAMAGE_BASE = (repo, _all_objects(repo))
    repo, objects = _DAMAGE_BASE
    copy = tmp / "r"
    shutil.copytree(repo / ".git" / "objects", copy)
    (f,) = (copy / "pack").glob("*." + which)
    data = bytearray(f.read_bytes())
    at = min(int(where * len(data)), len(data) - 1)
    data[at] = value
    f.chmod(0o644)
    f.write_bytes(bytes(data))
    real = {(kind, content) for _, kind, content in objects}
    try:
        odb = Odb(str(copy), "sha1", {})
    except CorruptStore:
        return
    for oid, _, _ in objects:
        try:
            got = odb.read(oid)
        except CorruptStore:
            continue
        assert got is None or got in real, (oid, at, value)


_DAMAGE_BASE = None


@pytest.mark.parametrize("cut", [0, 10, 1000, -21, -1])
def test_truncated_index_is_one_typed_error(tmp_path, cut):
    repo, _, idx = _packed_repo(tmp_path)
    data = idx.read_bytes()
    idx.chmod(0o644)
    idx.write_bytes(data[:cut])
    head = git(repo, "rev-parse", "main").strip()
    with pytest.raises(CorruptStore) as e:
        _odb(repo, "sha1").read(head)
    assert e.value.file == str(idx)


def test_hostile_size_is_refused_without_inflating(tmp_path):
    """A loose object that claims 2^40 bytes is refused from its header."""
    import zlib

    repo = init_repo(tmp_path / "r")
    oid = "ab" + "c" * 38
    d = repo / ".git" / "objects" / oid[:2]
    d.mkdir(exist_ok=True)
    (d / oid[2:]).write_bytes(zlib.compress(b"blob 1099511627776\0" + b"x" * 100))
    odb = _odb(repo, "sha1")
    assert odb.info(oid.encode()) == ("blob", 1 << 40)
    with pytest.raises(CorruptStore, match="too large"):
        odb.read(oid.encode())
