"""A reftable stack of any length works where git works: no descriptor per table, no crash for want of one.

Before, every table held a descriptor (``mmap.mmap`` keeps a dup until Python 3.13), so 1,101 tables failed
at the usual ``ulimit -n 1024`` and 65 at 32, where git lists them all; and a pipe or fork that could not be
had crashed ``delete --stdin``. The fixture is a stack of 1,100 one-ref tables (written by refscope's
writer: git takes ~9 s for as many processes) over three large tables git wrote; git checks it (lists it,
``git refs verify``) before any test uses it. The commands run in children whose RLIMIT_NOFILE is set
before exec.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from refscope.backend.formats.packed.check import FORK_MIN as _FORK_MIN
from refscope.backend.formats.reftable.mapping import READ_UP_TO as _READ_UP_TO
from refscope.backend.formats.reftable.record import VALUE_DELETION, VALUE_VAL1, RefRecord
from refscope.backend.formats.reftable.writer import write_table

from tests.support import cli
from tests.support.git import for_each_ref, git, git_binary, git_env, git_noauto, init_repo, tree_bytes
from tests.support.txn import leftovers

SMALL = 1100  # one-ref tables over the large ones
LARGE = 3  # tables bigger than _READ_UP_TO (mapped, not read)
PER_LARGE = 12000  # refs in each large table
LIST_FORMAT = "--format=%(objectname) %(refname)"


def _build(path: Path) -> Path:
    init_repo(path, fmt="reftable")
    head = git(path, "rev-parse", "HEAD").strip()
    other = git(path, "commit-tree", "-m", "other", "HEAD^{tree}").strip()
    for k in range(LARGE):
        lines = b"".join(b"create refs/large/%d/%05d %s\n" % (k, i, head) for i in range(PER_LARGE))
        git_noauto(path, "update-ref", "--stdin", input=lines)
    rdir = path / ".git" / "reftable"
    names = (rdir / "tables.list").read_text().split()
    sizes = [(rdir / n).stat().st_size for n in names]
    assert sum(s > _READ_UP_TO for s in sizes) == LARGE, sizes
    ui = int(names[-1].split("-")[1], 16)
    for i in range(SMALL):
        ui += 1
        if i % 10 == 9:  # a tombstone over a ref of a large table
            rec = RefRecord(b"refs/large/%d/%05d" % (i % LARGE, i), ui, VALUE_DELETION)
        elif i % 10 == 8:  # a newer value over a ref of a large table
            rec = RefRecord(b"refs/large/%d/%05d" % (i % LARGE, i), ui, VALUE_VAL1, other)
        else:
            rec = RefRecord(b"refs/heads/stack/%04d" % i, ui, VALUE_VAL1, head)
        name = f"0x{ui:012x}-0x{ui:012x}-{i:08x}.ref"
        (rdir / name).write_bytes(write_table([rec], min_update_index=ui, max_update_index=ui))
        names.append(name)
    (rdir / "tables.list").write_text("".join(n + "\n" for n in names))
    git(path, "refs", "verify")
    assert len(for_each_ref(path)) > SMALL + LARGE * PER_LARGE * 9 // 10
    return path


@pytest.fixture(scope="module")
def long_stack(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> Path:
    return _build(tmp_path_factory.mktemp("fds") / "stack")


def _copy(src: Path, dst: Path) -> Path:
    """A copy whose tables are hard links: a table is never written in place (writers add new files and
    rename tables.list over), and 1,100 links take a fraction of 1,100 copies."""

    def link_tables(a: str, b: str) -> None:
        (os.link if a.endswith(".ref") else shutil.copy2)(a, b)

    shutil.copytree(src, dst, symlinks=True, copy_function=link_tables)
    return dst


@pytest.fixture
def repo(long_stack: Path, tmp_path: Path) -> Path:
    return _copy(long_stack, tmp_path / "repo")


def _limited(n: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return limit


def refscope(repo: Path, limit: int, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``refscope ARGS -C repo`` in a child limited to ``limit`` descriptors."""
    return cli.refscope(
        *args[:1], "-C", str(repo), *args[1:], stdin=stdin, preexec_fn=_limited(limit), timeout=120
    )


def git_limited(repo: Path, limit: int, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [git_binary(), *args],
        input=stdin,
        cwd=repo,
        capture_output=True,
        env=git_env(),
        preexec_fn=_limited(limit),
    )


def test_snapshot_holds_no_descriptor_per_table(long_stack: Path) -> None:
    """The mechanism: opening the stack leaves at most one descriptor per large (mapped) table open."""
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    before = set(os.listdir("/proc/self/fd"))
    snap = open_store(discover(str(long_stack))).snapshot()
    held = set(os.listdir("/proc/self/fd")) - before
    assert len(snap.stack.tables) == len((long_stack / ".git/reftable/tables.list").read_text().split())
    assert len(held) <= (0 if sys.version_info >= (3, 13) else LARGE), held
    assert [r.name for r in snap.iter_from(b"")] == [r[0] for r in for_each_ref(long_stack)]


@pytest.mark.parametrize("limit", [64, 8])
def test_list_at_a_small_ulimit_is_gits(repo: Path, limit: int) -> None:
    expected = git(repo, "for-each-ref", LIST_FORMAT)
    assert git_limited(repo, limit, "for-each-ref", LIST_FORMAT).stdout == expected
    got = refscope(repo, limit, "list")
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stdout == expected
    got = refscope(repo, limit, "list", "--json")
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert [json.loads(line)["name"].encode() for line in got.stdout.splitlines()] == [
        line.split(b" ", 1)[1] for line in expected.splitlines()
    ]


@pytest.mark.parametrize("command", ["stack", "verify"])
def test_stack_and_verify_at_ulimit_64(repo: Path, command: str) -> None:
    got = refscope(repo, 64, command, "--json")
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    if command == "stack":
        (stack,) = json.loads(got.stdout)["stacks"]
        tables = stack["tables"]
        assert [t["name"] for t in tables] == (repo / ".git/reftable/tables.list").read_text().split()


@pytest.mark.parametrize("engine", ["native", "git"])
def test_delete_at_ulimit_64(repo: Path, engine: str) -> None:
    gone = [
        b"refs/heads/stack/0005",
        b"refs/large/1/00007",
        b"refs/large/0/00018",
    ]  # small, large, overridden
    before = [r[0] for r in for_each_ref(repo)]
    got = refscope(repo, 64, "delete", "--engine", engine, *map(os.fsdecode, gone))
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert [r[0] for r in for_each_ref(repo)] == [n for n in before if n not in gone]
    git(repo, "refs", "verify")
    assert leftovers(repo) == []


def test_delete_stdin_at_ulimit_8(repo: Path) -> None:
    """1,000+ names: the reflog reads go to a forked child when a pipe can be had, else stay here. (git's
    ``update-ref --stdin`` deletes the same names at this limit too, in 2.5 s here: not repeated.)"""
    names = [r[0] for r in for_each_ref(repo)]
    gone = names[1::7][:1500]
    assert len(gone) == 1500
    got = refscope(repo, 8, "delete", "--stdin", stdin=b"".join(n + b"\n" for n in gone))
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert b"1500 deleted" in got.stderr
    assert [r[0] for r in for_each_ref(repo)] == [n for n in names if n not in set(gone)]
    git(repo, "refs", "verify")
    assert leftovers(repo) == []


NO_PIPES = r"""
import os, sys
from refscope.backend.parallel import FAILED, Forked, pipes_and_fork
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from refscope.backend import listing as refs_listing

snap = open_store(discover(sys.argv[1])).snapshot()
split = snap.split_name(1)
assert split is not None
outs = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) for p in sys.argv[2:4]]


def listing(i):
    os.dup2(outs[i], 1)
    out = refs_listing.Out()
    refs_listing.split_listing(snap, False, out, split, "columns")
    out.flush()


listing(0)  # with pipes and a fork: every lazy import done
assert Forked(len, b"abc").result() == 3
filler = []
try:
    while True:
        filler.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    os.close(filler.pop())  # one descriptor free: a pipe needs two
assert pipes_and_fork(1) is None
assert Forked(len, b"abc").result() is FAILED
listing(1)  # everything listed here
sys.stderr.write("ok\n")
"""


def test_no_pipe_to_spare_means_the_work_stays_in_process(repo: Path, tmp_path: Path) -> None:
    """Every pipe-and-fork path (``backend.parallel``, the split listing) works in-process without a pipe.
    (Packed into one table first: a listing splits on its base table's index.)"""
    git(repo, "pack-refs", "--all")
    a, b = tmp_path / "with-fork", tmp_path / "without"
    proc = subprocess.run(
        [sys.executable, "-c", NO_PIPES, str(repo), str(a), str(b)],
        capture_output=True,
        env=git_env(),
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == b"ok\n", proc.stderr.decode()[-2000:]
    expected = git(repo, "for-each-ref", LIST_FORMAT)
    assert a.read_bytes() == expected
    assert b.read_bytes() == expected


TUI = r"""
import asyncio, sys
from refscope.app.cmd_tui import build_app, parse
from refscope.app.tui.fake_meter import FakeMeter
from refscope.app.tui.screens.stack import StackScreen
from refscope.app.tui.widgets.ref_list import RefList

want_refs, want_tables = int(sys.argv[2]), int(sys.argv[3])
SHOWN = []


async def until(pilot, cond, timeout=60.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "condition not met in time"
        await pilot.pause()
        await asyncio.sleep(0.02)


async def main():
    app = build_app(parse(["-C", sys.argv[1]]), meter=FakeMeter())
    async with app.run_test(size=(150, 45)) as pilot:
        screen = app.screen
        reflist = screen.query_one(RefList)
        await until(pilot, lambda: app.live == "live" and screen.is_ready())
        shown = [reflist.snapshot.name_at(i) for i in reflist.view]
        assert len(shown) == want_refs, (len(shown), want_refs)
        SHOWN.extend(shown)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, StackScreen))
        stack = app.screen
        await until(pilot, lambda: all(s.ref_records >= 0 for s in stack.summaries))
        assert len(stack.summaries) == want_tables, len(stack.summaries)
        assert len(stack.tables_view.source) == want_tables


asyncio.run(main())
sys.stdout.buffer.write(b"".join(n + b"\n" for n in SHOWN))  # after the app: it captures stdout
"""


def test_tui_shows_the_long_stack_at_ulimit_64(repo: Path) -> None:
    """The main list (watcher on) shows every ref git lists, and the stack view every table."""
    refs = [r[0] for r in for_each_ref(repo)]
    tables = (repo / ".git/reftable/tables.list").read_text().split()
    proc = subprocess.run(
        [sys.executable, "-c", TUI, str(repo), str(len(refs)), str(len(tables))],
        capture_output=True,
        env=git_env(),
        preexec_fn=_limited(64),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert proc.stdout.splitlines() == refs


TIERS = r"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
from refscope.backend.formats.reftable.table import Table

path = sys.argv[1]
tables = [Table.open(path) for _ in range(100)]
kinds = [type(t._mm).__name__ for t in tables]
held = len(os.listdir("/proc/self/fd"))
assert list(tables[0].iter_refs()) == list(tables[-1].iter_refs())


def mapped():
    with open("/proc/self/maps") as f:
        return sum(line.rstrip("\n").endswith(path) for line in f)


during = mapped()
del tables
print(kinds.count("mmap"), kinds.count("_Mapping"), held, during, mapped())
"""


def test_mapped_tables_take_descriptors_only_up_to_half_the_limit(long_stack: Path) -> None:
    """One large table opened 100 times at ``ulimit -n 64``: mapped with a descriptor (before 3.13) while
    fewer than half are in use, then by libc's mmap without one; every mapping goes with its table."""
    rdir = long_stack / ".git/reftable"
    large = max(rdir.glob("*.ref"), key=lambda p: p.stat().st_size)
    proc = subprocess.run(
        [sys.executable, "-c", TIERS, str(large)], capture_output=True, env=git_env(), timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    with_fd, without, held, during, after = map(int, proc.stdout.split())
    if sys.version_info >= (3, 13):
        assert (with_fd, without) == (100, 0)
    else:
        assert with_fd >= 16 and without == 100 - with_fd
    assert held <= 64 // 2 + 1  # listdir counts its own descriptor
    assert during == 100 and after == 0


@pytest.fixture(scope="module")
def files_repo(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> Path:
    """A files repository whose packed-refs is big enough to be checked in two processes, with loose refs
    over it in many directories."""
    path = init_repo(tmp_path_factory.mktemp("fds-files") / "repo")
    head = git(path, "rev-parse", "HEAD").strip()
    git(path, "pack-refs", "--all")
    packed = (path / ".git/packed-refs").read_bytes()  # git's header and refs/heads/main, then ours
    header, main = packed.split(b"\n", 1)[0], packed.split(b"\n", 1)[1]
    assert header.startswith(b"# pack-refs with:") and main.endswith(b" refs/heads/main\n")
    ours = b"".join(sorted(b"%s refs/heads/p/%02d/%05d\n" % (head, i % 50, i) for i in range(36000)))
    (path / ".git/packed-refs").write_bytes(header + b"\n" + main + ours)  # "main" < "p/"
    assert (path / ".git/packed-refs").stat().st_size > _FORK_MIN
    lines = b"".join(b"create refs/heads/l/%02d/%04d %s\n" % (i % 20, i, head) for i in range(300))
    git(path, "update-ref", "--stdin", input=lines)
    git(path, "refs", "verify")
    return path


def test_files_list_and_delete_stdin_at_ulimit_8(files_repo: Path, tmp_path: Path) -> None:
    """The files backend too: loose refs read one at a time, the packed check stays in-process when no
    pipe can be had, and the meter opens no counters that the work would need."""
    repo = tmp_path / "repo"
    shutil.copytree(files_repo, repo, symlinks=True)
    expected = git(repo, "for-each-ref", LIST_FORMAT)
    got = refscope(repo, 8, "list")
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert got.stdout == expected
    names = [line.split(b" ", 1)[1] for line in expected.splitlines()]
    gone = names[1::97]  # loose and packed
    assert any(b"/l/" in n for n in gone) and any(b"/p/" in n for n in gone)
    got = refscope(repo, 8, "delete", "--stdin", stdin=b"".join(n + b"\n" for n in gone))
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    assert b"%d deleted" % len(gone) in got.stderr
    assert [r[0] for r in for_each_ref(repo)] == [n for n in names if n not in set(gone)]
    git(repo, "refs", "verify")
    assert leftovers(repo) == []


def test_git_engine_without_pipes_to_spare_is_one_line_and_changes_nothing(repo: Path) -> None:
    """The git engine needs pipes for its child: at ``ulimit -n 8`` there are none, and the refusal is
    the one line, exit 1, no byte under .git changed (objects aside)."""
    before = {k: v for k, v in tree_bytes(repo / ".git").items() if not k.startswith("objects/")}
    got = refscope(repo, 8, "delete", "--engine", "git", "refs/heads/stack/0001")
    assert got.returncode == 1
    want = f"refscope: {repo / '.git'}: cannot run {git_binary()}: Too many open files\n"
    assert got.stderr.decode() == want
    assert {k: v for k, v in tree_bytes(repo / ".git").items() if not k.startswith("objects/")} == before
