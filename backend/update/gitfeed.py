"""The git engine for general transactions: the same commands fed to ``git update-ref --stdin -z``.

The yardstick and the fallback: the commands are written back in git's ``-z`` form (every argument of a
command present, so that git reads exactly as many NUL-terminated fields as it expects), inside
``start`` / ``prepare`` / ``commit``; git's ``fatal:`` line comes back as the typed refusal.
"""

from __future__ import annotations

import os

from ..engines.git import git_binary, map_error, run_update_ref


def encode(commands) -> bytes:
    """``start``, the commands in the -z form (``option no-deref`` before each one that asks), ``prepare``,
    ``commit``."""
    out = [b"start\0"]
    for c in commands:
        if c.no_deref:
            out.append(b"option no-deref\0")
        v = c.verb.encode()
        name = c.name
        if v == b"update":
            out.append(b"update %s\0%s\0%s\0" % (name, c.new, c.old or b""))
        elif v == b"create":
            out.append(b"create %s\0%s\0" % (name, c.new))
        elif v == b"delete":
            out.append(b"delete %s\0%s\0" % (name, c.old or b""))
        elif v == b"verify":
            out.append(b"verify %s\0%s\0" % (name, c.old))
        elif v == b"symref-update":
            if c.old_target is not None:
                tail = b"ref\0%s\0" % c.old_target
            elif c.old is not None:
                tail = b"oid\0%s\0" % c.old
            else:
                tail = b"\0\0"
            out.append(b"symref-update %s\0%s\0%s" % (name, c.new_target, tail))
        elif v == b"symref-create":
            out.append(b"symref-create %s\0%s\0" % (name, c.new_target))
        elif v == b"symref-delete":
            out.append(b"symref-delete %s\0%s\0" % (name, c.old_target or b""))
        else:  # symref-verify
            out.append(b"symref-verify %s\0%s\0" % (name, c.old_target or b""))
    out.append(b"prepare\0commit\0")
    return b"".join(out)


def commit(repo, commands, *, message: bytes = b"") -> None:
    """Run git on ``commands``; raises the typed refusal when git refuses."""
    argv = [git_binary(), "--git-dir=" + repo.gitdir, "update-ref"]
    if message:
        argv += ["-m", os.fsdecode(message)]
    argv += ["--stdin", "-z"]
    returncode, err = run_update_ref(repo, argv, encode(commands))
    if returncode != 0:
        refused = map_error(err, repo.gitdir)
        if refused.file is None:
            refused.file = repo.gitdir
        raise refused
