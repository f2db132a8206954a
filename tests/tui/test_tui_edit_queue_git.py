"""Editing refs from the TUI (issue 17): creates, moves and renames queued beside deletions, committed as
one transaction, through Pilot against real git repositories (both formats).

git is the oracle: the same edits fed to ``git update-ref --stdin`` on a copy made before the commit must
give the same ``for-each-ref`` and byte-identical reflogs (identities and dates fixed in both). Refusals --
in a dialog, or of the whole commit -- are one line, nothing queued or nothing changed on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from refscope.app.tui.screens.dialogs import ConfirmCommit, EditPrompt
from refscope.app.tui.screens.dialogs import Message as MessageDialog
from refscope.app.tui.screens.main import MainScreen
from refscope.app.tui.screens.operations import OperationScreen
from refscope.app.tui.widgets.queue import QueuePanel, entry_text
from textual.widgets import Input, Static

from tests.support.git import copy_repo, for_each_ref, git, ref_storage, use_git_identity
from tests.support.tui import make_app, make_repo, set_filter, wait_for
from tests.support.txn import check_clean, reflogs

pytestmark = pytest.mark.anyio
MESSAGE = "refscope: queue committed from the TUI"


def setup(tmp_path: Path, fmt: str) -> tuple[Path, str, str]:
    """make_repo's refs (topic/000..004, v1.0 annotated, origin/main and its HEAD) plus a branch ``side``
    one commit ahead: (path, HEAD's commit, side's commit)."""
    path = make_repo(tmp_path / "r", fmt, n=5)
    head = git(path, "rev-parse", "HEAD").strip().decode()
    tree = git(path, "rev-parse", "HEAD^{tree}").strip().decode()
    side = git(path, "commit-tree", tree, "-p", head, "-m", "side").strip().decode()
    git(path, "update-ref", "refs/heads/side", side)
    return path, head, side


def notices(app) -> list[str]:
    """Every notice shown so far, rendered as the toast renders it (a Text given with markup on is what
    crashed the app in a real terminal; Pilot mounts no toasts)."""
    from textual.content import Content

    return [
        str(Content.from_markup(n.message) if n.markup else Content(n.message)) for n in app._notifications
    ]


async def on(pilot, app, name: str) -> None:
    """The list's cursor on ``name`` (filtered to it)."""
    await set_filter(pilot, app, name)
    await wait_for(pilot, lambda: app.screen.ref_list.current_name() == name.encode())


async def answer(pilot, app, key: str, text: str) -> str | None:
    """``key`` opens an edit dialog; ``text`` is typed and entered. Returns the dialog's one-line refusal
    (the dialog then closed with escape), None when it was accepted."""
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, EditPrompt))
    prompt = app.screen
    prompt.query_one("#path", Input).value = text
    error = prompt.query_one("#prompt-error", Static)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen is not prompt or str(error.render()) not in ("", "…"))
    if app.screen is not prompt:
        return None
    shown = str(error.render())
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    return shown


async def commit(pilot, app) -> object:
    """``c`` then ``y``: the screen that follows (the result, or the refusal)."""
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
    await pilot.press("y")
    await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen | MessageDialog), timeout=30)
    return app.screen


async def test_mixed_queue_commits_as_git_update_ref(tmp_path: Path, ref_format: str, monkeypatch) -> None:
    use_git_identity(monkeypatch)
    path, head, side = setup(tmp_path, ref_format)
    v1 = git(path, "rev-parse", "refs/tags/v1.0").strip().decode()
    oracle = copy_repo(path, tmp_path / "oracle")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "feature/x") is None
        await on(pilot, app, "refs/tags/v1.0")
        assert await answer(pilot, app, "n", "from-tag") is None  # a branch: the tag's commit
        assert await answer(pilot, app, "t", "v1.0-copy") is None  # a tag: the tag object itself
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "M", "side") is None  # a ref name, resolved as git does
        await on(pilot, app, "refs/heads/topic/002")
        assert await answer(pilot, app, "M", side) is None  # a full object name
        await on(pilot, app, "refs/heads/topic/003")
        await pilot.press("space")
        await on(pilot, app, "refs/heads/main")
        assert await answer(pilot, app, "M", side[:40]) is None  # HEAD's branch: HEAD's reflog too
        queue = app.queue
        assert [entry_text(e) for e in queue.values()] == [
            f"create refs/heads/feature/x  -> {head[:8]}",
            f"create refs/heads/from-tag  -> {head[:8]}",
            f"create refs/tags/v1.0-copy  -> {v1[:8]}",
            f"move refs/heads/topic/001  {head[:8]} -> {side[:8]}",
            f"move refs/heads/topic/002  {head[:8]} -> {side[:8]}",
            f"delete refs/heads/topic/003 {head[:8]}",
            f"move refs/heads/main  {head[:8]} -> {side[:8]}",
        ]
        panel = app.screen.query_one(QueuePanel)
        assert panel.border_title == "queue · 7 · 0 stale"
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = str(app.screen.query_one("#commit-plan", Static).render())
        assert plan.startswith("Commit 7 edits (1 delete, 3 creates, 3 moves) in one atomic transaction")
        assert f"move refs/heads/topic/001  {head[:8]} -> {side[:8]}" in plan
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen | MessageDialog), timeout=30)
        assert isinstance(app.screen, OperationScreen), app.screen.query_one("#dialog-message").render()
        header = str(app.screen.query_one("#op-header", Static).render())
        assert header.startswith("committed: 1 delete, 3 creates, 3 moves (7 ref updates) with the native")
        assert len(app.queue) == 0
    feed = (
        f"create refs/heads/feature/x {head}\n"
        f"create refs/heads/from-tag {head}\n"
        f"create refs/tags/v1.0-copy {v1}\n"
        f"update refs/heads/topic/001 {side} {head}\n"
        f"update refs/heads/topic/002 {side} {head}\n"
        f"delete refs/heads/topic/003 {head}\n"
        f"update refs/heads/main {side} {head}\n"
    )
    git(oracle, "update-ref", "-m", MESSAGE, "--stdin", input=feed.encode())
    assert for_each_ref(path) == for_each_ref(oracle)
    assert reflogs(path, ref_format, tmp_path / "m1") == reflogs(oracle, ref_format, tmp_path / "m2")
    shown = git(path, "reflog", "show", "--format=%H %gs", "refs/heads/topic/001").decode().splitlines()
    assert shown[0] == f"{side} {MESSAGE}"
    head_log = git(path, "reflog", "show", "--format=%H %gs", "HEAD").decode().splitlines()
    assert head_log[0] == f"{side} {MESSAGE}"
    check_clean(path)


async def test_undo_entries_before_commit(tmp_path: Path, ref_format: str) -> None:
    path, head, side = setup(tmp_path, ref_format)
    before = ref_storage(path / ".git")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "made") is None
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "M", "side") is None
        await on(pilot, app, "refs/heads/topic/002")
        await pilot.press("space")
        await on(pilot, app, "refs/heads/topic/003")
        await pilot.press("space")
        assert list(app.queue) == [
            b"refs/heads/made",
            b"refs/heads/topic/001",
            b"refs/heads/topic/002",
            b"refs/heads/topic/003",
        ]
        await on(pilot, app, "refs/heads/topic/001")
        await pilot.press("u")  # the entry of the ref under the cursor: the move
        assert list(app.queue) == [b"refs/heads/made", b"refs/heads/topic/002", b"refs/heads/topic/003"]
        assert notices(app)[-1] == f"undone: move refs/heads/topic/001  {head[:8]} -> {side[:8]}"
        await on(pilot, app, "refs/heads/side")
        await pilot.press("u")  # side has none: the last one queued
        assert list(app.queue) == [b"refs/heads/made", b"refs/heads/topic/002"]
        panel = app.screen.query_one(QueuePanel)
        panel.focus()
        panel.cursor = 0
        await pilot.press("u")  # in the queue panel: the entry under its cursor
        assert list(app.queue) == [b"refs/heads/topic/002"]
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "M", "side") is None
        await pilot.press("U")
        assert len(app.queue) == 0
        await pilot.press("u")
        await pilot.pause()
        shown = notices(app)
        assert f"queued: move refs/heads/topic/001  {head[:8]} -> {side[:8]}" in shown
        assert f"undone: create refs/heads/made  -> {head[:8]}" in shown
        assert shown[-1] == "the queue is empty: nothing to undo"
    assert ref_storage(path / ".git") == before


async def test_stale_edits_refuse_the_commit(tmp_path: Path, ref_format: str) -> None:
    """A created name that appeared meanwhile and a moved ref that moved: flagged stale on the next
    snapshot; committing anyway is refused whole, one line, no byte changed; ``d`` commits the rest."""
    path, head, side = setup(tmp_path, ref_format)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "later") is None
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "M", "side") is None
        await on(pilot, app, "refs/heads/topic/002")
        assert await answer(pilot, app, "t", "kept") is None
        await on(pilot, app, "refs/heads/topic/003")
        assert await answer(pilot, app, "R", "taken") is None
        git(path, "update-ref", "refs/heads/later", side)  # someone else creates it
        git(path, "update-ref", "refs/heads/topic/001", side)  # and moves this one
        git(path, "update-ref", "refs/heads/taken", side)  # and takes the rename's new name
        app.set_snapshot(app.store.refresh(app.snapshot), "watch")
        await pilot.pause()
        stale = {e.name: e.stale for e in app.queue.values() if e.stale}
        assert stale == {
            b"refs/heads/later": f"exists now at {side[:8]}",
            b"refs/heads/topic/001": f"now at {side[:8]}",
            b"refs/heads/topic/003": f"refs/heads/taken exists now at {side[:8]}",
        }
        before = ref_storage(path / ".git")
        shown = await commit(pilot, app)
        assert isinstance(shown, MessageDialog)
        body = str(shown.query_one("#dialog-message", Static).render())
        first = body.splitlines()[0]
        assert any(n in first for n in ("refs/heads/later", "refs/heads/topic/001", "refs/heads/taken")), body
        assert "Nothing was changed" in body
        assert ref_storage(path / ".git") == before
        assert len(app.queue) == 4
        await pilot.press("escape")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("d")  # leave the stale ones out, commit the rest
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen | MessageDialog), timeout=30)
        assert isinstance(app.screen, OperationScreen)
        assert set(app.queue) == {b"refs/heads/later", b"refs/heads/topic/001", b"refs/heads/topic/003"}
    assert (b"refs/tags/kept", head.encode(), b"", b"") in for_each_ref(path, "refs/tags/kept")


@pytest.mark.parametrize(
    ("key", "cursor", "text", "refusal"),
    [
        ("n", "refs/heads/topic/000", "a..b", "'refs/heads/a..b' is not a valid ref name: contains '..'"),
        ("n", "refs/heads/topic/000", "-x", "'-x' is not a valid branch name"),
        ("n", "refs/heads/topic/000", "HEAD", "'HEAD' is not a valid branch name"),
        ("n", "refs/heads/topic/000", "topic/001", "a branch named 'topic/001' already exists"),
        (
            "n",
            "refs/heads/topic/000",
            "topic",
            "'refs/heads/topic/000' exists; cannot create 'refs/heads/topic'",
        ),
        (
            "n",
            "refs/heads/topic/000",
            "side/x",
            "'refs/heads/side' exists; cannot create 'refs/heads/side/x'",
        ),
        ("t", "refs/heads/topic/000", "v1.0", "tag 'v1.0' already exists"),
        ("t", "refs/heads/topic/000", "   ", "nothing given"),
        ("M", "refs/heads/topic/000", "nosuch", "not a valid revision: nosuch"),
        ("M", "refs/heads/topic/000", "topic/001", "refs/heads/topic/000 is at"),
        ("M", "refs/heads/topic/000", "HEAD^{tree}", "trying to write non-commit object"),
        ("M", "refs/heads/topic/000", "0" * 40, "the null object name is no value for"),
        (
            "M",
            "refs/heads/topic/000",
            "1" * 40,
            "trying to write ref 'refs/heads/topic/000' with nonexistent",
        ),
    ],
)
async def test_dialog_refusals(tmp_path: Path, key: str, cursor: str, text: str, refusal: str) -> None:
    path, head, side = setup(tmp_path, "files")
    before = ref_storage(path / ".git")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, cursor)
        shown = await answer(pilot, app, key, text)
        assert shown is not None and refusal in shown and "\n" not in shown, shown
        assert len(app.queue) == 0
    assert ref_storage(path / ".git") == before


async def test_symref_and_queued_refs_are_refused_in_one_line(tmp_path: Path) -> None:
    path, head, side = setup(tmp_path, "files")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/remotes/origin/HEAD")
        await pilot.press("M")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and len(app.queue) == 0
        await on(pilot, app, "refs/heads/topic/001")
        await pilot.press("space")
        await pilot.press("M")  # queued for deletion already
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and list(app.queue) == [b"refs/heads/topic/001"]
        await on(pilot, app, "refs/heads/topic/002")
        assert await answer(pilot, app, "M", "side") is None
        await pilot.press("space")  # space does not turn a queued move into a deletion
        assert app.queue[b"refs/heads/topic/002"].kind == "move"
        await on(pilot, app, "refs/heads/topic/000")
        refusal = await answer(pilot, app, "n", "refs/heads/topic/002/x")
        assert refusal is not None and "exists; cannot create" in refusal


async def test_checked_out_branch_kept_in_a_mixed_queue(tmp_path: Path, ref_format: str) -> None:
    path, head, side = setup(tmp_path, ref_format)
    git(path, "worktree", "add", "-q", str(tmp_path / "wt"), "topic/004")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "fresh") is None
        await on(pilot, app, "refs/heads/topic/004")
        await pilot.press("space")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = str(app.screen.query_one("#commit-plan", Static).render())
        assert "1 branch checked out in a worktree: refs/heads/topic/004" in plan
        before = ref_storage(path / ".git")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog), timeout=30)
        body = str(app.screen.query_one("#dialog-message", Static).render())
        assert body.splitlines()[0].endswith(
            f"cannot delete branch 'topic/004' used by worktree at '{tmp_path / 'wt'}'"
        )
        assert ref_storage(path / ".git") == before and len(app.queue) == 2
        await pilot.press("escape")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        await pilot.press("d")  # leave the checked-out branch out
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen | MessageDialog), timeout=30)
        assert isinstance(app.screen, OperationScreen)
        assert list(app.queue) == [b"refs/heads/topic/004"]
    names = [n for n, *_ in for_each_ref(path, "refs/heads/")]
    assert b"refs/heads/fresh" in names and b"refs/heads/topic/004" in names


async def test_git_engine_commits_a_mixed_queue(tmp_path: Path, ref_format: str, monkeypatch) -> None:
    use_git_identity(monkeypatch)
    path, head, side = setup(tmp_path, ref_format)
    app = make_app(path, engine="git")
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "M", "side") is None
        await on(pilot, app, "refs/heads/topic/001")
        await pilot.press("space")
        shown = await commit(pilot, app)
        assert isinstance(shown, OperationScreen)
    refs = {n: o for n, o, *_ in for_each_ref(path, "refs/heads/topic/")}
    assert refs[b"refs/heads/topic/000"] == side.encode() and b"refs/heads/topic/001" not in refs


async def test_rename_refused_by_the_git_engine(tmp_path: Path, ref_format: str) -> None:
    """git update-ref has no rename: the git engine refuses the whole queue with one line, the dialog
    warns of it first, and no byte changes."""
    path, head, side = setup(tmp_path, ref_format)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "R", "renamed") is None
        await on(pilot, app, "refs/heads/topic/002")
        await pilot.press("space")
        assert (
            entry_text(app.queue[b"refs/heads/topic/001"])
            == "rename refs/heads/topic/001 -> refs/heads/renamed"
        )
        await pilot.press("e")
        assert app.engine == "git"
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = str(app.screen.query_one("#commit-plan", Static).render())
        assert "Commit 2 edits (1 delete, 1 rename)" in plan and "the git engine has no rename" in plan
        before = ref_storage(path / ".git")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, MessageDialog), timeout=30)
        body = str(app.screen.query_one("#dialog-message", Static).render())
        assert body.splitlines()[0].endswith(
            "the git engine cannot rename refs ('git update-ref' has no rename): use the native engine"
        )
        assert ref_storage(path / ".git") == before and len(app.queue) == 2


async def test_rename_refusals_in_the_dialog(tmp_path: Path) -> None:
    path, head, side = setup(tmp_path, "files")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "R", "topic/002") == "a branch named 'topic/002' already exists"
        assert (
            await answer(pilot, app, "R", "refs/heads/topic/001")
            == "refs/heads/topic/001 is the ref's own name"
        )
        assert (
            await answer(pilot, app, "R", "a b")
            == "'refs/heads/a b' is not a valid ref name: contains a space"
        )
        # a ref may go under its own name as a directory (git branch -m a a/b): only other refs conflict
        assert await answer(pilot, app, "R", "topic/001/sub") is None
        assert app.queue[b"refs/heads/topic/001"].new_name == b"refs/heads/topic/001/sub"
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "topic/001/sub") == (
            "refs/heads/topic/001/sub is queued already (rename): u undoes that entry"
        )
        await on(pilot, app, "refs/remotes/origin/HEAD")
        await pilot.press("R")
        await pilot.pause()
        assert notices(app)[-1] == (
            "refs/remotes/origin/HEAD is a symbolic ref (→ refs/remotes/origin/main): rename the ref it points at"
        )


async def test_rename_in_a_mixed_queue_as_git_branch_m(tmp_path: Path, ref_format: str, monkeypatch) -> None:
    use_git_identity(monkeypatch)
    path, head, side = setup(tmp_path, ref_format)
    git(path, "update-ref", "-m", "moved once", "refs/heads/topic/001", side, head)  # a reflog to keep
    oracle = copy_repo(path, tmp_path / "oracle")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "R", "renamed") is None
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "made") is None
        await on(pilot, app, "refs/heads/topic/002")
        await pilot.press("space")
        shown = await commit(pilot, app)
        assert isinstance(shown, OperationScreen), shown.query_one("#dialog-message").render()
    git(oracle, "branch", "-m", "topic/001", "renamed")
    feed = f"create refs/heads/made {head}\ndelete refs/heads/topic/002 {head}\n"
    git(oracle, "update-ref", "-m", MESSAGE, "--stdin", input=feed.encode())
    assert for_each_ref(path) == for_each_ref(oracle)
    assert reflogs(path, ref_format, tmp_path / "m1") == reflogs(oracle, ref_format, tmp_path / "m2")
    fmt = "--format=%H %gs"
    kept = git(path, "reflog", "show", fmt, "refs/heads/renamed").decode()
    assert (
        f"{side} moved once" in kept and "Branch: renamed refs/heads/topic/001 to refs/heads/renamed" in kept
    )
    assert git(path, "reflog", "show", fmt, "refs/heads/renamed") == git(
        oracle, "reflog", "show", fmt, "refs/heads/renamed"
    )
    check_clean(path)


async def test_rename_head_branch_moves_head(tmp_path: Path, ref_format: str, monkeypatch) -> None:
    """HEAD's own branch renamed: HEAD follows, as with git branch -m; the dialog warns of nothing it
    would not do (HEAD does not dangle)."""
    use_git_identity(monkeypatch)
    path, head, side = setup(tmp_path, ref_format)
    oracle = copy_repo(path, tmp_path / "oracle")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/main")
        assert await answer(pilot, app, "R", "trunk") is None
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCommit))
        plan = str(app.screen.query_one("#commit-plan", Static).render())
        assert plan.startswith("Commit 1 edit (1 rename)") and "HEAD" not in plan, plan
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, OperationScreen | MessageDialog), timeout=30)
        assert isinstance(app.screen, OperationScreen)
        assert app.snapshot.head().target == b"refs/heads/trunk"
    git(oracle, "branch", "-m", "main", "trunk")
    assert git(path, "symbolic-ref", "HEAD") == git(oracle, "symbolic-ref", "HEAD") == b"refs/heads/trunk\n"
    assert for_each_ref(path) == for_each_ref(oracle)
    assert reflogs(path, ref_format, tmp_path / "m1") == reflogs(oracle, ref_format, tmp_path / "m2")
    check_clean(path)


async def test_rename_into_its_own_name_space_as_git_branch_m(
    tmp_path: Path, ref_format: str, monkeypatch
) -> None:
    """``R`` on HEAD's branch ``main`` with ``main/b`` (git branch -m main main/b), committed: git sees
    what git branch -m leaves -- the refs, HEAD on the new name, every reflog -- and the repository
    passes git refs verify and fsck."""
    use_git_identity(monkeypatch)
    path, head, side = setup(tmp_path, ref_format)
    git(path, "update-ref", "-m", "moved once", "refs/heads/main", side, head)  # a reflog to keep
    oracle = copy_repo(path, tmp_path / "oracle")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/main")
        assert await answer(pilot, app, "R", "main/b") is None
        assert entry_text(app.queue[b"refs/heads/main"]) == "rename refs/heads/main -> refs/heads/main/b"
        shown = await commit(pilot, app)
        assert isinstance(shown, OperationScreen), shown.query_one("#dialog-message").render()
        await wait_for(pilot, lambda: app.snapshot.head().target == b"refs/heads/main/b")
    git(oracle, "branch", "-m", "main", "main/b")
    assert for_each_ref(path) == for_each_ref(oracle)
    assert git(path, "symbolic-ref", "HEAD") == git(oracle, "symbolic-ref", "HEAD") == b"refs/heads/main/b\n"
    assert reflogs(path, ref_format, tmp_path / "m1") == reflogs(oracle, ref_format, tmp_path / "m2")
    fmt = "--format=%H %gd %gn %ge %gs"
    for name in ("refs/heads/main/b", "HEAD"):
        assert git(path, "reflog", "show", fmt, name) == git(oracle, "reflog", "show", fmt, name)
    assert b"moved once" in git(path, "reflog", "show", fmt, "refs/heads/main/b")
    check_clean(path)


async def test_bench_of_a_mixed_queue(tmp_path: Path, ref_format: str) -> None:
    """``b`` on a queue with edits: the update bench through both engines on scratch copies (the
    repository itself untouched, the queue kept)."""
    from refscope.app.tui.screens.operations import BenchScreen

    path, head, side = setup(tmp_path, ref_format)
    app = make_app(path)
    async with app.run_test(size=(160, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        assert await answer(pilot, app, "n", "benched") is None
        await on(pilot, app, "refs/heads/topic/001")
        assert await answer(pilot, app, "M", "side") is None
        await on(pilot, app, "refs/heads/topic/002")
        await pilot.press("space")
        before = ref_storage(path / ".git")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), timeout=120)
        table = str(app.screen.query_one("#bench-result", Static).render())
        assert table.startswith(
            "refscope bench: update-ref --stdin, 3 commands (create 1, update 1, delete 1)"
        )
        rows = [ln.split()[0] for ln in table.splitlines() if ln.startswith(("native ", "git "))]
        assert rows == ["native", "git"], table
        assert "refused" not in table
        assert ref_storage(path / ".git") == before and len(app.queue) == 3


async def test_palette_offers_every_edit(tmp_path: Path) -> None:
    """The command palette's edit entries do what their keys do: a tag queued through "Edit: new tag",
    taken back through "Queue: undo"."""
    path, head, _side = setup(tmp_path, "files")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/000")
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        assert {
            "Edit: new branch",
            "Edit: new tag",
            "Edit: rename ref",
            "Edit: move ref",
            "Queue: undo",
            "Queue: clear",
            "Sort: next order",
            "Dates: relative / ISO",
        } <= set(commands)
        commands["Edit: new tag"]()
        await wait_for(pilot, lambda: isinstance(app.screen, EditPrompt) and app.screen.query("#path"))
        app.screen.query_one("#path", Input).value = "from-palette"
        await pilot.press("enter")
        await wait_for(pilot, lambda: list(app.queue) == [b"refs/tags/from-palette"])
        commands["Queue: undo"]()
        await wait_for(pilot, lambda: len(app.queue) == 0)


def test_bulk_deletions_leave_out_a_name_a_rename_takes() -> None:
    """``a`` (mark all shown) and ``i`` (load a queue file) queue deletions in bulk; a name a queued rename
    takes is left out of them, as ``space`` refuses it: one entry per name, whatever the path."""
    from refscope.app.tui.widgets.queue import RENAME, Entry, Queue
    from refscope.backend.model import Ref

    queue = Queue()
    old = Ref(b"refs/heads/a", b"1" * 40, None, None, None)
    assert queue.add_edit(Entry(b"refs/heads/a", old, kind=RENAME, new_name=b"refs/heads/b")) is None
    taken = Ref(b"refs/heads/b", b"2" * 40, None, None, None)
    other = Ref(b"refs/heads/c", b"3" * 40, None, None, None)
    assert queue.add_many([taken, other, old]) == 1
    assert list(queue) == [b"refs/heads/a", b"refs/heads/c"] and queue[b"refs/heads/a"].kind == RENAME
    assert queue.add_entries([Entry(b"refs/heads/b", taken), Entry(b"refs/heads/d", other)]) == 1
    assert list(queue) == [b"refs/heads/a", b"refs/heads/c", b"refs/heads/d"]


def post_burst(app, keys: list[str]) -> None:
    """Queue keys all at once, as a terminal delivers a fast burst (tmux ``send-keys R End BSpace ...``
    is one read; ``Pilot.press`` waits between keys)."""
    from textual import events
    from textual.keys import _character_to_key

    for key in keys:
        app.post_message(events.Key(_character_to_key(key), key) if len(key) == 1 else events.Key(key, None))


# the dialog opens mid-burst; the keys behind its key land in its field, edits and letters in order
EDIT_BURSTS = [
    (["R", "end", *["backspace"] * 4, "x", "y"], "refs/heads/topicxy"),  # (R: the full name, to edit)
    (["R", "home", "delete", "delete", "Z", "end", "backspace", "q"], "Zfs/heads/topic/00q"),
    (["n", *"topic", "backspace", "backspace", *"xy", "left", "left", "backspace", "Q"], "toQxy"),
]


@pytest.mark.parametrize(("keys", "value"), EDIT_BURSTS)
async def test_edit_dialog_takes_a_burst_in_order(tmp_path: Path, keys: list[str], value: str) -> None:
    path, _head, _side = setup(tmp_path, "files")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on(pilot, app, "refs/heads/topic/001")
        await pilot.press("escape")  # (the list has the focus, the filter stays)
        post_burst(app, keys)
        await wait_for(pilot, lambda: isinstance(app.screen, EditPrompt))
        field = app.screen.query_one("#path", Input)
        await wait_for(pilot, lambda: field.value == value, timeout=5)
        await pilot.pause()
        assert field.value == value
        assert app.screen.focused is field
