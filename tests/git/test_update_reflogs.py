"""Reflogs as git writes them: which refs get an entry (core.logAllRefUpdates true/false/always, unset in a
bare repository), the message, and the committer (environment, then config, then the system's defaults)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from refscope.backend.model import HASH_HEXSZ
from refscope.backend.update.commands import parse
from refscope.backend.update.txn import UpdateTransaction

from tests.support.update import copy_repo, git, git_binary, git_env, init_repo, leftovers, open_txn_store

NAMES = (
    "HEAD",
    "refs/heads/main",
    "refs/heads/new",
    "refs/tags/t",
    "refs/notes/n",
    "refs/custom/c",
    "refs/heads/sym",
)


def make(root: Path, fmt: str, bare: bool) -> Path:
    src = init_repo(root / "src", fmt=fmt)
    git(src, "config", "maintenance.auto", "false")
    for _ in range(500):  # the first commit's detached auto-maintenance, if any, must be done before copies
        if not (src / ".git" / "objects" / "maintenance.lock").exists():
            break
        time.sleep(0.01)
    if not bare:
        return src
    dst = root / "bare.git"
    git(root, "clone", "-q", "--bare", f"--ref-format={fmt}", str(src), str(dst))
    return dst


def batch(repo: Path) -> bytes:
    head = git(repo, "rev-parse", "HEAD").strip()
    return (
        b"update HEAD %s\ncreate refs/heads/new %s\ncreate refs/tags/t %s\ncreate refs/notes/n %s\n"
        b"create refs/custom/c %s\nsymref-create refs/heads/sym refs/heads/new\n" % ((head,) * 5)
    )


def show(repo: Path, env: dict) -> dict[str, tuple[int, bytes]]:
    out = {}
    for name in NAMES:
        p = subprocess.run(
            [git_binary(), "reflog", "show", "--format=%H %gd %gn %ge %gs", name],
            cwd=repo,
            capture_output=True,
            env=env,
        )
        out[name] = (p.returncode, p.stdout)
    return out


def log_files(repo: Path) -> dict[str, bytes]:
    gitdir = repo if (repo / "HEAD").exists() and not (repo / ".git").exists() else repo / ".git"
    logs = gitdir / "logs"
    return (
        {str(p.relative_to(logs)): p.read_bytes() for p in sorted(logs.rglob("*")) if p.is_file()}
        if logs.is_dir()
        else {}
    )


def run_both(src: Path, tmp: Path, env: dict, message: str | None, monkeypatch) -> tuple[Path, Path]:
    ours, theirs = copy_repo(src, tmp / "ours"), copy_repo(src, tmp / "theirs")
    data = batch(src)
    argv = [git_binary(), "update-ref"] + (["-m", message] if message else []) + ["--stdin"]
    proc = subprocess.run(argv, cwd=theirs, input=data, capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr
    for key in [k for k in os.environ if k.startswith("GIT_") or k == "EMAIL"]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("GIT_") or key == "EMAIL":
            monkeypatch.setenv(key, value)
    store = open_txn_store(ours)
    txn = UpdateTransaction(store, message=(message or "").encode())
    parsed = parse(data, hexsz=HASH_HEXSZ[store.repo.hash_name], resolve=txn.resolver())
    txn.queue(parsed.batches[0].commands)
    txn.commit()
    return ours, theirs


@pytest.mark.parametrize("fmt", ["files", "reftable"])
@pytest.mark.parametrize("bare", [False, True], ids=["worktree", "bare"])
@pytest.mark.parametrize("mode", [None, "true", "false", "always"])
def test_which_refs_get_entries(fmt: str, bare: bool, mode: str | None, tmp_path: Path, monkeypatch) -> None:
    src = make(tmp_path, fmt, bare)
    if mode is not None:
        git(src, "config", "core.logAllRefUpdates", mode)
    env = git_env()
    ours, theirs = run_both(src, tmp_path, env, "the message", monkeypatch)
    assert show(ours, env) == show(theirs, env)
    if fmt == "files":
        assert log_files(ours) == log_files(theirs)
    assert leftovers(ours) == []


IDENTITIES = {
    "env": {},
    "config": {
        "unset": ["GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"],
        "config": {"user.name": "Us Er", "user.email": "us@er"},
    },
    "committer-config": {
        "unset": ["GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"],
        "config": {
            "user.name": "Us Er",
            "user.email": "us@er",
            "committer.name": "Com Mitter",
            "committer.email": "c@m",
        },
    },
    "crud": {"set": {"GIT_COMMITTER_NAME": "  ,<Bob> the\nbuilder;. ", "GIT_COMMITTER_EMAIL": " <b@b>> "}},
    "empty-name": {"set": {"GIT_COMMITTER_NAME": ""}},
    "email-env": {"unset": ["GIT_COMMITTER_EMAIL"], "set": {"EMAIL": "from@env"}},
    "defaults": {"unset": ["GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"]},
}


@pytest.mark.parametrize("fmt", ["files", "reftable"])
@pytest.mark.parametrize("who", list(IDENTITIES))
def test_committer_identity(fmt: str, who: str, tmp_path: Path, monkeypatch) -> None:
    spec = IDENTITIES[who]
    src = make(tmp_path, fmt, False)
    for key, value in spec.get("config", {}).items():
        git(src, "config", key, value)
    env = git_env()
    for key in spec.get("unset", []):
        env.pop(key, None)
    env.pop("EMAIL", None)
    env.update(spec.get("set", {}))
    ours, theirs = run_both(src, tmp_path, env, None, monkeypatch)
    assert show(ours, env) == show(theirs, env)
    if fmt == "files":
        assert log_files(ours) == log_files(theirs)


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_long_message(fmt: str, tmp_path: Path, monkeypatch) -> None:
    """reftable keeps at most half a block of a message (git's xstrndup), trimmed; files keeps it whole."""
    from tests.support.update import reftable_files

    src = make(tmp_path, fmt, False)
    env = git_env()
    ours, theirs = run_both(src, tmp_path, env, "m" * 2047 + "  tail of a long message", monkeypatch)
    assert show(ours, env) == show(theirs, env)
    if fmt == "reftable":
        assert reftable_files(ours) == reftable_files(theirs)
    else:
        assert log_files(ours) == log_files(theirs)
