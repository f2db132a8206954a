"""What both native engines share: the deletion record, ref paths, the committer ident, config lookups.

Kept free of heavy imports: the CLI delete path imports this module on every run.
"""

from __future__ import annotations

import os
import sys
import time
from collections import namedtuple

from ..errors import TransactionRefused
from ..model import HASH_HEXSZ, PER_WORKTREE_PREFIXES


class Deletion(namedtuple("Deletion", "name old_oid")):
    """One queued deletion: ``name`` (bytes) as the user gave it and ``old_oid`` the value it was seen at
    (hex bytes; None = unchecked). collections.namedtuple: the CLI path never needs ``typing``."""

    __slots__ = ()


class RefUpdate:
    """One entry of a native engine's update list (git's ``struct ref_update``): a deletion the user asked
    for, or the log-only entry git adds for a symref or HEAD through which a ref is deleted. ``old``: the
    expected value (None: unchecked); ``parent``: the entry this one was split from; ``current``: the
    effective value read under the lock. Each engine subclasses it with what its protocol reads under the
    lock (files: the loose file and the lock path; reftable: the stack).

    Mutable, like git's: ``split_symref_update`` turns the entry it splits into a log-only one after the
    fact, and the engines fill in what they read under the locks step by step (``__slots__``: a delete of
    100k refs holds 100k of them)."""

    __slots__ = ("name", "old", "log_only", "no_deref", "via_head", "parent", "current")

    def __init__(self, name: bytes, old: bytes | None, no_deref: bool) -> None:
        self.name = name
        self.old = old
        self.log_only = False
        self.no_deref = no_deref
        self.via_head = False
        self.parent: RefUpdate | None = None
        self.current: bytes | None = None


def zero_oid(hash_name: str) -> bytes:
    return b"0" * HASH_HEXSZ[hash_name]


def is_per_worktree(name: bytes) -> bool:
    """git's is_per_worktree_ref + root refs (HEAD...): these live in the worktree's own git dir."""
    return name.startswith(PER_WORKTREE_PREFIXES) or not name.startswith(b"refs/")


def ref_base(repo, name: bytes) -> str:
    """The directory a loose ref (or its reflog) is stored under: gitdir for per-worktree refs."""
    return repo.gitdir if is_per_worktree(name) else repo.commondir


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def ref_path(repo, name: bytes) -> str:
    """``os.path.join(ref_base(repo, name), os.fsdecode(name))`` without its calls: the engines build one
    path per ref (a valid refname is relative, so the join is a concatenation)."""
    base = (
        repo.gitdir
        if name.startswith(PER_WORKTREE_PREFIXES) or not name.startswith(b"refs/")
        else repo.commondir
    )
    return (base if base.endswith("/") else base + "/") + name.decode(_FS_ENCODING, _FS_ERRORS)


def log_path(repo, name: bytes) -> str:
    """The reflog of ``name``: ``<ref_base>/logs/<name>`` (as ``ref_path``)."""
    base = (
        repo.gitdir
        if name.startswith(PER_WORKTREE_PREFIXES) or not name.startswith(b"refs/")
        else repo.commondir
    )
    return (base if base.endswith("/") else base + "/") + "logs/" + name.decode(_FS_ENCODING, _FS_ERRORS)


def auto_compaction() -> bool:
    """Does a write end with auto-compaction? git always compacts (there is no config key for it); only
    its test variable GIT_TEST_REFTABLE_AUTOCOMPACTION (git_env_bool, default true) turns it off."""
    from ..config import ConfigError, parse_bool

    raw = os.environ.get("GIT_TEST_REFTABLE_AUTOCOMPACTION")
    try:
        return True if raw is None else parse_bool(raw, "GIT_TEST_REFTABLE_AUTOCOMPACTION")
    except ConfigError:
        return True


def fsync_references(repo) -> bool:
    config = getattr(repo, "config", None)
    return bool(config is not None and config.fsync_references())


def log_all_ref_updates(repo) -> str:
    """core.logAllRefUpdates as git reads it: "always", "true" or "false" (unset: true unless bare)."""
    config = getattr(repo, "config", None)
    raw = config.get("core.logallrefupdates") if config is not None else None
    if raw is None:
        return "false" if repo.bare else "true"
    if raw.lower() == "always":
        return "always"
    return "true" if config.get_bool("core.logallrefupdates") else "false"


def should_autocreate_reflog(mode: str, name: bytes) -> bool:
    if mode == "always":
        return True
    if mode == "true":
        return name.startswith((b"refs/heads/", b"refs/remotes/", b"refs/notes/")) or name == b"HEAD"
    return False


def _parse_date(text: str) -> tuple[int, str] | None:
    """The raw forms of GIT_COMMITTER_DATE: ``<unix> <+hhmm>`` and ``@<unix> <+hhmm>``."""
    parts = text.strip().split()
    if len(parts) == 2:
        stamp, tz = parts
        stamp = stamp.lstrip("@")
        if stamp.isdigit() and len(tz) == 5 and tz[0] in "+-" and tz[1:].isdigit():
            return int(stamp), tz
    if len(parts) == 1 and parts[0].lstrip("@").isdigit():
        return int(parts[0].lstrip("@")), "+0000"
    return None


def _local_tz(now: float) -> str:
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    offset = abs(offset)
    return f"{sign}{offset // 60:02d}{offset % 60:02d}"


class Ident(namedtuple("Ident", "name email time tz")):
    """git_committer_info(): who (``name``, ``email``: bytes) and when (``time``: int, ``tz``: "+hhmm")."""

    __slots__ = ()

    def line(self) -> bytes:
        return b"%s <%s> %d %s" % (self.name, self.email, self.time, self.tz.encode())

    def tz_minutes(self) -> int:
        sign = -1 if self.tz[0] == "-" else 1
        return sign * (int(self.tz[1:3]) * 60 + int(self.tz[3:5]))

    def tz_hhmm(self) -> int:
        """The tz as reftable stores it: the decimal number ``+hhmm`` reads as (git's atoi)."""
        sign = -1 if self.tz[0] == "-" else 1
        return sign * int(self.tz[1:])


def committer_ident(repo) -> Ident:
    """As git builds the committer ident: environment, then config, then the passwd entry."""
    env = os.environ
    config = getattr(repo, "config", None)

    def cfg(key: str) -> str | None:
        return config.get(key) if config is not None else None

    name = env.get("GIT_COMMITTER_NAME") or cfg("committer.name") or cfg("user.name")
    email = env.get("GIT_COMMITTER_EMAIL") or cfg("committer.email") or cfg("user.email") or env.get("EMAIL")
    if not name or not email:
        import pwd
        import socket

        try:
            pw = pwd.getpwuid(os.getuid())
            login, gecos = pw.pw_name, pw.pw_gecos.split(",")[0]
        except KeyError:
            login, gecos = "unknown", ""
        name = name or gecos or login
        email = email or f"{login}@{socket.gethostname()}"
    date = env.get("GIT_COMMITTER_DATE")
    parsed = _parse_date(date) if date else None
    if parsed is None:
        now = time.time()
        parsed = (int(now), _local_tz(now))
    return Ident(name.encode(), email.strip("<>").encode(), parsed[0], parsed[1])


def reflog_message(msg: bytes) -> bytes:
    """git's copy_reflog_msg: whitespace runs become one space, leading/trailing whitespace dropped."""
    return b" ".join(msg.split())


def splits_head(txn, u, head_ref: bytes | None) -> bool:
    """Whether ``u`` updates the ref HEAD points at (``head_ref``), so that HEAD's reflog gets a log-only
    entry of its own (git's split_head_update); refused as git does when HEAD is updated itself too.
    ``txn``: the engine's transaction, with ``names`` (the names updated so far) and ``repo``."""
    if head_ref is None or u.log_only or u.via_head or u.name != head_ref:
        return False
    if b"HEAD" in txn.names:
        raise TransactionRefused(
            txn.repo.gitdir,
            "multiple updates for 'HEAD' (including one via its referent "
            f"'{u.name.decode('utf-8', 'replace')}') are not allowed",
        )
    return True


def split_symref_update(txn, u: RefUpdate, target: bytes, make) -> RefUpdate:
    """git's split_symref_update: a deletion through symref ``u`` becomes a deletion of ``target`` (made by
    ``make(name, old, no_deref)`` and returned, for the engine to add to its list) plus a log-only update
    of ``u``; both engines share it, and git's refusal when the transaction (``txn.names``) also names
    ``target`` itself."""
    if target in txn.names:
        raise TransactionRefused(
            txn.repo.gitdir,
            f"multiple updates for '{target.decode('utf-8', 'replace')}' (including one via symref "
            f"'{u.name.decode('utf-8', 'replace')}') are not allowed",
        )
    child = make(target, u.old, txn.no_deref)
    child.parent = u
    child.via_head = u.via_head or u.name == b"HEAD"
    u.log_only = True
    u.no_deref = True
    return child
