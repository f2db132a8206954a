"""``refscope list`` against ``git for-each-ref`` on objects git itself would never write: commits without
an author or committer, dates git cannot show (past 2^63, negative, zones of five digits or none),
encoding and gpgsig headers, CRLF and unterminated messages, non-UTF-8 idents, tags without a tagger, tags
of tags of blobs -- every one made with ``hash-object --literally``, in both ref formats and both hashes.

Where git succeeds the output is byte for byte git's; where git dies refscope exits 1 with git's last
line (``refscope:`` for ``fatal:``/``error:``), having printed what git printed: a run git streams (no
``--sort``, no ``--merged``) prints the refs before the one it dies at, a sorted one nothing. The cases include what an audit found
different: a date only sorted by (git formats it all the same, and dies where it cannot), ``--count``
with an explicit ``--sort`` or a ``--merged`` (git evaluates every ref before it sorts, so a ref past the
count still fails the run), ``%(*symref)`` of a plain ref, ``--sort=-`` and ``--contains`` of a blob, a
sorted format without atoms, ``%(*contents:x)``'s error, ``--sort=contents:size`` (a number to git).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import git, git_env, init_repo, run_git

NOW = "1700100000"

# name -> the commit's headers after tree/parent, and its message (raw bytes)
COMMITS: dict[str, bytes] = {
    "noauthor": b"committer C <c@x> 1700000200 +0000\n\nno author\n",
    "nocommitter": b"author A <a@x> 1700000200 +0000\n\nno committer\n",
    "baddate": b"author A <a@x> notadate +0000\ncommitter C <c@x> abc +0000\n\nbad date\n",
    "hugetz": b"author A <a@x> 1700000000 +9999\ncommitter C <c@x> 1700000000 -9999\n\nhuge tz\n",
    "tz5": b"author A <a@x> 1700000000 +12345\ncommitter C <c@x> 1700000000 -00001\n\ntz5\n",
    "notz": b"author A <a@x> 1700000000\ncommitter C <c@x> 1700000000\n\nno tz\n",
    "zero": b"author A <a@x> 0 +0000\ncommitter C <c@x> 0 -0100\n\nzero\n",
    "big32": b"author A <a@x> 4294967297 +0000\ncommitter C <c@x> 4294967297 +0100\n\nbig32\n",
    "big64": b"author A <a@x> 99999999999999999999 +0000\ncommitter C <c@x> 18446744073709551616 +0000\n\nx\n",
    "enc": b"author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000\nencoding ISO-8859-1\n\n"
    b"subj \xe9t\xe9\n\nbody \xe9\n",
    "gpg": b"author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000\ngpgsig -----BEGIN PGP"
    b" SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nsigned subject\n\nsigned body\n",
    "crlf": b"author A <a@x> 1 +0000\ncommitter C <c@x> 1 +0000\n\nline one\r\nline two\r\n\r\nbody\r\n",
    "nonl": b"author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000\n\nsubj\n\nbody, no LF",
    "leadblank": b"author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000\n\n\n\n  \nsubj\n\n\nb\n",
    "nomsg": b"author A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000000 +0000",
    "nonutf": b"author \xff\xfeN <e\xff@x> 1700000000 +0000\ncommitter C\x80 <c@\x80> 1700000000 +0000\n\n"
    b"sub\xff\xfe ject\n\nbo\xc3dy\n",
    "oddident": b"author    <> 1700000000 +0000\ncommitter NoEmail 1700000000 +0000\n\nodd ident\n",
    "dupauthor": b"author A1 <a1@x> 1700000001 +0000\nauthor A2 <a2@x> 1700000002 +0000\n"
    b"committer C <c@x> 1700000000 +0000\n\ndup\n",
}
# beyond time_t: every date mode but unix, raw and relative dies on these
FATAL_COMMITS: dict[str, bytes] = {
    "big63": b"author A <a@x> 9223372036854775808 +0000\ncommitter C <c@x> 9223372036854775809 +0000\n\nx\n",
    "neg": b"author A <a@x> -1 +0000\ncommitter C <c@x> -100 +0000\n\nneg\n",
}
TAGS: dict[str, bytes] = {
    "notagger": b"type commit\ntag notagger\n\nno tagger\n",
    "oddtagger": b"type commit\ntag oddtagger\ntagger weird line without email\n\nodd\n",
    "tagnodate": b"type commit\ntag tagnodate\ntagger T <t@x>\n\nnodate\n",
    "tagcrlf": b"type commit\ntag tagcrlf\ntagger T <t@x> 1700000300 +0000\n\nsubj\r\n\r\nbody\r\n",
    "tagsig": b"type commit\ntag tagsig\ntagger T <t@x> 1700000300 +0000\n\nsubj\n\nbody\n"
    b"-----BEGIN PGP SIGNATURE-----\nxx\n-----END PGP SIGNATURE-----\n",
}

FORMATS = [
    "%(refname) %(refname:short) %(refname:lstrip=-1) %(refname:rstrip=-2) %(objectname:short=5)",
    "%(objecttype) %(objectsize) %(*objectname) %(*objecttype) %(*objectsize)",
    "%(symref)|%(*symref)|%(*symref:short)|%(*refname:short)|%(*HEAD)|%(*worktreepath)|%(*flag)",
    "%(subject)|%(body)|%(contents:subject)|[%(contents)]|%(contents:signature)",
    "%(authorname)|%(authoremail)|%(committername)|%(committeremail)|%(author)|%(tagger)|%(creator)",
    "%(authordate:unix)|%(committerdate:raw)|%(creatordate:relative)|%(taggerdate:unix)",
    "%(authordate)|%(committerdate:iso8601)|%(creatordate:iso8601-strict)",
    "%(authordate:short)|%(committerdate:rfc2822)|%(*committerdate)|%(*subject)",
    "%(refname) %(ahead-behind:main)",
]
CASES = [
    *([f"--format={f}"] for f in FORMATS),
    ["--format=%(refname)", "--sort=committerdate"],
    ["--format=%(refname) %(committerdate:unix)", "--sort=-committerdate", "--sort=refname"],
    ["--format=%(refname)", "--sort=authordate", "--sort=-creatordate"],
    ["--format=%(refname)", "--sort=version:refname", "--sort=objectname"],
    ["--format=%(refname) %(authordate)", "--count=1"],
    ["--format=%(refname) %(authordate)", "--count=1", "--sort=refname"],
    ["--format=%(refname) %(authordate)", "--count=1", "--sort=-refname"],
    ["--format=%(refname) %(authordate)", "--count=1", "--no-merged=main"],
    ["--format=%(refname) %(authordate)", "--count=1", "--contains=main"],
    ["--format=%(refname)", "--merged=refs/tags/ttree"],
    ["--format=%(refname)", "--contains=refs/tags/lwblob"],
    ["--format=%(refname)", "--no-contains=refs/tags/ttree"],
    ["--format=%(refname)", "--sort=-"],
    ["--format=%(refname)", "--sort=version:"],
    ["--format=%(refname)", "--sort=-v:"],
    ["--format=%41", "--sort=-*objecttype"],  # a format of text alone, sorted: the text once per line
    ["--format=x%%", "--sort=refname", "--count=2"],
    ["--format=%(*contents:x)"],  # git's contents, subject and objectsize parsers name themselves
    ["--format=%(*subject:x)"],
    ["--format=%(*objectsize:x)"],
    ["--format=%(*refname:x)"],
    ["--format=%(refname) %(contents:size)", "--sort=-contents:size"],  # a number, as git compares it
    ["--format=%(refname)", "--sort=contents:size", "--sort=-objectsize"],
]


def _write(repo: Path, kind: str, body: bytes) -> str:
    return git(repo, "hash-object", "-t", kind, "-w", "--literally", "--stdin", input=body).decode().strip()


def _build(path: Path, fmt: str, hash_name: str, fatal: bool) -> Path:
    repo = init_repo(path, fmt, hash_name)
    git(repo, "config", "gc.auto", "0")
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    tree = git(repo, "rev-parse", "HEAD^{tree}").decode().strip()
    blob = git(repo, "rev-parse", "HEAD:file").decode().strip()
    commits = {**COMMITS, **(FATAL_COMMITS if fatal else {})}
    for name, rest in commits.items():
        oid = _write(repo, "commit", b"tree %s\nparent %s\n" % (tree.encode(), head.encode()) + rest)
        git(repo, "update-ref", f"refs/heads/{name}", oid)
    for name, rest in TAGS.items():
        git(repo, "update-ref", f"refs/tags/{name}", _write(repo, "tag", f"object {head}\n".encode() + rest))
    git(repo, "tag", "-a", "ann", "-m", "annotated", "main")
    git(repo, "tag", "-a", "nest", "-m", "nested", "ann")
    git(repo, "tag", "-a", "tblob", "-m", "a blob", blob)
    git(repo, "tag", "-a", "ttree", "-m", "a tree", tree)
    git(repo, "tag", "-a", "nestblob", "-m", "nest of a blob", "tblob")
    git(repo, "tag", "lwblob", blob)
    git(repo, "update-ref", b"refs/heads/non\xffutf".decode("utf-8", "surrogateescape"), head)
    git(repo, "update-ref", "refs/remotes/origin/main", head)
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    git(repo, "symbolic-ref", "refs/heads/dangling", "refs/heads/nowhere")
    git(repo, "branch", "side", "main")
    git(repo, "worktree", "add", "-q", str(path.parent / f"{path.name}-wt"), "side")
    return repo


@pytest.fixture(scope="module", params=[("files", "sha1"), ("reftable", "sha1"), ("files", "sha256"),
                                        ("reftable", "sha256")], ids="-".join)  # fmt: skip
def repos(request, tmp_path_factory) -> tuple[Path, Path]:
    """(a repository of every hostile object git can still show, the same with dates beyond time_t)."""
    fmt, hash_name = request.param
    base = tmp_path_factory.mktemp(f"{fmt}-{hash_name}")
    return _build(base / "plain", fmt, hash_name, False), _build(base / "fatal", fmt, hash_name, True)


def _compare(repo: Path, args: list[str]) -> None:
    env = {**git_env(), "GIT_TEST_DATE_NOW": NOW}
    theirs = run_git(repo, "for-each-ref", *args, env=env)
    ours = refscope("list", *args, cwd=repo, env=env)
    if theirs.returncode == 0:
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args
        return
    last = theirs.stderr.decode("utf-8", "replace").rstrip("\n").split("\n")[-1]
    want = "refscope: " + last.split(": ", 1)[1]
    assert (ours.returncode, ours.stderr.decode("utf-8", "replace"), ours.stdout) == (
        1,
        want + "\n",
        theirs.stdout,
    ), args


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
def test_hostile_objects_list_as_git(repos, args) -> None:
    _compare(repos[0], args)


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
def test_dates_beyond_time_t_fail_where_gits_do(repos, args) -> None:
    _compare(repos[1], args)


def test_the_fatal_repository_is_fatal_to_git(repos) -> None:
    """The cases above would prove nothing of the sort-only date if git did not die on it."""
    env = {**git_env(), "GIT_TEST_DATE_NOW": NOW}
    proc = run_git(repos[1], "for-each-ref", "--format=%(refname)", "--sort=committerdate", env=env)
    assert proc.returncode == 128 and b"Timestamp too large" in proc.stderr
    proc = run_git(repos[1], "for-each-ref", "--count=1", "--sort=refname", "--format=%(authordate)", env=env)
    assert proc.returncode == 128
    proc = run_git(repos[1], "for-each-ref", "--count=1", "--format=%(authordate)", env=env)
    assert proc.returncode == 0, proc.stderr
