"""Finding the repository as git does (setup.c), and the facts about it every store needs.

Why not ``git rev-parse``: a subprocess costs more than ``refscope list`` on a small repo, and the
rules are few: ``GIT_DIR`` (no discovery), else from the start directory upward trying ``.git`` (a
gitfile or a directory) then the directory itself (bare), stopping at ``GIT_CEILING_DIRECTORIES`` and,
unless ``GIT_DISCOVERY_ACROSS_FILESYSTEM``, at a mount point. ``commondir`` gives a linked worktree its
shared part. The ownership check and ``safe.directory`` follow ``ensure_valid_ownership``.
"""

from __future__ import annotations

import os
import stat as _stat
from collections import namedtuple
from collections.abc import Mapping

from .configload import load_protected, load_repo_config, parse_bool_env, read_file_entries
from .errors import DubiousOwnership, NotARepository, UnsupportedFormat
from .fileio import read_small

_GITFILE_MAX = 1 << 20
_HEX = frozenset(b"0123456789abcdefABCDEF")


class Repo(namedtuple("Repo", "gitdir commondir worktree bare ref_storage hash_name config")):
    """A discovered repository. ``gitdir``: absolute, this worktree's git dir; ``commondir``: absolute, the
    shared git dir; ``worktree``: absolute, or None for bare repos; ``bare``: bool; ``ref_storage``: "files" |
    "reftable"; ``hash_name``: "sha1" | "sha256"; ``config``: Config.

    (``collections.namedtuple``, not ``typing.NamedTuple``: see model.py on import cost.)"""

    __slots__ = ()

    def worktrees(self) -> list[tuple[str, bytes | None]]:
        """See ``list_worktrees``."""
        return list_worktrees(self)


def _validate_headref(path: str) -> bool:
    """git's validate_headref: HEAD is a symlink into refs/, ``ref: refs/...``, or a hex object id."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if _stat.S_ISLNK(st.st_mode):
        try:
            return os.readlink(path).startswith("refs/")
        except OSError:
            return False
    buf = read_small(path, 255)
    if buf is None:
        return False
    if buf.startswith(b"ref:"):
        return buf[4:].lstrip(b" \t\n\r\v\f").startswith(b"refs/")
    for n in (40, 64):
        if len(buf) >= n and all(c in _HEX for c in buf[:n]) and (len(buf) == n or buf[n] not in _HEX):
            return True
    return False


def _common_dir(gitdir: str, env: Mapping[str, str]) -> str:
    """GIT_COMMON_DIR, else the ``commondir`` file (relative to the git dir), else the git dir."""
    envdir = env.get("GIT_COMMON_DIR")
    if envdir:
        return envdir
    data = read_small(os.path.join(gitdir, "commondir"), 1 << 16)
    if data is None:
        return gitdir
    text = data.decode("utf-8", "surrogateescape").rstrip("\n\r")
    if not text:
        return gitdir
    return text if os.path.isabs(text) else os.path.join(gitdir, text)


def is_git_directory(path: str, env: Mapping[str, str]) -> bool:
    """git's is_git_directory: a valid HEAD, and objects/ and refs/ reachable in the common dir."""
    if not _validate_headref(os.path.join(path, "HEAD")):
        return False
    common = _common_dir(path, env)
    objects = env.get("GIT_OBJECT_DIRECTORY") or os.path.join(common, "objects")
    return os.access(objects, os.X_OK) and os.access(os.path.join(common, "refs"), os.X_OK)


def read_gitfile(path: str, env: Mapping[str, str]) -> str | None:
    """The git dir a ``.git`` file names (realpath), None when ``path`` is missing or a directory.

    Raises NotARepository with git's wording for every other failure (not a regular file, too large,
    not starting ``gitdir: ``, no path, or naming something that is not a git directory).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError:
        raise NotARepository(path, f"error reading '{path}'") from None
    if _stat.S_ISDIR(st.st_mode):
        return None
    if not _stat.S_ISREG(st.st_mode):
        raise NotARepository(path, f"not a regular file: '{path}'")
    if st.st_size > _GITFILE_MAX:
        raise NotARepository(path, f"too large to be a .git file: '{path}'")
    data = read_small(path, _GITFILE_MAX + 1)
    if data is None or len(data) != st.st_size:
        raise NotARepository(path, f"error reading {path}")
    if not data.startswith(b"gitdir: "):
        raise NotARepository(path, f"invalid gitfile format: {path}")
    data = data.rstrip(b"\r\n")
    if len(data) < 9:
        raise NotARepository(path, f"no path in gitfile: {path}")
    target = os.fsdecode(data[8:])
    if not os.path.isabs(target):
        target = os.path.join(os.path.dirname(path), target)
    if not is_git_directory(target, env):
        raise NotARepository(target, f"not a git repository: {target}")
    return os.path.realpath(target)


def _owned_by_me(path: str, env: Mapping[str, str]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    euid = os.geteuid()
    if euid == 0:
        sudo = env.get("SUDO_UID")
        if sudo and sudo.isdigit():
            euid = int(sudo)
    return st.st_uid == euid


def ownership_ok(
    gitfile: str | None, worktree: str | None, gitdir: str | None, env: Mapping[str, str]
) -> bool:
    """git's ensure_valid_ownership: all three owned by us, or ``safe.directory`` (system/global/command
    config only) allows the worktree (or, bare, the git dir)."""
    if (
        not parse_bool_env(env.get("GIT_TEST_ASSUME_DIFFERENT_OWNER"))
        and (not gitfile or _owned_by_me(gitfile, env))
        and (not worktree or _owned_by_me(worktree, env))
        and (not gitdir or _owned_by_me(gitdir, env))
    ):
        return True
    try:
        ident = os.path.realpath(worktree or gitdir or "", strict=True)
    except OSError:
        return False
    safe = False
    for value in load_protected(env).get_all("safe.directory"):
        if not value:
            safe = False
        elif value == "*":
            safe = True
        else:
            allowed = value
            if allowed.startswith("~/"):
                allowed = env.get("HOME", "") + allowed[1:]
            if not os.path.isabs(allowed) and allowed != ".":
                continue
            star = allowed.endswith("/*")
            try:
                norm = os.path.realpath(allowed[:-2] if star else allowed, strict=True)
            except OSError:
                continue
            if star:
                norm = norm.rstrip("/") + "/*"
                if ident.startswith(norm[:-1]):
                    safe = True
            elif ident == norm:
                safe = True
    return safe


def _implicit_bare_allowed(path: str, env: Mapping[str, str]) -> bool:
    """git's safe.bareRepository (protected config): ``explicit`` refuses a bare repository found by
    discovery, except the git dir of a non-bare repository (path ending in ``/.git``) or a worktree's or
    submodule's git dir inside one."""
    value = load_protected(env).get("safe.bareRepository")
    if value is None or value.lower() != "explicit":
        return True
    return path.endswith("/.git") or "/.git/worktrees/" in path or "/.git/modules/" in path


def _dubious(path: str) -> DubiousOwnership:
    return DubiousOwnership(
        path,
        f"detected dubious ownership in repository at '{path}' "
        f"(to add an exception: git config --global --add safe.directory {path})",
    )


def discover(path: str | None = None, env: Mapping[str, str] | None = None) -> Repo:
    """The repository git would use when run in ``path`` (``git -C path``; default: the cwd)."""
    env = os.environ if env is None else env
    if path is not None:
        if not os.path.isdir(path):
            raise NotARepository(path, f"cannot change to '{path}': No such file or directory")
        start = os.path.abspath(path)
    else:
        start = os.getcwd()

    gitdir_env = env.get("GIT_DIR")
    if gitdir_env == "":
        # set but empty is not unset: git takes it as the git dir and finds no repository there
        raise NotARepository(None, "not a git repository: ''")
    if gitdir_env:
        gd = gitdir_env if os.path.isabs(gitdir_env) else os.path.join(start, gitdir_env)
        via_file = read_gitfile(gd, env) if os.path.isfile(gd) else None
        if via_file is not None:
            gd = via_file
        if not is_git_directory(gd, env):
            raise NotARepository(gitdir_env, f"not a git repository: '{gitdir_env}'")
        gd = os.path.realpath(gd)
        wt_env = env.get("GIT_WORK_TREE")
        return _finish(gd, env, explicit=True, discovered_worktree=None, start=start, worktree_env=wt_env)

    ceilings = _ceiling_dirs(env)
    one_fs = not parse_bool_env(env.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"))
    cur = start
    try:
        dev = os.stat(cur).st_dev
    except OSError:
        dev = None
    while True:
        dotgit = os.path.join(cur, ".git")
        gitfile_target = read_gitfile(dotgit, env)
        if gitfile_target is not None:
            if not ownership_ok(dotgit, cur, gitfile_target, env):
                raise _dubious(cur)
            return _finish(gitfile_target, env, explicit=False, discovered_worktree=cur, start=start)
        if os.path.isdir(dotgit) and is_git_directory(dotgit, env):
            if not ownership_ok(None, cur, dotgit, env):
                raise _dubious(cur)
            return _finish(
                os.path.realpath(dotgit), env, explicit=False, discovered_worktree=cur, start=start
            )
        if is_git_directory(cur, env):
            if not _implicit_bare_allowed(cur, env):
                raise NotARepository(
                    cur, f"cannot use bare repository '{cur}' (safe.bareRepository is 'explicit')"
                )
            if not ownership_ok(None, None, cur, env):
                raise _dubious(cur)
            return _finish(os.path.realpath(cur), env, explicit=False, discovered_worktree=None, start=start)
        parent = os.path.dirname(cur)
        if parent == cur or any(_below(cur, c) and not _below(parent, c) for c in ceilings):
            break
        if one_fs and dev is not None:
            try:
                if os.stat(parent).st_dev != dev:
                    raise NotARepository(
                        start, f"not a git repository (or any parent up to mount point {cur})"
                    )
            except OSError:
                break
        cur = parent
    raise NotARepository(start, "not a git repository (or any of the parent directories): .git")


def _ceiling_dirs(env: Mapping[str, str]) -> list[str]:
    raw = env.get("GIT_CEILING_DIRECTORIES")
    if not raw:
        return []
    out = []
    for entry in raw.split(":"):
        if entry and os.path.isabs(entry):
            out.append(os.path.realpath(entry).rstrip("/") or "/")
    return out


def _below(path: str, ceiling: str) -> bool:
    """Is ``path`` strictly inside ``ceiling``? Discovery never looks at a ceiling nor above it."""
    return path != ceiling and (path.rstrip("/") + "/").startswith(ceiling.rstrip("/") + "/")


def _finish(
    gitdir: str,
    env: Mapping[str, str],
    *,
    explicit: bool,
    discovered_worktree: str | None,
    start: str,
    worktree_env: str | None = None,
) -> Repo:
    commondir = os.path.realpath(_common_dir(gitdir, env))
    version, exts = _read_format(commondir, env)
    ref_storage = "files"
    hash_name = "sha1"
    cfg_path = os.path.join(commondir, "config")
    if version not in (0, 1):
        raise UnsupportedFormat(cfg_path, f"Expected git repo version <= 1, found {version}")
    if version == 1:
        raw = exts.get("extensions.refstorage")
        if raw is not None:
            fmt, sep, payload = raw.partition("://")
            if fmt not in ("files", "reftable"):
                raise UnsupportedFormat(cfg_path, f"invalid value for 'extensions.refstorage': '{raw}'")
            if sep and payload:
                raise UnsupportedFormat(cfg_path, f"ref storage payload not supported: '{raw}'")
            ref_storage = fmt
        raw = exts.get("extensions.objectformat")
        if raw is not None:
            if raw.lower() not in ("sha1", "sha256"):
                raise UnsupportedFormat(cfg_path, f"invalid value for 'extensions.objectformat': '{raw}'")
            hash_name = raw.lower()
    else:
        v1_only = [k for k in exts if k in ("extensions.refstorage", "extensions.objectformat")]
        if v1_only:
            raise UnsupportedFormat(
                cfg_path, "repo version is 0, but v1-only extension found: " + v1_only[0][11:]
            )
    worktree_config = version == 1 and _truthy(exts.get("extensions.worktreeconfig", "false"))
    config = load_repo_config(commondir, gitdir, env, worktree_config)
    bare_cfg = config.get("core.bare") if config.has("core.bare") else None
    if gitdir != commondir and not worktree_config:
        # a linked worktree: setup ignores the common config's core.bare (a bare repository's linked
        # worktree has its working tree; setup.c check_repository_format_gently, has_common)
        bare_cfg = None
    bare = bool(bare_cfg is not None and _truthy(bare_cfg))
    worktree: str | None
    if worktree_env:
        worktree = os.path.realpath(os.path.join(start, worktree_env))
        bare = False
    elif explicit:
        core_wt = config.get("core.worktree")
        worktree = os.path.realpath(os.path.join(gitdir, core_wt)) if core_wt else None if bare else start
    elif discovered_worktree is not None and not bare:
        worktree = os.path.realpath(discovered_worktree)
    else:
        worktree = None
        if discovered_worktree is None:
            # found as the directory itself (a bare repository, or from inside a .git dir): core.bare
            # decides when set, as git's is_bare_repository does
            bare = True if bare_cfg is None else bare
    return Repo(gitdir, commondir, worktree, bare, ref_storage, hash_name, config)


def _truthy(value: str | None) -> bool:
    try:
        from .config import parse_bool

        return parse_bool(value)
    except Exception:
        return False


def _check_config_access(path: str) -> None:
    """git dies when the repository's config exists but cannot be opened (``unable to access``: EACCES,
    ELOOP...): refscope refuses too, rather than guess the ref storage without its extensions."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as err:
        from .fileio import unreadable

        raise unreadable(path, err) from None


def _read_format(commondir: str, env: Mapping[str, str]) -> tuple[int, dict[str, str | None]]:
    """core.repositoryformatversion and extensions.* from the common dir's own config only."""
    version = 0
    exts: dict[str, str | None] = {}
    path = os.path.join(commondir, "config")
    entries = read_file_entries(path, env)
    if not entries:
        _check_config_access(path)
    for key, value in entries:
        if key == "core.repositoryformatversion":
            try:
                version = int(value or "0", 0)
            except ValueError:
                version = 0
        elif key.startswith("extensions."):
            exts[key.lower()] = value
    return version, exts


def main_worktree_is_bare(repo: Repo) -> bool:
    """Is the main worktree bare, as git's get_main_worktree decides: ``core.bare`` true in the
    repository's config, or (from the main worktree) no working tree, or (from a linked one) ``core.bare``
    in the common dir's ``config.worktree``. A bare main worktree has nothing checked out, whatever its
    HEAD names; a linked worktree never is bare."""
    config = repo.config
    if config.has("core.bare") and _truthy(config.get("core.bare")):
        return True
    if repo.gitdir == repo.commondir:  # the main worktree
        return repo.worktree is None
    bare = None
    for key, value in read_file_entries(os.path.join(repo.commondir, "config.worktree"), gitdir=repo.gitdir):
        if key == "core.bare":
            bare = value
    return bare is not None and _truthy(bare)


def checked_out_branches(repo: Repo) -> list[tuple[str, bytes]]:
    """(git dir, branch) of every worktree that has a branch checked out, main worktree first: the
    branches git's branch_checked_out protects (branch.c prepare_checked_out_branches skips a bare
    main worktree, so a bare repository's HEAD protects nothing; its linked worktrees still do)."""
    skip_main = main_worktree_is_bare(repo)
    out = []
    for gitdir, target in list_worktrees(repo, skip_main=skip_main):
        if target is not None:
            out.append((gitdir, target))
    return out


def list_worktrees(repo: Repo, *, skip_main: bool = False) -> list[tuple[str, bytes | None]]:
    """Every worktree of the repository as (git dir, HEAD's symref target or None when detached/missing),
    main worktree first (unless ``skip_main``). A bare main worktree's HEAD is reported too, as git's
    worktree list does; ``checked_out_branches`` is what "checked out in any worktree" checks need."""
    out: list[tuple[str, bytes | None]] = []
    if not skip_main:
        out.append((repo.commondir, _head_target(repo, repo.commondir)))
    for gd in worktree_gitdirs(repo.commondir):
        if os.path.exists(os.path.join(gd, "HEAD")):
            out.append((gd, _head_target(repo, gd)))
    return out


def worktree_gitdirs(commondir: str) -> list[str]:
    """The directories under ``<commondir>/worktrees`` by name: the linked worktrees' git dirs (a caller
    that needs a real worktree checks its HEAD; the watcher watches every one)."""
    wtdir = os.path.join(commondir, "worktrees")
    try:
        names = sorted(os.listdir(wtdir))
    except OSError:
        return []
    return [gd for gd in (os.path.join(wtdir, name) for name in names) if os.path.isdir(gd)]


def _head_target(repo: Repo, gitdir: str) -> bytes | None:
    if repo.ref_storage == "files":
        data = read_small(os.path.join(gitdir, "HEAD"), 4096)
        if data is None or not data.startswith(b"ref:"):
            return None
        return data[4:].strip()
    # reftable: HEAD lives in that worktree's own stack
    try:
        from .store import open_store

        wt_repo = repo._replace(gitdir=gitdir)
        head = open_store(wt_repo).snapshot().head()
    except Exception:
        return None
    if head is None:
        return None
    return head.target
