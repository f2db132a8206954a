"""Big create batches through the files engine, against ``git update-ref --stdin`` byte for byte: the whole
git dir (objects aside: refs, reflogs, directories, modes) after the same batch, or the same refusal with no
byte changed. What they pin: a create's read under its lock (one faccessat: anything at the path, a
dangling symlink included, goes to the full read), the reflog directory found missing once for the finish
(a tag with a reflog still gets its entry, ``core.logAllRefUpdates`` of every kind), and the empty
directories a refused batch made, tried once per directory on the way out.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction

from tests.support.faults import fingerprint
from tests.support.git import copy_repo, for_each_ref, git, init_repo, run_git
from tests.support.txn import leftovers, open_txn_store
from tests.support.update import use_git_identity

N = 300


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


def commit(repo: Path, data: bytes) -> None:
    store = open_txn_store(repo)
    txn = UpdateTransaction(store, allow_checked_out=True)
    parsed = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
    assert parsed.error is None
    txn.queue(parsed.batches[0].commands)
    txn.commit()


def source(path: Path) -> tuple[Path, bytes, bytes]:
    """A files repository with one commit; returns it, HEAD's commit and a blob."""
    init_repo(path)
    head = git(path, "rev-parse", "HEAD").strip()
    blob = git(path, "hash-object", "-w", "--stdin", input=b"creates\n").strip()
    return path, head, blob


def same_as_git(src: Path, data: bytes, tmp_path: Path) -> None:
    """The batch through refscope and through git on copies of ``src``: the same git dir after, or the
    same refusal (git's ``fatal:`` line) and no byte changed."""
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    before = fingerprint(ours / ".git")
    proc = run_git(theirs, "update-ref", "--stdin", input=data)
    if proc.returncode == 0:
        commit(ours, data)
        assert for_each_ref(ours) == for_each_ref(theirs)
        assert fingerprint(ours / ".git") == fingerprint(theirs / ".git")
        assert leftovers(ours) == []
        return
    want = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("fatal: ")][0]
    with pytest.raises(TransactionRefused) as err:
        commit(ours, data)
    assert err.value.what == want.removeprefix("fatal: ")
    assert fingerprint(ours / ".git") == before


def tags(blob: bytes, n: int = N, prefix: bytes = b"refs/tags/t-") -> bytes:
    return b"".join(b"create %s%d %s\n" % (prefix, i, blob) for i in range(n))


@pytest.mark.parametrize("mode", [None, "true", "false", "always"])
def test_reflogs_of_a_create_batch_as_git(mode: str | None, tmp_path: Path) -> None:
    """Tags without reflogs (logs/refs/tags missing, then present with one tag's reflog in it), branches that
    autocreate theirs, nested names: every reflog byte as git writes it, whatever core.logAllRefUpdates."""
    src, head, blob = source(tmp_path / "src")
    if mode is not None:
        git(src, "config", "core.logAllRefUpdates", mode)
    data = tags(blob) + tags(head, 5, b"refs/heads/b/") + tags(blob, 5, b"refs/tags/deep/er/t-")
    same_as_git(src, data, tmp_path / "bare-logs")
    # one tag with a reflog already (made with logAllRefUpdates=always, deleted): its entry is appended
    git(src, "-c", "core.logAllRefUpdates=always", "update-ref", "refs/tags/t-7", head)
    git(src, "update-ref", "--no-deref", "-d", "refs/tags/t-7")
    git(src, "-c", "core.logAllRefUpdates=always", "update-ref", "refs/tags/deep/er/t-2", head)
    os.unlink(src / ".git" / "refs" / "tags" / "deep" / "er" / "t-2")  # the ref gone, its reflog kept
    assert (src / ".git" / "logs" / "refs" / "tags" / "deep" / "er" / "t-2").is_file()
    same_as_git(src, data, tmp_path / "with-logs")


def test_a_reflog_directory_in_the_way_as_git(tmp_path: Path) -> None:
    """logs/refs/tags a file: the failed opens are not skipped (ENOTDIR is no missing directory)."""
    src, _head, blob = source(tmp_path / "src")
    (src / ".git" / "logs" / "refs").mkdir(parents=True, exist_ok=True)
    (src / ".git" / "logs" / "refs" / "tags").write_bytes(b"not a directory\n")
    ours, theirs = copy_repo(src, tmp_path / "ours"), copy_repo(src, tmp_path / "theirs")
    proc = run_git(theirs, "update-ref", "--stdin", input=tags(blob))
    before = fingerprint(ours / ".git")
    if proc.returncode == 0:
        commit(ours, tags(blob))
        assert fingerprint(ours / ".git") == fingerprint(theirs / ".git")
    else:
        with pytest.raises(TransactionRefused):
            commit(ours, tags(blob))
        assert fingerprint(ours / ".git") == before


@pytest.mark.parametrize("what", ["file", "symlink", "dangling", "empty-dir", "full-dir", "packed"])
def test_something_at_a_created_name_as_git(what: str, tmp_path: Path) -> None:
    """A create whose name is taken (a loose ref, a symlink to a ref, a dangling one, a directory, a packed
    ref) in the middle of a big batch: git's outcome, refusal words and all."""
    src, head, blob = source(tmp_path / "src")
    refs = src / ".git" / "refs" / "tags"
    at = refs / "t-150"
    if what == "file":
        at.write_bytes(head + b"\n")
    elif what == "symlink":
        git(src, "update-ref", "refs/tags/real", head)
        at.symlink_to("refs/tags/real")
    elif what == "dangling":
        at.symlink_to("refs/tags/nowhere")
    elif what == "empty-dir":
        (at / "sub").mkdir(parents=True)
    elif what == "full-dir":
        git(src, "update-ref", "refs/tags/t-150/x", head)
    else:
        git(src, "update-ref", "refs/tags/t-150", head)
        git(src, "pack-refs", "--all")
    same_as_git(src, tags(blob), tmp_path)


def test_refused_batch_removes_the_directories_it_made_as_git(tmp_path: Path) -> None:
    """Nested new directories shared by many locks, then a D/F conflict with a packed ref at the end: the
    refusal leaves no directory behind, as git's rollback."""
    src, head, blob = source(tmp_path / "src")
    git(src, "update-ref", "refs/tags/p/q", head)
    git(src, "pack-refs", "--all")
    data = tags(blob, 50, b"refs/tags/a/b/c/t-") + tags(blob, 50, b"refs/tags/a/b/t-")
    data += tags(blob, 50, b"refs/tags/a/d/t-") + tags(blob, 50, b"refs/tags/a/t-")
    data += tags(blob, 50, b"refs/tags/solo/t-")  # one directory, no deeper one to take it along
    data += b"create refs/tags/p/q/r %s\n" % blob  # refs/tags/p/q is packed: refused after every lock
    same_as_git(src, data, tmp_path)
    assert not (tmp_path / "ours" / ".git" / "refs" / "tags" / "a").exists()
    assert not (tmp_path / "ours" / ".git" / "refs" / "tags" / "solo").exists()
