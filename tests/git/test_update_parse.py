"""The ``update-ref --stdin`` parser against git's own wording, and its fast path against the faithful one."""

from __future__ import annotations

import random
import subprocess

import pytest
from refscope.backend.errors import UpdateInputError
from refscope.backend.update.commands import parse

from tests.support.update import git_binary, git_env, init_repo

H = "9" * 40


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return init_repo(tmp_path_factory.mktemp("parse") / "r")


@pytest.mark.parametrize(
    ("data", "nul"),
    [
        (b"bogus refs/heads/x\n", False),
        (b"\n", False),
        (b" create refs/heads/x " + H.encode() + b"\n", False),
        (b"create refs/heads/x\n", False),
        (b"create refs/heads/x 0000000000000000000000000000000000000000\n", False),
        (b"create refs/heads/x nothex\n", False),
        (b"create refs/heads/x " + H.encode() + b" extra\n", False),
        (b"create refs/heads/x " + H.encode(), False),
        (b"update refs/heads/a..b " + H.encode() + b"\n", False),
        (b"update\n", False),
        (b'update "refs/heads/x ' + H.encode() + b"\n", False),
        (b'update "refs/heads/x"y ' + H.encode() + b"\n", False),
        (b"delete refs/heads/x 0000000000000000000000000000000000000000\n", False),
        (b"symref-delete refs/heads/x\n", False),
        (b"symref-verify refs/heads/x\n", False),
        (b"symref-update refs/heads/x\n", False),
        (b"symref-update refs/heads/x refs/heads/y bogus v\n", False),
        (b"symref-update refs/heads/x refs/heads/y oid\n", False),
        (b"option bogus\n", False),
        (b"start\nstart\n", False),
        (b"start\nprepare\ncreate refs/heads/x " + H.encode() + b"\n", False),
        (b"commit\ncreate refs/heads/x " + H.encode() + b"\n", False),
        (b"start extra\n", False),
        (b"create refs/heads/x\0", True),
        (b"create refs/heads/x\0\0", True),
        (b"update refs/heads/x\0" + H.encode() + b"\0bad\0", True),
        (b"delete refs/heads/x\0" + H.encode() + b"junk\0", True),
    ],
)
def test_refusals_are_gits(repo, data: bytes, nul: bool) -> None:
    argv = [git_binary(), "update-ref", "--stdin"] + (["-z"] if nul else [])
    proc = subprocess.run(argv, cwd=repo, input=data, capture_output=True, env=git_env())
    assert proc.returncode != 0
    want = next(ln for ln in proc.stderr.decode().splitlines() if ln.startswith("fatal: "))[7:]
    got = parse(data, nul=nul, hexsz=40)
    if got.error is None:
        pytest.fail(f"parsed what git refuses: {want}")
    if want.startswith("trying to write ref"):
        return  # an object check: the transaction's, not the parser's
    assert got.error.what == want


def test_quoting_and_forms() -> None:
    got = parse(b'update "refs/heads/a\\040b" ' + H.encode() + b"\n", fast=False)
    assert got.error is not None  # a space is no valid ref name: git's words
    assert got.error.what == "invalid ref format: refs/heads/a b"
    got = parse(b'create "refs/heads/q" ' + H.encode() + b"\n")
    assert got.error is None and got.batches[0].commands[0].name == b"refs/heads/q"
    got = parse(b"update refs/heads/x\0\0\0", nul=True)
    assert got.warnings == ["update refs/heads/x: missing <new-oid>, treating as zero"]
    assert got.batches[0].commands[0].new == b"0" * 40


def test_fast_path_reads_as_the_faithful_parser() -> None:
    rng = random.Random(17)
    for _ in range(200):
        lines = []
        for _ in range(rng.randint(1, 12)):
            name = b"refs/%s/%s" % (rng.choice([b"heads", b"tags", b"x/y"]), str(rng.randint(0, 50)).encode())
            oid = rng.choice([H, H.upper(), "a" * 40, "0" * 40, "abc"]).encode()
            verb = rng.choice([b"create", b"update", b"delete", b"verify"])
            extra = [oid] if verb in (b"create", b"update") else []
            if rng.random() < 0.5 and verb != b"create":
                extra.append(rng.choice([H.encode(), b"0" * 40]))
            lines.append(b" ".join([verb, name, *extra]))
        data = b"\n".join(lines) + b"\n"
        a, b = parse(data), parse(data, fast=False)
        assert (a.error is None) == (b.error is None)
        if a.error is None:
            assert a.batches == b.batches
        else:
            assert a.error.what == b.error.what
    assert isinstance(parse(b"create refs/heads/x 00\n").error, UpdateInputError)


def test_create_only_input_reads_as_the_faithful_parser() -> None:
    """Input of creates only (the fast parser reads it by columns): the same commands or the same error,
    with a bad line anywhere -- a zero, a short or upper-case value, a word too many or too few, a bad name."""
    rng = random.Random(1717)
    bad = [b"create refs/tags/z " + b"0" * 40, b"create refs/tags/z abc", b"create refs/tags/z " + H.upper().encode(),
           b"create refs/tags/z %s x" % H.encode(), b"create refs/tags/z", b"create refs/tags/a..b " + H.encode(),
           b"create create " + H.encode(), b"create refs/tags/create create", b"create refs/tags/y  " + H.encode(),
           b"update refs/tags/z " + H.encode(), b"create HEAD " + H.encode()]  # fmt: skip
    for _ in range(100):
        lines = [
            b"create refs/tags/t-%d %s" % (i, rng.choice([H, "a" * 40]).encode())
            for i in range(rng.randint(1, 30))
        ]
        if rng.random() < 0.7:
            lines.insert(rng.randint(0, len(lines)), rng.choice(bad))
        data = b"\n".join(lines) + b"\n"
        a, b = parse(data), parse(data, fast=False)
        assert (a.error is None) == (b.error is None)
        if a.error is None:
            assert a.batches == b.batches
        else:
            assert a.error.what == b.error.what
