"""A generated history for the object and format tests: what git's object readers must get right."""

from __future__ import annotations

from pathlib import Path

from tests.support.git import git


def history(repo: Path, commits: int = 40) -> None:
    """Commits whose blobs grow (so repack makes delta chains), varied idents, zones and messages, merges,
    annotated and nested tags, a tag of a blob and of a tree."""
    lines = []
    for i in range(1, commits + 1):
        body = "".join(f"line {j}\n" for j in range(i * 30))
        lines.append(f"blob\nmark :{i}\ndata {len(body)}\n{body}")
    for i in range(1, commits + 1):
        msg = f"subject {i}\nwrapped {i}\n\nbody {i}\n" if i % 3 else f"\n\nsubject only {i}\r\n"
        zone = ("+0000", "-0130", "+0545", "-1200")[i % 4]
        lines.append(
            f"commit refs/heads/{'side' if i % 5 == 0 else 'main'}\nmark :{1000 + i}\n"
            f"author Au{i % 3} <au{i % 3}@example.com> {1700000000 + i * 97} {zone}\n"
            f"committer Co <co@example.com> {1700000000 + i * 101} {zone}\n"
            f"data {len(msg.encode())}\n{msg}"
        )
        if i > 1:
            lines.append(f"from :{1000 + i - 1}\n")
        if i % 7 == 0 and i > 2:
            lines.append(f"merge :{1000 + i - 2}\n")
        lines.append(f"M 100644 :{i} file{i % 4}\n\n")
    git(repo, "fast-import", "--quiet", "--force", input="".join(lines).encode())
    git(repo, "tag", "-a", "t1", "-m", "tag one\n\ntag body", "main~3")
    git(repo, "tag", "-a", "t2", "-m", "nested", "t1")
    git(repo, "tag", "-a", "tblob", "-m", "a blob", "main:file1")
    git(repo, "tag", "-a", "ttree", "-m", "a tree", "main^{tree}")
