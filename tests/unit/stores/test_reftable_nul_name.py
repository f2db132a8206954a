"""A NUL byte in one reftable ref name (git writes the table; only the name's bytes are patched: ref
blocks carry no CRC). It is damage in one record, not in the repository: every other ref is served, the
record is reported (verify's error; one warning from ``list`` naming the table and the block, escaped),
and a write that names it -- by its bytes, or by git's reading of them -- is refused with nothing changed.

git reads such a key as a C string, up to the NUL, and lists it as that shorter name; refscope does not
serve the record under any name (the rest of the listing is git's, byte for byte)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_binary, git_env, init_repo, ref_storage


@pytest.fixture
def nul_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = init_repo(tmp_path / "repo", fmt="reftable")
    for name in ("aaa", "abXc", "zzz", "tags/v1"):
        git(repo, "update-ref", f"refs/heads/{name}" if "/" not in name else f"refs/{name}", "HEAD")
    git(repo, "pack-refs", "--all")
    (table,) = (repo / ".git" / "reftable").glob("*.ref")
    data = bytearray(table.read_bytes())
    assert data.count(b"bXc") == 1
    data[data.index(b"bXc") + 1] = 0  # refs/heads/abXc -> refs/heads/ab\0c
    table.write_bytes(bytes(data))
    return repo, table


def test_nul_name_is_reported_and_the_rest_served(nul_repo: tuple[Path, Path]) -> None:
    repo, table = nul_repo
    theirs = subprocess.run(
        [git_binary(), "for-each-ref", "--format=%(objectname) %(refname)"],
        cwd=repo,
        capture_output=True,
        env=git_env(),
    )
    assert theirs.returncode == 0
    oid = git(repo, "rev-parse", "HEAD").strip()
    phantom = oid + b" refs/heads/ab\n"  # git's reading of the damaged key: cut at the NUL
    assert phantom in theirs.stdout
    before = ref_storage(repo / ".git")
    proc = refscope("list", cwd=repo)
    assert proc.returncode == 0
    assert proc.stdout == theirs.stdout.replace(phantom, b"")
    warning = f"refscope: {table}: warning: ref name 'refs/heads/ab\\x00c' holds a NUL byte; not listed (ref block at 0)\n"
    assert proc.stderr.decode() == warning  # once
    proc = refscope("list", "refs/tags", cwd=repo)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, oid + b" refs/tags/v1\n", b"")  # not in range
    proc = refscope("verify", cwd=repo)
    assert proc.returncode == 1
    assert (
        f"error: {table}@0: ref name 'refs/heads/ab\\x00c' holds a NUL byte: git reads it as 'refs/heads/ab'; "
        "refscope does not list it and refuses writes that name it"
    ) in proc.stdout.decode().splitlines()
    assert ref_storage(repo / ".git") == before


def test_writes_naming_it_are_refused_others_pass(nul_repo: tuple[Path, Path]) -> None:
    repo, _table = nul_repo
    before = ref_storage(repo / ".git")
    proc = refscope("delete", "--stdin", stdin=b"refs/heads/ab\0c\n", cwd=repo)
    assert proc.returncode == 1
    assert (
        proc.stderr.decode()
        == f"refscope: {repo / '.git'}: refusing to update ref with bad name 'refs/heads/ab\\x00c'\n"
    )
    assert ref_storage(repo / ".git") == before
    # git's reading of the key (cut at the NUL): git would delete the damaged record under that name
    for engine in ("native", "git"):
        proc = refscope("delete", "--engine", engine, "refs/heads/ab", cwd=repo)
        assert (proc.returncode, proc.stdout) == (1, b"")
        assert proc.stderr.decode() == (
            f"refscope: {_table}: 'refs/heads/ab' is how git reads the damaged record 'refs/heads/ab\\x00c' "
            "(a NUL byte in its name): refusing to write\n"
        )
        assert ref_storage(repo / ".git") == before
    proc = refscope("delete", "refs/heads/zzz", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert b"refs/heads/zzz" not in git(repo, "for-each-ref", "--format=%(refname)")


def test_split_listing_warns_once_for_what_its_child_found(tmp_path: Path, capfd) -> None:
    """A listing split over two processes, the damaged record in a block only the child decodes: the
    parent still prints the one warning, after the whole listing (the child sends what it found)."""
    from refscope.backend import listing
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    from tests.support.listing import listed

    repo = init_repo(tmp_path / "repo", fmt="reftable")
    names = [b"refs/heads/b%03d" % i for i in range(60)] + [b"refs/heads/zzXc"]
    git(repo, "update-ref", "--stdin", input=b"".join(b"create %s HEAD\n" % n for n in names))
    git(repo, "config", "reftable.blockSize", "512")  # several ref blocks (read from the repository's config)
    git(repo, "update-ref", "refs/heads/c", "HEAD")  # a second table, so that pack-refs rewrites them all
    git(repo, "pack-refs", "--all")
    (table,) = (repo / ".git" / "reftable").glob("*.ref")
    data = bytearray(table.read_bytes())
    assert data.count(b"zzXc") >= 1  # the record, and keys naming it in the index blocks
    table.write_bytes(bytes(data).replace(b"zzXc", b"zz\0c"))
    snap = open_store(discover(str(repo), git_env())).snapshot()
    capfd.readouterr()
    whole = listed(capfd, snap, False, None, "columns")
    assert b"zz" not in whole
    snap = open_store(discover(str(repo), git_env())).snapshot()  # nothing decoded yet
    (t,) = snap.tables
    assert t.locate_ref(b"refs/heads/b000")[0].offset != t.locate_ref(b"refs/heads/b059")[0].offset
    split = listed(capfd, snap, False, b"refs/heads/b010", "columns")
    assert split == whole
    assert t.nul_names and all(off > 0 for off in t.nul_names.values())  # found by the child, sent back
    listing.warn_unlisted(snap, [(b"", None)])
    off = t.nul_names[b"refs/heads/zz\0c"]
    assert capfd.readouterr().err == (
        f"refscope: {table}: warning: ref name 'refs/heads/zz\\x00c' holds a NUL byte; not listed "
        f"(ref block at {off})\n"
    )
