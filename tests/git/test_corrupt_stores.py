"""Every corruption of tests/support/corruptions.py, against verify, list and delete.

For each case: ``refscope verify`` exits 1 and names the damaged file; ``refscope list`` either reports
one line ``refscope: <file>: ...`` with exit 1 (and never a traceback), or (where git just hides a broken
name) prints exactly what ``git for-each-ref`` prints; ``refscope delete`` refuses; and no byte of the
repository changes. Commands run in-process (the same ``cli.main`` the console script calls) to stay fast.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from refscope.app.cli import main

from tests.support import corruptions
from tests.support.git import git_binary, git_env, tree_bytes

CASES = corruptions.all_cases()
HAVE_DELETE = importlib.util.find_spec("refscope.app.cmd_delete") is not None
HAVE_LIST = importlib.util.find_spec("refscope.app.cmd_list") is not None


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corrupt-bases")
    return {kind: corruptions.build_base(root / kind, kind) for kind in corruptions.BASES}


# What a terminal would obey: C0 controls (but LF), DEL, C1 controls, bidi embeddings/overrides/isolates.
OBEYED = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(capfd: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    capfd.readouterr()
    rc = main(list(argv))
    out, err = capfd.readouterr()
    # Whatever the damage, refscope never lets the file's bytes drive the terminal.
    assert OBEYED.search(out) is None, out
    assert OBEYED.search(err) is None, err
    return rc, out, err


def git_names(repo: Path) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [git_binary(), "for-each-ref", "--format=%(refname)"],
        cwd=repo,
        capture_output=True,
        env=git_env(),
    )
    return proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").splitlines()


def check_json(capfd, repo: Path, name: str) -> None:
    rc, out, _ = run(capfd, "verify", "-C", str(repo), "--json")
    assert rc == 1
    objs = [json.loads(line) for line in out.splitlines()]
    assert any(o["severity"] == "error" and os.path.basename(o["file"]) == name for o in objs)
    assert all(set(o) == {"file", "offset", "severity", "message"} for o in objs)


def without_record(data: bytes, name: bytes) -> bytes:
    """``data`` (packed-refs) minus the record of ``name`` and its peeled line: a faithful splice."""
    lines = data.split(b"\n")
    i = next((i for i, ln in enumerate(lines) if ln.endswith(b" " + name)), None)
    if i is None:
        return data  # not a packed ref there (e.g. its line ends in CR): deleting it changes nothing
    j = i + 2 if i + 1 < len(lines) and lines[i + 1].startswith(b"^") else i + 1
    return b"\n".join(lines[:i] + lines[j:])


def damaged_copy(case: corruptions.Corruption, bases: dict[str, Path], tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    shutil.copytree(bases[case.base], repo, symlinks=True)
    damaged = case.apply(repo, bases)
    return repo, damaged


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corruption(case, bases, tmp_path, capfd):
    repo, damaged = damaged_copy(case, bases, tmp_path)
    before = tree_bytes(repo)
    name = damaged.name

    # verify: exit 1, an error line naming the file; --json the same findings as objects
    rc, out, err = run(capfd, "verify", "-C", str(repo))
    assert rc == 1, out + err
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert any(name in line.split(": ", 2)[1] for line in errors), out
    assert "Traceback" not in err
    if case.base == "files" or case.id.endswith(("-crc", "-records")):  # --json on a sample (time budget)
        check_json(capfd, repo, name)

    # list: one-line error naming the file, or exactly git's refs (git hides some broken names)
    if HAVE_LIST:
        rc, out, err = run(capfd, "list", "-C", str(repo))
        git_rc, names = git_names(repo)
        if rc == 0:
            assert git_rc == 0, f"git fails on this store but refscope list does not:\n{out}"
            assert [line.split(" ")[-1] for line in out.splitlines()] == names or out.splitlines() == names
        else:
            assert rc == 1
            lines = err.splitlines()
            assert len(lines) == 1 and lines[0].startswith("refscope: "), err
            assert name in lines[0], err

    assert tree_bytes(repo) == before

    # delete: refused with nothing changed; or, where the damage is outside what the delete reads (or a
    # name git hides), done as git would do it with the damaged bytes left exactly as they were.
    if HAVE_DELETE:
        damaged_before = damaged.read_bytes() if damaged.exists() else None
        target = corruptions.delete_target(case, bases).decode()
        rc, out, err = run(capfd, "delete", "-C", str(repo), target)
        assert "Traceback" not in err
        # A packed-refs git's reader rejects is never rewritten (the splice would copy the damage through).
        may_pass = case.delete_may_pass and (damaged.name != "packed-refs" or git_names(repo)[0] == 0)
        if rc == 0 and may_pass:
            if damaged.name == "packed-refs":
                assert damaged.read_bytes() == without_record(damaged_before, target.encode())
            elif damaged.exists():
                assert damaged.read_bytes() == damaged_before
        else:
            assert rc == 1, out + err
            assert err.startswith("refscope: ") and len(err.splitlines()) == 1, err
            assert tree_bytes(repo) == before


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_store_that_fails_to_read_is_refused_for_writes(case, bases, tmp_path, capfd):
    """One rule for every write, over the whole corpus: when ``list`` or ``verify`` reports an error, a
    delete is refused with one line and no byte changes (the only exception: damage confined to the
    obj section, which no listing, lookup or write reads)."""
    repo, damaged = damaged_copy(case, bases, tmp_path)
    before = tree_bytes(repo)
    list_rc, _out, _err = run(capfd, "list", "-C", str(repo))
    verify_rc, out, _err = run(capfd, "verify", "-C", str(repo))
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert list_rc == 1 or errors, "every case of the corpus is damage a reader sees"
    target = corruptions.delete_target(case, bases).decode()
    # The target may be HEAD or the checked-out branch: the damage, not that guard, must be what refuses,
    # and the deletion must be of the named ref itself (whose records and reflog the damage touches).
    rc, out, err = run(capfd, "delete", "-C", str(repo), "--allow-checked-out", "--no-deref", target)
    if case.delete_may_pass:
        assert list_rc == 0 and rc == 0, out + err
        assert damaged.read_bytes() == before[str(damaged.relative_to(repo))]
        return
    assert rc == 1, out + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("refscope: ") and damaged.name in lines[0], err
    assert out == ""
    assert tree_bytes(repo) == before


ELSEWHERE = ("refs/heads/after-pack", "refs/heads/feature/a-long-branch-name-0000", "refs/tags/lw-05")


@pytest.mark.parametrize("case", [c for c in CASES if c.base != "files"], ids=lambda c: c.id)
def test_a_listing_that_failed_taints_writes_in_its_process(case, bases, tmp_path):
    """The TUI's situation: the listing on screen hit damage, then a commit of refs whose own blocks
    are healthy (the newest table's, the first block's, a tag's). Every one is refused, whichever the
    engine, with the listing's own finding, and nothing changes."""
    from refscope.backend.errors import RefscopeError, TransactionRefused
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store
    from refscope.backend.txn import Transaction

    repo, damaged = damaged_copy(case, bases, tmp_path)
    before = tree_bytes(repo)
    store = open_store(discover(str(repo), git_env()))
    try:
        snap = store.snapshot()
    except RefscopeError:
        return  # the stack does not even open: no write can start (the other tests see to that)
    try:
        for _ref in snap.iter_from(b""):
            pass
    except RefscopeError as err:
        failed = err
    else:
        return  # the listing reads cleanly: damage only verify sees (the test above covers it)
    for engine in ("native", "git"):
        for name in ELSEWHERE:
            txn = Transaction(store, engine, no_deref=True, allow_checked_out=True, snapshot=snap)
            txn.delete(name.encode())
            with pytest.raises(TransactionRefused) as got:
                txn.commit()
            assert (got.value.file, got.value.what) == (failed.file, failed.what)
    assert tree_bytes(repo) == before


def test_footer_pointing_into_another_section_fails_every_reader(bases, tmp_path, capfd):
    """The footer is checked once, at open: a listing and a delete that needs no seek (the first ref of
    the first block) fail alike, with the same line."""
    case = next(c for c in CASES if c.id == "reftable-footer-ref-index-at-r1")
    repo, damaged = damaged_copy(case, bases, tmp_path)
    before = tree_bytes(repo)
    rc, out, err = run(capfd, "list", "-C", str(repo))
    assert (rc, out) == (1, "")
    footer_field = damaged.stat().st_size - 68 + 24  # v1: a 68-byte footer, its 24-byte header copy first
    assert err.endswith(f" does not point at an index block (at byte {footer_field})\n")
    assert err.startswith(f"refscope: {damaged}: footer ref_index_position ")
    rc2, out2, err2 = run(capfd, "delete", "-C", str(repo), corruptions.delete_target(case, bases).decode())
    assert (rc2, out2, err2) == (1, "", err)
    assert tree_bytes(repo) == before


def test_cases_are_distinct():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) > 100
