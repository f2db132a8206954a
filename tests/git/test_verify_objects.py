"""``refscope verify --objects`` against ``git fsck`` on real repositories of both ref formats: each damage
to a ref's value (a flipped oid byte, a zeroed peeled value, a branch at a blob, a missing, corrupt or
promised object, a tag whose target is gone) is one finding naming the ref, where its value was read and
the oid, and git's fsck reports the same refs (or, for the peeled values it never checks, nothing)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from refscope.backend import verify as V
from refscope.backend.repo import discover

from tests.support.cli import refscope
from tests.support.git import git, git_binary, git_env, init_repo, run_git

FORMATS = ["files", "reftable"]


def build(path: Path, fmt: str) -> dict[str, bytes]:
    """main, side (one commit ahead), an annotated tag v1 and a tag of it v2, refs packed; objects loose.
    Returns the oids by name."""
    init_repo(path, fmt)
    git(path, "checkout", "-q", "-b", "side")
    (path / "file").write_text("side\n")
    git(path, "commit", "-q", "-am", "side")
    git(path, "checkout", "-q", "main")
    git(path, "tag", "-a", "-m", "one", "v1")
    git(path, "-c", "advice.nestedTag=false", "tag", "-a", "-m", "two", "v2", "v1")
    if fmt == "files":
        git(path, "pack-refs", "--all")
    else:
        git(path, "pack-refs")  # one table
    oids = {
        n: git(path, "rev-parse", n).strip()
        for n in ("refs/heads/main", "refs/heads/side", "refs/tags/v1", "refs/tags/v2", "main:file")
    }
    return oids


def objects(repo: Path) -> tuple[int, list[V.Finding]]:
    res = refscope("verify", "--objects", "--json", "-C", str(repo))
    findings = [V.Finding(**json.loads(line)) for line in res.stdout.decode().splitlines()]
    return res.returncode, findings


def fsck(repo: Path) -> tuple[int, str]:
    proc = run_git(repo, "fsck", "--no-dangling", "--no-progress")
    return proc.returncode, (proc.stdout + proc.stderr).decode()


def table_path(repo: Path) -> Path:
    names = (repo / ".git" / "reftable" / "tables.list").read_text().split()
    assert len(names) == 1
    return repo / ".git" / "reftable" / names[0]


def patch_value(repo: Path, fmt: str, old: bytes, new: bytes) -> Path:
    """Replace the first occurrence of the hex oid ``old`` where the store keeps ref values (packed-refs
    text, or the raw bytes of the table's ref block) with ``new``; the file patched."""
    if fmt == "files":
        path = repo / ".git" / "packed-refs"
        data = path.read_bytes()
        assert old in data
        path.write_bytes(data.replace(old, new, 1))
    else:
        path = table_path(repo)
        data = path.read_bytes()
        raw_old, raw_new = bytes.fromhex(old.decode()), bytes.fromhex(new.decode())
        assert raw_old in data
        path.write_bytes(data.replace(raw_old, raw_new, 1))
    return path


def flip(oid: bytes) -> bytes:
    """``oid`` with its last hex digit changed."""
    return oid[:-1] + (b"0" if oid[-1:] != b"0" else b"1")


def loose_path(repo: Path, oid: bytes) -> Path:
    h = oid.decode()
    return repo / ".git" / "objects" / h[:2] / h[2:]


def errors(findings: list[V.Finding]) -> list[V.Finding]:
    return [f for f in findings if f.severity == V.ERROR]


def _missing_pointer(repo, name: str, oid: bytes):
    """The one error finding of a ref whose object is missing, and git fsck's line for the same ref."""
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert f"'{name}'" in f.message and oid.decode() in f.message
    assert "not in the object database" in f.message
    grc, said = fsck(repo)
    assert grc != 0 and f"{name}: invalid sha1 pointer {oid.decode()}" in said
    return f


@pytest.mark.parametrize("fmt", FORMATS)
def test_healthy_repository_has_no_finding(tmp_path, fmt):
    repo = tmp_path / "r"
    build(repo, fmt)
    rc, found = objects(repo)
    assert (rc, found) == (0, [])
    assert fsck(repo)[0] == 0
    res = refscope("verify", "--objects", "-C", str(repo))
    assert res.stdout == b""
    assert b"0 errors, 0 warnings in" in res.stderr and b" objects)" in res.stderr
    plain = refscope("verify", "-C", str(repo))  # without --objects: the line as it always was
    assert plain.returncode == 0 and b"object" not in plain.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_flipped_oid_byte(tmp_path, fmt):
    repo = tmp_path / "r"
    oids = build(repo, fmt)
    bad = flip(oids["refs/heads/side"])
    path = patch_value(repo, fmt, oids["refs/heads/side"], bad)
    assert refscope("verify", "-C", str(repo)).returncode == 0  # the storage itself is sound
    f = _missing_pointer(repo, "refs/heads/side", bad)
    assert f.file == str(path) and f.offset is not None


@pytest.mark.parametrize("fmt", FORMATS)
def test_zeroed_peeled_value(tmp_path, fmt):
    repo = tmp_path / "r"
    oids = build(repo, fmt)
    main, v1 = oids["refs/heads/main"], oids["refs/tags/v1"]
    zero = b"0" * len(main)
    if fmt == "files":
        path = repo / ".git" / "packed-refs"
        data = path.read_bytes()
        rec = v1 + b" refs/tags/v1\n^" + main + b"\n"
        assert rec in data
        path.write_bytes(data.replace(rec, v1 + b" refs/tags/v1\n^" + zero + b"\n"))
    else:
        path = table_path(repo)
        data = path.read_bytes()
        raw = bytes.fromhex((v1 + main).decode())
        assert raw in data
        path.write_bytes(data.replace(raw, bytes.fromhex((v1 + zero).decode()), 1))
    assert git(repo, "show-ref", "-d", "refs/tags/v1").split(b"\n")[1].startswith(zero)  # git trusts it
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert f.file == str(path)
    assert "'refs/tags/v1'" in f.message and zero.decode() in f.message and main.decode() in f.message
    assert fsck(repo)[0] == 0  # git's fsck never looks at recorded peeled values


def test_peeled_value_on_a_commit(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    main = oids["refs/heads/main"]
    path = repo / ".git" / "packed-refs"
    data = path.read_bytes()
    line = main + b" refs/heads/main\n"
    path.write_bytes(data.replace(line, line + b"^" + main + b"\n"))
    rc, found = objects(repo)
    (f,) = errors(found)
    assert rc == 1 and "'refs/heads/main'" in f.message and "not a tag" in f.message


@pytest.mark.parametrize("fmt", FORMATS)
def test_branch_pointing_at_a_blob(tmp_path, fmt):
    repo = tmp_path / "r"
    oids = build(repo, fmt)
    blob = oids["main:file"]
    refused = run_git(repo, "update-ref", "refs/heads/blob", blob.decode())
    assert refused.returncode != 0 and b"non-commit object" in refused.stderr  # git will not write it
    if fmt == "files":
        path = repo / ".git" / "refs" / "heads" / "blob"
        path.write_bytes(blob + b"\n")
        name = "refs/heads/blob"
    else:
        path = patch_value(repo, fmt, oids["refs/heads/side"], blob)
        name = "refs/heads/side"
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert f.file == str(path) and f"'{name}'" in f.message and "a blob, not a commit" in f.message
    grc, said = fsck(repo)
    assert grc != 0 and f"{name}: not a commit" in said


def test_missing_object(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    side = oids["refs/heads/side"]
    loose_path(repo, side).unlink()
    _missing_pointer(repo, "refs/heads/side", side)


@pytest.mark.parametrize("fmt", FORMATS)
def test_tag_target_missing(tmp_path, fmt):
    repo = tmp_path / "r"
    build(repo, fmt)
    tree = git(repo, "rev-parse", "main^{tree}").strip().decode()
    lost = git(repo, "commit-tree", "-m", "lost", tree).strip()
    git(repo, "tag", "-a", "-m", "gone", "gone", lost.decode())
    loose_path(repo, lost).unlink()
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert "'refs/tags/gone'" in f.message and lost.decode() in f.message
    assert "not in the object database" in f.message
    grc, said = fsck(repo)
    assert grc != 0 and lost.decode() in said  # "broken link from tag ... / missing commit ..."


def test_corrupt_object_is_not_a_missing_one(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    side = oids["refs/heads/side"]
    p = loose_path(repo, side)
    os.chmod(p, 0o644)
    p.write_bytes(p.read_bytes()[:-6] + b"garbage")
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert "'refs/heads/side'" in f.message and "corrupt" in f.message
    assert "not in the object database" not in f.message
    grc, said = fsck(repo)
    assert grc != 0 and side.decode() in said


def test_partial_clone_missing_object_is_a_warning(tmp_path):
    src = tmp_path / "src"
    oids = build(src, "files")
    git(src, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-checkout", "--filter=blob:none", f"file://{src}", str(clone))
    blob = oids["main:file"]
    (clone / ".git" / "refs" / "tags").mkdir(parents=True, exist_ok=True)
    (clone / ".git" / "refs" / "tags" / "promised").write_bytes(blob + b"\n")
    rc, found = objects(clone)
    assert rc == 0
    (f,) = found
    assert f.severity == V.WARNING and "'refs/tags/promised'" in f.message and "partial clone" in f.message
    env = {**git_env(), "GIT_NO_LAZY_FETCH": "1"}
    proc = subprocess.run([git_binary(), "fsck", "--no-dangling"], cwd=clone, capture_output=True, env=env)
    assert b"refs/tags/promised" not in proc.stderr  # a promised object is not an error for git


def test_symref_resolves_through_to_the_object(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    blob = oids["main:file"]
    (repo / ".git" / "refs" / "heads" / "main").write_bytes(blob + b"\n")  # loose main over packed main
    rc, found = objects(repo)
    names = sorted(f.message.split(" ")[1] for f in errors(found))
    assert rc == 1 and names == ["'HEAD'", "'refs/heads/main'"]  # HEAD -> main: both are branches
    grc, said = fsck(repo)
    assert "HEAD: not a commit" in said and "refs/heads/main: not a commit" in said


def test_api_without_objects_is_unchanged(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    patch_value(repo, "files", oids["refs/heads/side"], flip(oids["refs/heads/side"]))
    r = discover(str(repo))
    assert V.verify(r) == []
    assert len(V.verify(r, objects=True)) == 1
    assert V.verify_summary(r)[1].objects is None


def test_branch_pointing_at_a_tag(tmp_path):
    repo = tmp_path / "r"
    oids = build(repo, "files")
    (repo / ".git" / "refs" / "heads" / "tagged").write_bytes(oids["refs/tags/v1"] + b"\n")
    rc, found = objects(repo)
    (f,) = errors(found)
    assert rc == 1 and "'refs/heads/tagged'" in f.message and "a tag, not a commit" in f.message
    assert "refs/heads/tagged: not a commit" in fsck(repo)[1]


def test_packed_values_are_the_parsers(tmp_path, monkeypatch):
    """The bulk reading of packed-refs gives what the record-by-record parser gives, peeled lines and
    offsets included, across chunk boundaries, and a loose ref hides its packed record."""
    from refscope.backend.formats.packed import PackedRefs
    from refscope.backend.verify import objects as O
    from refscope.backend.verify.objects import files_values

    monkeypatch.setattr(O, "_CHUNK", 300)
    repo = tmp_path / "r"
    build(repo, "files")
    for i in range(40):
        git(repo, "tag", "-a", "-m", f"t{i}", f"t{i:03d}")
    git(repo, "pack-refs", "--all")
    path = str(repo / ".git" / "packed-refs")
    packed = PackedRefs.open(path, "sha1")
    want = {r.name: (r.name, r.oid, r.peeled, path, r.offset, None) for r in packed.iter_records()}
    packed.close()
    assert sum(1 for v in want.values() if v[2]) > 40
    assert sorted(files_values({}, path, "sha1")) == sorted(want.values())
    loose = {b"refs/tags/t001": ("oid", want[b"refs/tags/t001"][1], "x")}
    got = {v[0]: v for v in files_values(loose, path, "sha1")}
    assert got[b"refs/tags/t001"][3] == "x" and got[b"refs/tags/t002"] == want[b"refs/tags/t002"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_linked_worktree_head(tmp_path, fmt):
    """A linked worktree's HEAD is checked where verify reads it (its own gitdir, or its own stack)."""
    repo = tmp_path / "r"
    oids = build(repo, fmt)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt), "side")
    assert objects(wt) == (0, [])
    if fmt == "files":
        head = repo / ".git" / "worktrees" / "wt" / "HEAD"
        head.write_bytes(oids["main:file"] + b"\n")
        rc, found = objects(wt)
        (f,) = errors(found)
        assert rc == 1 and f.file == str(head) and "'HEAD'" in f.message and "not a commit" in f.message


def test_root_refs_other_than_head_are_not_judged(tmp_path):
    """ORIG_HEAD may name an object gc pruned (git keeps nothing alive for it): git fsck does not judge
    it, nor does verify --objects (a reftable keeps it in the tables)."""
    repo = tmp_path / "r"
    oids = build(repo, "reftable")
    git(repo, "update-ref", "ORIG_HEAD", oids["refs/heads/side"].decode())
    loose_path(repo, oids["refs/heads/side"]).unlink()
    git(repo, "update-ref", "-d", "refs/heads/side")
    assert objects(repo) == (0, [])
    assert run_git(repo, "fsck", "--no-reflogs", "--no-dangling").returncode == 0  # (reflogs name it still)


def test_corrupt_packed_object_spoils_only_its_refs(tmp_path):
    """A damaged entry in a pack makes the bulk read fail; each object is then read on its own, so only
    the refs naming the damaged one are reported (corrupt, with the pack and offset)."""
    repo = tmp_path / "r"
    oids = build(repo, "files")
    git(repo, "gc", "-q")
    side = oids["refs/heads/side"]
    (idx,) = (repo / ".git" / "objects" / "pack").glob("*.idx")
    rows = git(repo, "verify-pack", "-v", str(idx)).decode().splitlines()
    (row,) = [r.split() for r in rows if r.startswith(side.decode())]
    offset = int(row[4])  # oid type size size-in-pack offset
    pack = idx.with_suffix(".pack")
    os.chmod(pack, 0o644)
    data = bytearray(pack.read_bytes())
    data[offset + 6] ^= 0xFF  # inside the zlib stream, after the entry header
    pack.write_bytes(bytes(data))
    rc, found = objects(repo)
    assert rc == 1
    (f,) = errors(found)
    assert "'refs/heads/side'" in f.message and "corrupt" in f.message and str(pack) in f.message
    grc, said = fsck(repo)
    assert grc != 0


def test_symref_chains_resolve_as_git_reads_them():
    """A symref resolves when a ref that is not a symref comes within SYMREF_MAXDEPTH reads (five: the
    symref itself included), as every store's resolver does."""
    from refscope.backend.verify.objects import files_values

    x = b"1" * 40
    for n, resolves in ((4, True), (5, False)):
        names = [b"refs/s/%d" % i for i in range(n)] + [b"refs/heads/x"]
        loose = {a: ("sym", b, "f") for a, b in zip(names, names[1:], strict=False)}
        loose[b"refs/heads/x"] = ("oid", x, "f")
        got = {v[0]: v for v in files_values(loose, "/nonexistent/packed-refs", "sha1")}
        assert (b"refs/s/0" in got) == resolves
        assert got[names[-2]][1] == x  # one hop always resolves
