from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.git import git_binary, init_repo


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
