from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git import git_binary, init_repo


def pytest_configure(config: pytest.Config) -> None:
    """Signals as a terminal gives them, whatever started the suite: a background job of a non-interactive
    shell inherits SIGINT and SIGQUIT ignored, ``nohup`` SIGHUP, and so would every refscope and git the
    tests start -- the signal tests would then see processes that cannot be interrupted."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def anyio_backend() -> str:
    """The Pilot tests (``pytest.mark.anyio``) run on asyncio, Textual's loop."""
    return "asyncio"


@pytest.fixture(scope="session")
def git_bin() -> str:
    """Path of the reftable-capable git used as the oracle."""
    return git_binary()


@pytest.fixture(params=["files", "reftable"])
def ref_format(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def repo(tmp_path: Path, git_bin: str, ref_format: str) -> Path:
    """A non-bare repository of each ref format with one commit on main."""
    return init_repo(tmp_path / "repo", fmt=ref_format)
