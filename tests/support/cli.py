"""Running ``refscope`` as a user at a shell does: a child ``python -m refscope.app``, output captured.

Every command test goes through ``refscope`` (stdout into a pipe; ``support.terminal`` gives it a terminal
instead). The environment is ``git_env()`` unless the test passes its own, so that the git the command may
run, and the repository it reads, behave as in the oracle's runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.git import git_env


def refscope(
    *args: str,
    cwd: str | Path | None = None,
    env: dict | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
    prefix: Sequence[str] = (),
    preexec_fn: Callable[[], object] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """``refscope ARGS`` in ``cwd``, fed ``stdin`` (None: no input), behind ``prefix`` (e.g. ``setpriv
    ...``): the completed process, stdout and stderr as bytes."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "refscope.app", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=git_env() if env is None else env,
        timeout=timeout,
        preexec_fn=preexec_fn,
        check=check,
    )


def refscope_watch_json(repo: str | Path) -> subprocess.Popen:
    """``refscope watch -C REPO --json`` running, its stdout and stderr on pipes (with this process's own
    environment); the caller stops it."""
    return subprocess.Popen(
        [sys.executable, "-m", "refscope.app.cli", "watch", "-C", str(repo), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )


def refscope_delete(
    repo: str | Path, *args: str, stdin: bytes | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``refscope delete -C REPO ARGS``."""
    return refscope("delete", "-C", str(repo), *args, stdin=stdin, env=env)
