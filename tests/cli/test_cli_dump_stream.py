"""``refscope dump`` streams: its memory does not grow with the file (a 28 MB table took 1.9 GB when the
whole description was built first), and the streamed output is the document encoded at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.git import create_refs, git, init_repo

N = 40_000  # refs (and as many reflog entries) of the table: its whole description is ~250 MB; and 5 * N
# packed-refs records

_PEAK = """
import resource, subprocess, sys
subprocess.run([sys.executable, "-m", "refscope.app", "dump", *sys.argv[1:]], stdout=subprocess.DEVNULL,
               check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@pytest.fixture(scope="module", params=["files", "reftable"])
def big_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp(request.param) / "r", fmt=request.param)
    create_refs(repo, (b"refs/heads/b%06d" % i for i in range(N)))
    git(repo, "pack-refs", "--all")
    if request.param == "files":
        return repo / ".git" / "packed-refs"
    return max((repo / ".git" / "reftable").glob("*.ref"), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("as_json", [False, True])
def test_dump_memory_is_bounded(big_file: Path, as_json: bool) -> None:
    args = ["--json", str(big_file)] if as_json else [str(big_file)]
    peak_kb = int(
        subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, check=True).stdout
    )
    assert peak_kb < 80_000, peak_kb  # the interpreter and imports are ~20 MB; one block at a time on top


def test_streamed_json_is_one_document(big_file: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "refscope.app", "dump", "--json", str(big_file)],
        capture_output=True,
        check=True,
    ).stdout
    doc = json.loads(out)
    repo = big_file.parent if doc["format"] == "packed-refs" else big_file.parent.parent
    want = git(repo.parent, "for-each-ref", "--format=%(refname)").decode().splitlines()
    if doc["format"] == "packed-refs":
        assert [r["name"] for r in doc["records"]] == want
    else:
        names = [r["name"] for b in doc["blocks"] if b["type"] == "r" for r in b["records"]]
        assert names == sorted(["HEAD", *want])
    assert out.endswith(b"]}\n") and out.count(b"\n") == 1
