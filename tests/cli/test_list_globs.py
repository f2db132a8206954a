"""``refscope list`` with glob patterns against ``git for-each-ref``: the listing's fast paths (runs of
packed records, reftable batches) tested a column of names at a time against the patterns, in both ref
formats, plain, ``--json`` and through ``--format``; with annotated tags (peeled values), a symref, loose
refs between packed ones, names that send a run down the per-record path, and globs mixed with plain
prefixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import refscope
from tests.support.git import for_each_ref, git, init_repo
from tests.support.listing import ODD_NAMES, assert_same, list_json

PATTERNS = [
    ("refs/pull/*/head",),
    ("refs/pull/1*/head",),
    ("refs/pull/**",),
    ("refs/**/head",),
    ("refs/tags/v[12]*",),
    ("refs/heads/*",),
    ("refs/pull/2*/merge", "refs/heads/"),  # a glob and a path prefix
    ("refs/heads/odd*", "refs/tags/v1*", "refs/pull/7/*"),
    ("refs/pull/*",),  # git selects none: * stops at /
]


@pytest.fixture(scope="module", params=["files", "reftable"])
def repo(request, tmp_path_factory) -> Path:
    path = init_repo(tmp_path_factory.mktemp(request.param) / "r", fmt=request.param)
    head = git(path, "rev-parse", "HEAD").strip()
    lines = [
        b"create refs/pull/%d/%s %s" % (i, kind, head) for i in range(3000) for kind in (b"head", b"merge")
    ]
    lines += [b"create refs/heads/odd-%s %s" % (n.rsplit(b"/", 1)[-1][:40], head) for n in ODD_NAMES[:-1]]
    git(path, "update-ref", "--stdin", input=b"\n".join(lines) + b"\n")
    for i in range(40):
        git(path, "tag", "-a", "-m", "annotated", f"v{i}", head.decode())
    git(path, "symbolic-ref", "refs/heads/sym", "refs/heads/main")
    if request.param == "files":
        git(path, "pack-refs", "--all")
        for i in (5, 1500, 2999):  # loose refs among the packed ones
            git(path, "update-ref", f"refs/pull/{i}/head", "HEAD~0")
            git(path, "update-ref", f"refs/pull/{i}x/head", head.decode())
    return path


@pytest.mark.parametrize("patterns", PATTERNS, ids=" ".join)
def test_globs_list_what_git_lists(repo: Path, patterns) -> None:
    want = git(repo, "for-each-ref", "--format=%(objectname) %(refname)", *patterns)
    assert (refscope("list", "-C", str(repo), *patterns, check=True).stdout) == want
    assert_same(list_json(repo, *patterns), for_each_ref(repo, *patterns))
    names = git(repo, "for-each-ref", "--format=x%(refname)y", *patterns)
    assert refscope("list", "-C", str(repo), "--format=x%(refname)y", *patterns, check=True).stdout == names
    if patterns != ("refs/pull/*",):
        assert want.count(b"\n") > 0  # each case but the last selects something
