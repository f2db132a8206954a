"""Dates as ``git for-each-ref`` prints them (date.c's ``show_date``): the default, ``unix``, ``iso8601``,
``iso8601-strict``, ``short``, ``rfc2822``, ``raw`` and ``relative`` forms of a timestamp and the zone
written in the object.

The calendar is computed here, not by ``time.gmtime``, so that every timestamp git accepts gets git's
answer (Python's ``gmtime`` stops at year 9999). ``relative`` asks the clock, or ``GIT_TEST_DATE_NOW``
as git does, so that tests can compare it with git's.
"""

from __future__ import annotations

import os
import time as _time

from ..errors import RefscopeError, UnsupportedDate

WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MODES = ("default", "unix", "iso8601", "iso8601-strict", "short", "rfc2822", "raw", "relative")
_ALIASES = (
    ("relative", "relative"),
    ("iso8601-strict", "iso8601-strict"),
    ("iso-strict", "iso8601-strict"),
    ("iso8601", "iso8601"),
    ("iso", "iso8601"),
    ("rfc2822", "rfc2822"),
    ("rfc", "rfc2822"),
    ("short", "short"),
    ("default", "default"),
    ("raw", "raw"),
    ("unix", "unix"),
)
_UNSUPPORTED = ("human", "format", "auto:")
_TIME_T_MAX = (1 << 63) - 1


def parse_mode(text: str) -> str:
    """The mode named by a date modifier as git parses it (``iso`` is ``iso8601``, ``local`` is
    ``default-local``...); ``RefscopeError`` with git's wording for an unknown one."""
    if text == "local" or text.endswith("-local") or text.startswith(_UNSUPPORTED):
        raise UnsupportedDate(f"unsupported date format {text}")
    for prefix, mode in _ALIASES:
        if text.startswith(prefix):
            if text != prefix:
                raise RefscopeError(None, f"unknown date format {text}")
            return mode
    raise RefscopeError(None, f"unknown date format {text}")


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month 1-12, day) of the day ``days`` after 1970-01-01, proleptic Gregorian."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def _tz_seconds(tz: int) -> int:
    minutes = abs(tz)
    minutes = (minutes // 100) * 60 + minutes % 100
    return (-minutes if tz < 0 else minutes) * 60


def _fields(when: int, tz: int) -> tuple[int, int, int, int, int, int, int, int]:
    """(year, month, day, hour, minute, second, weekday, tz) at ``when`` shifted by ``tz``, as git's
    time_to_tm; a time gmtime_r cannot hold shows the epoch at +0000, as git does."""
    t = when + _tz_seconds(tz)
    if t < 0:
        raise RefscopeError(None, f"Timestamp before Unix epoch: {when} {tz:04d}")
    if t > _TIME_T_MAX:
        raise RefscopeError(None, f"Timestamp too large for this system: {t}")
    days, rest = divmod(t, 86400)
    y, m, d = _civil(days)
    if y - 1900 > 2147483647:
        return 1970, 1, 1, 0, 0, 0, 4, 0
    return y, m, d, rest // 3600, rest // 60 % 60, rest % 60, (days + 4) % 7, tz


# a time in [_SAFE_LO, _SAFE_HI] with a zone of at most four digits is shown in every mode (the zone moves
# it by at most 99 hours and 99 minutes): what the readers check before skipping ``check``
ZONE4_SECONDS = (99 * 60 + 99) * 60
SAFE_LO = ZONE4_SECONDS
SAFE_HI = _TIME_T_MAX - ZONE4_SECONDS


def check(when: int, tz: int) -> None:
    """Raise what ``show(when, tz, "default")`` raises, making no text: git formats a date atom for
    every ref it sorts or prints, even one only sorted by (``--sort=committerdate`` formats the default
    date and dies on a time gm_time_t refuses), so a reader that keeps only the number must still fail
    where git does."""
    t = when + _tz_seconds(tz)
    if t < 0 or t > _TIME_T_MAX:
        _fields(when, tz)


def now() -> int:
    text = os.environ.get("GIT_TEST_DATE_NOW")
    if text is not None:
        return _atoi(text)
    return int(_time.time())


def _atoi(text: str) -> int:
    s = text.lstrip(" \t\n\v\f\r")
    sign = -1 if s[:1] == "-" else 1
    if s[:1] in "+-":
        s = s[1:]
    digits = ""
    for c in s:
        if not c.isdigit():
            break
        digits += c
    return sign * int(digits) if digits else 0


def _plural(n: int, one: str, many: str) -> str:
    return (one if n == 1 else many) % n


def relative(when: int, at: int | None = None) -> str:
    """date.c's show_date_relative."""
    current = now() if at is None else at
    if current < when:
        return "in the future"
    diff = current - when
    if diff < 90:
        return _plural(diff, "%d second ago", "%d seconds ago")
    diff = (diff + 30) // 60
    if diff < 90:
        return _plural(diff, "%d minute ago", "%d minutes ago")
    diff = (diff + 30) // 60
    if diff < 36:
        return _plural(diff, "%d hour ago", "%d hours ago")
    diff = (diff + 12) // 24
    if diff < 14:
        return _plural(diff, "%d day ago", "%d days ago")
    if diff < 70:
        return _plural((diff + 3) // 7, "%d week ago", "%d weeks ago")
    if diff < 365:
        return _plural((diff + 15) // 30, "%d month ago", "%d months ago")
    if diff < 1825:
        total = (diff * 12 * 2 + 365) // (365 * 2)
        years, months = divmod(total, 12)
        if months:
            y = _plural(years, "%d year", "%d years")
            return (y + ", %d month ago" if months == 1 else y + ", %d months ago") % months
        return _plural(years, "%d year ago", "%d years ago")
    return _plural((diff + 183) // 365, "%d year ago", "%d years ago")


def _signed(tz: int) -> str:
    """C's ``%+05d``."""
    return f"{'-' if tz < 0 else '+'}{abs(tz):04d}"


def show(when: int, tz: int, mode: str) -> str:
    """``when`` (seconds) with the zone ``tz`` (as written: +0130 is 130) in ``mode``."""
    if mode == "unix":
        return str(when)
    if mode == "raw":
        return f"{when} {_signed(tz)}"
    if mode == "relative":
        return relative(when)
    y, mo, d, h, mi, s, wd, tz = _fields(when, tz)
    if mode == "short":
        return f"{y:04d}-{mo:02d}-{d:02d}"
    if mode == "iso8601":
        return f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d} {_signed(tz)}"
    if mode == "iso8601-strict":
        head = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}"
        if tz == 0:
            return head + "Z"
        return f"{head}{'+' if tz >= 0 else '-'}{abs(tz) // 100:02d}:{abs(tz) % 100:02d}"
    if mode == "rfc2822":
        return f"{WEEKDAYS[wd]}, {d} {MONTHS[mo - 1]} {y} {h:02d}:{mi:02d}:{s:02d} {_signed(tz)}"
    # the default: show_date_normal against an all-zero "now", so nothing is hidden but a 1900 year and a
    # zone of -0001 (git compares the zone with its "human" zone, -1 when not in human mode)
    out = f"{WEEKDAYS[wd]} {MONTHS[mo - 1]} {d} {h:02d}:{mi:02d}:{s:02d}"
    if y != 1900:
        out += f" {y}"
    if tz != -1:
        out += f" {_signed(tz)}"
    return out
