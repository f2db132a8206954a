"""``refscope list`` against ``git for-each-ref`` where an object's body is damaged or an object is gone:
what git reads of an object decides what fails.

- ``%(objecttype)`` and ``%(objectsize)`` (and their ``*`` forms) read an object's header alone, as git's
  object-info calls do, so a damaged body fails neither git nor refscope.
- An atom that reads the content (``%(subject)``) fails at the damaged object. A run git streams (no
  ``--sort``) prints the refs before the one it dies at, a sorted run nothing; refscope prints what git
  printed, then one line. The line names the missing object and its ref as git does, or the damaged
  file.

The damage is made in a loose object and in a whole (undeltified) packed one, in both ref formats, and
no byte of the repository changes.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, run_git, tree_bytes

LONG = "x" * 3000  # a body long enough that the damage lies well inside its deflate stream


def _build(path: Path, fmt: str) -> tuple[Path, str]:
    """A repository of three branches and an annotated tag, ``refs/heads/b2`` (and the tag) at the
    commit that is to be damaged, whose id is returned."""
    repo = init_repo(path, fmt)
    git(repo, "config", "gc.auto", "0")
    for i in (1, 2, 3):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}", "-m", f"{LONG}{i}")
        git(repo, "branch", f"b{i}")
    oid = git(repo, "rev-parse", "b2").decode().strip()
    git(repo, "tag", "-a", "t2", "-m", "a tag", oid)
    return repo, oid


def _damage_loose(repo: Path, oid: str) -> None:
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    data = bytearray(zlib.compress(zlib.decompress(path.read_bytes()), 0))  # stored: its bytes are the body
    data[len(data) // 2] ^= 0xFF
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def _damage_packed(repo: Path, oid: str) -> None:
    git(repo, "repack", "-adq", "--window=0")  # no deltas
    pack = next((repo / ".git" / "objects" / "pack").glob("*.pack"))
    rows = git(repo, "verify-pack", "-v", str(pack.with_suffix(".idx"))).decode().splitlines()
    entries = sorted(int(r.split()[4]) for r in rows if len(r.split()) in (5, 7) and r.split()[1] in (
        "commit", "tree", "blob", "tag"))  # fmt: skip
    mine = next(r.split() for r in rows if r.startswith(oid))
    assert len(mine) == 5, "the damaged commit is to be a whole object, not a delta"
    start = int(mine[4])
    end = next((e for e in entries if e > start), pack.stat().st_size - 20)
    data = bytearray(pack.read_bytes())
    data[(start + end) // 2] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))


@pytest.fixture(scope="module", params=[(f, d) for f in ("files", "reftable") for d in ("loose", "packed")],
                ids="-".join)  # fmt: skip
def damaged(request, tmp_path_factory) -> tuple[Path, str]:
    fmt, where = request.param
    repo, oid = _build(tmp_path_factory.mktemp(f"{fmt}-{where}") / "r", fmt)
    (_damage_loose if where == "loose" else _damage_packed)(repo, oid)
    return repo, oid


HEADER_FORMATS = [
    "%(objecttype) %(refname)",
    "%(objectsize) %(refname)",
    "%(refname) %(objectsize) %(objecttype) %(objectname:short)",
]


@pytest.mark.parametrize("sort", [[], ["--sort=-objectsize"]], ids=["listed", "sorted"])
@pytest.mark.parametrize("fmt", HEADER_FORMATS)
def test_header_atoms_do_not_read_a_damaged_body(damaged, fmt, sort) -> None:
    repo, _ = damaged
    before = tree_bytes(repo)
    theirs = run_git(repo, "for-each-ref", f"--format={fmt}", *sort, env=git_env())
    assert theirs.returncode == 0, theirs.stderr
    ours = refscope("list", f"--format={fmt}", *sort, cwd=repo)
    assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)
    assert tree_bytes(repo) == before


@pytest.mark.parametrize("fmt", ["%(*objecttype) %(*objectsize) %(refname)", "%(objecttype) %(*objecttype)"])
def test_a_tags_damaged_target_is_read_for_its_header(damaged, fmt) -> None:
    """A ``*`` atom reads the tag whole, and of its target what the atom needs: the header alone."""
    repo, _ = damaged
    theirs = run_git(repo, "for-each-ref", f"--format={fmt}", "refs/tags/", env=git_env())
    assert theirs.returncode == 0 and theirs.stdout.startswith(
        b"commit " if "size" in fmt else b"tag commit\n"
    )
    ours = refscope("list", f"--format={fmt}", "refs/tags/", cwd=repo)
    assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["--format=%(subject) %(refname)"],
        ["--format=%(refname) %(objecttype) %(subject)"],
        ["--format=%(refname) %(*objecttype)"],  # a * atom reads every ref's own object whole
        ["--format=%(refname) %(*subject)"],
        ["--format=%(subject) %(refname)", "--sort=refname"],
        ["--format=%(refname) %(*objectsize)", "--sort=-refname"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_damaged_body_fails_after_what_git_prints(damaged, args) -> None:
    repo, _ = damaged
    before = tree_bytes(repo)
    theirs = run_git(repo, "for-each-ref", *args, env=git_env())
    assert theirs.returncode == 128, theirs.stdout
    ours = refscope("list", *args, cwd=repo)
    assert (ours.returncode, ours.stdout) == (1, theirs.stdout)
    lines = ours.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"refscope: {repo}/.git/objects/"), lines
    assert tree_bytes(repo) == before


def test_streamed_runs_print_the_refs_before_the_damage(damaged) -> None:
    """The cases above would prove nothing of the refs printed first if git printed none, and nothing
    of the header atoms if git read the whole object for them."""
    repo, _ = damaged
    proc = run_git(repo, "for-each-ref", "--format=%(subject) %(refname)", env=git_env())
    assert proc.stdout == b"c1 refs/heads/b1\n"
    proc = run_git(repo, "for-each-ref", "--format=%(subject) %(refname)", "refs/tags/", env=git_env())
    assert (proc.returncode, proc.stdout) == (0, b"a tag refs/tags/t2\n")


@pytest.mark.parametrize("fmt", ["files", "reftable"])
@pytest.mark.parametrize(
    "args",
    [
        ["--format=%(objecttype) %(refname)"],
        ["--format=%(refname) %(subject)"],
        ["--format=%(refname) %(*objectsize)"],
        ["--format=%(objectsize) %(refname)", "--sort=objectsize"],
        ["--format=%(refname) %(authordate:unix)", "--count=1"],
        ["--format=%(refname) %(*objectsize)", "refs/tags/"],  # a tag of it peels to nothing: "bad tag"
        ["--format=%(refname) %(*objectname)", "refs/tags/"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_missing_object_fails_as_gits(tmp_path, fmt, args) -> None:
    """git's own streamed run dies of a double free on a missing object whose content an atom wants
    (git 2.55), so its stdio is never flushed: there, what git means to print is the refs before the
    missing one, then its ``die`` line."""
    repo, oid = _build(tmp_path / "r", fmt)
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    before = tree_bytes(repo)
    theirs = run_git(repo, "for-each-ref", *args, env=git_env())
    ours = refscope("list", *args, cwd=repo)
    if theirs.returncode == 0:
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout)
        return
    want = f"refscope: missing object {oid} for refs/heads/b2\n"
    if theirs.returncode == 128:
        want = "refscope: " + theirs.stderr.decode().rstrip("\n").split("\n")[-1].split(": ", 1)[1] + "\n"
        # (a tag peels to nothing in git's words, unless its peeled value was recorded: reftable's is)
        assert want in (f"refscope: missing object {oid} for refs/heads/b2\n", "refscope: bad tag\n",
                        f"refscope: missing object {oid} for refs/tags/t2\n")  # fmt: skip
    else:  # the double free
        assert b"double free" in theirs.stderr
        theirs = run_git(repo, "for-each-ref", *args, "refs/heads/b1", env=git_env())
    assert (ours.returncode, ours.stderr.decode(), ours.stdout) == (1, want, theirs.stdout)
    assert tree_bytes(repo) == before
