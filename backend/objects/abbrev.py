"""The shortest unique prefix of object ids, as repo_find_unique_abbrev finds it: from a start length
(core.abbrev, or worked out from the object count), one digit past the longest prefix the id shares
with any other object. The longest one shared is with a neighbour in sorted order, so each sorted table
of ids (each multi-pack-index and pack index) is asked for the two beside the id, and the loose
objects for those sharing its first digits.

For one run the loose objects' directories are listed once each and kept (git's loose cache). For many
ids at once (a column of a million refs' tips), a table that many of them are looked up in is turned
into hex once and every id placed among its ids by C-level bisects; a big table asked for a few ids is
searched per id instead, so a run's memory does not grow with the repository.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat

BULK_SHARE = 8  # a table is turned into hex when the ids asked number more than its size / BULK_SHARE


class Abbreviator:
    """The ids one run shortens: ``self(hexoid, min_len)`` one, ``many(hexoids, min_len)`` a column; a
    ``min_len`` below 0 is ``default`` (core.abbrev; -1 also: from the object count)."""

    def __init__(self, odb, default: int = -1) -> None:
        self.odb = odb
        self.default = default
        self.hexsz = odb.rawsz * 2
        self._listed: dict[str, list[str]] = {}  # a loose directory's names, by path

    def _start(self, min_len: int) -> int:
        n = self.default if min_len < 0 else min_len
        if n < 0:  # msb(count) + 1 bits of objects expect a collision at half as many bits, 4 a digit
            n = max((max(self.odb.approximate_count(), 1).bit_length() + 1) // 2, 7)
        return n

    def __call__(self, hexoid: bytes, min_len: int) -> bytes:
        length = self._start(min_len)
        if length >= self.hexsz or not length:
            return hexoid
        raw = self.odb.raw_id(hexoid)
        seen = []
        for table in self.odb.id_tables():
            seen += _neighbours(table, raw)
        loose = self.odb.loose_names(hexoid[:length].decode("ascii"), self._listed)
        seen += map(bytes.fromhex, loose)
        for other in seen:
            common = _common_hex(other, raw)
            if common != self.hexsz and common >= length:
                length = common + 1
        return hexoid[:length]

    def many(self, hexoids: list[bytes], min_len: int) -> list[bytes]:
        """``self(h, min_len)`` of each of ``hexoids``."""
        length = self._start(min_len)
        if length >= self.hexsz or not length:
            return list(hexoids)
        for h in hexoids:
            self.odb.raw_id(h)  # (an id of the wrong length is refused as one at a time)
        best = [length] * len(hexoids)
        for table in self.odb.id_tables():
            if len(hexoids) * BULK_SHARE > table.count:
                best = list(map(max, best, self._past_shared(table.hex_names(), hexoids)))
            else:
                for i, h in enumerate(hexoids):
                    raw = bytes.fromhex(h.decode("ascii"))
                    for other in _neighbours(table, raw):
                        best[i] = max(best[i], _common_hex(other, raw) + 1)
        loose = set()
        for hexs in sorted({h[:2].decode("ascii") for h in hexoids}):  # the directories these ids are in
            loose.update(name.encode() for name in self.odb.loose_names(hexs, self._listed))
        if loose:
            best = list(map(max, best, self._past_shared(sorted(loose), hexoids)))
        return list(map(bytes.__getitem__, hexoids, map(slice, repeat(0), best)))

    def _past_shared(self, names: list[bytes], hexoids: list[bytes]) -> list[int]:
        """Per id of ``hexoids``, one past the most leading digits it shares with another id of the
        sorted hex ``names`` (0 when there is none): the one before where it stands, and the one after
        (after itself, when it is there)."""
        hexsz = self.hexsz
        n = len(names)
        out = []
        for h, i in zip(hexoids, map(bisect_left, repeat(names), hexoids), strict=True):
            best = 0
            if i > 0:
                best = hexsz + 1 - ((int(h, 16) ^ int(names[i - 1], 16)).bit_length() + 3) // 4
            j = i + 1 if i < n and names[i] == h else i
            if j < n:
                best = max(best, hexsz + 1 - ((int(h, 16) ^ int(names[j], 16)).bit_length() + 3) // 4)
            out.append(best)
        return out


def _common_hex(a: bytes, b: bytes) -> int:
    """The number of leading hex digits two raw ids share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x == y:
            n += 2
            continue
        return n + ((x ^ y) < 16)
    return n


def _neighbours(table, raw: bytes) -> list[bytes]:
    """The ids beside where ``raw`` stands in a sorted table (a pack index or a midx): the two that
    find_abbrev_len_for_pack looks at."""
    i, found = table.bisect(raw)
    out = []
    if not found and i < table.count:
        out.append(table.name(i))
    elif found and i + 1 < table.count:
        out.append(table.name(i + 1))
    if i > 0:
        out.append(table.name(i - 1))
    return out
