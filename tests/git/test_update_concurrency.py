"""Concurrency of general transactions: refscope commits updates (with old values) and creates while git
processes create, delete and pack refs (files) or compact the stack (reftable). Every accepted transaction
is wholly there, every refused one wholly absent; git's own refs are exactly what its successful commands
imply; nothing is left locked."""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction

from tests.support.txn import identity_repo, until_deadline
from tests.support.update import (
    concurrent_git,
    create_refs,
    for_each_ref,
    git,
    leftovers,
    open_txn_store,
)

N_TXNS = 60


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_updates_with_concurrent_git(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = identity_repo(tmp_path, monkeypatch, fmt)
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "file").write_text("two\n")
    git(repo, "commit", "-q", "-am", "two")
    second = git(repo, "rev-parse", "HEAD").strip()
    create_refs(repo, (b"refs/heads/rs/%03d" % i for i in range(N_TXNS)), first)
    if fmt == "files":
        git(repo, "pack-refs", "--all")
    accepted: list[int] = []
    refused: list[int] = []
    with concurrent_git(repo) as workers:
        store = open_txn_store(repo)
        for i in until_deadline(N_TXNS):
            data = b"update refs/heads/rs/%03d %s %s\ncreate refs/heads/new/%03d %s\n" % (
                i,
                second,
                first,
                i,
                second,
            )
            txn = UpdateTransaction(store, snapshot=store.snapshot())
            parsed = parse(data, resolve=txn.resolver())
            try:
                txn.queue(parsed.batches[0].commands)
                txn.commit()
            except TransactionRefused as err:
                assert err.what
                refused.append(i)
                continue
            accepted.append(i)
    assert len(accepted) + len(refused) >= 10
    final = {r[0]: r[1] for r in for_each_ref(repo)}
    for i in accepted:
        assert final[b"refs/heads/rs/%03d" % i] == second
        assert final[b"refs/heads/new/%03d" % i] == second
    for i in refused:
        assert final[b"refs/heads/rs/%03d" % i] == first
        assert b"refs/heads/new/%03d" % i not in final
    theirs = {n for w in workers for n, e in w.exists.items() if e}
    assert {n for n in final if n.startswith(b"refs/heads/git/")} == theirs
    git(repo, "refs", "verify")
    assert leftovers(repo) == []
