"""Renames racing git: refscope renames refs (with their old values, beside a create) while git
processes create, delete and pack refs (files) or compact the stack (reftable). Every accepted rename is
wholly there (the old name gone, the new one at the value, its reflog moved), every refused one wholly
absent; git's own refs are what its successful commands imply; nothing is left locked."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.update.commands import Command, Rename
from refscope.backend.update.txn import UpdateTransaction

from tests.support.txn import identity_repo, until_deadline
from tests.support.update import concurrent_git, create_refs, for_each_ref, git, leftovers, open_txn_store

N_TXNS = 40


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_renames_with_concurrent_git(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = identity_repo(tmp_path, monkeypatch, fmt)
    first = git(repo, "rev-parse", "HEAD").strip()
    create_refs(repo, (b"refs/heads/rs/%03d" % i for i in range(N_TXNS)), first)
    if fmt == "files":
        git(repo, "pack-refs", "--all")
    zero = b"0" * len(first)
    accepted: list[int] = []
    refused: list[int] = []
    with concurrent_git(repo) as workers:
        store = open_txn_store(repo)
        for i in until_deadline(N_TXNS):
            txn = UpdateTransaction(store, snapshot=store.snapshot())
            try:
                txn.queue(
                    [
                        Rename(b"refs/heads/rs/%03d" % i, b"refs/heads/mv/%03d/x" % i, first),
                        Command("create", b"refs/heads/new/%03d" % i, first, zero, None, None, False),
                    ]
                )
                txn.commit()
            except TransactionRefused as err:
                assert err.what
                refused.append(i)
                continue
            accepted.append(i)
    assert len(accepted) + len(refused) >= 10 and accepted
    final = {r[0]: r[1] for r in for_each_ref(repo)}
    for i in accepted:
        assert b"refs/heads/rs/%03d" % i not in final
        assert final[b"refs/heads/mv/%03d/x" % i] == first
        assert final[b"refs/heads/new/%03d" % i] == first
        log = git(repo, "reflog", "show", "--format=%gs", f"refs/heads/mv/{i:03d}/x")
        assert log.splitlines()[0] == b"Branch: renamed refs/heads/rs/%03d to refs/heads/mv/%03d/x" % (i, i)
        assert len(log.splitlines()) >= 2  # the entry of its creation came with it
    for i in refused:
        assert final[b"refs/heads/rs/%03d" % i] == first
        assert b"refs/heads/mv/%03d/x" % i not in final and b"refs/heads/new/%03d" % i not in final
    theirs = {n for w in workers for n, e in w.exists.items() if e}
    assert {n for n in final if n.startswith(b"refs/heads/git/")} == theirs
    git(repo, "refs", "verify")
    assert leftovers(repo) == []
