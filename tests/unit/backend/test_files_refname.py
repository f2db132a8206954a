"""check_refname and is_safe_refname against git (``git check-ref-format --allow-onelevel``)."""

from __future__ import annotations

import random
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st
from refscope.backend.refname import all_valid_and_safe, check_refname, is_safe_refname, is_valid_refname

from tests.support.git import git_binary, git_env

CURATED = [
    b"refs/heads/main", b"HEAD", b"@", b"a@b", b"a@{b", b"refs/heads/a..b", b"refs/heads/.a", b"refs/heads/a.",
    b"refs/heads/a.lock", b"refs/heads/a.lock/b", b"refs/heads/a/", b"/refs/heads/a", b"refs//heads", b"a",
    b"refs/heads/a b", b"refs/heads/a\tb", b"refs/heads/a~1", b"refs/heads/a^", b"refs/heads/a:b",
    b"refs/heads/a?", b"refs/heads/a[", b"refs/heads/a\\b", b"refs/heads/a*", b"refs/heads/\x7f",
    b"refs/heads/\xc2\x85", "refs/heads/\u202e".encode(), b"refs/heads/\xff", b"refs/heads/a.b.c",
    b"refs/heads/..", b"refs/heads/.", b"refs/heads/a/.b", b"refs/tags/v1.0", b'refs/heads/"q"',
    b"refs/heads/@", b"refs/heads/a@", b"refs/heads/{a}", b"refs/heads/a.lockx",
]  # fmt: skip


_ALPHABET = [
    b"a",
    b".",
    b"/",
    b"@",
    b"{",
    b"lock",
    b".lock",
    b"*",
    b" ",
    b"\x01",
    b"\xc3\xa9",
    b"~",
    b"..",
    b"z",
]


def _names() -> list[bytes]:
    alphabet = _ALPHABET
    rnd = random.Random(11)
    out = set(CURATED)
    while len(out) < 160:
        out.add(b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))))
    return sorted(n for n in out if not n.startswith(b"-"))


def test_check_refname_agrees_with_git() -> None:
    env = git_env()
    for name in _names():
        proc = subprocess.run(
            [git_binary(), "check-ref-format", "--allow-onelevel", name], env=env, capture_output=True
        )
        ours = check_refname(name)
        assert (proc.returncode == 0) == (ours is None), (name, ours)
        assert is_valid_refname(name) == (ours is None)
    assert check_refname(b"refs/heads/a\0b") is not None


def test_refname_is_safe() -> None:
    assert is_safe_refname(b"refs/heads/x") and is_safe_refname(b"HEAD") and is_safe_refname(b"FETCH_HEAD")
    for bad in (
        b"refs/",
        b"refs//x",
        b"refs/x/",
        b"refs/../x",
        b"refs/a/./b",
        b"head",
        b"",
        b"refs/a\0b",
        b"../x",
    ):
        assert not is_safe_refname(bad), bad
    assert is_safe_refname(b"refs/heads/a..b")  # invalid but safe: git hides it rather than dying


@given(st.binary(max_size=24) | st.lists(st.sampled_from(_ALPHABET), max_size=8).map(b"".join))
@settings(max_examples=500, deadline=None)
def test_fast_check_and_reasons_agree(name: bytes) -> None:
    reason = check_refname(name)
    assert is_valid_refname(name) == (reason is None)
    assert reason != "is not a valid ref name", name  # every rejection names the rule that failed


_NAME = st.binary(max_size=24) | st.lists(
    st.sampled_from([*_ALPHABET, b"refs/", b"HEAD", b"\n"]), max_size=8
).map(b"".join)


@given(st.lists(_NAME, max_size=6))
@settings(max_examples=1000, deadline=None)
def test_batch_check_never_passes_a_bad_name(names: list[bytes]) -> None:
    """The batch check may only say yes when every name passes on its own (a no sends the batch one by
    one); and for plain names under refs/ it must say yes, or it would buy nothing."""
    one_by_one = all(check_refname(n) is None and is_safe_refname(n) for n in names)
    if all_valid_and_safe(names):
        assert one_by_one, names
    plain = [b"refs/heads/" + n for n in names if n and n.isalnum() and n.isascii()]
    assert all_valid_and_safe(plain)


def test_batch_check_on_curated_names() -> None:
    good = [b"refs/heads/main", b"HEAD", b"refs/tags/v1.0", b"refs/heads/a.b.c", b"refs/heads/{a}"]
    assert all_valid_and_safe(good)
    for bad in CURATED:
        if check_refname(bad) is not None or not is_safe_refname(bad):
            for at in (0, 2, len(good)):
                assert not all_valid_and_safe([*good[:at], bad, *good[at:]]), (bad, at)
