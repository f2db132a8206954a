"""The dialogs of issue 15 against real git repositories (both formats): the commit dialog's keys and
choices (y commits, n / Enter / Esc cancel, d leaves out stale and checked-out entries, o allows deleting
checked-out branches), each of its warnings with its exact text, ``q`` with a queue, and the queue as a
``refscope delete --stdin`` file (export, then the CLI deletes exactly the queued refs; load, with stale
values flagged and a bad file refused in one line).

git is the oracle: ``git for-each-ref`` before and after every commit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from refscope.app.tui.app import RefscopeApp
from refscope.app.tui.screens.dialogs import ConfirmCommit, ConfirmQuit, PathPrompt
from refscope.app.tui.screens.dialogs import Message as MessageDialog
from refscope.app.tui.screens.main import MainScreen
from refscope.app.tui.screens.operations import OperationScreen
from refscope.app.tui.widgets.queue import QueuePanel
from refscope.backend.repo import discover
from refscope.backend.store import open_store
from textual.widgets import Button, Input, Static

from tests.support.cli import refscope_delete
from tests.support.git import create_refs, for_each_ref, git, init_repo, tree_bytes
from tests.support.tui import make_app, wait_for

pytestmark = pytest.mark.anyio

LATIN1 = b"refs/heads/caf\xe9"  # a name that is not UTF-8 (git takes any byte >= 0x80)


def make_repo(path: Path, fmt: str) -> Path:
    init_repo(path, fmt=fmt)
    create_refs(
        path, [b"refs/heads/topic/%03d" % i for i in range(4)] + [LATIN1, b"refs/remotes/origin/main"]
    )
    git(path, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    if fmt == "files":
        git(path, "pack-refs", "--all")
    return path


def names(path: Path) -> list[bytes]:
    return [row[0] for row in for_each_ref(path)]


async def ready(pilot) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.is_ready())


def queue(app: RefscopeApp, *refs: bytes) -> None:
    """Mark ``refs`` as ``space`` does (the value each is seen at recorded)."""
    for name in refs:
        app.queue.add(app.snapshot.head() if name == b"HEAD" else app.snapshot.lookup(name))
    app.screen.query_one(QueuePanel).sync()


async def open_dialog(pilot) -> ConfirmCommit:
    app = pilot.app
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
    await pilot.pause()
    return app.screen


def shown(dialog, selector: str) -> str:
    return str(dialog.query_one(selector, Static).render())


def warning_lines(dialog) -> list[str]:
    text = shown(dialog, "#commit-plan")
    return [line[2:] for line in text.split("\n") if line.startswith("⚠ ")]


# -- keys and choices ------------------------------------------------------------------------------------
async def test_keys_shown_enter_and_n_cancel_y_commits(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    before = names(path)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000", b"refs/heads/topic/001")
        for cancel in ("enter", "n", "escape"):
            dialog = await open_dialog(pilot)
            assert str(dialog.query_one("#yes", Button).label) == "y  Delete 2"
            assert str(dialog.query_one("#no", Button).label) == "n  Cancel"
            assert not dialog.query_one("#rest", Button).display  # nothing to leave out
            assert shown(dialog, "#dialog-keys") == "y delete all 2  ·  n, Enter or Esc cancel"
            assert dialog.focused is dialog.query_one("#no", Button)  # Enter is Cancel
            await pilot.press(cancel)
            await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
            assert names(path) == before and len(app.queue) == 2
        await open_dialog(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen))
    assert names(path) == [n for n in before if n not in (b"refs/heads/topic/000", b"refs/heads/topic/001")]


async def test_leave_out_stale_and_checked_out(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    git(path, "worktree", "add", "-q", "-b", "wt-branch", str(tmp_path / "wt"))
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000", b"refs/heads/topic/001", b"refs/heads/wt-branch", LATIN1)
        # another process moves topic/001 after it was queued: a refresh flags it stale
        git(path, "commit", "-q", "--allow-empty", "-m", "second")
        git(path, "update-ref", "refs/heads/topic/001", "HEAD")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.queue[b"refs/heads/topic/001"].stale is not None)
        before = names(path)
        dialog = await open_dialog(pilot)
        assert str(dialog.query_one("#rest", Button).label) == "d  Delete the other 2"
        assert shown(dialog, "#dialog-keys") == (
            "y delete all 4  ·  d leave out 1 stale and 1 checked out, delete 2  ·  "
            "o allow checked-out branches: off  ·  n, Enter or Esc cancel"
        )
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen))
        # what was left out is still queued, as it was
        assert sorted(app.queue) == [b"refs/heads/topic/001", b"refs/heads/wt-branch"]
    assert names(path) == [n for n in before if n not in (b"refs/heads/topic/000", LATIN1)]


async def test_checked_out_deleted_only_when_allowed(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    wt = tmp_path / "wt"
    git(path, "worktree", "add", "-q", "-b", "wt-branch", str(wt))
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/wt-branch")
        dialog = await open_dialog(pilot)
        assert warning_lines(dialog) == [
            f"1 branch checked out in a worktree: refs/heads/wt-branch in {wt}. Deleting one leaves that "
            "worktree on an unborn branch; git branch -d refuses, git update-ref -d does not; refscope "
            "refuses them unless you allow it (o), or leaves them out (d)"
        ]
        assert not dialog.query_one("#rest", Button).display  # leaving it out leaves nothing
        before = tree_bytes(path / ".git")
        await pilot.press("y")  # not allowed: refused, nothing changed
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog))
        assert f"cannot delete branch 'wt-branch' used by worktree at '{wt}'" in str(app.screen.body)
        assert tree_bytes(path / ".git") == before and b"refs/heads/wt-branch" in names(path)
        await pilot.press("escape")
        dialog = await open_dialog(pilot)
        await pilot.press("o")
        await wait_for(pilot, lambda: dialog.allow)
        assert "o allow checked-out branches: on" in shown(dialog, "#dialog-keys")
        assert warning_lines(dialog)[0].endswith(
            "git update-ref -d does not; allowed (o): they will be deleted"
        )
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen))
    assert b"refs/heads/wt-branch" not in names(path)
    status = git(wt, "status")  # the worktree is left on an unborn branch, as the dialog said
    assert b"On branch wt-branch" in status and b"No commits yet" in status


# -- warnings, each with its exact text -------------------------------------------------------------------
def _stash(path: Path) -> bytes:
    (path / "file").write_text("changed\n")
    git(path, "stash", "-q")
    return b"refs/stash"


def _notes(path: Path) -> bytes:
    git(path, "notes", "add", "-m", "a note")
    return b"refs/notes/commits"


WARNINGS = {
    "stash": (
        _stash,
        "refs/stash is queued: every stash entry is lost (stash@{0}, stash@{1}, … are its reflog, deleted with it)",
    ),
    "notes": (
        _notes,
        "1 notes ref queued: refs/notes/commits (the notes it holds are no longer reachable)",
    ),
    "dangling": (
        lambda path: b"refs/remotes/origin/main",
        "1 symref left pointing at a deleted ref (dangling): refs/remotes/origin/HEAD → refs/remotes/origin/main",
    ),
    "HEAD": (lambda path: b"HEAD", None),  # worded per format, below
}


@pytest.mark.parametrize("case", list(WARNINGS))
async def test_each_warning(tmp_path: Path, ref_format: str, case: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    make, expected = WARNINGS[case]
    name = make(path)
    if expected is None:
        expected = (
            'HEAD itself is queued: without .git/HEAD git no longer recognizes the repository ("fatal: not a '
            'git repository")'
            if ref_format == "files"
            else 'HEAD itself is queued: git then finds no HEAD ("Not currently on any branch"; git log: "your '
            'current branch appears to be broken")'
        )
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, name)
        dialog = await open_dialog(pilot)
        lines = warning_lines(dialog)
        assert expected in lines
        others = [w for w in lines if not w.startswith("1 symref(s), deleted themselves")]  # (HEAD is one)
        assert others == [expected]
        assert "-warn" in dialog.query_one("#dialog-box").classes
        await pilot.press("n")


async def test_dangling_through_a_chain(tmp_path: Path, ref_format: str) -> None:
    """A symref to a symref to a queued ref dangles too; a queued symref itself does not."""
    path = make_repo(tmp_path / "r", ref_format)
    git(path, "symbolic-ref", "refs/heads/alias", "refs/remotes/origin/HEAD")
    git(path, "symbolic-ref", "refs/heads/also", "refs/remotes/origin/main")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/remotes/origin/main", b"refs/heads/also")
        dialog = await open_dialog(pilot)
        assert dialog.plan.dangling == [
            (b"refs/heads/alias", b"refs/remotes/origin/main"),
            (b"refs/remotes/origin/HEAD", b"refs/remotes/origin/main"),
        ]
        await pilot.press("n")


def test_snapshot_symrefs_are_gits(tmp_path: Path, ref_format: str) -> None:
    """The backend's list of symrefs is git's (for-each-ref's %(symref), and HEAD), also once the stack is
    compacted and the row index built (the blocks it found listed whole are skipped)."""
    from refscope.backend.effects import snapshot_symrefs

    path = make_repo(tmp_path / "r", ref_format)
    create_refs(path, [b"refs/pull/%05d/head" % i for i in range(3000)])
    git(path, "symbolic-ref", "refs/heads/alias", "refs/remotes/origin/HEAD")
    git(path, "symbolic-ref", "refs/pull/01500/alias", "refs/pull/01500/head")
    git(path, "pack-refs", "--all")
    git(path, "symbolic-ref", "refs/heads/late", "refs/heads/main")  # a newer table / a loose file
    # (for-each-ref's %(symref) is the end of the chain; the symref's own target is symbolic-ref's)
    listed = [name for name, _oid, _peeled, target in for_each_ref(path) if target] + [b"HEAD"]
    expected = {name: git(path, "symbolic-ref", "--no-recurse", os.fsdecode(name)).strip() for name in listed}
    assert expected[b"refs/heads/alias"] == b"refs/remotes/origin/HEAD" and len(expected) == 5
    snapshot = open_store(discover(str(path))).snapshot()
    assert snapshot_symrefs(snapshot) == expected
    len(snapshot)  # the row index
    assert snapshot_symrefs(snapshot) == expected


# -- quitting ---------------------------------------------------------------------------------------------
async def test_q_asks_with_a_queue(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000")
        for answer in ("n", "enter", "escape"):
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmQuit))
            question = str(app.screen.question)
            assert question == (
                "1 ref is queued for deletion and not committed. Quit and lose the queue? "
                "(w exports it to a file first)"
            )
            await pilot.press("q")  # a second q is no answer
            await pilot.press(answer)
            await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
            assert not app._exit
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmQuit))
        await pilot.press("y")
        await wait_for(pilot, lambda: app._exit)


async def test_q_with_an_empty_queue_quits(tmp_path: Path) -> None:
    app = make_app(make_repo(tmp_path / "r", "files"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: app._exit)
        assert not isinstance(app.screen, ConfirmQuit)


# -- the queue as a file ----------------------------------------------------------------------------------
async def prompt_path(pilot, key: str, path: str) -> PathPrompt:
    app = pilot.app
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt))
    dialog = app.screen
    assert dialog.query_one("#path", Input).value == "refscope-queue.txt"
    dialog.query_one("#path", Input).value = path
    await pilot.press("enter")
    return dialog


@pytest.mark.parametrize("symref", [False, True])
async def test_export_then_cli_deletes_exactly_the_queue(
    tmp_path: Path, ref_format: str, symref: bool
) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    queued = [b"refs/heads/topic/002", LATIN1, b"refs/heads/topic/000"]
    if symref:
        queued.append(b"refs/remotes/origin/HEAD")
    out = tmp_path / "queue.txt"
    values = {name: oid for name, oid, _peeled, _target in for_each_ref(path)}
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, *queued)
        await prompt_path(pilot, "w", str(out))
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert len(app.queue) == len(queued)  # exporting keeps the queue
    expected = b"".join(
        name + b"\n" if name == b"refs/remotes/origin/HEAD" else name + b" " + values[name] + b"\n"
        for name in queued
    )
    assert out.read_bytes() == expected
    before = names(path)
    # a queued symref is deleted itself, as the TUI does: --no-deref (without one, plain --stdin)
    proc = refscope_delete(path, *(["--no-deref"] if symref else []), "--stdin", stdin=out.read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert names(path) == [n for n in before if n not in queued]


async def test_export_error_in_place(tmp_path: Path) -> None:
    path = make_repo(tmp_path / "r", "files")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000")
        missing = tmp_path / "no-such-dir" / "q.txt"
        dialog = await prompt_path(pilot, "w", str(missing))
        await wait_for(pilot, lambda: "couldn't" in shown(dialog, "#prompt-error"))
        assert shown(dialog, "#prompt-error") == f"{missing}: couldn't write: No such file or directory"
        dialog.query_one("#path", Input).value = str(tmp_path)  # a directory
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Is a directory" in shown(dialog, "#prompt-error"))
        assert shown(dialog, "#prompt-error") == f"{tmp_path}: couldn't write: Is a directory"
        assert app.screen is dialog  # still asking
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    assert not missing.exists()


async def test_load_fills_the_queue(tmp_path: Path, ref_format: str) -> None:
    path = make_repo(tmp_path / "r", ref_format)
    values = {name: oid for name, oid, _peeled, _target in for_each_ref(path)}
    other = git(path, "commit-tree", "-m", "other", "HEAD^{tree}").strip()
    file = tmp_path / "queue.txt"
    file.write_bytes(
        b"refs/heads/topic/000 "
        + values[b"refs/heads/topic/000"]
        + b"\n"
        + LATIN1
        + b" "
        + values[LATIN1]
        + b"\r\n"
        + b"\n"
        + b"refs/heads/topic/001 "
        + other
        + b"\n"  # expects another value: stale
        + b"refs/heads/gone\n"  # no such ref: stale
        + b"refs/remotes/origin/HEAD\n"  # a symref, by name
    )
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000")  # already queued: kept as it is
        await prompt_path(pilot, "i", str(file))
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert list(app.queue) == [
            b"refs/heads/topic/000",
            LATIN1,
            b"refs/heads/topic/001",
            b"refs/heads/gone",
            b"refs/remotes/origin/HEAD",
        ]
        stale = {name: entry.stale for name, entry in app.queue.items()}
        assert stale[b"refs/heads/topic/001"] == "now at " + values[b"refs/heads/topic/001"][:8].decode()
        assert stale[b"refs/heads/gone"] == "gone"
        assert [n for n, why in stale.items() if why] == [b"refs/heads/topic/001", b"refs/heads/gone"]
        assert app.queue[b"refs/remotes/origin/HEAD"].old_oid is None
        assert app.queue[LATIN1].old_oid == values[LATIN1]
        assert app.screen.query_one(QueuePanel).border_title == "queue · 5 · 2 stale"


BAD_FILES = {
    "fields": (
        b"refs/heads/topic/000\nrefs/heads/a b c\n",
        "line 2: expected 'REF [OLD_OID]', found 3 fields",
    ),
    "name": (b"refs/heads/topic/000\n\nrefs/heads/a..b\n", "line 3: bad ref name 'refs/heads/a..b'"),
    "oid": (b"refs/heads/topic/000 12345\n", "line 1: bad old oid '12345' (expected 40 hex digits)"),
    "missing": (None, "couldn't read: No such file or directory"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
async def test_load_bad_file_one_line(tmp_path: Path, case: str) -> None:
    path = make_repo(tmp_path / "r", "files")
    data, what = BAD_FILES[case]
    file = tmp_path / "queue.txt"
    if data is not None:
        file.write_bytes(data)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        dialog = await prompt_path(pilot, "i", str(file))
        await wait_for(pilot, lambda: shown(dialog, "#prompt-error") not in ("", "…"))
        assert shown(dialog, "#prompt-error") == f"{file}: {what}"
        assert app.screen is dialog and len(app.queue) == 0


def test_cli_stdin_bad_line_unchanged(tmp_path: Path) -> None:
    """The CLI reads the same format through the same parser, with its usage message (exit 2)."""
    path = make_repo(tmp_path / "r", "files")
    before = tree_bytes(path / ".git")
    proc = refscope_delete(path, "--stdin", stdin=b"refs/heads/topic/000 a b\n")
    assert (proc.returncode, proc.stderr) == (2, b"refscope delete: --stdin lines are 'REF [OLD_OID]'\n")
    assert tree_bytes(path / ".git") == before


def test_queue_file_round_trip(tmp_path: Path) -> None:
    from refscope.backend.queuefile import format_lines, parse_lines, read_file, write_file

    pairs = [(b"refs/heads/a", b"1" * 40), (LATIN1, None), (b"refs/heads/\xff\xfe", b"f" * 40)]
    assert parse_lines(format_lines(pairs)) == pairs
    target = tmp_path / "q"
    assert write_file(str(target), pairs) == len(format_lines(pairs))
    assert read_file(str(target), "sha1") == pairs
    assert os.path.getsize(target) == len(format_lines(pairs))


@pytest.mark.parametrize(
    ("command", "title"), [("export", "Export the queue"), ("load", "Load a queue file")]
)
async def test_palette_opens_the_path_prompt(tmp_path: Path, command: str, title: str) -> None:
    from textual.command import CommandPalette

    app = make_app(make_repo(tmp_path / "r", "files"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        queue(app, b"refs/heads/topic/000")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*f"Queue: {command}")
        palette = app.screen
        await wait_for(pilot, lambda: palette._list_visible and palette.query_one("CommandList").option_count)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt))
        assert app.screen.title_text == title
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
