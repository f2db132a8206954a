"""The prepare step both native engines share: git's ``lock_ref_for_update`` (files) and
``prepare_single_update`` (reftable) are one algorithm over two readers.

For each update, in order (the list grows as symrefs and HEAD are split): HEAD's log-only entry when
HEAD's branch is updated, a read of the ref (under its lock for files), the split of an update through a
symref into a log-only entry for the symref and an update of its referent, the old value checks with
git's wording, and whether anything is to be written. After the loop, the names that did not exist are
checked for directory/file conflicts against the store and against the batch
(``refs_verify_refnames_available``). An engine supplies ``read``, ``resolve``, ``exists`` and
``descendant`` and writes what the plan decided.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from operator import itemgetter

from ..engines.common import splits_head
from ..errors import StaleValue, TransactionRefused
from ..errors import name_text as _t

MISSING, REGULAR, SYMREF = 0, 1, 2
_first = itemgetter(0)


class Upd:
    """git's ``struct ref_update`` as the engines need it. ``new``/``old``: hex oids (None: not given),
    ``new_target``/``old_target``: symref targets; ``current``: the oid the ref resolved to under the
    lock (None: missing); ``referent``: its symref target when it is one; ``write``: the engine must
    write it (git's REF_NEEDS_COMMIT / queue_transaction_update)."""

    __slots__ = (
        "name",
        "new",
        "old",
        "new_target",
        "old_target",
        "no_deref",
        "log_only",
        "parent",
        "via_head",
        "head_split",
        "kind",
        "current",
        "referent",
        "peeled",
        "write",
        "lock",
        "rename",
    )

    def __init__(self, name, new, old, new_target, old_target, no_deref) -> None:
        self.name = name
        self.new = new
        self.old = old
        self.new_target = new_target
        self.old_target = old_target
        self.no_deref = no_deref
        self.log_only = False
        self.parent: Upd | None = None
        self.via_head = False
        self.head_split = False
        self.kind = MISSING
        self.current: bytes | None = None
        self.referent: bytes | None = None
        self.peeled: bytes | None = None
        self.write = False
        self.lock = None  # the engine's lock state (files: the lock path)
        self.rename = None  # rename.Moving: this deletes or creates one side of a queued rename

    @property
    def have_new(self) -> bool:
        return self.new is not None or self.new_target is not None

    @property
    def have_old(self) -> bool:
        return self.old is not None or self.old_target is not None


def leading_dirs(parents) -> set[bytes]:
    """Every leading directory of names whose parents are ``parents`` (``refs``, ``refs/tags``...)."""
    out = set()
    for p in parents:
        j = p.find(b"/")
        while j >= 0:
            out.add(p[:j])
            j = p.find(b"/", j + 1)
        if p:
            out.add(p)
    return out


def dirs_of(names) -> set[bytes]:
    """Every leading directory of every name in ``names``: a batch has no D/F conflict within itself
    exactly when no name is among them."""
    return leading_dirs(set(map(_first, map(bytes.rpartition, names, repeat(b"/")))))


class Plan:
    """One transaction's updates and the shared prepare loop. Subclasses implement the reads."""

    def __init__(
        self, repo, commands, peeled: dict[bytes, bytes], zero: bytes, *, defer: bool = False
    ) -> None:
        self.repo = repo
        self.zero = zero
        self.renames: list = []  # rename.Moving of each ``commands.Rename`` (rename.py)
        self.rename_worktrees: list | None = None  # (git dir, HEAD's target) of each worktree, for them
        self.updates: list[Upd] = []
        self.names: set[bytes] = set()
        self.to_check: list[Upd] = []
        # (name, old, new) of every ref written, when an engine planned the batch by columns, without
        # an Upd per command (reftable's create-only batches); None: the summary is made from the updates
        self.rows: list[tuple] | None = None
        self.taken = not defer
        if not defer:
            self.take(commands, peeled)

    def take(self, commands, peeled: dict[bytes, bytes]) -> None:
        """One Upd per command (two per rename), for the general prepare loop."""
        self.taken = True
        try:
            self.updates = [Upd(*c[1:]) for c in commands]  # (verb dropped) name new old targets
        except TypeError:  # a commands.Rename among them (three fields): two updates each
            from .rename import expand

            self.updates = expand(self, commands, Upd)
        if peeled:
            for u in self.updates:
                if u.new is not None and u.new_target is None:
                    u.peeled = peeled.get(u.new)
        self.names = {u.name for u in self.updates}

    # -- what engines supply --------------------------------------------------------------------------
    def head_ref(self) -> bytes | None:
        raise NotImplementedError

    def read(self, u: Upd) -> tuple[int, bytes | None]:
        raise NotImplementedError

    def resolve(self, name: bytes) -> bytes | None:
        raise NotImplementedError

    def exists(self, name: bytes) -> bool:
        """Does ``name`` exist in the store the availability check reads (files: packed-refs)?"""
        raise NotImplementedError

    def descendants(self, prefixes: list[bytes]) -> dict[bytes, bytes]:
        """prefix -> the first existing ref name under it, for each of ``prefixes`` that has one."""
        raise NotImplementedError

    def below_besides(self, prefix: bytes, skip: bytes) -> bytes | None:
        """The first existing ref name under ``prefix`` other than ``skip`` (a rename out of its own
        directory: ``skip`` is the renamed ref itself)."""
        raise NotImplementedError

    def after(self, u: Upd) -> None:
        """Called once ``u`` is read and checked (files writes the lock's new contents here)."""

    # -- the loop -------------------------------------------------------------------------------------
    def _add(self, u: Upd) -> None:
        self.updates.append(u)
        if not u.log_only:
            self.names.add(u.name)

    def original(self, u: Upd) -> bytes:
        while u.parent is not None:
            u = u.parent
        return u.name

    def refuse(self, u: Upd, what: str, stale: bool = False) -> TransactionRefused:
        cls = StaleValue if stale else TransactionRefused
        return cls(self.repo.gitdir, f"cannot lock ref '{_t(self.original(u))}': {what}")

    def expects_existing(self, u: Upd) -> bool:
        if u.log_only:
            return False
        return (u.old is not None and u.old != self.zero) or u.old_target is not None

    def deleting(self, u: Upd) -> bool:
        return u.new_target is None and u.new is not None and u.new == self.zero

    def reject_duplicates(self) -> None:
        if len(self.names) == len(self.updates):
            return  # (before any split: every update is one the caller gave)
        names = sorted(u.name for u in self.updates if not u.log_only)
        for a, b in zip(names, names[1:], strict=False):
            if a == b:
                raise TransactionRefused(self.repo.gitdir, f"multiple updates for ref '{_t(a)}' not allowed")

    def prepare(self) -> None:
        self.reject_duplicates()
        head_ref = self.head_ref()
        renaming = bool(self.renames)
        i = 0
        while i < len(self.updates):
            u = self.updates[i]
            i += 1
            if splits_head(self, u, head_ref):
                h = Upd(b"HEAD", u.new, u.old, u.new_target, u.old_target, True)
                h.log_only = True
                h.head_split = True
                h.parent = u
                h.peeled = u.peeled
                self._add(h)
            self._one(u)
            if renaming and u.rename is not None:
                u.rename.read(self, u)
            self.after(u)
        for u in self.updates:
            if u.head_split:
                u.current = u.parent.current
        self.check_available()

    def _one(self, u: Upd) -> None:
        kind, value = self.read(u)
        u.kind = kind
        if u.head_split:
            if kind != SYMREF or value != u.parent.name:
                raise TransactionRefused(self.repo.gitdir, "HEAD has been racily updated")
            u.referent = value
            self._decide(u)
            return
        if kind == MISSING:
            if self.expects_existing(u):
                raise self.refuse(u, f"unable to resolve reference '{_t(u.name)}'", stale=True)
            self.to_check.append(u)
            u.current = None
            self._decide(u)
            return
        if kind == SYMREF:
            u.referent = value
            if u.no_deref:
                u.current = self.resolve(value)
                if u.current is None and u.have_old and not u.log_only:
                    raise self.refuse(u, "error reading reference")
                if u.old_target is not None:
                    self.check_old_target(u, value)
                else:
                    self.check_old_oid(u, u.current, value)
            else:
                if value in self.names:
                    raise TransactionRefused(
                        self.repo.gitdir,
                        f"multiple updates for '{_t(value)}' (including one via symref '{_t(u.name)}') "
                        "are not allowed",
                    )
                child = Upd(value, u.new, u.old, u.new_target, u.old_target, False)
                child.peeled = u.peeled
                child.parent = u
                child.via_head = u.via_head or u.name == b"HEAD"
                u.log_only = True
                u.no_deref = True
                self._add(child)
                u.current = self.resolve(value)
            self._decide(u)
            return
        u.current = value
        if u.old_target is not None and not u.log_only:
            raise self.refuse(
                u, f"expected symref with target '{_t(u.old_target)}': but is a regular ref", stale=True
            )
        self.check_old_oid(u, value, None)
        p = u.parent
        while p is not None:
            p.current = value
            p = p.parent
        self._decide(u)

    def _decide(self, u: Upd) -> None:
        """git's REF_NEEDS_COMMIT or REF_LOG_ONLY: the files backend writes a lock / a reflog entry."""
        if u.log_only:
            u.write = True
        elif self.deleting(u):
            u.write = False
        elif u.new_target is not None:
            u.write = True
        else:
            u.write = u.new is not None and (u.kind == SYMREF or u.current != u.new)

    def check_old_oid(self, u: Upd, current: bytes | None, referent: bytes | None) -> None:
        if u.log_only or u.old is None:
            return
        cur = current or self.zero
        if cur == u.old:
            if u.no_deref and referent and u.old == self.zero:
                raise self.refuse(u, "dangling symref already exists", stale=True)
            return
        if u.old == self.zero:
            raise self.refuse(u, "reference already exists", stale=True)
        if cur == self.zero:
            raise self.refuse(u, f"reference is missing but expected {u.old.decode()}", stale=True)
        raise self.refuse(u, f"is at {cur.decode()} but expected {u.old.decode()}", stale=True)

    def check_old_target(self, u: Upd, referent: bytes) -> None:
        if referent == u.old_target:
            return
        orig = _t(self.original(u))
        if not referent:
            raise StaleValue(
                self.repo.gitdir,
                f"verifying symref target: '{orig}': reference is missing but expected {_t(u.old_target)}",
            )
        raise StaleValue(
            self.repo.gitdir,
            f"verifying symref target: '{orig}': is at {_t(referent)} but expected {_t(u.old_target)}",
        )

    def check_available(self) -> None:
        """git's refs_verify_refnames_available over the names that did not exist, in order."""
        if not self.to_check:
            return
        extra_set = self.names
        # every leading directory, in the order git meets them (each is checked once: git's ``dirnames``)
        parents: dict[bytes, None] = {}
        for u in self.to_check:
            parents[u.name.rpartition(b"/")[0]] = None
        dirs: dict[bytes, None] = {}
        for parent in parents:
            j = parent.find(b"/")
            while j >= 0:
                dirs[parent[:j]] = None
                j = parent.find(b"/", j + 1)
            if parent:
                dirs[parent] = None
        existing = {d for d in dirs if self.exists(d)}
        below = self.descendants([u.name + b"/" for u in self.to_check])
        if not existing and not below and extra_set.isdisjoint(dirs_of(extra_set)):
            return  # nothing in the store is in the way, and no name of the batch is another's directory
        extras = sorted(extra_set)
        seen: set[bytes] = set()
        n_extras = len(extras)
        for u in self.to_check:
            name = u.name
            # a rename's new name: its own old name is no conflict (it is deleted in the same batch)
            skip = u.rename.r.old_name if u.rename is not None else None
            parent = name.rpartition(b"/")[0]
            if parent not in seen:
                j = name.find(b"/")
                while j >= 0:
                    d = name[:j]
                    j = name.find(b"/", j + 1)
                    if d in seen or d == skip:
                        continue
                    seen.add(d)
                    if d in existing:
                        raise TransactionRefused(
                            self.repo.gitdir, f"'{_t(d)}' exists; cannot create '{_t(name)}'"
                        )
                    if d in extra_set:
                        raise TransactionRefused(
                            self.repo.gitdir, f"cannot process '{_t(name)}' and '{_t(d)}' at the same time"
                        )
            prefix = name + b"/"
            hit = below.get(prefix)
            if hit is not None and hit == skip:
                hit = self.below_besides(prefix, skip)
            if hit is not None:
                raise TransactionRefused(self.repo.gitdir, f"'{_t(hit)}' exists; cannot create '{_t(name)}'")
            k = bisect_left(extras, prefix)
            if k < n_extras and extras[k] == skip:
                k += 1
            if k < n_extras and extras[k].startswith(prefix):
                raise TransactionRefused(
                    self.repo.gitdir, f"cannot process '{_t(name)}' and '{_t(extras[k])}' at the same time"
                )

    # -- what to log ----------------------------------------------------------------------------------
    def log_new(self, u: Upd) -> bytes | None:
        """The new value a reflog entry of ``u`` records (None: git writes none -- a symref pointed at a
        ref that does not resolve)."""
        if u.new_target is not None:
            return self.resolve(u.new_target)
        return u.new
