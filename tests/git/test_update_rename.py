"""Renames (``commands.Rename``) against ``git branch -m``: both ref formats, SHA-1 and SHA-256, loose and
packed refs, the checked-out branch, a branch checked out in another worktree, into and out of a
directory. The refs, every reflog (``git reflog show``; for files the log files byte for byte), both
worktrees' HEADs and the config come out as git leaves them; refusals are one line and change no byte;
a rename mixed with other commands is one transaction."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from refscope.backend.errors import TransactionRefused
from refscope.backend.update.branchconfig import rename_section
from refscope.backend.update.commands import Command, Rename
from refscope.backend.update.txn import UpdateTransaction

from tests.support.faults import fingerprint
from tests.support.update import (
    build_repo,
    check_clean,
    copy_repo,
    files_layout,
    git,
    git_binary,
    git_env,
    leftovers,
    open_txn_store,
    reflogs,
    state,
    use_git_identity,
)


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    use_git_identity(monkeypatch)


@pytest.fixture(
    scope="module",
    params=[("files", "sha1"), ("reftable", "sha1"), ("files", "sha256"), ("reftable", "sha256")],
)
def base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    fmt, hash_name = request.param
    root = tmp_path_factory.mktemp(f"rename-{fmt}-{hash_name}")
    src = build_repo(root / "src", fmt, hash_name)
    git(src, "branch", "solo/one", "HEAD~1")  # alone in its directory, with a reflog
    git(src, "branch", "pk/only", "HEAD")
    git(src, "pack-refs", "--all")  # main, p*, pk/only packed; solo/one... packed too
    git(src, "branch", "loose/a", "HEAD~1")  # loose only
    git(src, "config", "branch.main.remote", "origin")
    git(src, "config", "branch.main.merge", "refs/heads/main")
    git(src, "config", "branch.wt-branch.description", "in the worktree")
    git(src, "config", "branch.solo/one.remote", "up")
    return fmt, src


def short(name: bytes) -> str:
    return name.decode()[len("refs/heads/") :]


def reflog_show(repo: Path, name: str) -> tuple[int, bytes]:
    p = subprocess.run(
        [git_binary(), "reflog", "show", "--format=%H %gd %gn %ge %gs", name],
        cwd=repo,
        capture_output=True,
        env=git_env(),
    )
    return p.returncode, p.stdout


def seen(repo: Path, fmt: str, names: list[bytes], scratch: Path) -> dict:
    out = {
        "refs": state(repo),
        "config": (repo / ".git" / "config").read_bytes(),
        "HEAD": (reflog_show(repo, "HEAD"), git(repo, "symbolic-ref", "HEAD")),
        "wt HEAD": (reflog_show(repo / "wt", "HEAD"), git(repo / "wt", "symbolic-ref", "HEAD")),
        "leftovers": leftovers(repo),
    }
    for n in names:
        out[n] = reflog_show(repo, n.decode())
    if fmt == "files":
        out["logs"] = reflogs(repo, fmt, scratch)
        out["layout"] = files_layout(repo)
    return out


def commit(repo: Path, items) -> object:
    txn = UpdateTransaction(open_txn_store(repo))
    txn.queue(items)
    return txn.commit()


CASES = [
    pytest.param(b"refs/heads/main", b"refs/heads/x/y", id="checked-out-into-new-dir"),
    pytest.param(b"refs/heads/wt-branch", b"refs/heads/moved/wt", id="other-worktree"),
    pytest.param(b"refs/heads/solo/one", b"refs/heads/solo2", id="out-of-its-dir"),
    pytest.param(b"refs/heads/pk/only", b"refs/heads/pk2", id="packed-only"),
    pytest.param(b"refs/heads/loose/a", b"refs/heads/l/b/c", id="loose-only"),
    pytest.param(b"refs/heads/p03", b"refs/heads/p03-renamed", id="loose-over-packed"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_rename_like_git_branch_m(base, tmp_path: Path, old: bytes, new: bytes) -> None:
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    git(oracle, "branch", "-m", short(old), short(new))
    result = commit(ours, [Rename(old, new, None)])
    names = [old, new]
    assert seen(ours, fmt, names, tmp_path / "s1") == seen(oracle, fmt, names, tmp_path / "s2")
    check_clean(ours)
    oid = git(ours, "rev-parse", new.decode()).strip()
    (done,) = result.renamed
    assert (done.old_name, done.name, done.oid) == (old, new, oid)
    assert (old, oid, None) in result.updates and (new, None, oid) in result.updates


def test_rename_checks_old_value(base, tmp_path: Path) -> None:
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    oid = git(ours, "rev-parse", "refs/heads/l01").strip()
    git(oracle, "branch", "-m", "l01", "l01-new")
    commit(ours, [Rename(b"refs/heads/l01", b"refs/heads/l01-new", oid)])
    assert seen(ours, fmt, [b"refs/heads/l01-new"], tmp_path / "s1") == seen(
        oracle, fmt, [b"refs/heads/l01-new"], tmp_path / "s2"
    )


def test_rename_mixed_with_commands_is_one_transaction(base, tmp_path: Path) -> None:
    """A rename beside creates, updates and deletes: the same result as git's update-ref for the commands
    followed by git branch -m."""
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    head = git(src, "rev-parse", "HEAD").strip()
    second = git(src, "rev-parse", "HEAD~1").strip()
    git(
        oracle,
        "update-ref",
        "--stdin",
        input=b"create refs/heads/c1 %s\ndelete refs/heads/l02\nupdate refs/heads/p02 %s\n" % (head, second),
    )
    git(oracle, "branch", "-m", "main", "trunk")
    zero = b"0" * len(head)
    commit(
        ours,
        [
            Command("create", b"refs/heads/c1", head, zero, None, None, False),
            Rename(b"refs/heads/main", b"refs/heads/trunk", None),
            Command("delete", b"refs/heads/l02", zero, None, None, None, False),
            Command("update", b"refs/heads/p02", second, None, None, None, False),
        ],
    )
    names = [b"refs/heads/trunk", b"refs/heads/c1", b"refs/heads/p02"]
    assert seen(ours, fmt, names, tmp_path / "s1") == seen(oracle, fmt, names, tmp_path / "s2")
    check_clean(ours)


REFUSALS = [
    pytest.param(
        b"refs/heads/l03",
        b"refs/heads/l04",
        None,
        "cannot lock ref 'refs/heads/l04': reference already exists",
        id="target-exists",
    ),
    pytest.param(
        b"refs/heads/l03",
        b"refs/heads/nested/dir",
        None,
        "'refs/heads/nested/dir/n0' exists; cannot create 'refs/heads/nested/dir'",
        id="df-below",
    ),
    pytest.param(
        b"refs/heads/l03",
        b"refs/heads/l04/x",
        None,
        "'refs/heads/l04' exists; cannot create 'refs/heads/l04/x'",
        id="df-above",
    ),
    pytest.param(
        b"refs/heads/l03", b"refs/heads/a..b", None, "invalid ref format: refs/heads/a..b", id="invalid-name"
    ),
    pytest.param(
        b"refs/heads/l03",
        b"refs/heads/q",
        b"1" * 40,
        "cannot lock ref 'refs/heads/l03': is at",
        id="old-mismatch",
    ),
    pytest.param(
        b"refs/heads/nope", b"refs/heads/q", None, "refname refs/heads/nope not found", id="old-missing"
    ),
    pytest.param(
        b"refs/heads/sym",
        b"refs/heads/q",
        None,
        "refname refs/heads/sym is a symbolic ref, renaming it is not supported",
        id="symref",
    ),
    pytest.param(
        b"refs/heads/l03",
        b"refs/tags/v0",
        None,
        "cannot lock ref 'refs/tags/v0': reference already exists",
        id="onto-a-tag",
    ),
]


@pytest.mark.parametrize(("old", "new", "expect", "words"), REFUSALS)
def test_rename_refusals(base, tmp_path: Path, old: bytes, new: bytes, expect, words: str) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    if expect is not None and len(git(ours, "rev-parse", "HEAD").strip()) == 64:
        expect = b"1" * 64
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    with pytest.raises(TransactionRefused) as err:
        txn.queue([Rename(old, new, expect)])
        txn.commit()
    text = str(err.value)
    assert words in text and "\n" not in text
    assert fingerprint(ours) == before


@pytest.mark.parametrize("race", ["target-appears", "old-moves", "old-goes"])
def test_rename_refused_under_the_lock_changes_nothing(base, tmp_path: Path, race: str) -> None:
    """Queued against a snapshot, then another writer changes the store: the engine refuses under its
    locks, and no byte changes (the config lock included)."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    txn = UpdateTransaction(open_txn_store(ours))
    oid = git(ours, "rev-parse", "refs/heads/l06").strip()
    txn.queue([Rename(b"refs/heads/l06", b"refs/heads/late", oid)])
    if race == "target-appears":
        git(ours, "branch", "late", "HEAD~1")
        words = "cannot lock ref 'refs/heads/late': reference already exists"
    elif race == "old-moves":
        git(ours, "update-ref", "refs/heads/l06", "HEAD~1")
        words = f"cannot lock ref 'refs/heads/l06': is at {git(ours, 'rev-parse', 'HEAD~1').strip().decode()}"
    else:
        git(ours, "update-ref", "-d", "refs/heads/l06")
        words = "cannot lock ref 'refs/heads/l06': unable to resolve reference 'refs/heads/l06'"
    before = fingerprint(ours)
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert words in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


def test_rename_without_a_reflog_like_git(base, tmp_path: Path) -> None:
    """A branch without reflog entries (reftable: all expired; files: the log file gone)."""
    fmt, src = base
    pre = copy_repo(src, tmp_path / "pre")
    if fmt == "files":
        (pre / ".git" / "logs" / "refs" / "heads" / "l06").unlink()
    else:
        git(pre, "reflog", "expire", "--expire=all", "refs/heads/l06")
    oracle = copy_repo(pre, tmp_path / "oracle")
    ours = copy_repo(pre, tmp_path / "ours")
    git(oracle, "branch", "-m", "l06", "new/l06")
    commit(ours, [Rename(b"refs/heads/l06", b"refs/heads/new/l06", None)])
    names = [b"refs/heads/new/l06"]
    assert seen(ours, fmt, names, tmp_path / "s1") == seen(oracle, fmt, names, tmp_path / "s2")


def test_rename_of_an_annotated_tag_keeps_it_peeled(base, tmp_path: Path) -> None:
    """Any ref renames, not only branches (git has no command for it: the ref must be the same one under
    its new name, peeled value included, and git must find the repository sound)."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    fmt_arg = "--format=%(objectname) %(objecttype) %(*objectname)"
    was = git(ours, "for-each-ref", fmt_arg, "refs/tags/v0")
    config = (ours / ".git" / "config").read_bytes()
    peeled = open_txn_store(ours).snapshot().lookup(b"refs/tags/v0").peeled
    commit(ours, [Rename(b"refs/tags/v0", b"refs/tags/moved/v0", None)])
    assert git(ours, "for-each-ref", fmt_arg, "refs/tags/moved/v0") == was
    if fmt == "reftable":  # the record keeps its peeled value (files: a loose ref records none)
        assert peeled is not None
        assert open_txn_store(ours).snapshot().lookup(b"refs/tags/moved/v0").peeled == peeled
    assert git(ours, "for-each-ref", "refs/tags/v0") == b""
    assert (ours / ".git" / "config").read_bytes() == config
    assert leftovers(ours) == []
    check_clean(ours)


def test_rename_refused_by_the_git_engine(base, tmp_path: Path) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours), engine="git")
    with pytest.raises(TransactionRefused) as err:
        txn.queue([Rename(b"refs/heads/l03", b"refs/heads/q", None)])
    assert "the git engine cannot rename refs" in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


def test_rename_and_head_in_one_batch_refused(base, tmp_path: Path) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    second = git(src, "rev-parse", "HEAD~1").strip()
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    with pytest.raises(TransactionRefused) as err:
        txn.queue(
            [
                Rename(b"refs/heads/main", b"refs/heads/trunk", None),
                Command("update", b"HEAD", second, None, None, None, True),
            ]
        )
        txn.commit()
    assert "multiple updates for 'HEAD'" in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        (b'[branch "a"]\n\tremote = o\n[branch "b"]\n\tx = 1\n', b"branch.a", b"branch.c/d"),
        (b'[branch "a"] remote = o\n', b"branch.a", b"branch.z"),
        (b'  [branch  "a" ]  \n\tk = v\n[branch "a"]\n\tk = w', b"branch.a", b'branch.q"\\x'),
        (b"[branch.a]\n\tk = v\n", b"branch.a", b"branch.b"),
        (b'[Branch "a"]\n\tk = v\n[branch "A"]\n', b"branch.a", b"branch.b"),
    ],
)
def test_config_section_rename_like_git(tmp_path: Path, text: bytes, old: bytes, new: bytes) -> None:
    cfg = tmp_path / "config"
    cfg.write_bytes(text)
    subprocess.run(
        [git_binary(), "config", "--file", str(cfg), "--rename-section", old.decode(), new.decode()],
        env=git_env(),
        capture_output=True,
    )
    assert rename_section(text, old, new)[0] == cfg.read_bytes()


@pytest.mark.parametrize("state", ["rebase-merge", "rebase-apply", "bisect"])
def test_rename_of_a_branch_being_rebased_or_bisected_refused_like_git(
    base, tmp_path: Path, state: str
) -> None:
    """git branch -m refuses a branch that a detached worktree is rebasing or bisecting: the same words."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    wt = ours / "wt"
    git(wt, "checkout", "-q", "--detach")
    wt_gitdir = Path(git(wt, "rev-parse", "--absolute-git-dir").strip().decode())
    if state == "bisect":
        (wt_gitdir / "BISECT_LOG").write_text("")
        (wt_gitdir / "BISECT_START").write_text("l05\n")
    else:
        (wt_gitdir / state).mkdir()
        (wt_gitdir / state / "head-name").write_text("refs/heads/l05\n")
    p = subprocess.run(
        [git_binary(), "branch", "-m", "l05", "l05-new"], cwd=ours, capture_output=True, env=git_env()
    )
    assert p.returncode != 0
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    with pytest.raises(TransactionRefused) as err:
        txn.queue([Rename(b"refs/heads/l05", b"refs/heads/l05-new", None)])
    assert err.value.what == p.stderr.decode().strip().removeprefix("fatal: ")
    assert fingerprint(ours) == before


def test_rename_refused_while_the_config_is_locked(base, tmp_path: Path) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    (ours / ".git" / "config.lock").write_text("")
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    txn.queue([Rename(b"refs/heads/main", b"refs/heads/trunk", None)])
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert "could not lock config file" in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


def test_rename_refused_while_the_other_worktrees_head_is_locked(base, tmp_path: Path) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    wt_gitdir = Path(git(ours / "wt", "rev-parse", "--absolute-git-dir").strip().decode())
    lock = wt_gitdir / ("HEAD.lock" if fmt == "files" else "reftable/tables.list.lock")
    lock.write_text("")
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    txn.queue([Rename(b"refs/heads/wt-branch", b"refs/heads/wt3", None)])
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize(
    ("old", "new"),
    [(b"refs/heads/wt-branch", b"refs/heads/here/now"), (b"refs/heads/main", b"refs/heads/trunk")],
    ids=["checked-out-here", "checked-out-in-the-main-worktree"],
)
def test_rename_from_a_linked_worktree_like_git(base, tmp_path: Path, old: bytes, new: bytes) -> None:
    """Run in the linked worktree: which HEAD gets the old ref's deletion entry follows git (files: the
    worktree the command runs in; reftable: the main worktree's, whose HEAD lives in the shared stack)."""
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    git(oracle / "wt", "branch", "-m", short(old), short(new))
    commit(ours / "wt", [Rename(old, new, None)])
    names = [old, new]
    assert seen(ours, fmt, names, tmp_path / "s1") == seen(oracle, fmt, names, tmp_path / "s2")
    check_clean(ours)


def test_rename_in_a_bare_repository_like_git(base, tmp_path: Path) -> None:
    """A bare repository: its HEAD follows (git moves the main worktree's HEAD, bare or not), and no reflog
    is created (core.logAllRefUpdates defaults to false)."""
    fmt, src = base
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", f"--ref-format={fmt}", str(src), str(bare))
    git(bare, "config", "branch.main.remote", "origin")
    oracle = copy_repo(bare, tmp_path / "oracle.git")
    ours = copy_repo(bare, tmp_path / "ours.git")
    git(oracle, "branch", "-m", "main", "trunk")
    commit(ours, [Rename(b"refs/heads/main", b"refs/heads/trunk", None)])

    def look(repo: Path) -> tuple:
        logs = sorted(str(p.relative_to(repo)) for p in (repo / "logs").rglob("*")) if fmt == "files" else []
        return (
            git(repo, "for-each-ref"),
            git(repo, "symbolic-ref", "HEAD"),
            (repo / "config").read_bytes(),
            reflog_show(repo, "HEAD"),
            reflog_show(repo, "refs/heads/trunk"),
            logs,
        )

    assert look(ours) == look(oracle)
    git(ours, "refs", "verify")


@pytest.mark.parametrize(
    ("other", "words"),
    [
        (b"refs/heads/q", "multiple updates for ref 'refs/heads/q' not allowed"),
        (b"refs/heads/l03", "multiple updates for ref 'refs/heads/l03' not allowed"),
        (b"refs/heads/q/r", "cannot process 'refs/heads/q' and 'refs/heads/q/r' at the same time"),
    ],
    ids=["creates-the-new-name", "creates-the-old-name", "df-in-the-batch"],
)
def test_rename_conflicting_with_the_batch_refused(base, tmp_path: Path, other: bytes, words: str) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    head = git(src, "rev-parse", "HEAD").strip()
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    with pytest.raises(TransactionRefused) as err:
        txn.queue(
            [
                Rename(b"refs/heads/l03", b"refs/heads/q", None),
                Command("create", other, head, b"0" * len(head), None, None, False),
            ]
        )
        txn.commit()
    assert words in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize("seed", [1, 2])
def test_random_renames_one_after_another_like_git(base, tmp_path: Path, seed: int) -> None:
    """Renames in sequence, back and forth (a name comes back to a ref whose old reflog entries were
    deleted under it), into and out of directories, the checked-out branches among them: after each
    step the same refs, reflogs, HEADs and config as git branch -m."""
    import random

    fmt, src = base
    rng = random.Random(seed)
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    names = [
        b"refs/heads/main",
        b"refs/heads/wt-branch",
        b"refs/heads/l05",
        b"refs/heads/p05",
        b"refs/heads/solo/one",
    ]
    pool = [
        b"refs/heads/r/a",
        b"refs/heads/r/b/c",
        b"refs/heads/top",
        b"refs/heads/solo/two",
        b"refs/heads/main",
    ]
    for step in range(6):
        i = rng.randrange(len(names))
        old = names[i]
        free = [
            n
            for n in pool + [b"refs/heads/back%d" % step]
            if n not in names and not any(n.startswith(m + b"/") or m.startswith(n + b"/") for m in names)
        ]
        new = rng.choice(free)
        git(oracle, "branch", "-m", short(old), short(new))
        commit(ours, [Rename(old, new, None)])
        names[i] = new
        assert seen(ours, fmt, [new], tmp_path / f"s{step}a") == seen(
            oracle, fmt, [new], tmp_path / f"s{step}b"
        ), (step, old, new)
    check_clean(ours)


@pytest.mark.parametrize("base", [("files", "sha1"), ("files", "sha256")], indirect=True)
@pytest.mark.parametrize("where", ["dir-with-logs", "file-above"])
def test_rename_refused_when_stale_reflogs_are_in_the_way(base, tmp_path: Path, where: str) -> None:
    """files (reflogs are files only there): reflogs without their refs where the new reflog must go; git
    branch -m refuses (and rolls back, rewriting the old ref loose): refscope refuses before writing
    anything."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    logs = ours / ".git" / "logs" / "refs" / "heads"
    if where == "dir-with-logs":
        (logs / "zz").mkdir()
        (logs / "zz" / "f").write_text("junk\n")
        new = "zz"
    else:
        (logs / "yy").write_text("junk\n")
        new = "yy/q"
    oracle = copy_repo(ours, tmp_path / "oracle")
    p = subprocess.run(
        [git_binary(), "branch", "-m", "l07", new], cwd=oracle, capture_output=True, env=git_env()
    )
    assert p.returncode != 0
    assert state(oracle) == state(ours)  # git rolled back (l07 rewritten loose: not byte for byte)
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    txn.queue([Rename(b"refs/heads/l07", b"refs/heads/" + new.encode(), None)])
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert "cannot rename 'refs/heads/l07'" in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize("mode", ["false", "always"])
@pytest.mark.parametrize("old", [b"refs/heads/main", b"refs/heads/l04"])
def test_rename_under_core_logallrefupdates_like_git(base, tmp_path: Path, mode: str, old: bytes) -> None:
    fmt, src = base
    pre = copy_repo(src, tmp_path / "pre")
    git(pre, "config", "core.logAllRefUpdates", mode)
    if fmt == "files":  # and a branch without a reflog: created only when asked
        (pre / ".git" / "logs" / "refs" / "heads" / "l04").unlink()
    oracle = copy_repo(pre, tmp_path / "oracle")
    ours = copy_repo(pre, tmp_path / "ours")
    new = old + b"-renamed"
    git(oracle, "branch", "-m", short(old), short(new))
    commit(ours, [Rename(old, new, None)])
    assert seen(ours, fmt, [new], tmp_path / "s1") == seen(oracle, fmt, [new], tmp_path / "s2")


@pytest.mark.parametrize("base", [("reftable", "sha1"), ("reftable", "sha256")], indirect=True)
def test_rename_table_named_for_its_two_indexes(
    base, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without auto-compaction the rename's table stays: its name says both its update indexes, which
    refscope verify checks against its header (and git reads it)."""
    import sys

    fmt, src = base
    monkeypatch.setenv("GIT_TEST_REFTABLE_AUTOCOMPACTION", "false")
    ours = copy_repo(src, tmp_path / "ours")
    listed = (ours / ".git" / "reftable" / "tables.list").read_text().split()
    commit(ours, [Rename(b"refs/heads/l05", b"refs/heads/l5", None)])
    now = (ours / ".git" / "reftable" / "tables.list").read_text().split()
    assert now[:-1] == listed
    lo, hi = (int(x, 16) for x in now[-1].split("-")[:2])
    assert hi == lo + 1
    env = git_env() | {"GIT_TEST_REFTABLE_AUTOCOMPACTION": "false"}
    p = subprocess.run(
        [sys.executable, "-m", "refscope.app", "-C", str(ours), "verify"], capture_output=True, env=env
    )
    assert p.returncode == 0, p.stdout + p.stderr
    check_clean(ours)


# -- into and out of its own name space (git branch -m a a/b, a/b a) ----------------------------------------
NESTED = [
    pytest.param(b"refs/heads/main", b"refs/heads/main/x", id="into-checked-out-packed"),
    pytest.param(b"refs/heads/wt-branch", b"refs/heads/wt-branch/sub", id="into-other-worktree-loose"),
    pytest.param(b"refs/heads/l03", b"refs/heads/l03/x/y", id="into-deeper-loose"),
    pytest.param(b"refs/heads/p03", b"refs/heads/p03/new", id="into-loose-over-packed"),
    pytest.param(b"refs/heads/solo/one", b"refs/heads/solo", id="out-packed"),
    pytest.param(b"refs/heads/loose/a", b"refs/heads/loose", id="out-loose"),
    pytest.param(b"refs/heads/pk/only", b"refs/heads/pk", id="out-packed-only"),
]


def with_record(packed: bytes, name: bytes, oid: bytes, peeled: bytes | None) -> bytes:
    """``packed`` (a packed-refs file's bytes) with ``name``'s record inserted in name order."""
    lines = packed.splitlines(keepends=True)
    header, body = (lines[:1], lines[1:]) if lines and lines[0].startswith(b"#") else ([], lines)
    records: list[list[bytes]] = []
    for ln in body:
        if ln.startswith(b"^"):
            records[-1].append(ln)
        else:
            records.append([ln])
    new = [b"%s %s\n" % (oid, name)] + ([b"^%s\n" % peeled] if peeled else [])
    records.append(new)
    records.sort(key=lambda r: r[0].split(b" ", 1)[1])
    return b"".join(header or [b"# pack-refs with: peeled fully-peeled sorted \n"]) + b"".join(
        b"".join(r) for r in records
    )


def nested_seen(repo: Path, fmt: str, names: list[bytes], scratch: Path) -> dict:
    out = seen(repo, fmt, names, scratch)
    if fmt == "files":
        packed, paths = out.pop("layout")
        out["log paths"] = [p for p in paths if p.startswith(("logs", "worktrees/wt/logs"))]
        out["ref paths"] = [p for p in paths if not p.startswith(("logs", "worktrees/wt/logs"))]
        out["packed"] = packed
    return out


def check_nested_like_git(fmt: str, ours: Path, oracle: Path, new: bytes, names: list[bytes], scratch: Path):
    """Everything as git leaves it; in files the new ref is in packed-refs where git leaves it loose (the
    packed-refs rewrite is refscope's commit point: update/nested.py), nothing else differs."""
    a = nested_seen(ours, fmt, names, scratch / "s1")
    b = nested_seen(oracle, fmt, names, scratch / "s2")
    if fmt == "files":
        loose = oracle / ".git" / new.decode()
        assert loose.is_file()  # git's: loose
        oid = loose.read_bytes().strip()
        peeled = git(oracle, "rev-parse", new.decode() + "^{}").strip()
        assert a.pop("packed") == with_record(b.pop("packed"), new, oid, peeled if peeled != oid else None)
        ours_refs, git_refs = set(a.pop("ref paths")), set(b.pop("ref paths"))
        extra = git_refs - ours_refs  # the loose file and the directories only it needed
        assert ours_refs <= git_refs and all(new.decode().startswith(p) for p in extra), extra
        assert not (ours / ".git" / new.decode()).exists()
    assert a == b
    assert not list((ours / ".git").rglob(".refscope-*"))
    check_clean(ours)


@pytest.mark.parametrize(("old", "new"), NESTED)
def test_nested_rename_like_git_branch_m(base, tmp_path: Path, old: bytes, new: bytes) -> None:
    """``git branch -m a a/b`` and ``a/b a``: the refs, reflogs (files: their bytes and paths), both HEADs
    and the config as git leaves them (reftable: one table; files: see check_nested_like_git)."""
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    git(oracle, "branch", "-m", short(old), short(new))
    result = commit(ours, [Rename(old, new, None)])
    check_nested_like_git(fmt, ours, oracle, new, [old, new], tmp_path)
    oid = git(ours, "rev-parse", new.decode()).strip()
    (done,) = result.renamed
    assert (done.old_name, done.name, done.oid) == (old, new, oid)


def test_nested_rename_there_and_back_like_git(base, tmp_path: Path) -> None:
    """a -> a/b -> a -> a/b/c: the reflog keeps every entry of every step, as git's."""
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    steps = [b"refs/heads/l05", b"refs/heads/l05/b", b"refs/heads/l05", b"refs/heads/l05/b/c"]
    for i, (old, new) in enumerate(zip(steps, steps[1:], strict=False)):
        git(oracle, "branch", "-m", short(old), short(new))
        commit(ours, [Rename(old, new, None)])
        a = nested_seen(ours, fmt, [new], tmp_path / f"a{i}")
        b = nested_seen(oracle, fmt, [new], tmp_path / f"b{i}")
        for k in ("packed", "ref paths"):  # (files: where the ref is stored, checked above)
            a.pop(k, None), b.pop(k, None)
        assert a == b, (old, new)
    check_clean(ours)


def test_nested_rename_mixed_with_commands_is_one_transaction(base, tmp_path: Path) -> None:
    """A nested rename of the checked-out branch beside a plain rename, creates, updates and deletes
    (packed and loose): git's update-ref for the commands, then git branch -m for each rename."""
    fmt, src = base
    oracle = copy_repo(src, tmp_path / "oracle")
    ours = copy_repo(src, tmp_path / "ours")
    head = git(src, "rev-parse", "HEAD").strip()
    second = git(src, "rev-parse", "HEAD~1").strip()
    git(
        oracle,
        "update-ref",
        "--stdin",
        input=b"create refs/heads/c1 %s\ndelete refs/heads/l02\ndelete refs/heads/p04\nupdate refs/heads/p02 %s\n"
        % (head, second),
    )
    git(oracle, "branch", "-m", "main", "main/trunk")
    git(oracle, "branch", "-m", "wt-branch", "wt2")
    zero = b"0" * len(head)
    commit(
        ours,
        [
            Command("create", b"refs/heads/c1", head, zero, None, None, False),
            Rename(b"refs/heads/main", b"refs/heads/main/trunk", None),
            Command("delete", b"refs/heads/l02", zero, None, None, None, False),
            Command("delete", b"refs/heads/p04", zero, None, None, None, False),
            Rename(b"refs/heads/wt-branch", b"refs/heads/wt2", None),
            Command("update", b"refs/heads/p02", second, None, None, None, False),
        ],
    )
    names = [b"refs/heads/main/trunk", b"refs/heads/wt2", b"refs/heads/c1", b"refs/heads/p02"]
    a = nested_seen(ours, fmt, names, tmp_path / "s1")
    b = nested_seen(oracle, fmt, names, tmp_path / "s2")
    if fmt == "files":
        oid = (oracle / ".git" / "refs" / "heads" / "main" / "trunk").read_bytes().strip()
        assert a.pop("packed") == with_record(b.pop("packed"), b"refs/heads/main/trunk", oid, None)
        assert set(b.pop("ref paths")) - set(a.pop("ref paths")) == {
            "refs/heads/main",
            "refs/heads/main/trunk",
        }
    assert a == b
    check_clean(ours)


@pytest.mark.parametrize("loose", [False, True], ids=["packed", "loose"])
def test_nested_rename_of_an_annotated_tag_keeps_it_peeled(base, tmp_path: Path, loose: bool) -> None:
    """A tag into its own name space: git must see the same peeled tag (files: the packed record's
    ``^`` line, from the old record or, for a loose tag, read from the objects)."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    name = "refs/tags/v1"
    if loose:
        git(ours, "tag", "-a", "-m", "loose one", "lt", "HEAD~1")
        name = "refs/tags/lt"
    fmt_arg = "--format=%(objectname) %(objecttype) %(*objectname)"
    was = git(ours, "for-each-ref", fmt_arg, name)
    commit(ours, [Rename(name.encode(), name.encode() + b"/x", None)])
    assert git(ours, "for-each-ref", fmt_arg, name + "/x") == was
    assert git(ours, "for-each-ref", "--format=%(refname)", name) == name.encode() + b"/x\n"
    if fmt == "files":
        packed = (ours / ".git" / "packed-refs").read_bytes()
        oid, _t, peeled = was.split()
        assert b"%s %s/x\n^%s\n" % (oid, name.encode(), peeled) in packed
    check_clean(ours)


NESTED_REFUSALS = [
    pytest.param(
        b"refs/heads/nested/dir/n0",
        b"refs/heads/nested/dir",
        "'refs/heads/nested/dir/n1' exists; cannot create 'refs/heads/nested/dir'",
        id="out-with-siblings",
    ),
    pytest.param(
        b"refs/heads/nested/dir/n0",
        b"refs/heads/nested",
        "'refs/heads/nested/dir/n1' exists; cannot create 'refs/heads/nested'",
        id="out-two-levels-with-siblings",
    ),
]


@pytest.mark.parametrize(("old", "new", "words"), NESTED_REFUSALS)
def test_nested_rename_refusals_are_gits(base, tmp_path: Path, old: bytes, new: bytes, words: str) -> None:
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    p = subprocess.run(
        [git_binary(), "branch", "-m", short(old), short(new)], cwd=ours, capture_output=True, env=git_env()
    )
    assert p.returncode != 0 and words in p.stderr.decode()
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    with pytest.raises(TransactionRefused) as err:
        txn.queue([Rename(old, new, None)])
        txn.commit()
    assert words in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize(
    "race", ["sibling-appears", "new-name-appears-packed"], ids=["sibling", "packed-new-name"]
)
def test_nested_rename_refused_under_the_lock_changes_nothing(base, tmp_path: Path, race: str) -> None:
    """Queued against a snapshot, then git makes the rename impossible: refused under the locks with git's
    words, no byte changed."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    txn = UpdateTransaction(open_txn_store(ours))
    txn.queue([Rename(b"refs/heads/solo/one", b"refs/heads/solo", None)])
    if race == "sibling-appears":
        git(ours, "branch", "solo/two", "HEAD")
        words = "'refs/heads/solo/two' exists; cannot create 'refs/heads/solo'"
    else:  # a packed record of the new name beside its directory (only a broken writer makes that)
        if fmt == "reftable":
            return
        packed = ours / ".git" / "packed-refs"
        oid = git(ours, "rev-parse", "HEAD").strip()
        packed.write_bytes(with_record(packed.read_bytes(), b"refs/heads/solo", oid, None))
        words = "cannot lock ref 'refs/heads/solo': reference already exists"
    before = fingerprint(ours)
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert words in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize(
    ("other", "words"),
    [
        (
            Command("create", b"refs/heads/l03/c", b"%(oid)s", b"%(zero)s", None, None, False),
            "'refs/heads/l03' exists; cannot create 'refs/heads/l03/c'",
        ),
        (Rename(b"refs/heads/l04", b"refs/heads/l04/x", None), "one rename into or out of its own directory"),
    ],
    ids=["create-beside-it", "second-nested-rename"],
)
def test_nested_rename_beside_what_it_cannot_be_batched_with(base, tmp_path: Path, other, words: str) -> None:
    """a -> a/b beside a create of a/c (git's update-ref refuses ``delete a`` beside ``create a/c``: the
    rename frees its old name for itself only), or (files) beside a second nested rename: one line,
    nothing changed. reftable takes two nested renames in its one table."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    head = git(src, "rev-parse", "HEAD").strip()
    if type(other) is Command:
        other = other._replace(new=head, old=b"0" * len(head))
    oracle = copy_repo(src, tmp_path / "oracle")
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    batch = [Rename(b"refs/heads/l03", b"refs/heads/l03/x", None), other]
    if fmt == "reftable" and type(other) is Rename:
        commit(ours, batch)
        for r in batch:
            git(oracle, "branch", "-m", short(r.old_name), short(r.name))
        names = [b"refs/heads/l03/x", b"refs/heads/l04/x"]
        assert seen(ours, fmt, names, tmp_path / "s1") == seen(oracle, fmt, names, tmp_path / "s2")
        return
    with pytest.raises(TransactionRefused) as err:
        txn.queue(batch)
        txn.commit()
    assert words in str(err.value) and "\n" not in str(err.value)
    assert fingerprint(ours) == before


@pytest.mark.parametrize("base", [("files", "sha1"), ("files", "sha256")], indirect=True)
@pytest.mark.parametrize(
    ("old", "new"),
    [(b"refs/heads/l03", b"refs/heads/l03/x"), (b"refs/heads/solo/one", b"refs/heads/solo")],
    ids=["into", "out-of"],
)
def test_nested_rename_taken_back_when_a_later_reflog_fails(base, tmp_path: Path, old: bytes, new: bytes):
    """The nested rename's reflog has moved (through the temp file) when the next command's reflog cannot
    be written (a symlink loop): the move is taken back, the journal removed, no byte changed."""
    fmt, src = base
    ours = copy_repo(src, tmp_path / "ours")
    loop = ours / ".git" / "logs" / "refs" / "heads" / "zz"
    loop.symlink_to("zz")
    head = git(src, "rev-parse", "HEAD").strip()
    before = fingerprint(ours)
    txn = UpdateTransaction(open_txn_store(ours))
    txn.queue(
        [
            Rename(old, new, None),
            Command("create", b"refs/heads/zz", head, b"0" * len(head), None, None, False),
        ]
    )
    with pytest.raises(TransactionRefused) as err:
        txn.commit()
    assert "logs/refs/heads/zz" in err.value.file and "\n" not in str(err.value)
    assert fingerprint(ours) == before
