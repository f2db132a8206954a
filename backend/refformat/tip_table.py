"""The TUI's tips held as columns: one slot per distinct object id, its facts in arrays, and one array of
slots per snapshot row -- no Python object per ref and none per tip.

At a million refs a ``Tip`` (with its two idents) per object and a ``Ref`` per row cost a great deal of memory
and garbage-collector passes that stop the UI: here a tip is a few array cells, its idents are
indexes into one interned list (a repository has few distinct names and zones), and a row is four bytes.
``tip(slot)`` makes a ``Tip`` again for the few rows on screen.

What is known of a slot grows in steps (``state``): nothing; its committer time and commit-graph position
(``GRAPHED``: a commit the commit-graph holds, no object inflated: what the date order and the age
filters need); everything (``READ``: the object and the tag chain read, as ``objects.tips`` reads them).
Writers are the workers, one at a time (``TipFacts.lock``); the UI thread only reads, and a slot's cells
are written before its state says so.
"""

from __future__ import annotations

from array import array
from itertools import filterfalse, repeat

from ..objects.parse import Ident
from ..objects.tips import MISSING, Tip

UNKNOWN, GRAPHED, READ = 0, 1, 2
NO_TIME = -(1 << 62)  # an ident without a date, or no commit at all
KINDS = (None, "commit", "tag", "tree", "blob")  # a kind's code is its index (0: missing / none)
_CODE = {k: i for i, k in enumerate(KINDS)}


class TipTable:
    """Columns of tips, by slot; ``slot(oid)`` gives (or makes) an object id's slot."""

    def __init__(self) -> None:
        self.slots: dict[bytes, int] = {}
        self.oids: list[bytes] = []
        self.state = bytearray()
        self.kind = bytearray()  # the object's own kind (KINDS code)
        self.peeled_kind = bytearray()  # the kind its tag chain ends at
        self.peeled: dict[int, bytes | None] = {}  # where the chain ends, for slots that are not it
        self.ctime = array("q")  # committer time of the commit it peels to (NO_TIME: none)
        self.atime = array("q")
        self.committer = array("i")  # (name, email, tz) index into ``people``; -1: none
        self.author = array("i")
        self.subject: list[bytes | None] = []
        self.pos = array("i")  # commit-graph position of the commit it peels to; -1: not known there
        self.people: list[tuple[bytes, bytes, bytes | None]] = []
        self._people: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self.oids)

    def slot(self, oid: bytes) -> int:
        """The slot of ``oid``, made (nothing known yet) if new."""
        s = self.slots.get(oid)
        if s is None:
            s = len(self.oids)
            self.oids.append(oid)
            for col in (self.state, self.kind, self.peeled_kind):
                col.append(0)
            for col in (self.ctime, self.atime):
                col.append(NO_TIME)
            for col in (self.committer, self.author, self.pos):
                col.append(-1)
            self.subject.append(None)
            self.slots[oid] = s  # (last: a reader that finds the slot finds its cells)
        return s

    def add(self, oids) -> dict[bytes, int]:
        """Slots for those of ``oids`` that have none (nothing known yet), made in bulk; {id: slot} of
        the ones made here (a small dict: the caller finds their slots without a look-up in ``slots``,
        whose keys are spread over the heap)."""
        slots = self.slots
        fresh = dict.fromkeys(oids)
        fresh.pop(None, None)
        new = list(filterfalse(slots.__contains__, fresh))  # (first-seen order, C loops only)
        if not new:
            return {}
        m = len(new)
        base = len(self.oids)
        self.oids.extend(new)
        for col in (self.state, self.kind, self.peeled_kind):
            col.extend(bytes(m))
        for col in (self.ctime, self.atime):
            col.extend(array("q", [NO_TIME]) * m)
        for col in (self.committer, self.author, self.pos):
            col.extend(array("i", [-1]) * m)
        self.subject.extend([None] * m)
        made = dict(zip(new, range(base, base + m), strict=True))
        slots.update(made)  # (last: a reader finds its cells)
        return made

    def _person(self, ident: Ident | None) -> tuple[int, int]:
        if ident is None:
            return -1, NO_TIME
        k = self._person_key((ident.name, ident.email, ident.tz))
        return k, NO_TIME if ident.time is None else ident.time

    def graphed(self, s: int, time: int, pos: int) -> None:
        """What the commit-graph says of slot ``s``: a commit at ``pos``, committed at ``time``."""
        if self.state[s] != UNKNOWN:
            return
        self.kind[s] = self.peeled_kind[s] = _CODE["commit"]
        self.ctime[s] = time
        self.pos[s] = pos
        self.state[s] = GRAPHED

    def graphed_many(self, slots, times, positions=None) -> None:
        """``graphed`` of each of ``slots``, ``times`` and ``positions`` (None: not known there) -- a
        chunk in one call, no method call per slot."""
        state, kind, pkind, ctime, pos = self.state, self.kind, self.peeled_kind, self.ctime, self.pos
        commit = _CODE["commit"]
        for s, t, p in zip(slots, times, repeat(-1) if positions is None else positions, strict=False):
            if state[s] == UNKNOWN:
                kind[s] = pkind[s] = commit
                ctime[s] = t
                pos[s] = p
                state[s] = GRAPHED

    def store(self, s: int, tip: Tip) -> None:
        """Slot ``s``'s whole tip, as ``objects.tips`` read it."""
        self.kind[s] = _CODE.get(tip.kind, 0)
        self.peeled_kind[s] = _CODE.get(tip.peeled_kind, 0)
        if tip.peeled != self.oids[s]:
            self.peeled[s] = tip.peeled
        self.committer[s], self.ctime[s] = self._person(tip.committer)  # (the object's, not the graph's)
        self.author[s], self.atime[s] = self._person(tip.author)
        self.subject[s] = tip.subject
        self.state[s] = READ

    def take(self, cols, slots, lo: int, hi: int) -> None:
        """Entries ``lo..hi-1`` of ``cols`` (``tip_child.Columns``: another table's columns, as a child
        read them) as the tips of ``slots[lo:hi]``; slots read already keep theirs (the same facts)."""
        state, kind, pkind, ctime, atime = self.state, self.kind, self.peeled_kind, self.ctime, self.atime
        committer, author, subject, peeled = self.committer, self.author, self.subject, self.peeled
        people = [self._person_key(p) for p in cols.people]
        people.append(-1)  # (index -1: none)
        c_peeled = cols.peeled
        for k in range(lo, hi):
            s = slots[k]
            if state[s] == READ:
                continue
            kind[s] = cols.kind[k]
            pkind[s] = cols.peeled_kind[k]
            if k in c_peeled:
                peeled[s] = c_peeled[k]
            ctime[s] = cols.ctime[k]
            atime[s] = cols.atime[k]
            committer[s] = people[cols.committer[k]]
            author[s] = people[cols.author[k]]
            subject[s] = cols.subject[k]
            state[s] = READ

    def _person_key(self, key: tuple) -> int:
        k = self._people.get(key)
        if k is None:
            k = self._people[key] = len(self.people)
            self.people.append(key)
        return k

    def tip(self, s: int) -> Tip | None:
        """Slot ``s`` as a ``Tip`` (None until read)."""
        if self.state[s] != READ:
            return None
        kind = KINDS[self.kind[s]]
        if kind is None:  # (missing; or unreadable, its subject then saying why)
            return MISSING if self.subject[s] is None else Tip(None, None, None, None, None, self.subject[s])
        return Tip(
            kind,
            self.peeled.get(s, self.oids[s]),
            KINDS[self.peeled_kind[s]],
            self._ident(self.committer[s], self.ctime[s]),
            self._ident(self.author[s], self.atime[s]),
            self.subject[s],
        )

    def _ident(self, k: int, time: int) -> Ident | None:
        if k < 0:
            return None
        name, email, tz = self.people[k]
        return Ident(name, email, None if time == NO_TIME else time, tz)

    def sort_time(self, s: int) -> int:
        """``--sort=committerdate``'s key: the object's own committer time (0 for anything that is not
        a commit, an annotated tag included, and for a commit without a date), as git sorts."""
        if self.kind[s] != 1:
            return 0
        t = self.ctime[s]
        return 0 if t == NO_TIME else t


def row_oid_chunks(snap, chunk: int):
    """The object id each row of ``snap`` shows, in row order, a list of ``chunk`` rows at a time (a
    symref's: the one its chain ends at; None when it ends at nothing), from the snapshot's bulk
    ``row_oids`` (files: sliced from packed-refs; reftable: decoded by block)."""
    for lo in range(0, len(snap), chunk):
        oids = snap.row_oids(lo, lo + chunk)
        if None in oids:
            oids = [o if o is not None else snap.resolve(snap.name_at(lo + k)) for k, o in enumerate(oids)]
        yield oids
