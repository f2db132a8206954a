"""Where git reads config from, in its order: the system file, the global ones, the repository's (and
``config.worktree``), then the environment (``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``, ``git -c``'s
``GIT_CONFIG_PARAMETERS``); ``include.path`` and ``includeIf.gitdir:`` expanded as each file is read.

The syntax of one file and the typed values are ``config``'s; this module only gathers entries and hands
them to ``Config``. ``load_protected`` is the part ``safe.directory`` may come from (no repository file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .config import Config, normalize_key, parse_bool, parse_config
from .errors import ConfigError, UnreadableFile
from .fileio import read_regular

_MAX_INCLUDE_DEPTH = 10


def _read(path: str) -> bytes | None:
    """The config file's bytes; None when it cannot be read (missing, unreadable, not a regular file:
    git warns and goes on without it). Through ``fileio``: a FIFO never blocks the read."""
    try:
        return read_regular(path)[0]
    except (OSError, UnreadableFile):
        return None


def read_file_entries(
    path: str, env: Mapping[str, str] | None = None, gitdir: str | None = None, depth: int = 0
) -> list[tuple[str, str | None]]:
    """Entries of one config file with ``include.path`` (and simple ``includeIf.gitdir:``) expanded."""
    data = _read(path)
    if data is None:
        return []
    entries = parse_config(data.decode("utf-8", "surrogateescape"), path)
    if not any(k == "include.path" or k.startswith("includeif.") for k, _ in entries):
        return entries
    out: list[tuple[str, str | None]] = []
    base = os.path.dirname(os.path.abspath(path))
    for key, value in entries:
        out.append((key, value))
        target = None
        if key == "include.path" and value:
            target = value
        elif key.startswith("includeif.") and key.endswith(".path") and value and gitdir:
            cond = key[len("includeif.") : -len(".path")]
            if _include_if(cond, gitdir, base, env):
                target = value
        if target is None or depth >= _MAX_INCLUDE_DEPTH:
            continue
        target = _expand_path(target, env)
        if not os.path.isabs(target):
            target = os.path.join(base, target)
        out.extend(read_file_entries(target, env, gitdir, depth + 1))
    return out


def _expand_path(p: str, env: Mapping[str, str] | None) -> str:
    if p.startswith("~/"):
        home = (env or os.environ).get("HOME", "")
        return home + p[1:]
    return p


def _include_if(cond: str, gitdir: str, base: str, env: Mapping[str, str] | None) -> bool:
    icase = False
    if cond.startswith("gitdir:"):
        pat = cond[7:]
    elif cond.startswith("gitdir/i:"):
        pat, icase = cond[9:], True
    else:
        return False
    pat = _expand_path(pat, env)
    if pat.startswith("./"):
        pat = os.path.join(base, pat[2:])
    elif not os.path.isabs(pat):
        pat = "**/" + pat
    if pat.endswith("/"):
        pat += "**"
    import fnmatch

    text = gitdir.rstrip("/") + "/"
    target = os.path.realpath(gitdir).rstrip("/") + "/"
    if icase:
        pat, text, target = pat.lower(), text.lower(), target.lower()
    pat2 = pat.replace("**/", "*").replace("/**", "/*")
    return (
        fnmatch.fnmatchcase(text.rstrip("/"), pat2.rstrip("/"))
        or fnmatch.fnmatchcase(target.rstrip("/"), pat2.rstrip("/"))
        or fnmatch.fnmatchcase(text, pat2)
        or fnmatch.fnmatchcase(target, pat2)
    )


def system_config_path(env: Mapping[str, str]) -> str | None:
    if parse_bool_env(env.get("GIT_CONFIG_NOSYSTEM")):
        return None
    return env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"


def global_config_paths(env: Mapping[str, str]) -> list[str]:
    if "GIT_CONFIG_GLOBAL" in env:
        return [env["GIT_CONFIG_GLOBAL"]] if env["GIT_CONFIG_GLOBAL"] else []
    paths = []
    xdg = env.get("XDG_CONFIG_HOME")
    home = env.get("HOME")
    if xdg:
        paths.append(os.path.join(xdg, "git", "config"))
    elif home:
        paths.append(os.path.join(home, ".config", "git", "config"))
    if home:
        paths.append(os.path.join(home, ".gitconfig"))
    return paths


def parse_bool_env(value: str | None) -> bool:
    if value is None:
        return False
    try:
        return parse_bool(value, "")
    except ConfigError:
        return False


def env_entries(env: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` and ``GIT_CONFIG_PARAMETERS``
    (what ``git -c`` passes to children), lowest priority first as git applies them."""
    out: list[tuple[str, str | None]] = []
    params = env.get("GIT_CONFIG_PARAMETERS")
    if params:
        out.extend(_parse_parameters(params))
    count = env.get("GIT_CONFIG_COUNT")
    if count:
        try:
            n = int(count)
        except ValueError:
            n = 0
        for i in range(n):
            k = env.get(f"GIT_CONFIG_KEY_{i}")
            if k:
                out.append((normalize_key(k), env.get(f"GIT_CONFIG_VALUE_{i}", "")))
    return out


def _parse_parameters(params: str) -> list[tuple[str, str | None]]:
    """GIT_CONFIG_PARAMETERS: shell-quoted ``'key=value'`` or ``'key'='value'`` words."""
    out: list[tuple[str, str | None]] = []
    words: list[str] = []
    i, n = 0, len(params)
    cur: list[str] | None = None
    while i < n:
        c = params[i]
        if c == "'":
            j = params.find("'", i + 1)
            if j < 0:
                break
            cur = (cur or []) + [params[i + 1 : j]]
            i = j + 1
            continue
        if c == "\\" and i + 1 < n:
            cur = (cur or []) + [params[i + 1]]
            i += 2
            continue
        if c.isspace():
            if cur is not None:
                words.append("".join(cur))
                cur = None
            i += 1
            continue
        cur = (cur or []) + [c]
        i += 1
    if cur is not None:
        words.append("".join(cur))
    for w in words:
        if "=" in w:
            k, v = w.split("=", 1)
            out.append((normalize_key(k), v))
        else:
            out.append((normalize_key(w), None))
    return out


def load_protected(env: Mapping[str, str]) -> Config:
    """System + global + command-line config: what ``safe.directory`` may come from."""
    entries: list[tuple[str, str | None]] = []
    sp = system_config_path(env)
    if sp:
        entries.extend(read_file_entries(sp, env))
    for gp in global_config_paths(env):
        entries.extend(read_file_entries(gp, env))
    entries.extend(env_entries(env))
    return Config(entries)


def load_repo_config(
    commondir: str, gitdir: str, env: Mapping[str, str], worktree_config: bool = False
) -> Config:
    """Every source git reads for a repository, lowest priority first."""
    entries: list[tuple[str, str | None]] = []
    sp = system_config_path(env)
    if sp:
        entries.extend(read_file_entries(sp, env, gitdir))
    for gp in global_config_paths(env):
        entries.extend(read_file_entries(gp, env, gitdir))
    entries.extend(read_file_entries(os.path.join(commondir, "config"), env, gitdir))
    if worktree_config:
        entries.extend(read_file_entries(os.path.join(gitdir, "config.worktree"), env, gitdir))
    entries.extend(env_entries(env))
    return Config(entries)
