"""The configuration ``refscope list --format`` reads as ``git for-each-ref`` does: ``core.abbrev``
(a length, ``auto``, ``no``, past the id's length, below git's minimum of 4, not a number) for
``%(objectname:short)`` and the other ``:short`` ids, and ``core.warnAmbiguousRefs`` (off: a short name
need only be unambiguous under the rules before its own; not a boolean: git fails only a format that
shortens a name). Names that collide under git's rules (a branch and a tag ``x``, ``heads/y``,
``tags/x``, a branch ``origin`` beside the remote), both ref formats, against git's own output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, init_repo, run_git

FORMATS = [
    "%(refname) %(refname:short) %(symref:short)",
    "%(objectname:short) %(tree:short) %(*objectname:short) %(objectname:short=5)",
    "%(refname)",
]
SETTINGS = [
    [],
    ["core.abbrev", "12"],
    ["core.abbrev", "auto"],
    ["core.abbrev", "no"],
    ["core.abbrev", "4"],
    ["core.abbrev", "100"],
    ["core.abbrev", "3"],
    ["core.warnAmbiguousRefs", "false"],
    ["core.warnAmbiguousRefs", "maybe"],
]


@pytest.fixture(scope="module", params=[("files", "sha1"), ("reftable", "sha256")], ids="-".join)
def repo(request, tmp_path_factory) -> Path:
    fmt, hash_name = request.param
    repo = init_repo(tmp_path_factory.mktemp(f"{fmt}-{hash_name}") / "r", fmt, hash_name)
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    for name in ("x", "heads/y", "tags/x", "origin"):
        git(repo, "branch", name)
    git(repo, "tag", "-a", "x", "-m", "a tag x")
    git(repo, "update-ref", "refs/remotes/origin/main", "main")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    git(repo, "update-ref", "refs/remotes/x/HEAD", "main")
    git(repo, "update-ref", "refs/z", "main")
    return repo


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "=".join(s) or "unset")
def test_config_reads_as_gits(repo, setting) -> None:
    if setting:
        git(repo, "config", *setting)
    try:
        for fmt in FORMATS:
            args = [f"--format={fmt}"]
            theirs = run_git(repo, "for-each-ref", *args)
            ours = refscope("list", *args, cwd=repo)
            if theirs.returncode == 0:
                assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), (setting, fmt)
                continue
            first = theirs.stderr.decode().splitlines()[0]
            assert (ours.returncode, ours.stdout) == (1, b""), (setting, fmt)
            assert ours.stderr.decode() == "refscope: " + first.split(": ", 1)[1] + "\n", (setting, fmt)
    finally:
        if setting:
            git(repo, "config", "--unset", setting[0])


TAGS = ["v1.0", "v1.0-rc1", "v1.0-rc2", "v1.0-beta", "v1.0-alpha2", "v1.0.rc3", "v1.0-bfoo", "v1.0.1", "v1.10",
        "v1.2", "v2.0-pre", "v2.0", "v2.0-rc1"]  # fmt: skip
SUFFIXES = [
    [],
    [("versionsort.suffix", "-rc")],
    [("versionsort.suffix", "-rc"), ("versionsort.suffix", "-beta"), ("versionsort.suffix", "-alpha")],
    [("versionsort.prereleaseSuffix", "-rc")],
    [("versionsort.suffix", ".rc"), ("versionsort.suffix", "-b")],
    [("versionsort.suffix", "-b"), ("versionsort.suffix", "-bfoo"), ("versionsort.suffix", "0")],
]


@pytest.mark.parametrize("suffixes", SUFFIXES, ids=lambda s: ",".join(v for _, v in s) or "none")
def test_version_sort_takes_gits_prerelease_suffixes(tmp_path, suffixes) -> None:
    repo = init_repo(tmp_path / "r")
    for tag in TAGS:
        git(repo, "tag", tag)
    for key, value in suffixes:
        git(repo, "config", "--add", key, value)
    for sort in ("--sort=version:refname", "--sort=-v:refname", "--sort=v:refname:lstrip=2"):
        args = ["--format=%(refname)", sort, "refs/tags"]
        theirs = run_git(repo, "for-each-ref", *args)
        assert theirs.returncode == 0, theirs.stderr
        ours = refscope("list", *args, cwd=repo)
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), (suffixes, sort)


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_short_names_over_many_refs_as_gits(tmp_path: Path, fmt: str) -> None:
    """Past ``Exists.BULK_MIN`` names the ambiguity check of ``%(refname:short)`` asks one set of every
    listed name instead of the store: what resolves must be what is listed. A dangling symref, a broken
    loose ref, and a badly named packed record (files) shadow nothing, in both ways of asking."""
    repo = init_repo(tmp_path / "r", fmt)
    lines = [f"create refs/heads/b{i:05d} main\n" for i in range(5000)]
    lines += [f"create refs/tags/b{i:05d} main\n" for i in range(0, 5000, 7)]  # tags x branches
    lines += ["create refs/heads/tags/b00014 main\n", "create refs/remotes/b00021/HEAD main\n"]
    lines += ["create refs/tags/dangling main\n", "create refs/tags/broken main\n"]
    git(repo, "update-ref", "--stdin", input="".join(lines).encode())
    git(repo, "symbolic-ref", "refs/heads/dangling", "refs/heads/nowhere")
    if fmt == "files":
        git(repo, "tag", "hidden")
        git(repo, "pack-refs", "--all")
        (repo / ".git/refs/heads/broken").write_bytes(b"not an id\n")
        packed = (repo / ".git/packed-refs").read_bytes()
        (repo / ".git/packed-refs").write_bytes(
            packed.replace(b"refs/tags/hidden\n", b"refs/tags/hid..den\n")
        )
    outs = []
    for args in (["--format=%(refname:short)"], ["--format=%(refname:short)", "refs/tags/"]):
        theirs = run_git(repo, "for-each-ref", *args)
        ours = refscope("list", *args, cwd=repo)
        assert theirs.returncode == 0, theirs.stderr
        assert (ours.returncode, ours.stdout) == (0, theirs.stdout), (args, ours.stderr)
        outs.append(ours.stdout)
    # the tag shortens to "dangling" (the dangling symref refs/heads/dangling does not resolve), the
    # tag b00014 stays long (the branch tags/b00014 makes tags/b00014 ambiguous)
    assert outs[1].endswith(b"\nbroken\ndangling\n") and b"\nrefs/tags/b00014\n" in outs[1]
