"""The embedded demo repository, built without git: ``build_demo(path, fmt="files"|"reftable") -> str``.

Why write it ourselves: ``refscope --demo`` and the screenshots must work on a machine without a modern
git, and always look the same. Everything is deterministic (fixed times, fixed names), every object is
real (zlib-compressed loose objects whose ids are their hashes, so ``git fsck`` passes), and the ref
storage shows what refscope is about: a packed-refs file of a few hundred records with peeled annotated
tags (one nested), loose refs shadowing packed ones, a symref, reflogs, and names that need escaping (a
bidi override and a C1 control). The reftable variant writes the same refs as a stack of tables with
READER-RT's writer (several tables, with tombstones and re-created refs, so the stack view has history).
"""

from __future__ import annotations

import hashlib
import os
import zlib

from .model import HASH_HEXSZ

AUTHOR = b"Ada Demo <ada@example.com>"
COMMITTER = b"Ref Scope <refscope@example.com>"
T0 = 1_750_000_000  # fixed epoch for every date
BIDI_NAME = "refs/heads/review/\u202egnp.exe".encode()  # right-to-left override
C1_NAME = b"refs/heads/odd/c1-\xc2\x85-next-line"  # U+0085 NEL, a C1 control


class _Objects:
    """Writes loose objects into ``objects/`` and returns their hex ids."""

    def __init__(self, gitdir: str, hash_name: str) -> None:
        self.dir = os.path.join(gitdir, "objects")
        self.hash_name = hash_name

    def write(self, kind: bytes, body: bytes) -> bytes:
        data = kind + b" " + str(len(body)).encode() + b"\0" + body
        oid = hashlib.new(self.hash_name, data).hexdigest().encode()
        d = os.path.join(self.dir, oid[:2].decode())
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, oid[2:].decode())
        if not os.path.exists(path):
            _write(path, zlib.compress(data, 9))
        return oid

    def blob(self, text: bytes) -> bytes:
        return self.write(b"blob", text)

    def tree(self, entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
        """entries: (mode, name, hex oid); sorted as git sorts tree entries."""

        def key(e):
            return e[1] + (b"/" if e[0] == b"40000" else b"")

        body = b"".join(
            m + b" " + n + b"\0" + bytes.fromhex(o.decode()) for m, n, o in sorted(entries, key=key)
        )
        return self.write(b"tree", body)

    def commit(self, tree: bytes, parents: list[bytes], when: int, message: bytes) -> bytes:
        lines = [b"tree " + tree] + [b"parent " + p for p in parents]
        lines.append(b"author " + AUTHOR + b" %d +0000" % when)
        lines.append(b"committer " + COMMITTER + b" %d +0000" % when)
        return self.write(b"commit", b"\n".join(lines) + b"\n\n" + message + b"\n")

    def tag(self, target: bytes, kind: bytes, name: bytes, when: int, message: bytes) -> bytes:
        body = (
            b"object " + target + b"\ntype " + kind + b"\ntag " + name + b"\ntagger " + COMMITTER
            + b" %d +0000\n\n" % when + message + b"\n"
        )  # fmt: skip
        return self.write(b"tag", body)


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _history(objs: _Objects) -> tuple[list[bytes], dict[bytes, tuple[bytes, bytes | None]]]:
    """Commits of main (oldest first) and the tags: name -> (tag object or commit oid, peeled)."""
    readme = b"# demo\n\nA repository made by refscope's demo builder.\n"
    commits: list[bytes] = []
    files: dict[bytes, bytes] = {b"README.md": objs.blob(readme)}
    parent: list[bytes] = []
    for i in range(8):
        files[b"src/file%d.txt" % i] = objs.blob(b"line %d\n" % i * (i + 1))
        src = [(b"100644", n.split(b"/", 1)[1], o) for n, o in files.items() if n.startswith(b"src/")]
        top = [(b"100644", n, o) for n, o in files.items() if b"/" not in n]
        tree = objs.tree(top + [(b"40000", b"src", objs.tree(src))])
        c = objs.commit(tree, parent, T0 + i * 3600, b"demo commit %d" % (i + 1))
        commits.append(c)
        parent = [c]
    tags: dict[bytes, tuple[bytes, bytes | None]] = {}
    for i, c in enumerate(commits[::2]):
        name = b"v1.%d" % i
        tags[b"refs/tags/" + name] = (objs.tag(c, b"commit", name, T0 + 90000 + i, b"release " + name), c)
    outer = objs.tag(tags[b"refs/tags/v1.3"][0], b"tag", b"v1.3-signed-off", T0 + 99999, b"nested tag")
    tags[b"refs/tags/v1.3-signed-off"] = (outer, commits[6])
    tags[b"refs/tags/lightweight"] = (commits[1], None)
    return commits, tags


def _refs(commits: list[bytes], tags) -> dict[bytes, tuple[bytes, bytes | None]]:
    """Every ref of the demo (name -> (oid, peeled)) except symrefs."""
    refs: dict[bytes, tuple[bytes, bytes | None]] = dict(tags)
    refs[b"refs/heads/main"] = (commits[-1], None)
    areas = (b"api", b"ui", b"storage", b"build", b"docs", b"perf")
    for i in range(120):
        refs[b"refs/heads/feature/%s/topic-%03d" % (areas[i % len(areas)], i)] = (commits[i % 8], None)
    for i in range(60):
        refs[b"refs/remotes/origin/release/%d.%d" % (i // 10, i % 10)] = (commits[(i * 3) % 8], None)
    refs[b"refs/remotes/origin/main"] = (commits[-2], None)
    for i in range(1, 2401):  # a hosting server's pull refs: a few thousand refs in all
        refs[b"refs/pull/%d/head" % i] = (commits[i % 8], None)
        if i % 4 == 0:
            refs[b"refs/pull/%d/merge" % i] = (commits[(i + 1) % 8], None)
    for i in range(20):
        refs[b"refs/notes/review-%02d" % i] = (commits[(i + 5) % 8], None)
    refs[BIDI_NAME] = (commits[3], None)
    refs[C1_NAME] = (commits[4], None)
    return refs


def _reflog_lines(hexlen: int, entries: list[tuple[bytes, bytes, int, bytes]]) -> bytes:
    out = []
    for old, new, when, msg in entries:
        out.append(old + b" " + new + b" " + COMMITTER + b" %d +0000\t" % when + msg + b"\n")
    return b"".join(out)


def build_demo(path: str, fmt: str = "files", hash_name: str = "sha1") -> str:
    """Write the demo repository at ``path`` (created if missing; must be empty) and return ``path``."""
    os.makedirs(path, exist_ok=True)
    gitdir = os.path.join(path, ".git")
    if os.path.exists(gitdir):
        raise FileExistsError(gitdir)
    hexlen = HASH_HEXSZ[hash_name]
    zero = b"0" * hexlen
    dirs = ["objects/info", "objects/pack", "refs", "info", "hooks"]
    if fmt == "files":
        dirs += ["refs/heads", "refs/tags", "logs/refs/heads"]
    for d in dirs:
        os.makedirs(os.path.join(gitdir, d), exist_ok=True)
    objs = _Objects(gitdir, hash_name)
    commits, tags = _history(objs)
    refs = _refs(commits, tags)
    ext = []
    version = 0
    if hash_name != "sha1":
        ext.append(f"\tobjectformat = {hash_name}\n")
        version = 1
    if fmt == "reftable":
        ext.append("\trefstorage = reftable\n")
        version = 1
    config = (
        f"[core]\n\trepositoryformatversion = {version}\n\tfilemode = true\n\tbare = false\n"
        "\tlogallrefupdates = true\n"
    )
    if ext:
        config += "[extensions]\n" + "".join(ext)
    _write(os.path.join(gitdir, "config"), config.encode())
    _write(os.path.join(gitdir, "description"), b"refscope demo repository\n")
    _write(os.path.join(gitdir, "info", "exclude"), b"")

    # history of main, for reflogs: each commit in turn
    main_log = []
    prev = zero
    for i, c in enumerate(commits):
        main_log.append((prev, c, T0 + i * 3600, b"commit: demo commit %d" % (i + 1)))
        prev = c
    if fmt == "reftable":
        _write_reftable(gitdir, refs, commits, main_log, hash_name)
        return path
    _write(os.path.join(gitdir, "HEAD"), b"ref: refs/heads/main\n")
    # packed-refs: everything except the loose-only refs, peeled values for annotated tags
    loose_only = {b"refs/heads/hotfix/urgent", b"refs/tags/v2.0-rc1"}
    shadowed = {b"refs/heads/feature/api/topic-000": commits[7], b"refs/remotes/origin/main": commits[-1]}
    lines = [b"# pack-refs with: peeled fully-peeled sorted \n"]
    for name in sorted(refs):
        oid, peeled = refs[name]
        lines.append(oid + b" " + name + b"\n")
        if peeled is not None:
            lines.append(b"^" + peeled + b"\n")
    _write(os.path.join(gitdir, "packed-refs"), b"".join(lines))
    loose = dict(shadowed)
    loose[b"refs/heads/main"] = commits[-1]
    loose[b"refs/heads/hotfix/urgent"] = commits[5]
    rc1 = objs.tag(commits[7], b"commit", b"v2.0-rc1", T0 + 123456, b"release candidate")
    loose[b"refs/tags/v2.0-rc1"] = rc1
    assert loose_only <= set(loose)
    for name, oid in loose.items():
        _write(os.path.join(gitdir, os.fsdecode(name)), oid + b"\n")
    _write(os.path.join(gitdir, "refs/remotes/origin/HEAD"), b"ref: refs/remotes/origin/main\n")
    # reflogs
    _write(os.path.join(gitdir, "logs/refs/heads/main"), _reflog_lines(hexlen, main_log))
    head_log = list(main_log) + [
        (commits[-1], commits[5], T0 + 50000, b"checkout: moving from main to hotfix/urgent"),
        (commits[5], commits[-1], T0 + 50060, b"checkout: moving from hotfix/urgent to main"),
    ]
    _write(os.path.join(gitdir, "logs/HEAD"), _reflog_lines(hexlen, head_log))
    _write(
        os.path.join(gitdir, "logs/refs/heads/hotfix/urgent"),
        _reflog_lines(hexlen, [(zero, commits[5], T0 + 50000, b"branch: Created from HEAD~2")]),
    )
    _write(
        os.path.join(gitdir, "logs/refs/heads/feature/api/topic-000"),
        _reflog_lines(
            hexlen,
            [
                (zero, commits[0], T0 + 1000, b"branch: Created from main~7"),
                (
                    commits[0],
                    commits[7],
                    T0 + 40000,
                    b"rebase (finish): refs/heads/feature/api/topic-000 onto main",
                ),
            ],
        ),
    )
    return path


def _write_reftable(gitdir: str, refs, commits, main_log, hash_name: str) -> None:
    """The same refs as a reftable stack: a big base table, then small tables that update, delete
    (tombstones) and re-create refs, so the stack has history worth showing."""
    from .formats.reftable.record import LogRecord, RefRecord
    from .formats.reftable.writer import write_table

    _write(os.path.join(gitdir, "HEAD"), b"ref: refs/heads/.invalid\n")
    _write(os.path.join(gitdir, "refs", "heads"), b"this repository uses the reftable format\n")
    rdir = os.path.join(gitdir, "reftable")
    os.makedirs(rdir, exist_ok=True)
    name_ident, email = COMMITTER.split(b" <")
    email = email.rstrip(b">")

    def log(name, ui, old, new, when, msg):
        return LogRecord(name, ui, 1, old, new, name_ident, email, when, 0, msg)

    tables = []
    # table 1: everything
    recs = [RefRecord(b"HEAD", 1, 3, target=b"refs/heads/main")]
    for name, (oid, peeled) in refs.items():
        recs.append(RefRecord(name, 1, 2 if peeled else 1, oid, peeled))
    recs.append(RefRecord(b"refs/remotes/origin/HEAD", 1, 3, target=b"refs/remotes/origin/main"))
    logs = [log(b"refs/heads/main", 1, o, n, w, m) for (o, n, w, m) in main_log[-1:]]
    tables.append((1, 1, recs, logs))
    # tables 2..6: updates, deletions and re-creations
    tables.append((2, 2, [RefRecord(b"refs/heads/hotfix/urgent", 2, 1, commits[5])], []))
    tables.append((3, 3, [RefRecord(b"refs/pull/%d/head" % i, 3, 0) for i in range(1, 11)], []))
    tables.append((4, 4, [RefRecord(b"refs/heads/feature/api/topic-000", 4, 1, commits[7])], []))
    tables.append(
        (5, 5, [RefRecord(b"refs/pull/%d/head" % i, 5, 1, commits[i % 8]) for i in range(1, 4)], [])
    )
    tables.append((6, 6, [RefRecord(b"refs/remotes/origin/main", 6, 1, commits[-1])], []))
    names = []
    for i, (lo, hi, recs, logs) in enumerate(tables):
        data = write_table(recs, logs, hash_name=hash_name, min_update_index=lo, max_update_index=hi)
        fname = f"0x{lo:012x}-0x{hi:012x}-{0x5EED0000 + i:08x}.ref"
        _write(os.path.join(rdir, fname), data)
        names.append(fname)
    _write(os.path.join(rdir, "tables.list"), "".join(n + "\n" for n in names).encode())
