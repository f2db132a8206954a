"""1,000 creates, 1,000 updates, and renames beside 1,000 creates, in one update transaction under
``ulimit -n 32`` (git's t1400 does 33): every lock's descriptor is closed as soon as it is written, so the
commit goes through, and its result is git's own (``git update-ref --stdin`` on a copy, no limit).
Both formats; the files repository half packed, half loose."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.update import (
    copy_repo,
    create_refs,
    for_each_ref,
    git,
    git_binary,
    git_env,
    init_repo,
    leftovers,
)

N = 1000
RENAME = r"""
import os, sys
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.update.commands import Rename, parse
from refscope.backend.update.txn import UpdateTransaction
txn = UpdateTransaction(open_store(discover(sys.argv[1], dict(os.environ))))
hexsz = len(txn.resolver()(b"HEAD"))
txn.queue(parse(sys.stdin.buffer.read(), hexsz=hexsz).batches[0].commands)
txn.queue([Rename(b"refs/heads/many/%04d" % i, b"refs/heads/moved/%04d" % i, None) for i in range(0, 40, 2)])
txn.commit()
"""


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))


def _base(tmp_path: Path, fmt: str) -> tuple[Path, bytes, bytes]:
    repo = init_repo(tmp_path / "base", fmt=fmt)
    names = [b"refs/heads/many/%04d" % i for i in range(N)]
    old = create_refs(repo, names)
    if fmt == "files":
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "--stdin", input=b"".join(b"update %s %s\n" % (n, old) for n in names[::2]))
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    return repo, old, git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("fmt", ["files", "reftable"])
@pytest.mark.parametrize("batch", ["creates", "updates"])
def test_thousand_updates_with_32_fds(tmp_path: Path, fmt: str, batch: str) -> None:
    base, old, new = _base(tmp_path, fmt)
    if batch == "creates":
        data = b"".join(b"create refs/heads/new/%04d %s\n" % (i, new) for i in range(N))
    else:
        data = b"".join(b"update refs/heads/many/%04d %s %s\n" % (i, new, old) for i in range(N))
    ours, theirs = copy_repo(base, tmp_path / "ours"), copy_repo(base, tmp_path / "theirs")
    proc = subprocess.run(
        [sys.executable, "-m", "refscope.app", "update", "-C", str(ours)],
        input=data,
        capture_output=True,
        env=git_env(),
        preexec_fn=_limit,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    git(theirs, "update-ref", "--stdin", input=data)
    assert for_each_ref(ours) == for_each_ref(theirs)
    git(ours, "refs", "verify")
    assert leftovers(ours) == []


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_renames_beside_thousand_creates_with_32_fds(tmp_path: Path, fmt: str) -> None:
    base, _old, new = _base(tmp_path, fmt)
    data = b"".join(b"create refs/heads/new/%04d %s\n" % (i, new) for i in range(N))
    ours = copy_repo(base, tmp_path / "ours")
    proc = subprocess.run(
        [sys.executable, "-c", RENAME, str(ours)],
        input=data,
        capture_output=True,
        env=git_env(),
        preexec_fn=_limit,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    theirs = copy_repo(base, tmp_path / "theirs")
    git(theirs, "update-ref", "--stdin", input=data)
    for i in range(0, 40, 2):
        subprocess.run(
            [git_binary(), "-C", str(theirs), "branch", "-m", f"many/{i:04d}", f"moved/{i:04d}"],
            check=True,
            env=git_env(),
            capture_output=True,
        )
    assert for_each_ref(ours) == for_each_ref(theirs)
    git(ours, "refs", "verify")
    assert leftovers(ours) == []
    if fmt == "files":  # the reflogs moved with the refs
        logs = ours / ".git" / "logs" / "refs" / "heads"
        assert sorted(os.listdir(logs / "moved")) == [f"{i:04d}" for i in range(0, 40, 2)]
