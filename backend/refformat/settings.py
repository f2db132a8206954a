"""The configuration ``git for-each-ref`` reads before it lists (git_default_config): ``core.abbrev``,
the length of ``%(objectname:short)`` and ``%(tree:short)``..., ``core.warnAmbiguousRefs``, whether
``%(refname:short)`` must be unambiguous under every rule or only under the rules before its own, and
``versionsort.suffix``, the prerelease suffixes of a ``version:`` sort. Read
once per run, and refused in git's words where git refuses the value (git dies on it whatever the
format)."""

from __future__ import annotations

import os
from collections import namedtuple

from ..config import Config, parse_bool, parse_int
from ..errors import ConfigError

MINIMUM_ABBREV = 4


class Settings(namedtuple("Settings", "abbrev strict suffixes", defaults=((),))):
    """``abbrev``: the default abbreviation (-1: git's automatic length from the object count; a
    length at least MINIMUM_ABBREV, possibly past the id's length: then the whole id); ``strict()``:
    refs_shorten_unambiguous_ref's strict mode; ``suffixes``: versionsort.suffix (else the deprecated
    versionsort.prereleaseSuffix), the prerelease suffixes of ``version:`` sorts, in config order."""

    __slots__ = ()


DEFAULTS = Settings(-1, lambda: True)


def settings(config: Config) -> Settings:
    abbrev = -1
    if config.has("core.abbrev"):
        value = config.get("core.abbrev")
        if value is None:
            raise ConfigError(None, "missing value for 'core.abbrev'")
        if value.lower() == "auto":
            abbrev = -1
        elif value.lower() in ("false", "no", "off", ""):
            abbrev = 64  # GIT_MAX_HEXSZ: the whole id
        else:
            abbrev = parse_int(value, "core.abbrev", (1 << 31) - 1)
            if abbrev < MINIMUM_ABBREV:
                raise ConfigError(None, f"abbrev length out of range: {abbrev}")
    return Settings(abbrev, lambda: _strict(config), version_suffixes(config))


def version_suffixes(config: Config) -> tuple[bytes, ...]:
    """versionsort.suffix (else the deprecated versionsort.prereleaseSuffix), in config order: what a
    ``version:`` sort -- the CLI's, the TUI's -- swaps prereleases by."""
    suffixes = config.get_all("versionsort.suffix") or config.get_all("versionsort.prereleasesuffix")
    return tuple(os.fsencode(s) for s in suffixes if s)


def _strict(config: Config) -> bool:
    """core.warnAmbiguousRefs, read when a name is first shortened: git reads it then (repo
    settings, lazily), so a bad value fails only a format that shortens one."""
    if not config.has("core.warnambiguousrefs"):
        return True
    return parse_bool(config.get("core.warnambiguousrefs"), "core.warnambiguousrefs")
