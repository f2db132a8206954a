"""The committer of a reflog entry, as git's ident.c builds it (``git_committer_info(0)``: not strict).

Name: ``GIT_COMMITTER_NAME`` when set (even empty), else ``committer.name``, else ``user.name``, else the
passwd entry's GECOS up to its first comma (``&`` is the capitalised login), trimmed; an empty result is
the login name. Email: ``GIT_COMMITTER_EMAIL`` when set, else ``committer.email``, else ``user.email``,
else ``EMAIL`` (when not empty), else ``login@`` + the first line of ``/etc/mailname``, or the host name
when it has a dot, or its canonical name (getaddrinfo), or ``host.(none)``. Both lose git's "crud" at
either end (controls, space, ``, : ; < > " \\ '``) and every ``<``, ``>`` and LF inside. Time:
``GIT_COMMITTER_DATE`` in git's raw forms (``<unix> <+hhmm>``, ``@<unix> <+hhmm>``, ``<unix>``), else now
in the local zone.
"""

from __future__ import annotations

import os

from ..engines.common import Ident
from ..engines.common import committer_ident as _env_ident

_CRUD = frozenset(b",:;<>\"\\'")


def _crud(c: int) -> bool:
    return c <= 32 or c in _CRUD


def without_crud(value: bytes) -> bytes:
    """git's strbuf_addstr_without_crud."""
    i, j = 0, len(value)
    while i < j and _crud(value[i]):
        i += 1
    while j > i and _crud(value[j - 1]):
        j -= 1
    return value[i:j].replace(b"\n", b"").replace(b"<", b"").replace(b">", b"")


def _passwd() -> tuple[bytes, bytes]:
    import pwd

    try:
        pw = pwd.getpwuid(os.getuid())
        return os.fsencode(pw.pw_name), os.fsencode(pw.pw_gecos)
    except KeyError:
        return b"unknown", b"Unknown"


def _gecos_name(login: bytes, gecos: bytes) -> bytes:
    out = gecos.split(b",", 1)[0]
    if b"&" in out:
        out = out.replace(b"&", login[:1].upper() + login[1:])
    return out.strip(b" \t\n\r\v\f")


def _default_email(login: bytes) -> bytes:
    try:
        with open("/etc/mailname", "rb") as f:
            line = f.readline()
        if line:
            return login + b"@" + line.rstrip(b"\n")
    except OSError:
        pass
    import socket

    host = socket.gethostname()
    if "." not in host:
        try:
            infos = socket.getaddrinfo(host, None, flags=socket.AI_CANONNAME)
            canon = infos[0][3] if infos else ""
        except OSError:
            canon = ""
        host = canon if "." in canon else host + ".(none)"
    return login + b"@" + host.encode()


def committer_ident(repo) -> Ident:
    env = os.environb
    config = getattr(repo, "config", None)

    def cfg(key: str) -> bytes | None:
        value = config.get(key) if config is not None else None
        return None if value is None else os.fsencode(value)

    name = env.get(b"GIT_COMMITTER_NAME")
    if name is None:
        name = cfg("committer.name")
    if name is None:
        name = cfg("user.name")
        if name is None:
            login, gecos = _passwd()
            name = _gecos_name(login, gecos)
    if not name:
        name = _passwd()[0]
    email = env.get(b"GIT_COMMITTER_EMAIL")
    if email is None:
        email = cfg("committer.email")
    if email is None:
        email = cfg("user.email")
    if email is None:
        email = env.get(b"EMAIL") or None
        if email is None:
            email = _default_email(_passwd()[0])
        email = email.strip(b" \t\n\r\v\f")
    when = _env_ident(repo)  # the date as engines.common reads it (one reader of GIT_COMMITTER_DATE)
    return Ident(without_crud(name), without_crud(email), when.time, when.tz)
