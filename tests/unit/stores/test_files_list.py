"""The files store and ``refscope list`` against real git: the listed set equals ``git for-each-ref``.

Repositories are built once per module with git (the slow part) and then read natively. Cases: SHA-1 and
SHA-256, loose over packed, symrefs, annotated and nested annotated tags, unicode / bidi / C1 / non-UTF-8
and 800-byte names, a name with a quote, packed-refs without ``sorted`` (and without any header), bare
repositories, linked worktrees with per-worktree refs, for-each-ref patterns, reflogs vs ``git reflog``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from refscope.backend import parallel
from refscope.backend.errors import CorruptStore
from refscope.backend.model import LOOSE, PACKED
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.cli import refscope
from tests.support.git import create_refs, for_each_ref, git, git_binary, git_env, init_repo
from tests.support.listing import ODD_NAMES, assert_same, list_json, listed


def git_rows(path: Path | str, *patterns: str) -> list[tuple[bytes, bytes, bytes, bytes]]:
    return for_each_ref(path, *patterns)


def snapshot_rows(path: Path | str):
    snap = open_store(discover(str(path))).snapshot()
    rows = []
    for r in snap:
        if r.target is None:
            rows.append((r.name, r.oid, r.peeled or b"", b""))
        else:  # the snapshot keeps the immediate target; git's %(symref) shows the final name
            oid, final = snap.resolve_full(r.name)
            rows.append((r.name, oid, b"", final))
    return snap, rows


def _build(root: Path, hash_name: str) -> Path:
    repo = init_repo(root, hash_name=hash_name)
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    head = git(repo, "rev-parse", "HEAD").strip()
    first = git(repo, "rev-parse", "HEAD~1").strip()
    lines = []
    for i in range(300):
        oid = head if i % 3 else first
        lines.append(b"create refs/heads/topic/%04d %s" % (i, oid))
    for i in range(40):
        lines.append(b"create refs/tags/light-%03d %s" % (i, first))
    for name in ODD_NAMES:
        lines.append(b"create " + name + b" " + head)
    git(repo, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    git(repo, "tag", "-a", "-m", "annotated", "v1.0", "HEAD~1")
    git(repo, "tag", "-a", "-m", "nested", "v1.0-nested", "v1.0")
    git(repo, "tag", "-a", "-m", "nested twice", "v1.0-nested2", "v1.0-nested")
    git(repo, "pack-refs", "--all")
    # loose refs over packed ones, new loose refs, a loose annotated tag, symrefs
    git(repo, "update-ref", "refs/heads/topic/0001", first)
    git(repo, "update-ref", "refs/heads/topic/0002", first)
    git(repo, "update-ref", "refs/heads/zz-loose-only", head)
    git(repo, "tag", "-a", "-m", "loose annotated", "v2.0")
    git(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/topic/0003")
    git(repo, "symbolic-ref", "refs/heads/sym-to-loose", "refs/heads/zz-loose-only")
    git(repo, "symbolic-ref", "refs/heads/sym-chain", "refs/heads/sym")  # %(symref) shows the final name
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
    # a dangling symref, a broken loose file, a lock file: all hidden by git
    git(repo, "symbolic-ref", "refs/heads/dangling", "refs/heads/does-not-exist")
    (repo / ".git/refs/heads/broken").write_bytes(b"not an oid\n")
    (repo / ".git/refs/heads/topic/0005.lock").write_bytes(head + b"\n")
    return repo


@pytest.fixture(scope="module", params=["sha1", "sha256"])
def big_repo(request, tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp(f"files-{request.param}") / "repo", request.param)


def test_list_json_equals_for_each_ref(big_repo: Path) -> None:
    theirs = git_rows(big_repo)
    assert len(theirs) > 350
    ours = list_json(big_repo)
    assert_same(ours, theirs)
    names = {r[0] for r in ours}
    assert set(ODD_NAMES) <= names
    assert b"refs/heads/broken" not in names and b"refs/heads/dangling" not in names


def test_snapshot_rows_equal_for_each_ref(big_repo: Path) -> None:
    theirs = git_rows(big_repo)
    snap, ours = snapshot_rows(big_repo)
    assert_same(ours, theirs)
    assert len(snap) == len(theirs)
    # random access agrees with iteration
    for i in random.Random(3).sample(range(len(theirs)), 60) + [0, len(theirs) - 1]:
        assert snap.row(i).name == theirs[i][0]
        assert snap.name_at(i) == theirs[i][0]
    with pytest.raises(IndexError):
        snap.row(len(theirs))


def test_locations_and_shadowing(big_repo: Path) -> None:
    snap = open_store(discover(str(big_repo))).snapshot()
    r = snap.lookup(b"refs/heads/topic/0001")
    assert r.location.kind == LOOSE and r.location.file.endswith("refs/heads/topic/0001")
    p = snap.lookup(b"refs/heads/topic/0007")
    assert p.location.kind == PACKED
    data = (big_repo / ".git/packed-refs").read_bytes()
    assert data[p.location.offset :].startswith(p.oid + b" refs/heads/topic/0007\n")
    packed_value = snap.packed.lookup(b"refs/heads/topic/0001").oid
    assert packed_value != r.oid  # the loose value wins over the packed one
    tag = snap.lookup(b"refs/tags/v1.0-nested2")
    assert tag.peeled == git(big_repo, "rev-parse", "HEAD~1").strip()
    assert snap.lookup(b"refs/heads/broken") is None
    assert snap.lookup(b"refs/heads/nope") is None
    assert snap.head().target == b"refs/heads/main"


def test_prefix_ranges(big_repo: Path) -> None:
    snap = open_store(discover(str(big_repo))).snapshot()
    names = [r[0] for r in git_rows(big_repo)]
    for prefix in (
        b"refs/heads/topic/",
        b"refs/tags/",
        b"refs/heads/topic/01",
        b"refs/remotes/",
        b"refs/zz",
        b"",
    ):
        rng = snap.prefix_range(prefix)
        assert [snap.name_at(i) for i in rng] == [n for n in names if n.startswith(prefix)], prefix


@pytest.mark.parametrize("streamed", [3, 4096])
def test_iter_names_from_any_start(big_repo: Path, monkeypatch, streamed: int) -> None:
    """``iter_names`` is git's listing from the first name >= start whether it streams the records,
    switches to the row index part-way (after ``streamed`` names) or reads the index; a probe of a
    prefix (replace refs, a rename's D/F check) builds no row index."""
    from refscope.backend.stores import files

    monkeypatch.setattr(files, "STREAMED_NAMES", streamed)
    names = [r[0] for r in git_rows(big_repo)]
    starts = [b"", b"refs/heads/topic/0001", b"refs/heads/topic/0004", b"refs/heads/topic/01", b"refs/tags/"]
    starts += [b"refs/replace/", b"refs/zz", names[-1], names[-1] + b"\0"]
    for start in starts:
        snap = open_store(discover(str(big_repo))).snapshot()
        assert next(iter(snap.iter_names(start)), None) == next((n for n in names if n >= start), None)
        assert not snap.packed.indexed, start
        want = [n for n in names if n >= start]
        assert list(snap.iter_names(start)) == want, start
        assert list(snap.iter_names(start)) == want, start  # the row index built by now


@pytest.mark.parametrize(
    "patterns",
    [
        ("refs/tags",),
        ("refs/heads/topic",),
        ("refs/heads/topic/",),
        ("refs/heads/top",),  # not a component boundary: matches nothing
        ("refs/tags/v1.0",),  # exact name
        ("refs/heads/sym", "refs/tags"),
        ("refs/heads/topic/00*",),
        ("refs/tags/v1.0-nest?d",),
        ("refs/heads/*",),
        ("refs/heads/**",),
        ("refs/**/0001",),
        ("refs/tags/light-00[0-3]",),
    ],
)
def test_list_patterns_equal_for_each_ref(big_repo: Path, patterns) -> None:
    assert_same(list_json(big_repo, *patterns), git_rows(big_repo, *patterns))


def test_plain_output_equals_git_format(big_repo: Path) -> None:
    proc = refscope("list", "-C", str(big_repo), "refs/tags")
    assert proc.returncode == 0
    expected = git(big_repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/tags")
    assert proc.stdout == expected


def test_reflogs_equal_git_reflog(big_repo: Path) -> None:
    snap = open_store(discover(str(big_repo))).snapshot()
    for name in (b"HEAD", b"refs/heads/main", b"refs/heads/topic/0001", b"refs/heads/zz-loose-only"):
        out = git(big_repo, "reflog", "show", "--format=%H%x00%gs%x00%gn%x00%ge", name.decode())
        theirs = [tuple(line.split(b"\0")) for line in out.splitlines()]
        ours = [(e.new, e.message, e.name, e.email) for e in snap.reflog(name)]
        assert ours == theirs, name
    assert snap.reflog(b"refs/heads/no-such") == []


def _write_packed(repo: Path, header: bytes | None, records: list[tuple[bytes, bytes, bytes | None]]) -> None:
    out = [header] if header is not None else []
    for oid, name, peeled in records:
        out.append(oid + b" " + name + b"\n")
        if peeled:
            out.append(b"^" + peeled + b"\n")
    (repo / ".git/packed-refs").write_bytes(b"".join(out))


@pytest.mark.parametrize("header", [b"# pack-refs with: peeled \n", None, b"# pack-refs with: \n"])
def test_unsorted_packed_refs(tmp_path: Path, header: bytes | None) -> None:
    repo = init_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "tag", "-a", "-m", "t", "atag")
    tag = git(repo, "rev-parse", "atag").strip()
    (repo / ".git/refs/tags/atag").unlink()
    names = [b"refs/heads/b%03d" % i for i in range(120)] + [b"refs/heads/main", b"refs/heads/a/b"]
    random.Random(7).shuffle(names)
    recs = [(head, n, None) for n in names] + [(tag, b"refs/tags/atag", head)]
    (repo / ".git/refs/heads/main").unlink()
    _write_packed(repo, header, recs)
    git(repo, "update-ref", "refs/heads/b050", head)  # loose over packed in an unsorted file
    theirs = git_rows(repo)
    assert_same(list_json(repo), theirs)
    snap, ours = snapshot_rows(repo)
    assert not snap.packed.sorted
    assert_same(ours, theirs)
    assert [snap.name_at(i) for i in range(len(snap))] == [r[0] for r in theirs]
    assert [snap.name_at(i) for i in snap.prefix_range(b"refs/heads/b0")] == [
        r[0] for r in theirs if r[0].startswith(b"refs/heads/b0")
    ]
    assert snap.lookup(b"refs/tags/atag").peeled == head


def test_packed_broken_names_hidden_like_git(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "HEAD").strip()
    bad = [
        b"refs/heads/a..b",
        b"refs/heads/x.lock",
        b"refs/heads/.hidden",
        b"refs/heads/sp ace",
        b"refs/heads/t~1",
    ]
    good = [b"refs/heads/main", b"refs/heads/ok", b"refs/heads/ok2"]
    recs = sorted([(head, n, None) for n in bad + good], key=lambda t: t[1])
    (repo / ".git/refs/heads/main").unlink()
    _write_packed(repo, b"# pack-refs with: peeled fully-peeled sorted \n", recs)
    theirs = git_rows(repo)
    assert [r[0] for r in theirs] == good
    assert_same(list_json(repo), theirs)
    assert_same(snapshot_rows(repo)[1], theirs)


def test_bare_repository(tmp_path: Path, big_repo: Path) -> None:
    bare = tmp_path / "bare.git"
    shutil.copytree(big_repo / ".git", bare, symlinks=True)
    git(bare, "config", "core.bare", "true")
    assert discover(str(bare)).bare
    assert_same(list_json(bare), git_rows(bare))


def test_linked_worktree_per_worktree_refs(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "main")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "side")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "side")
    wt = tmp_path / "wt"
    git(repo, "update-ref", "refs/worktree/main-only", head)
    git(repo, "update-ref", "refs/bisect/bad", head)
    git(wt, "update-ref", "refs/worktree/wt-only", head)
    git(wt, "update-ref", "refs/bisect/good-1", head)
    git(wt, "update-ref", "refs/heads/from-wt", head)
    git(repo, "pack-refs", "--all")
    for path in (repo, wt):
        theirs = git_rows(path)
        assert_same(list_json(path), theirs)
        assert_same(snapshot_rows(path)[1], theirs)
    wt_names = {r[0] for r in git_rows(wt)}
    assert b"refs/worktree/wt-only" in wt_names and b"refs/worktree/main-only" not in wt_names
    r = discover(str(wt))
    assert r.gitdir != r.commondir and r.worktree == os.path.realpath(wt)
    snap = open_store(r).snapshot()
    assert snap.head().target == b"refs/heads/side"
    heads = dict(r.worktrees())
    assert heads[r.commondir] == b"refs/heads/main" and heads[r.gitdir] == b"refs/heads/side"


def test_refresh_reuses_unchanged(big_repo: Path, tmp_path: Path) -> None:
    store = open_store(discover(str(big_repo)))
    s1 = store.snapshot()
    assert store.refresh(s1) is s1
    copy = tmp_path / "copy"
    shutil.copytree(big_repo, copy, symlinks=True)
    store = open_store(discover(str(copy)))
    s1 = store.snapshot()
    head = git(copy, "rev-parse", "HEAD").strip()
    git(copy, "update-ref", "refs/heads/new-loose", head)
    s2 = store.refresh(s1)
    assert s2 is not s1 and s2.packed is s1.packed
    assert s2.lookup(b"refs/heads/new-loose").oid == head
    assert all(s2.loose[k] is s1.loose[k] for k in s1.loose)
    git(copy, "pack-refs", "--all")
    s3 = store.refresh(s2)
    assert s3.packed is not s2.packed
    assert_same(snapshot_rows(copy)[1], git_rows(copy))
    assert set(s3.files()) >= {os.path.join(s3.commondir, "packed-refs")}


def test_packed_reader_rejects_like_git(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    head = git(repo, "rev-parse", "HEAD").strip()
    cases = {
        b"# not a pack-refs header\n": "unexpected line",
        b"# pack-refs with: sorted \n" + head + b" refs/heads/x": "unterminated line",
        b"# pack-refs with: sorted \n" + head[:-1] + b"g refs/heads/x\n": "unexpected line",
        b"# pack-refs with: sorted \n" + head + b"refs/heads/x\n": "unexpected line",
        b"# pack-refs with: sorted \n^" + head + b"\n": "unexpected line",
        b"# pack-refs with: sorted \n" + head + b" refs/heads/x\n^" + head[:10] + b"\n": "unexpected line",
        b"# pack-refs with: sorted \n" + head + b" refs/heads/x\0y\n": "embedded NUL",
    }
    for data, what in cases.items():
        (repo / ".git/packed-refs").write_bytes(data)
        r = subprocess.run([git_binary(), "for-each-ref"], cwd=repo, capture_output=True, env=git_env())
        assert r.returncode != 0, data  # git refuses it too
        res = refscope("list", "-C", str(repo))
        assert res.returncode == 1, data
        line = res.stderr.decode()
        assert line.startswith("refscope: ") and what in line and line.count("\n") == 1, line
        with pytest.raises(CorruptStore):
            snap = open_store(discover(str(repo))).snapshot()
            list(snap)


# --- refscope list on two cores (files) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def split_repo(tmp_path_factory) -> Path:
    """2,000 packed refs (annotated tags with peeled lines among them) and loose refs that shadow packed
    ones, add new names between them and near the middle, or hold a symref."""
    repo = init_repo(tmp_path_factory.mktemp("split") / "r", fmt="files")
    oid = create_refs(repo, [b"refs/heads/p%05d" % i for i in range(2000)])
    for i in range(0, 2000, 250):
        git(repo, "tag", "-a", "-m", "t", f"t{i:05d}", oid.decode())
    git(repo, "pack-refs", "--all")
    other = git(repo, "commit-tree", "HEAD^{tree}", "-m", "other").strip().decode()
    for name in ("refs/heads/p00999", "refs/heads/p01000", "refs/heads/p01000x", "refs/heads/a", "refs/zz"):
        git(repo, "update-ref", name, other)
    git(repo, "symbolic-ref", "refs/heads/p01001y", "refs/heads/p00007")
    return repo


def _files_split(capfd, path: Path, as_json: bool, split: bytes | None) -> bytes:
    return listed(capfd, open_store(discover(str(path))).snapshot(), as_json, split, "files")


@pytest.mark.parametrize("as_json", [False, True])
def test_files_split_listing_equals_one_process(split_repo: Path, capfd, as_json: bool) -> None:
    """Any split point (the middle record, a loose name, a shadowed packed name, before and after every
    ref) gives the bytes of one process, which are git's."""
    whole = _files_split(capfd, split_repo, as_json, None)
    if not as_json:
        assert whole == git(split_repo, "for-each-ref", "--format=%(objectname) %(refname)")
    snap = open_store(discover(str(split_repo))).snapshot()
    middle = snap.split_name(min_size=0)
    assert middle is not None and middle.startswith(b"refs/heads/p0")
    for split in (
        middle,
        b"refs/heads/p00999",
        b"refs/heads/p01000",
        b"refs/heads/p01000x",
        b"refs/",
        b"refs/zzz",
    ):
        assert _files_split(capfd, split_repo, as_json, split) == whole, split
    assert snap.split_name() is None  # ~130 KB of packed-refs: under the 1 MiB that pays for a fork


def test_files_list_command_splits(split_repo: Path, capfd, monkeypatch) -> None:
    from refscope.app import cmd_list
    from refscope.backend import listing

    calls = []
    real = listing.split_listing
    monkeypatch.setattr(listing, "SPLIT_MIN", 0)
    monkeypatch.setattr(listing, "split_listing", lambda *a: calls.append(a[4]) or real(*a))
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    assert cmd_list.run(["-C", str(split_repo)]) == 0
    assert calls == ["files"]
    assert capfd.readouterr().out.encode() == git(
        split_repo, "for-each-ref", "--format=%(objectname) %(refname)"
    )
