"""Big create-only reftable batches, planned by columns (``ReftableUpdate.build_creates``): no Upd per
command, the checks as set operations over the names. Checked against ``git update-ref --stdin``: the same
table bytes, refs and reflogs (branches autocreate theirs, tags do not, a tag with a reflog gets an entry,
an annotated tag is peeled, ``update`` without an old value creates as ``create`` does, upper-case hex);
and every batch the column plan cannot take (a duplicate, an existing name, HEAD's branch, D/F conflicts
within the batch or with the stack) refused in git's words, not one byte changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.update.commands import parse
from refscope.backend.update.reftable import ReftableUpdate
from refscope.backend.update.txn import UpdateTransaction

from tests.support.git import git_noauto, run_git
from tests.support.update import (
    copy_repo,
    fingerprint,
    for_each_ref,
    git,
    init_repo,
    leftovers,
    open_txn_store,
    reflogs,
    reftable_files,
    use_git_identity,
)

N = 400  # over the column plan's threshold


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def commit(repo: Path, data: bytes, *, columns: bool = True):
    store = open_txn_store(repo)
    txn = UpdateTransaction(store, allow_checked_out=True, snapshot=store.snapshot())
    parsed = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
    assert parsed.error is None
    txn.queue(parsed.batches[0].commands)
    return txn.commit()


def stack(path: Path, hash_name: str = "sha1") -> tuple[Path, bytes, bytes, bytes]:
    """A small reftable stack: a branch, an annotated tag, a tag with a reflog (core.logAllRefUpdates
    always, then back), a deleted ref; returns the repository, HEAD's commit, a blob and the tag."""
    init_repo(path, fmt="reftable", hash_name=hash_name)
    head = git(path, "rev-parse", "HEAD").strip()
    git_noauto(path, "update-ref", "refs/heads/keep", head)
    git_noauto(path, "tag", "-a", "-m", "t", "v1")
    git_noauto(path, "-c", "core.logAllRefUpdates=always", "update-ref", "refs/tags/logged", head)
    git_noauto(path, "update-ref", "-d", "refs/tags/logged")  # its reflog goes with it (a log deletion)
    git_noauto(path, "update-ref", "refs/heads/gone", head)
    git_noauto(path, "update-ref", "-d", "refs/heads/gone")
    blob = git(path, "hash-object", "-w", "--stdin", input=b"columns\n").strip()
    tag = git(path, "rev-parse", "refs/tags/v1").strip()
    return path, head, blob, tag


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
def test_create_only_batch_as_git(hash_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, head, blob, tag = stack(tmp_path / "src", hash_name)
    lines = [b"create refs/heads/b/%04d %s" % (i, head) for i in range(N)]  # reflogs autocreated
    lines += [b"create refs/tags/t-%d %s" % (i, blob) for i in range(N)]  # none
    lines += [b"create refs/tags/ann-%d %s" % (i, tag) for i in range(3)]  # peeled
    lines += [b"update refs/notes/n%d %s" % (i, head.upper()) for i in range(3)]  # no old value: a create
    lines += [b"create refs/heads/gone %s" % head, b"update refs/tags/zz %s %s" % (blob, b"0" * len(blob))]
    data = b"\n".join(lines) + b"\n"
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    store = open_txn_store(ours)
    cmds = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name]).batches[0].commands
    assert ReftableUpdate(store, cmds, {}).columns is not None  # the column plan takes this batch

    def general(*_args) -> None:
        raise AssertionError("the general plan ran")

    with monkeypatch.context() as m:
        m.setattr(ReftableUpdate, "take", general)  # ... and plans it whole
        res = commit(ours, data)
    git(theirs, "update-ref", "--stdin", input=data)
    assert reftable_files(ours) == reftable_files(theirs)
    assert for_each_ref(ours) == for_each_ref(theirs)
    assert reflogs(ours, "reftable", tmp_path / "m1") == reflogs(theirs, "reftable", tmp_path / "m2")
    git(ours, "refs", "verify")
    assert leftovers(ours) == []
    rows = res.updates
    assert len(rows) == len(lines)
    assert rows[0] == (b"refs/heads/b/0000", None, head)
    assert (b"refs/notes/n0", None, head) in rows  # stored lower-case


@pytest.mark.parametrize(
    "extra",
    [
        b"create refs/tags/t-7 %(blob)s",  # a duplicate
        b"update refs/tags/t-8 %(blob)s",  # a duplicate, no old value
        b"create refs/heads/keep %(head)s",  # exists
        b"update refs/heads/keep %(blob)s",  # exists, no old value: a non-commit on a branch first
        b"update refs/tags/v1 %(head)s",  # exists: an update, through the column plan's refusal
        b"create refs/heads/main %(head)s",  # exists, and HEAD points at it
        b"create refs/tags/t-3/x %(blob)s",  # D/F within the batch
        b"create refs/tags %(blob)s",  # D/F within the batch, the other way
        b"create refs/heads/keep/x %(head)s",  # D/F with the stack
        b"create refs/heads %(head)s",  # D/F with the stack, the other way
        b"create refs/heads/gone/x %(head)s",  # a deleted ref: no conflict (git agrees: exit 0)
    ],
)
def test_batches_the_columns_refuse_as_git(extra: bytes, tmp_path: Path) -> None:
    src, head, blob, _tag = stack(tmp_path / "src")
    data = b"".join(b"create refs/tags/t-%d %s\n" % (i, blob) for i in range(N))
    data += extra % {b"blob": blob, b"head": head} + b"\n"
    theirs = copy_repo(src, tmp_path / "theirs")
    proc = run_git(theirs, "update-ref", "--stdin", input=data)
    before = fingerprint(src / ".git")
    if proc.returncode == 0:
        commit(src, data)
        assert for_each_ref(src) == for_each_ref(theirs)
        assert reftable_files(src) == reftable_files(theirs)
        return
    want = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("fatal: ")][0].removeprefix(
        "fatal: "
    )
    with pytest.raises(TransactionRefused) as err:
        commit(src, data)
    assert err.value.what == want
    assert fingerprint(src / ".git") == before


def test_head_branch_unborn_gets_heads_entry(tmp_path: Path) -> None:
    """Creating HEAD's unborn branch in a big batch: HEAD's own reflog entry, as git writes it."""
    src = tmp_path / "src"
    git(tmp_path, "init", "-q", "--ref-format=reftable", str(src))
    blob = git(src, "hash-object", "-w", "--stdin", input=b"x\n").strip()
    git(src, "update-ref", "refs/tags/seed", blob)
    commit_oid = git(src, "commit-tree", "-m", "c", git(src, "mktree", input=b"").strip()).strip()
    branch = git(src, "symbolic-ref", "HEAD").strip()
    data = b"".join(b"create refs/tags/t-%d %s\n" % (i, blob) for i in range(N))
    data += b"create %s %s\n" % (branch, commit_oid)
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    commit(ours, data)
    git(theirs, "update-ref", "--stdin", input=data)
    assert reftable_files(ours) == reftable_files(theirs)
    assert reflogs(ours, "reftable", tmp_path / "m1") == reflogs(theirs, "reftable", tmp_path / "m2")
