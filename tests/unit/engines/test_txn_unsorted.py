"""A packed-refs without the ``sorted`` trait (as older gits wrote): the native splice writes git's bytes, the
surviving records in name order under the current header, peeled lines kept with their records."""

from __future__ import annotations

import shutil
from pathlib import Path

from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.txn import Transaction

from tests.support.git import git, init_repo


def test_unsorted_packed_refs_rewrite_matches_git(tmp_path: Path) -> None:
    ours = init_repo(tmp_path / "ours")
    head = git(ours, "rev-parse", "HEAD").strip()
    git(ours, "tag", "-a", "-m", "t", "v1")
    tag = git(ours, "rev-parse", "v1").strip()
    (ours / ".git" / "refs" / "tags" / "v1").unlink()
    (ours / ".git" / "refs" / "heads" / "main").unlink()
    records = [
        b"# pack-refs with: peeled \n",
        head + b" refs/heads/zeta\n",
        tag + b" refs/tags/v1\n",
        b"^" + head + b"\n",
        head + b" refs/heads/main\n",
        head + b" refs/heads/mid\n",
        head + b" refs/heads/alpha\n",
    ]
    (ours / ".git" / "packed-refs").write_bytes(b"".join(records))
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs, symlinks=True)

    txn = Transaction(open_store(discover(str(ours))), "native")
    txn.delete(b"refs/heads/mid")
    assert txn.commit().deleted == [b"refs/heads/mid"]
    git(theirs, "update-ref", "-d", "refs/heads/mid")

    assert (ours / ".git" / "packed-refs").read_bytes() == (theirs / ".git" / "packed-refs").read_bytes()
    assert (ours / ".git" / "packed-refs").read_bytes() == b"".join(
        [
            b"# pack-refs with: peeled fully-peeled sorted \n",
            head + b" refs/heads/alpha\n",
            head + b" refs/heads/main\n",
            head + b" refs/heads/zeta\n",
            tag + b" refs/tags/v1\n",
            b"^" + head + b"\n",
        ]
    )
