"""Concurrency: refscope commits 100 transactions while git processes create, delete and pack refs (files) or
compact the stack (reftable). The final ref set is exactly what the accepted transactions and the successful
git commands imply; every refusal is clean (typed error, the ref untouched); nothing is left locked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.txn import Transaction

from tests.support.git import for_each_ref, git
from tests.support.txn import concurrent_git, identity_repo, leftovers, open_txn_store, until_deadline

N_TXNS = 100


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_transactions_with_concurrent_git(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = identity_repo(tmp_path, monkeypatch, fmt)
    oid = git(repo, "rev-parse", "HEAD").strip()
    lines = b"".join(b"create refs/heads/rs/%03d %s\n" % (i, oid) for i in range(N_TXNS))
    git(repo, "update-ref", "--stdin", input=lines)
    if fmt == "files":
        git(repo, "pack-refs", "--all")
        git(
            repo,
            "update-ref",
            "--stdin",
            input=b"".join(b"update refs/heads/rs/%03d %s\n" % (i, oid) for i in (3, 5)),
        )
    before = {r[0] for r in for_each_ref(repo)}

    accepted: set[bytes] = set()
    refused: set[bytes] = set()
    with concurrent_git(repo) as workers:
        store = open_txn_store(repo)
        for i in until_deadline(N_TXNS):
            name = b"refs/heads/rs/%03d" % i
            txn = Transaction(store, snapshot=store.snapshot())
            txn.delete(name, oid)
            try:
                result = txn.commit()
            except TransactionRefused as err:
                refused.add(name)
                assert err.what  # a message, never a traceback
                continue
            assert result.deleted == [name]
            accepted.add(name)
    print(
        fmt,
        "accepted",
        len(accepted),
        "refused",
        len(refused),
        [(w.kind, w.runs, w.failures) for w in workers],
    )
    assert len(accepted) + len(refused) >= 20
    assert sum(w.runs for w in workers) > 0

    final = {r[0] for r in for_each_ref(repo)}
    expected = (before - accepted) | {n for w in workers for n, e in w.exists.items() if e}
    assert final == expected
    for name in refused:  # a refused transaction left its ref as it was
        assert name in final
    git(repo, "refs", "verify")
    assert leftovers(repo) == []
