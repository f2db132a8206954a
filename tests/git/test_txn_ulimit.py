"""1,000 deletions in one transaction under ``ulimit -n 32`` (git's t1400 does 33): lock fds are closed at once.

The commit runs in a child whose RLIMIT_NOFILE is 32 (set before exec); both engines of both formats.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.git import create_refs, for_each_ref, git, git_env, init_repo
from tests.support.txn import leftovers

N = 1000
CHILD = r"""
import sys
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.txn import Transaction
store = open_store(discover(sys.argv[1]))
txn = Transaction(store, sys.argv[2])
for line in sys.stdin.buffer.read().split(b"\n"):
    if line:
        name, old = line.split(b" ")
        txn.delete(name, old)
res = txn.commit()
print(len(res.deleted))
"""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_thousand_deletions_with_32_fds(fmt: str, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", fmt=fmt)
    names = [b"refs/heads/many/%04d" % i for i in range(N)]
    oid = create_refs(repo, names)
    if fmt == "files":  # half packed, half loose (and loose over packed for some)
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "--stdin", input=b"".join(b"update %s %s\n" % (n, oid) for n in names[::2]))
    stdin = b"".join(b"%s %s\n" % (n, oid) for n in names)
    env = git_env()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo), "native"],
        input=stdin,
        capture_output=True,
        env=env,
        preexec_fn=_limit,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout.strip() == str(N).encode()
    assert [r[0] for r in for_each_ref(repo)] == [b"refs/heads/main"]
    git(repo, "refs", "verify")
    assert leftovers(repo) == []
