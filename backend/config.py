"""A git config reader: enough of config.c for real repository configs.

Why our own: refscope needs a handful of values (extensions, core.fsync, lock timeouts, reftable knobs,
safe.directory) at startup, and spawning ``git config`` would cost more than the whole ``list`` command.
Supported: sections, ``[section "subsection"]`` and the old ``[section.subsection]``, quoted values, the
escapes ``\\n \\t \\b \\" \\\\``, line continuations, comments, value-less keys (boolean true), integers
with k/m/g suffixes (base prefixes as strtoimax), ``include.path`` (relative to the including file, ``~/``
expanded). ``includeIf`` is read only for ``gitdir:`` / ``gitdir/i:`` conditions with plain prefixes.
Values are typed as git types them (``get_int``/``get_c_int``/``get_ulong``: git_config_int64 and friends,
units and overflow; ``get_bool``: git_config_bool), and each setting the stores and engines use has one
getter with git's default and limits, so no caller repeats a key string or a default.

Where the entries come from (the files git reads in order, their includes, the environment) is
``configload``; this module is the syntax and the values.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ConfigError


def _is_key_char(c: str) -> bool:
    return c.isalnum() or c == "-"


def parse_config(text: str, path: str) -> list[tuple[str, str | None]]:
    """(key, value) pairs in file order; key is ``section[.subsection].name`` with section and name
    lowercased (subsection keeps its case, as git); value None for a value-less key."""
    out: list[tuple[str, str | None]] = []
    i, n, line = 0, len(text), 1
    section = ""
    if text.startswith("\ufeff"):
        i = 1

    def fail(what: str) -> ConfigError:
        return ConfigError(path, what if what else f"bad config line {line} in file {path}")

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c in "#;":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "[":
            j = i + 1
            name = []
            while j < n and (_is_key_char(text[j]) or text[j] == "."):
                name.append(text[j])
                j += 1
            sect = "".join(name).lower()
            if j < n and text[j] in " \t":
                # [section "subsection"]
                while j < n and text[j] in " \t":
                    j += 1
                if j >= n or text[j] != '"':
                    raise fail("")
                j += 1
                sub = []
                while True:
                    if j >= n or text[j] == "\n":
                        raise fail("")
                    ch = text[j]
                    if ch == '"':
                        j += 1
                        break
                    if ch == "\\":
                        j += 1
                        if j >= n or text[j] == "\n":
                            raise fail("")
                        ch = text[j]
                    sub.append(ch)
                    j += 1
                if j >= n or text[j] != "]" or not sect:
                    raise fail("")
                section = f"{sect}.{''.join(sub)}"
                i = j + 1
                continue
            if j >= n or text[j] != "]" or not sect:
                raise fail("")
            # old-style [section.subsection]: subsection lowercased too
            section = sect
            i = j + 1
            continue
        if not c.isalpha():
            raise fail("")
        # key
        j = i
        while j < n and _is_key_char(text[j]):
            j += 1
        key = text[i:j].lower()
        if not section:
            raise fail("")
        while j < n and text[j] in " \t":
            j += 1
        if j >= n or text[j] == "\n" or text[j] in "#;":
            out.append((f"{section}.{key}", None))
            if j < n and text[j] in "#;":
                k = text.find("\n", j)
                j = n if k < 0 else k
            i = j
            continue
        if text[j] == "\r" and j + 1 < n and text[j + 1] == "\n":
            out.append((f"{section}.{key}", None))
            i = j + 1
            continue
        if text[j] != "=":
            raise fail("")
        j += 1
        # value (config.c parse_value)
        buf: list[str] = []
        quote = False
        comment = False
        space = 0
        while True:
            if j >= n:
                if quote:
                    raise fail("")
                break
            ch = text[j]
            j += 1
            if ch == "\r" and j < n and text[j] == "\n":
                continue
            if ch == "\n":
                if quote:
                    raise fail("")
                line += 1
                break
            if comment:
                continue
            if ch in " \t\v\f\r" and not quote:
                if buf:
                    space += 1
                continue
            if not quote and ch in ";#":
                comment = True
                continue
            if space:
                buf.append(" " * space)
                space = 0
            if ch == "\\":
                if j >= n:
                    raise fail("")
                ch = text[j]
                j += 1
                if ch == "\n":
                    line += 1
                    continue
                if ch == "\r" and j < n and text[j] == "\n":
                    j += 1
                    line += 1
                    continue
                esc = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}.get(ch)
                if esc is None:
                    raise fail("")
                buf.append(esc)
                continue
            if ch == '"':
                quote = not quote
                continue
            buf.append(ch)
        out.append((f"{section}.{key}", "".join(buf)))
        i = j
    return out


def normalize_key(key: str) -> str:
    """``Section.Sub.Name`` -> ``section.Sub.name`` (git's canonical form)."""
    first = key.find(".")
    last = key.rfind(".")
    if first < 0:
        return key.lower()
    if first == last:
        return key.lower()
    return key[:first].lower() + key[first:last] + key[last:].lower()


INT_MAX = (1 << 31) - 1  # git_config_int: a C int
INT64_MAX = (1 << 63) - 1  # git_config_int64
ULONG_MAX = (1 << 64) - 1  # git_config_ulong (an LP64 unsigned long)


def _bad_number(value: str | None, key: str, what: str) -> ConfigError:
    """git's die_bad_number: "invalid unit" for what does not parse, "out of range" for what overflows."""
    return ConfigError(None, f"bad numeric config value '{value or ''}' for '{key}': {what}")


def parse_int(value: str | None, key: str = "", maximum: int = INT64_MAX) -> int:
    """git_parse_signed: strtoimax base 0 plus an optional k/m/g unit (case-insensitive), the result
    within [-maximum - 1, maximum] (``maximum``: of the C type git reads into)."""
    if value is None:
        raise _bad_number(value, key, "invalid unit")
    v = value.strip()
    factor = 1
    if v and v[-1] in "kKmMgG":
        factor = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[v[-1].lower()]
        v = v[:-1]
    try:
        s = v
        neg = s.startswith("-")
        if s[:1] in "+-":
            s = s[1:]
        if s[:2].lower() == "0x":
            num = int(s[2:], 16)
        elif len(s) > 1 and s[0] == "0":
            num = int(s[1:], 8)
        else:
            num = int(s, 10)
        if s.strip() != s or not s:
            raise ValueError
    except ValueError:
        raise _bad_number(value, key, "invalid unit") from None
    num = (-num if neg else num) * factor
    if not -maximum - 1 <= num <= maximum:
        raise _bad_number(value, key, "out of range")
    return num


def parse_ulong(value: str | None, key: str = "") -> int:
    """git_parse_unsigned (git_config_ulong): as ``parse_int``, but any ``-`` is an invalid unit."""
    if value is not None and "-" in value:
        raise _bad_number(value, key, "invalid unit")
    return parse_int(value, key, ULONG_MAX)


def parse_bool(value: str | None, key: str = "") -> bool:
    """git_config_bool: value-less = true; true/yes/on, false/no/off/"" ; else an integer."""
    if value is None:
        return True
    low = value.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off", ""):
        return False
    try:
        return parse_int(value, key, INT_MAX) != 0
    except ConfigError:
        raise ConfigError(None, f"bad boolean config value '{value}' for '{key}'") from None


class Config:
    """Ordered (key, value) pairs from every source git reads, lowest priority first; last value wins."""

    __slots__ = ("entries", "_last")

    def __init__(self, entries: Iterable[tuple[str, str | None]] = ()) -> None:
        self.entries: list[tuple[str, str | None]] = list(entries)
        self._last: dict[str, str | None] | None = None

    def _index(self) -> dict[str, str | None]:
        if self._last is None:
            self._last = dict(self.entries)
        return self._last

    def has(self, key: str) -> bool:
        return normalize_key(key) in self._index()

    def get(self, key: str) -> str | None:
        """Last value of ``key`` (None when absent or value-less)."""
        return self._index().get(normalize_key(key))

    def get_all(self, key: str) -> list[str | None]:
        k = normalize_key(key)
        return [v for kk, v in self.entries if kk == k]

    def get_bool(self, key: str, default: bool = False) -> bool:
        """git_config_bool."""
        return self._typed(key, default, parse_bool)

    def _typed(self, key: str, default, parse, *args):
        """The last value of ``key`` through ``parse`` (errors name the key as git does: normalized)."""
        idx = self._index()
        k = normalize_key(key)
        if k not in idx:
            return default
        return parse(idx[k], k, *args)

    def get_int(self, key: str, default: int = 0) -> int:
        """git_config_int64 (k/m/g units; git dies on a malformed or overflowing value). The getters
        below narrow it where git reads a C int (``get_c_int``) or refuses more."""
        return self._typed(key, default, parse_int, INT64_MAX)

    def get_c_int(self, key: str, default: int = 0) -> int:
        """git_config_int: a C int."""
        return self._typed(key, default, parse_int, INT_MAX)

    def get_ulong(self, key: str, default: int = 0) -> int:
        """git_config_ulong: no sign allowed."""
        return self._typed(key, default, parse_ulong)

    # -- the values refscope's stores and engines need ------------------------------------------------
    def fsync_components(self) -> set[str]:
        """core.fsync as git resolves it (environment.c): the last value wins; it starts from git's
        default (pack, pack-metadata, commit-graph: no ``reference``), ``none`` clears, ``-x`` removes, and
        names match by prefix as git's strncmp does (``ref`` means ``reference``)."""
        value = self.get("core.fsync") if self.has("core.fsync") else None
        current = {"pack", "pack-metadata", "commit-graph"}
        if value is None:
            return current
        objects = {"loose-object", "pack"}
        derived = {"pack-metadata", "commit-graph"}
        names = {
            "loose-object": {"loose-object"},
            "pack": {"pack"},
            "pack-metadata": {"pack-metadata"},
            "commit-graph": {"commit-graph"},
            "index": {"index"},
            "objects": objects,
            "reference": {"reference"},
            "derived-metadata": derived,
            "committed": objects | {"reference"},
            "added": objects | {"reference", "index"},
            "all": objects | derived | {"reference", "index"},
        }
        positive: set[str] = set()
        negative: set[str] = set()
        rest = value
        while True:
            rest = rest.lstrip(", \t\n\r")
            if rest == "none":
                current = set()
                break
            word, sep, tail = rest.partition(",")
            neg = word.startswith("-")
            if neg:
                word = word[1:]
            if not word:
                break
            for full, bits in names.items():
                if full.startswith(word):
                    (negative if neg else positive).update(bits)
            if not sep:
                break
            rest = tail
        return (current - negative) | positive

    def fsync_references(self) -> bool:
        """Does core.fsync include ``reference`` (directly, or via ``committed``/``added``/``all``)?"""
        return "reference" in self.fsync_components()

    def fsync_method(self) -> str:
        return self.get("core.fsyncMethod") or "fsync"

    # Each read as git's backend reads it (refs/files-backend.c, refs/packed-backend.c,
    # refs/reftable-backend.c reftable_be_config): the C type, the default, and the limits git dies on.
    def files_ref_lock_timeout(self) -> int:
        return self.get_c_int("core.filesRefLockTimeout", 100)

    def packed_refs_timeout(self) -> int:
        return self.get_c_int("core.packedRefsTimeout", 1000)

    def reftable_lock_timeout(self) -> int:
        """An int64 in milliseconds; -1 waits forever, other negative values make git die."""
        timeout = self.get_int("reftable.lockTimeout", 100)
        if timeout < 0 and timeout != -1:
            raise ConfigError(None, "reftable lock timeout does not support negative values other than -1")
        return timeout

    def reftable_geometric_factor(self) -> int:
        """An unsigned long (k/m/g suffixes; 0 means git's default); git dies on a value above 255."""
        factor = self.get_ulong("reftable.geometricFactor", 2)
        if factor > 255:
            raise ConfigError(None, "reftable geometric factor cannot exceed 255")
        return factor

    def reftable_block_size(self) -> int:
        size = self.get_ulong("reftable.blockSize", 4096)
        if size > 16777215:
            raise ConfigError(None, "reftable block size cannot exceed 16MB")
        return size

    def reftable_restart_interval(self) -> int:
        interval = self.get_ulong("reftable.restartInterval", 16)
        if interval > 65535:
            raise ConfigError(None, "reftable block size cannot exceed 65535")  # (git's own wording)
        return interval

    def reftable_index_objects(self) -> bool:
        return self.get_bool("reftable.indexObjects", True)
