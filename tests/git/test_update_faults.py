"""Bad input and a refusing OS in update transactions (``refscope update`` and renames): a clear one-line
error and no byte of the repository changed, in both formats.

- A full disk (a small tmpfs, filled, then a few pages given back so that the fault lands on a chosen
  write): a loose ref's lock, a reflog, ``packed-refs.new``, the new reftable table, ``tables.list.lock``
  and, for a branch rename, ``config.lock``. The mechanism under test: every write of a native commit
  names its file (``os.write`` names none), short writes are continued, and the files engine writes every
  reflog entry before it renames any lock, taking the entries back when one fails (``update/reflog_undo``)
  -- git's own finish would leave the refs before the failing one moved.
- EACCES and symlink loops where a lock, a reflog or the config would go; an unreadable config (git
  dies; refscope refuses rather than guess the ref storage).
Each cell checks the exact stderr and the fingerprint of the git dir.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import faults as faultutil
from tests.support.cli import refscope
from tests.support.faults import fill, fingerprint, unprivileged
from tests.support.update import create_refs, git, git_binary, git_env, init_repo

TIMEOUT = 60
RENAME = r"""
import os, sys
from refscope.backend.errors import RefscopeError
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend.update.commands import Rename
from refscope.backend.update.txn import UpdateTransaction
try:
    txn = UpdateTransaction(open_store(discover(sys.argv[1], dict(os.environ))))
    args = [os.fsencode(a) for a in sys.argv[2:]]
    txn.queue([Rename(a, b, None) for a, b in zip(args[::2], args[1::2])])
    txn.commit()
except RefscopeError as err:
    print(err.cli_line(), file=sys.stderr)
    sys.exit(1)
"""


def rename(repo: Path, *names: bytes, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    """``Rename`` records (old, new, old, new...) through ``UpdateTransaction``, in a child (so that
    ``prefix`` may drop its privileges): its stderr is the CLI's one line."""
    return subprocess.run(
        [*(prefix or []), sys.executable, "-c", RENAME, str(repo), *map(os.fsdecode, names)],
        capture_output=True,
        env=git_env(),
        timeout=TIMEOUT,
    )


def update(repo: Path, data: bytes, *args: str, prefix: list[str] | None = None):
    return refscope("update", "-C", str(repo), *args, stdin=data, prefix=prefix or [], timeout=TIMEOUT)


# ------------------------------------------------------------------------------------------- disk full


@pytest.fixture
def tmpfs(tmp_path: Path):
    with faultutil.small_tmpfs(tmp_path / "mnt", "24m") as mnt:
        yield mnt


def creates(oid: bytes, n: int = 100) -> bytes:
    return b"".join(b"create refs/heads/new/%03d %s\n" % (i, oid) for i in range(n))


# (format, batch, pages given back, the file the one line names)
DISK_FULL = [
    ("files", "creates", 0, "refs/heads/new/000.lock"),  # the first lock's contents
    ("files", "creates", 2, "refs/heads/new/002.lock"),  # two locks written and removed again
    ("files", "one", 1, "logs/refs/heads/new/one"),  # the reflog, after the lock
    ("files", "two", 3, "logs/refs/heads/new/one"),  # the second reflog: the first one taken back
    ("files", "delete", 0, "packed-refs.new"),
    ("reftable", "creates", 0, "reftable"),  # the new table's temp file
    ("reftable", "creates", 1, "reftable/tables.list.lock"),
]


@pytest.mark.parametrize(("fmt", "batch", "pages", "named"), DISK_FULL)
def test_disk_full_update_is_one_line(tmpfs: Path, fmt: str, batch: str, pages: int, named: str) -> None:
    repo = init_repo(tmpfs / "repo", fmt=fmt)
    oid = create_refs(repo, (b"refs/heads/b%03d" % i for i in range(300)))
    git(repo, "pack-refs", "--all")
    data = {
        "creates": creates(oid),
        "one": b"create refs/heads/new/one %s\n" % oid,
        "two": b"create refs/heads/b000x %s\ncreate refs/heads/new/one %s\n" % (oid, oid),
        "delete": b"delete refs/heads/b001\n",
    }[batch]
    fill(tmpfs, pages)
    gitdir = repo / ".git"
    before = fingerprint(gitdir)

    out = update(repo, data)

    assert (out.returncode, out.stderr.decode()) == (
        1,
        f"refscope: {gitdir / named}: error writing: No space left on device\n",
    )
    assert fingerprint(gitdir) == before  # no lock, temp file, table, reflog entry or directory left


@pytest.mark.parametrize(("fmt", "named"), [("files", "config.lock"), ("reftable", "config.lock")])
def test_disk_full_rename_config_is_one_line(tmpfs: Path, fmt: str, named: str) -> None:
    """A branch rename moves its config section: the full disk refuses the config's lock, by name."""
    repo = init_repo(tmpfs / "repo", fmt=fmt)
    git(repo, "branch", "a")
    git(repo, "config", "branch.a.remote", "origin")
    fill(tmpfs, 0)
    gitdir = repo / ".git"
    before = fingerprint(gitdir)
    out = rename(repo, b"refs/heads/a", b"refs/heads/b")
    assert (out.returncode, out.stderr.decode()) == (
        1,
        f"refscope: {gitdir / named}: error writing: No space left on device\n",
    )
    assert fingerprint(gitdir) == before


@pytest.mark.parametrize("fmt", ["files", "reftable"])
@pytest.mark.parametrize(
    ("old", "new"), [(b"a", b"b"), (b"a", b"a/b"), (b"x/a", b"x")], ids=["plain", "into", "out-of"]
)
def test_disk_full_rename_never_half_done(tmpfs: Path, fmt: str, old: bytes, new: bytes) -> None:
    """Every amount of space left, page by page, until the rename fits: each run refuses in one line
    naming a file and changes nothing, or commits what git commits (a nested rename too: its journal,
    its packed-refs rewrite)."""
    repo = init_repo(tmpfs / "repo", fmt=fmt)
    git(repo, "branch", old.decode())
    git(repo, "config", f"branch.{old.decode()}.remote", "origin")
    gitdir = repo / ".git"
    for pages in range(12):
        fill(tmpfs, pages)
        before = fingerprint(gitdir)
        out = rename(repo, b"refs/heads/" + old, b"refs/heads/" + new)
        (tmpfs / "filler").unlink()
        err = out.stderr.decode()
        if out.returncode == 0:
            names = git(repo, "for-each-ref", "--format=%(refname)").split()
            assert names == sorted([b"refs/heads/" + new, b"refs/heads/main"])
            assert git(repo, "config", f"branch.{new.decode()}.remote") == b"origin\n"
            git(repo, "refs", "verify")
            assert pages > 0, "never refused: the test did not fill the disk"
            return
        assert out.returncode == 1 and err.count("\n") == 1, err
        assert err.startswith(f"refscope: {gitdir}/") and err.endswith(": No space left on device\n"), err
        assert fingerprint(gitdir) == before, pages
    raise AssertionError("the rename never fitted")


# --------------------------------------------------------------------------------- EACCES, symlink loops


def _loop(path: Path) -> None:
    """``path`` (a file or a directory) replaced by a symlink to itself."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(path.name)


# (label, format, what to break, the batch, the file named, what the line says after it)
OS_FAULTS = [
    (
        "logs-dir-second-reflog",  # a's reflog appended, zz's cannot be created: a's entry taken back
        "files",
        lambda g: (g / "logs/refs/heads").chmod(0o555),
        b"update refs/heads/a %(oid)s\ncreate refs/heads/zz %(oid)s\n",
        "logs/refs/heads/zz",
        "Permission denied",
    ),
    (
        "ref-dir",
        "files",
        lambda g: (g / "refs/heads/x").chmod(0o555),
        b"create refs/heads/x/y %(oid)s\n",
        "refs/heads/x/y.lock",
        "cannot lock ref 'refs/heads/x/y': Unable to create '%(gitdir)s/refs/heads/x/y.lock': "
        "Permission denied",
    ),
    (
        "ref-loop",
        "files",
        lambda g: _loop(g / "refs/heads/loop"),
        b"create refs/heads/loop %(oid)s\n",
        "refs/heads/loop",
        "unable to resolve reference: Too many levels of symbolic links",
    ),
    (
        "reflog-loop",  # b1's reflog written, then zz's is a loop: b1's taken back
        "files",
        lambda g: _loop(g / "logs/refs/heads/zz"),
        b"create refs/heads/b1 %(oid)s\ncreate refs/heads/zz %(oid)s\n",
        "logs/refs/heads/zz",
        "Too many levels of symbolic links",
    ),
    (
        "ref-dir-loop",
        "files",
        lambda g: _loop(g / "refs/heads/x"),
        b"create refs/heads/x/y %(oid)s\n",
        "refs/heads/x/y.lock",
        "cannot lock ref 'refs/heads/x/y': Unable to create '%(gitdir)s/refs/heads/x/y.lock': "
        "Too many levels of symbolic links",
    ),
    (
        "logs-loop",  # the whole logs/ a symlink loop: a's reflog cannot be appended
        "files",
        lambda g: _loop(g / "logs"),
        b"create refs/heads/y %(oid)s\n",
        "logs/refs/heads/y",
        "Too many levels of symbolic links",
    ),
    (
        "reflog-fifo",  # never a wait on a FIFO where a reflog would go
        "files",
        lambda g: os.mkfifo(g / "logs/refs/heads/y"),
        b"create refs/heads/b1 %(oid)s\ncreate refs/heads/y %(oid)s\n",
        "logs/refs/heads/y",
        "No such device or address",
    ),
    (
        "head-reflog-loop",  # main's reflog appended, then HEAD's (its branch moved) is a loop
        "files",
        lambda g: _loop(g / "logs/HEAD"),
        b"update refs/heads/main %(first)s\n",
        "logs/HEAD",
        "Too many levels of symbolic links",
    ),
    (
        "reftable-dir",
        "reftable",
        lambda g: (g / "reftable").chmod(0o555),
        b"create refs/heads/b1 %(oid)s\n",
        "reftable/tables.list.lock",
        "Unable to create '%(gitdir)s/reftable/tables.list.lock': Permission denied",
    ),
]


def _repo(tmp_path: Path, fmt: str) -> tuple[Path, bytes]:
    repo = init_repo(tmp_path / "repo", fmt=fmt)
    git(repo, "branch", "a")
    git(repo, "update-ref", "refs/heads/x/old", "HEAD")
    git(repo, "config", "branch.a.remote", "origin")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")  # a and x/old stay at the first commit
    return repo, git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize(
    ("fmt", "breaks", "data", "named", "what"),
    [c[1:] for c in OS_FAULTS],
    ids=[c[0] for c in OS_FAULTS],
)
def test_os_fault_in_update_is_one_line(tmp_path: Path, fmt, breaks, data, named, what) -> None:
    repo, oid = _repo(tmp_path, fmt)
    gitdir = repo / ".git"
    prefix = unprivileged()
    breaks(gitdir)
    before = fingerprint(gitdir)
    first = git(repo, "rev-parse", "refs/heads/a").strip()
    out = update(repo, data % {b"oid": oid, b"first": first}, prefix=prefix)
    after = fingerprint(gitdir)
    for d in (gitdir / "logs/refs/heads", gitdir / "refs/heads/x", gitdir / "reftable"):
        if d.is_dir():
            d.chmod(0o755)
    what = what % {"gitdir": gitdir}
    assert (out.returncode, out.stderr.decode()) == (1, f"refscope: {gitdir / named}: {what}\n")
    assert after == before


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_unreadable_config_is_refused_as_git_refuses(tmp_path: Path, fmt: str) -> None:
    """git dies on a repository config it cannot open; refscope refuses too (before: it went on without
    the config and took a reftable repository for a files one)."""
    repo, oid = _repo(tmp_path, fmt)
    config = repo / ".git" / "config"
    prefix = unprivileged()
    before = fingerprint(repo / ".git")
    config.chmod(0)
    try:
        out = update(repo, b"create refs/heads/b1 %s\n" % oid, prefix=prefix)
        theirs = subprocess.run(
            [*prefix, git_binary(), "-C", str(repo), "update-ref", "refs/heads/b1", oid.decode()],
            capture_output=True,
            env=git_env(),
        )
        listed = refscope("list", "-C", str(repo), prefix=prefix, timeout=TIMEOUT)
    finally:
        config.chmod(0o644)
    line = f"refscope: {config}: couldn't read: Permission denied\n"
    assert (out.returncode, out.stderr.decode()) == (1, line)
    assert (listed.returncode, listed.stderr.decode()) == (1, line)
    assert theirs.returncode == 128 and b"unable to access" in theirs.stderr
    assert fingerprint(repo / ".git") == before


# (label, format, what to break, the renames, the file named, what)
RENAME_FAULTS = [
    (
        "files-logs-dir",  # the lock of the new name was renamed into place before the reflog move failed
        "files",
        lambda g: (g / "logs/refs/heads").chmod(0o555),
        "logs/refs/heads/a",
        "Permission denied",
    ),
    (
        "files-refs-dir",
        "files",
        lambda g: (g / "refs/heads").chmod(0o555),
        "refs/heads/a.lock",
        "cannot lock ref 'refs/heads/a': Unable to create '%(gitdir)s/refs/heads/a.lock': Permission denied",
    ),
    (
        "files-gitdir",
        "files",
        lambda g: g.chmod(0o555),
        "config.lock",
        "could not lock config file %(gitdir)s/config: Unable to create '%(gitdir)s/config.lock': "
        "Permission denied",
    ),
    (
        "reftable-dir",
        "reftable",
        lambda g: (g / "reftable").chmod(0o555),
        "reftable/tables.list.lock",
        "Unable to create '%(gitdir)s/reftable/tables.list.lock': Permission denied",
    ),
    (
        "reftable-gitdir",
        "reftable",
        lambda g: g.chmod(0o555),
        "config.lock",
        "could not lock config file %(gitdir)s/config: Unable to create '%(gitdir)s/config.lock': "
        "Permission denied",
    ),
]


@pytest.mark.parametrize(
    ("fmt", "breaks", "named", "what"), [c[1:] for c in RENAME_FAULTS], ids=[c[0] for c in RENAME_FAULTS]
)
def test_os_fault_in_rename_is_one_line(tmp_path: Path, fmt, breaks, named, what) -> None:
    repo, _oid = _repo(tmp_path, fmt)
    gitdir = repo / ".git"
    prefix = unprivileged()
    breaks(gitdir)
    before = fingerprint(gitdir)
    out = rename(repo, b"refs/heads/a", b"refs/heads/b", prefix=prefix)
    after = fingerprint(gitdir)
    for d in (gitdir, gitdir / "logs/refs/heads", gitdir / "refs/heads", gitdir / "reftable"):
        if d.is_dir():
            d.chmod(0o755)
    what = what % {"gitdir": gitdir}
    assert (out.returncode, out.stderr.decode()) == (1, f"refscope: {gitdir / named}: {what}\n")
    assert after == before


def test_a_reflog_refusal_after_a_moved_ref_native_whole_git_engine_as_git(tmp_path: Path) -> None:
    """``update a`` (its reflog appendable) then ``create zz`` (its reflog cannot be created): git's
    finish has moved refs/heads/a when zz's reflog fails, and says so only by its exit status. The native
    engine takes a's entry back and changes nothing; the git engine leaves what git leaves (it is git),
    with git's words in the one line."""
    repos = {}
    for who in ("native", "git", "oracle"):
        repo, oid = _repo(tmp_path / who, "files")
        repos[who] = repo
    data = b"update refs/heads/a %s\ncreate refs/heads/zz %s\n" % (oid, oid)
    prefix = unprivileged()
    outs, prints = {}, {}
    for who, repo in repos.items():
        logs = repo / ".git" / "logs" / "refs" / "heads"
        logs.chmod(0o555)
        before = fingerprint(repo / ".git")
        if who == "oracle":
            outs[who] = subprocess.run(
                [*prefix, git_binary(), "-C", str(repo), "update-ref", "--stdin"],
                input=data,
                capture_output=True,
                env=git_env(),
            )
        else:
            outs[who] = update(repo, data, "--engine", who, prefix=prefix)
        prints[who] = (before, fingerprint(repo / ".git"))
        logs.chmod(0o755)
    gitdir = repos["native"] / ".git"
    assert (outs["native"].returncode, outs["native"].stderr.decode()) == (
        1,
        f"refscope: {gitdir}/logs/refs/heads/zz: Permission denied\n",
    )
    assert prints["native"][1] == prints["native"][0]
    why = "cannot update the ref 'refs/heads/zz': unable to append to '{}/logs/refs/heads/zz': Permission denied"
    gitdir = repos["git"] / ".git"
    assert (outs["git"].returncode, outs["git"].stderr.decode()) == (
        1,
        f"refscope: {gitdir}: {why.format(gitdir)}\n",
    )
    assert outs["oracle"].returncode == 128
    changed = {
        who: sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k)) for who, (b, a) in prints.items()
    }
    assert changed["git"] == changed["oracle"] == ["logs/refs/heads/a", "refs/heads/a"]


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_rename_to_a_name_that_is_not_utf8_as_git(tmp_path: Path, fmt: str) -> None:
    """``git branch -m a <0xff 0xfe>`` on a twin repository is the oracle: refs, config and reflog."""
    ours, _ = _repo(tmp_path / "ours", fmt)
    theirs, _ = _repo(tmp_path / "theirs", fmt)
    new = b"refs/heads/\xff\xfe"
    out = rename(ours, b"refs/heads/a", new)
    assert (out.returncode, out.stderr) == (0, b"")
    subprocess.run(
        [git_binary(), "-C", str(theirs), "branch", "-m", "a", os.fsdecode(new[11:])],
        check=True,
        capture_output=True,
        env=git_env(),
    )
    look = ["for-each-ref", "--format=%(objectname) %(refname)"]
    assert git(ours, *look) == git(theirs, *look)
    assert (ours / ".git/config").read_bytes() == (theirs / ".git/config").read_bytes()
    show = ["reflog", "show", "--format=%H %gn %ge %gs", os.fsdecode(new)]
    assert git(ours, *show) == git(theirs, *show)
    git(ours, "refs", "verify")
