"""Differential tests of general transactions: random mixed ``update-ref --stdin`` batches committed by each
engine and by plain ``git update-ref --stdin`` on copies of one generated repository.

Repositories: files and reftable, SHA-1 and SHA-256, packed-only, loose-only and loose-over-packed refs,
annotated tags, reflogs, a symref, HEAD's branch, a linked worktree. Batches mix creates (commits, blobs,
annotated tags), updates with and without old values, deletes, verifies, the symref commands, updates
through the symref and through HEAD, D/F conflicts and bad objects. Committed: the same for-each-ref, the
same reflogs (byte for byte as files), the very same reftable tables, ``git refs verify`` and ``git fsck``
clean, nothing left behind. Refused: git's own words and not one byte changed.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction

from tests.support.update import (
    build_repo,
    check_clean,
    copy_repo,
    files_layout,
    fingerprint,
    for_each_ref,
    git,
    git_binary,
    git_env,
    leftovers,
    open_txn_store,
    reflogs,
    reftable_files,
    state,
    use_git_identity,
)

SEEDS = int(os.environ.get("REFSCOPE_UPDATE_SEEDS", "12"))  # more for a longer hunt
CASES = [("files", "sha1"), ("files", "sha256"), ("reftable", "sha1"), ("reftable", "sha256")]


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{h}" for f, h in CASES])
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt, hash_name = request.param
    root = tmp_path_factory.mktemp(f"upd-{fmt}-{hash_name}")
    repo = build_repo(root / "repo", fmt, hash_name)
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"a blob\n").strip()
    return fmt, hash_name, repo, blob


def objects(repo: Path, blob: bytes) -> dict[str, bytes]:
    return {
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "second": git(repo, "rev-parse", "HEAD~1").strip(),
        "tag": git(repo, "rev-parse", "refs/tags/v0").strip(),
        "blob": blob,
    }


def random_batch(rng: random.Random, repo: Path, obj: dict[str, bytes], hexsz: int) -> bytes:
    refs = {r[0]: r for r in for_each_ref(repo)}
    plain = [n for n, r in refs.items() if not r[3] and n != b"refs/heads/wt-branch"]
    commits = [obj["head"], obj["second"]]
    wrong = b"1" * hexsz
    lines: list[bytes] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.choice(
            [
                "create", "create", "create-nested", "create-df", "create-exists", "update", "update",
                "update-old", "update-stale", "update-missing", "update-sym", "update-head", "update-main",
                "delete", "delete-old", "delete-missing", "verify", "verify-missing", "symref-create",
                "symref-update", "symref-delete", "symref-verify", "bad-object", "tag", "blob-branch",
            ]
        )  # fmt: skip
        n = rng.randint(0, 99)
        name = rng.choice(plain)
        cur = refs[name][1]
        if kind == "create":
            lines.append(b"create refs/heads/new-%d %s" % (n, rng.choice(commits)))
        elif kind == "create-nested":
            lines.append(b"create refs/heads/deep/d%d/x%d %s" % (n % 3, n, rng.choice(commits)))
        elif kind == "create-df":
            target = rng.choice(
                [b"refs/heads/p02/sub", b"refs/heads/l03/x", b"refs/heads/nested/dir", b"refs/heads/nested",
                 b"refs/tags/v1/x", b"refs/heads/new-%d/y" % (n % 4), b"refs/heads/deep"]
            )  # fmt: skip
            lines.append(b"create %s %s" % (target, obj["head"]))
        elif kind == "create-exists":
            lines.append(b"create %s %s" % (name, obj["head"]))
        elif kind == "update":
            lines.append(b"update %s %s" % (name, rng.choice(commits)))
        elif kind == "update-old":
            lines.append(b"update %s %s %s" % (name, rng.choice(commits), cur))
        elif kind == "update-stale":
            lines.append(b"update %s %s %s" % (name, obj["head"], wrong))
        elif kind == "update-missing":
            lines.append(b"update refs/heads/fresh-%d %s" % (n, obj["second"]))
        elif kind == "update-sym":
            lines.append(b"update refs/heads/sym %s" % rng.choice(commits))
        elif kind == "update-head":
            lines.append(b"update HEAD %s" % rng.choice(commits))
        elif kind == "update-main":
            lines.append(b"update refs/heads/main %s" % rng.choice(commits))
        elif kind == "delete":
            lines.append(b"delete %s" % name)
        elif kind == "delete-old":
            lines.append(b"delete %s %s" % (name, cur if rng.random() < 0.8 else wrong))
        elif kind == "delete-missing":
            lines.append(b"delete refs/heads/none-%d" % n)
        elif kind == "verify":
            lines.append(b"verify %s %s" % (name, cur if rng.random() < 0.8 else wrong))
        elif kind == "verify-missing":
            lines.append(b"verify refs/heads/none-%d" % n)
        elif kind == "symref-create":
            lines.append(b"symref-create refs/heads/s-%d %s" % (n, rng.choice(plain)))
        elif kind == "symref-update":
            lines.append(b"option no-deref")
            lines.append(b"symref-update refs/heads/sym %s" % rng.choice(plain))
        elif kind == "symref-delete":
            lines.append(b"option no-deref")
            lines.append(b"symref-delete refs/heads/sym refs/heads/p01")
        elif kind == "symref-verify":
            lines.append(b"option no-deref")
            lines.append(
                b"symref-verify refs/heads/sym %s" % rng.choice([b"refs/heads/p01", b"refs/heads/p02"])
            )
        elif kind == "bad-object":
            lines.append(b"create refs/heads/bad-%d %s" % (n, b"2" * hexsz))
        elif kind == "tag":
            lines.append(b"create refs/tags/t-%d %s" % (n, obj["tag"]))
        else:  # a blob under refs/heads/ is refused; under refs/tags/ it is fine
            where = b"heads" if rng.random() < 0.3 else b"tags"
            lines.append(b"create refs/%s/blob-%d %s" % (where, n, obj["blob"]))
    return b"\n".join(lines) + b"\n"


def git_update(
    repo: Path, data: bytes, message: str | None, nul: bool = False
) -> subprocess.CompletedProcess:
    argv = [git_binary(), "update-ref"]
    if message:
        argv += ["-m", message]
    argv += ["--stdin"] + (["-z"] if nul else [])
    return subprocess.run(argv, cwd=repo, input=data, capture_output=True, env=git_env())


def run_ours(repo: Path, data: bytes, engine: str, message: str | None, nul: bool = False):
    store = open_txn_store(repo)
    txn = UpdateTransaction(store, engine, message=(message or "").encode(), allow_checked_out=True)
    parsed = parse(data, nul=nul, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
    results = []
    for batch in parsed.batches:
        if batch.action != "commit":
            continue
        txn.queue(batch.commands)
        results.append(txn.commit())
        txn = UpdateTransaction(
            open_txn_store(repo), engine, message=(message or "").encode(), allow_checked_out=True
        )
    if parsed.error is not None:
        if parsed.pending:
            txn.queue(parsed.pending)
        raise parsed.error
    return results


def fatal(proc: subprocess.CompletedProcess) -> str:
    for ln in proc.stderr.decode("utf-8", "replace").splitlines():
        if ln.startswith("fatal: "):
            return ln.removeprefix("fatal: ")
    raise AssertionError(proc.stderr)


def strip_verb(text: str) -> str:
    for verb in ("prepare: ", "commit: "):
        if text.startswith(verb):
            return text[len(verb) :]
    return text


def assert_same(fmt: str, ours: Path, theirs: Path, scratch: Path) -> None:
    assert state(ours) == state(theirs)
    if fmt == "reftable":
        assert reftable_files(ours) == reftable_files(theirs)
    else:  # the same packed-refs bytes, loose files, reflog files and directories
        assert files_layout(ours) == files_layout(theirs)
        for p in files_layout(ours)[1]:
            if (ours / ".git" / p).is_file():
                assert (ours / ".git" / p).read_bytes() == (theirs / ".git" / p).read_bytes(), p
    assert reflogs(ours, fmt, scratch / "a") == reflogs(theirs, fmt, scratch / "b")
    fmt_log = "--format=%H %gd %gn %ge %gs"
    for name in ("HEAD", "refs/heads/main", "refs/heads/sym", "refs/heads/p01"):
        a = subprocess.run(
            [git_binary(), "reflog", "show", fmt_log, name], cwd=ours, capture_output=True, env=git_env()
        )
        b = subprocess.run(
            [git_binary(), "reflog", "show", fmt_log, name], cwd=theirs, capture_output=True, env=git_env()
        )
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), name
    assert leftovers(ours) == []
    check_clean(ours, theirs)


def compare(fmt: str, src: Path, tmp_path: Path, data: bytes, engine: str, message: str | None, nul=False):
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    proc = git_update(theirs, data, message, nul)
    if proc.returncode != 0:
        before = fingerprint(ours / ".git")
        with pytest.raises(TransactionRefused) as info:
            run_ours(ours, data, engine, message, nul)
        assert strip_verb(info.value.what) == strip_verb(fatal(proc)), data
        if data.count(b"commit\n") > 1:  # the transactions before the refused one are committed
            assert state(ours) == state(theirs)
        else:
            assert fingerprint(ours / ".git") == before
        return False
    run_ours(ours, data, engine, message, nul)
    assert_same(fmt, ours, theirs, tmp_path)
    return True


@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_batches_match_git(base, seed: int, tmp_path: Path) -> None:
    fmt, hash_name, src, blob = base
    rng = random.Random(f"{fmt}{hash_name}{seed}")
    engine = "git" if seed % 6 == 5 else "native"
    message = rng.choice([None, "a message", "  spaced\tout  message "])
    data = random_batch(rng, src, objects(src, blob), HASH_HEXSZ[hash_name])
    compare(fmt, src, tmp_path, data, engine, message)


@pytest.mark.parametrize(
    "lines",
    [
        [b"create refs/heads/a/b %(head)s", b"create refs/heads/a %(head)s"],
        [b"create refs/heads/p02/x %(head)s"],
        [b"create refs/heads/l01/x %(head)s"],
        [b"create refs/heads/nested %(head)s"],
        [b"delete refs/heads/p05", b"create refs/heads/p05/x %(head)s"],
        [b"create refs/heads/p05 %(head)s"],
        [b"update refs/heads/p05 %(second)s 1111111111111111111111111111111111111111"],
        [b"create refs/heads/x %(head)s", b"create refs/heads/x %(second)s"],
        [b"update refs/heads/sym %(second)s", b"update refs/heads/p01 %(second)s"],
        [b"update HEAD %(second)s", b"update refs/heads/main %(second)s"],
        [b"create refs/heads/blob %(blob)s"],
        [b"create refs/tags/obj %(bad)s"],
        [b"verify refs/heads/none %(head)s"],
        [b"option no-deref", b"symref-verify refs/heads/sym refs/heads/p02"],
        [b"option no-deref", b"symref-verify refs/heads/p03 refs/heads/p02"],
        [b"create refs/heads/ok %(head)s", b"bogus"],
        [b"create refs/heads/a..b %(head)s"],
        [b"update refs/heads/q"],
        [b"create refs/heads/q 0000000000000000000000000000000000000000"],
        [
            b"start",
            b"create refs/heads/t1 %(head)s",
            b"commit",
            b"start",
            b"create refs/heads/t1 %(head)s",
            b"commit",
        ],
    ],
)
def test_refusals_and_corners_match_git(base, lines, tmp_path: Path) -> None:
    fmt, hash_name, src, blob = base
    obj = objects(src, blob)
    hexsz = HASH_HEXSZ[hash_name]
    values = {k.encode(): v for k, v in obj.items()} | {b"bad": b"2" * hexsz}
    data = (
        b"\n".join(
            ln.replace(b"1" * 40, b"1" * hexsz).replace(b"0" * 40, b"0" * hexsz) % values for ln in lines
        )
        + b"\n"
    )
    compare(fmt, src, tmp_path, data, "native", "corner")


@pytest.mark.parametrize("engine", ["native", "git"])
def test_nul_form(base, engine: str, tmp_path: Path) -> None:
    fmt, _hash, src, blob = base
    obj = objects(src, blob)
    data = b"".join(
        [
            b"create refs/heads/z1\0%s\0" % obj["head"],
            b"update refs/heads/p03\0%s\0\0" % obj["head"],
            b"delete refs/heads/l02\0\0",
            b"symref-create refs/heads/zs\0refs/heads/z1\0",
            b"option no-deref\0symref-update refs/heads/sym\0refs/heads/z1\0ref\0refs/heads/p01\0",
            b"verify refs/heads/none-such\0\0",
        ]
    )
    assert compare(fmt, src, tmp_path, data, engine, "nul form", nul=True)


def test_from_linked_worktree(base, tmp_path: Path) -> None:
    fmt, _hash, src, blob = base
    obj = objects(src, blob)
    data = b"update refs/bisect/bad %s\ncreate refs/heads/from-wt %s\nupdate HEAD %s\n" % (
        obj["second"], obj["head"], obj["head"]
    )  # fmt: skip
    ours = copy_repo(src, tmp_path / "ours")
    theirs = copy_repo(src, tmp_path / "theirs")
    assert git_update(theirs / "wt", data, "wt").returncode == 0
    run_ours(ours / "wt", data, "native", "wt")
    assert state(ours) == state(theirs)
    fmt_log = "--format=%H %gd %gn %ge %gs"
    for name in ("HEAD", "refs/heads/wt-branch", "refs/bisect/bad", "refs/heads/from-wt"):
        a = git(ours / "wt", "reflog", "show", fmt_log, name, check=False)
        b = git(theirs / "wt", "reflog", "show", fmt_log, name, check=False)
        assert a == b, name
    assert leftovers(ours) == []
    check_clean(ours, theirs)


@pytest.mark.parametrize(
    "conflict", [None, b"refs/heads/p02/x", b"refs/heads/nested/dir", b"refs/heads/big-7/y"]
)
def test_big_batches(base, conflict, tmp_path: Path) -> None:
    """Batches big enough for the engines' batched reads (a small stack read whole, D/F checks by bisection)."""
    fmt, _hash, src, blob = base
    obj = objects(src, blob)
    lines = [b"create refs/heads/big-%d %s" % (i, obj["head"]) for i in range(400)]
    lines += [b"update refs/heads/p%02d %s" % (i, obj["second"]) for i in range(0, 24, 5)]
    lines += [b"delete refs/heads/l04", b"create refs/tags/big-tag %s" % obj["tag"]]
    if conflict is not None:
        lines.insert(200, b"create %s %s" % (conflict, obj["head"]))
    compare(fmt, src, tmp_path, b"\n".join(lines) + b"\n", "native", "big")


def test_stack_moved_after_the_snapshot(base, tmp_path: Path) -> None:
    """The plan is made from the snapshot; when the ref storage moved before the lock, the engine decides
    again under the lock, as git: a stale old value is refused, an unrelated write is kept."""
    from refscope.backend.errors import StaleValue

    fmt, hash_name, src, blob = base
    obj = objects(src, blob)
    repo = copy_repo(src, tmp_path / "r")
    p02 = git(repo, "rev-parse", "refs/heads/p02").strip()
    store = open_txn_store(repo)
    snap = store.snapshot()
    txn = UpdateTransaction(store, snapshot=snap, allow_checked_out=True)
    txn.queue(
        parse(b"update refs/heads/p02 %s %s\n" % (obj["second"], p02), hexsz=HASH_HEXSZ[hash_name])
        .batches[0]
        .commands
    )
    git(repo, "update-ref", "refs/heads/p02", obj["head"] if p02 != obj["head"] else obj["second"])
    with pytest.raises(StaleValue, match="is at"):
        txn.commit()
    txn = UpdateTransaction(store, snapshot=store.snapshot(), allow_checked_out=True)
    txn.queue(
        parse(b"create refs/heads/mine %s\n" % obj["head"], hexsz=HASH_HEXSZ[hash_name]).batches[0].commands
    )
    git(repo, "update-ref", "refs/heads/theirs", obj["head"])
    txn.commit()
    names = {r[0] for r in for_each_ref(repo)}
    assert {b"refs/heads/mine", b"refs/heads/theirs"} <= names
    git(repo, "refs", "verify")
    assert leftovers(repo) == []


def test_revision_values(base, tmp_path: Path) -> None:
    """Values are any revision git reads (a ref name, ``HEAD~1``, an abbreviated object name)."""
    fmt, _hash, src, blob = base
    obj = objects(src, blob)
    data = (
        b"create refs/heads/r1 HEAD~1\ncreate refs/heads/r2 main\ncreate refs/tags/r3 %s\nupdate refs/heads/p07 v0^{commit}\n"
        % obj["tag"][:10]
    )
    assert compare(fmt, src, tmp_path, data, "native", "revisions")
    assert not compare(fmt, src, tmp_path / "bad", b"create refs/heads/r4 no-such-rev\n", "native", None)


def test_ref_name_values_resolved_without_git(base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value that is a ref name by any of rev-parse's rules -- ``refs/remotes/<name>/HEAD`` too --
    is read from the snapshot, not asked of ``git rev-parse``; the result is git's."""
    fmt, _hash, src, blob = base
    up = copy_repo(src, tmp_path / "src")
    git(up, "symbolic-ref", "refs/remotes/up/HEAD", "refs/heads/main")
    git(up, "update-ref", "refs/remotes/down", objects(src, blob)["second"])
    asked = []
    monkeypatch.setattr(UpdateTransaction, "_rev_parse", lambda self, arg: asked.append(arg))
    data = b"create refs/heads/r1 up\ncreate refs/heads/r2 down\ncreate refs/heads/r3 remotes/up/HEAD\n"
    assert compare(fmt, up, tmp_path, data, "native", "remote names")
    assert asked == []
