"""The revisions ``refscope list`` filters by (``--points-at``, ``--merged``, ``--no-merged``,
``--contains``, ``--no-contains``, ``%(ahead-behind:...)``) named as git names them: full and abbreviated
object ids (upper case too, packed and loose objects), a ref name that looks like hex (refs come first,
as in get_oid_basic), prefixes too short, matching nothing or ambiguous, each against ``git
for-each-ref``'s own output and errors, and with the suffixes get_oid reads (``~n``, ``^n``,
``^{type}``). Where git fails refscope exits 1 with one of git's lines: its
last (``malformed object name ...``, quoted for ``--points-at`` as git quotes it) or, for an ambiguous
prefix, its first (``short object ID ... is ambiguous``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, init_repo, run_git


@pytest.fixture(scope="module", params=[("files", "sha1"), ("reftable", "sha256")], ids="-".join)
def repo(request, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A history of three commits with tags, 1,500 blobs (so that some four-digit prefixes are shared),
    half the objects packed; and the names the cases use."""
    fmt, hash_name = request.param
    repo = init_repo(tmp_path_factory.mktemp(f"{fmt}-{hash_name}") / "r", fmt, hash_name)
    blobs = "".join(f"blob\ndata {len(str(i)) + 1}\n{i}\n" for i in range(1500))
    git(repo, "fast-import", "--quiet", input=blobs.encode())
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    git(repo, "repack", "-dq")  # the loose ones packed; fast-import's pack of blobs kept
    git(repo, "commit", "-q", "--allow-empty", "-m", "three")  # loose
    git(repo, "branch", "old", "HEAD~2")
    git(repo, "tag", "-a", "ann", "-m", "a tag", "HEAD~1")
    ids = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").decode().split()
    prefixes = [i[:4] for i in ids]
    shared = next(p for p in prefixes if prefixes.count(p) > 1)
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    old = git(repo, "rev-parse", "old").decode().strip()
    tag = git(repo, "rev-parse", "ann").decode().strip()
    free = next(f"{n:04x}" for n in range(1 << 16) if f"{n:04x}" not in prefixes)
    git(repo, "branch", "beef", "old")  # a ref name that is also hex: the ref wins
    tree = git(repo, "rev-parse", "HEAD^{tree}").decode().strip()
    merge = git(repo, "commit-tree", "-p", "HEAD", "-p", "old", "-m", "m", tree).decode().strip()
    git(repo, "branch", "mrg", merge)  # two parents, for ^2
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"b\n").decode().strip()
    git(repo, "tag", "bt", blob)
    git(repo, "tag", "-a", "nest", "-m", "a tag of a tag", "ann")
    return repo, {"head": head, "old": old, "tag": tag, "shared": shared, "free": free}


def _cases(names: dict[str, str]) -> list[list[str]]:
    head, old, tag = names["head"], names["old"], names["tag"]
    revs = [head[:7], head[:4], head[:12].upper(), old[:5], tag[:8], "beef", names["shared"],
            names["free"], head[:3], head, "nosuch"]  # fmt: skip
    out = []
    for rev in revs:
        out += [
            [f"--points-at={rev}"],
            [f"--merged={rev}"],
            [f"--no-merged={rev}"],
            [f"--contains={rev}"],
            [f"--no-contains={rev}"],
            [f"--format=%(refname) %(ahead-behind:{rev})"],
        ]
    return out


# suffixes git's get_oid reads: beyond the history or the parents, on objects they do not apply to, and
# malformed ones (git's own messages either way)
SUFFIXED = ["HEAD~1", "HEAD~2", "HEAD~3", "HEAD~", "HEAD~0", "HEAD~01", "HEAD~+1", "HEAD~x", "HEAD^", "HEAD^^",
            "HEAD^0", "HEAD^2", "HEAD^{}", "HEAD^{commit}", "HEAD^{object}", "HEAD^{tag}", "HEAD^{tree}",
            "HEAD^{bogus}", "HEAD^-1", "@~1", "@^{}", "mrg^2", "mrg^1~1", "mrg^3", "mrg~1^2", "mrg^2^{tree}",
            "ann^{}", "ann^{commit}", "ann^{tag}", "ann^{tag}~1", "ann~1", "ann^0", "ann^{tree}", "ann^{blob}",
            "nest^{}", "nest^{tag}", "nest~0", "bt^{}", "bt^{blob}", "bt^0", "bt~1", "old~1", "nosuch~1",
            "HEAD~99999999999999999999", "~1", "^"]  # fmt: skip


def _suffixed(names: dict[str, str]) -> list[list[str]]:
    revs = [*SUFFIXED, names["head"][:7] + "~1", names["tag"] + "^{}"]
    return [
        [f"--{key}={rev}"] for rev in revs for key in ("points-at", "merged", "no-merged", "contains")
    ] + [[f"--format=%(refname) %(ahead-behind:{rev})"] for rev in revs]


@pytest.mark.parametrize("cases", [_cases, _suffixed], ids=["bases", "suffixes"])
def test_revisions_resolve_as_gits(repo, cases) -> None:
    path, names = repo
    for args in cases(names):
        args = ["--format=%(refname)", *args]
        theirs = run_git(path, "for-each-ref", *args)
        ours = refscope("list", *args, cwd=path)
        if theirs.returncode == 0:
            assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args
            continue
        lines = [ln for ln in theirs.stderr.decode().splitlines() if not ln.startswith("hint:")]
        allowed = {"refscope: " + ln.split(": ", 1)[1] + "\n" for ln in (lines[0], lines[-1])}
        assert ours.returncode == 1 and ours.stdout == b"", args
        assert ours.stderr.decode() in allowed, (args, theirs.stderr)
