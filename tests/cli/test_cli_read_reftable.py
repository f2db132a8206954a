"""``refscope list`` on reftable repositories equals ``git for-each-ref`` (column batches and row paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git import for_each_ref, git, init_repo
from tests.support.listing import ODD_NAMES, assert_same, list_json


@pytest.fixture(scope="module", params=["sha1", "sha256"])
def rt_repo(request, tmp_path_factory) -> Path:
    repo = init_repo(
        tmp_path_factory.mktemp(f"rt-{request.param}") / "r", fmt="reftable", hash_name=request.param
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    lines = [b"create refs/heads/topic/%04d %s" % (i, head) for i in range(500)]
    lines += [b"create " + n + b" " + head for n in ODD_NAMES]
    git(repo, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    git(repo, "tag", "-a", "-m", "a", "v1")
    git(repo, "tag", "-a", "-m", "nested", "v1-nested", "v1")
    git(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/topic/0007")
    git(repo, "symbolic-ref", "refs/heads/dangling", "refs/heads/missing")
    git(repo, "symbolic-ref", "refs/heads/sym-chain", "refs/heads/sym")
    git(repo, "pack-refs")
    git(repo, "update-ref", "-d", "refs/heads/topic/0003")  # a tombstone over the compacted table
    git(repo, "update-ref", "refs/heads/topic/0004", head)
    return repo


@pytest.mark.parametrize(
    "patterns",
    [
        (),
        ("refs/heads/topic",),
        ("refs/tags",),
        ("refs/heads/topic/00*",),
        ("refs/heads/sym", "refs/tags/v1"),
    ],
)
def test_reftable_list_equals_for_each_ref(rt_repo: Path, patterns) -> None:
    assert_same(list_json(rt_repo, *patterns), for_each_ref(rt_repo, *patterns))


def test_reftable_single_compacted_table(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r", fmt="reftable")
    head = git(repo, "rev-parse", "HEAD").strip()
    lines = [b"create refs/heads/b/%05d %s" % (i, head) for i in range(600)]
    git(repo, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    git(repo, "tag", "-a", "-m", "a", "v1")
    git(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/b/00007")
    git(repo, "pack-refs")
    assert len((repo / ".git/reftable/tables.list").read_text().split()) == 1
    for patterns in ((), ("refs/heads/b",), ("refs/heads/b/0001",)):
        assert_same(list_json(repo, *patterns), for_each_ref(repo, *patterns))
