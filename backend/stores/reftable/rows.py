"""Which records of a reftable stack are rows, and how a record becomes one.

git's ref iterator skips records that are not refs: tombstones, names failing check_refname ("ignoring ref
with broken name"), null object ids, symrefs that do not resolve. The checks here run per block, at C
speed in the normal case; ``ref_from`` builds the ``model.Ref`` of a record.
"""

from __future__ import annotations

from ...errors import CorruptStore
from ...formats.reftable.table import Table
from ...model import PER_WORKTREE_PREFIXES, TABLE, Location, Ref
from ...refname import joined_suspect
from ...refname import names_suspect as block_names_suspect  # the one check; its name here for the stores

# Bytes check_refname never rejects on their own ('/' among them). The block check joins the names with
# '/', so one search for '//' finds empty components, names starting or ending with '/' and empty names;
# the rest are conservative substring tests (a hit falls back to the exact per-name check). All C-speed
# (a regex over the block was 50x slower; four separate two-byte searches cost twice as much).
_GOOD_BYTES = bytes(c for c in range(256) if not (c <= 0x20 or c == 0x7F or c in b"~^:?[\\*"))
# ... and of those the ones a JSON string (and plain output) takes as they are: printable ASCII but '"'.
_PLAIN_BYTES = bytes(c for c in _GOOD_BYTES if c < 0x7F and c != 0x22)


def pairs_plain(names: list[bytes]) -> bool:
    """Every name passes check_refname and is printable ASCII without '"' (as it is in JSON and plain
    output): the bulk listing may print them as they are."""
    joined = b"/".join(names)
    return not joined.translate(None, _PLAIN_BYTES) and not joined_suspect(joined, names)


NOTHING_HIDDEN: frozenset[int] = frozenset()


def hidden_in(rb, table: Table | None = None) -> frozenset[int]:
    """Indices of records of a decoded block that git's ref iterator does not list although they are not
    tombstones: names failing check_refname ("ignoring ref with broken name") and null object ids. A name
    that is not even safe makes git die ("refname is dangerous"): CorruptStore. Symrefs are judged by the
    caller (they need the merged view to resolve). Two C-speed checks per block in the normal case."""
    h = rb.hidden
    if h is not None:
        return h
    names = rb.names
    bad: set[int] = set()
    if names and block_names_suspect(names):
        from ...refname import is_safe_refname, is_valid_refname  # rarely needed: not on the startup path

        types = rb.types
        for j, n in enumerate(names):
            if types[j] and not is_valid_refname(n):
                if b"\0" in n:
                    # git reads such a key as a C string, up to the NUL: the record is damage, not a
                    # name. It is not served (every other ref is); the table remembers it for the
                    # warning a listing prints, and no transaction can name it (check_refname refuses).
                    bad.add(j)
                    if table is not None:
                        table.nul_names[n] = rb.offset
                    continue
                if not is_safe_refname(n):
                    shown = n.decode("utf-8", "backslashreplace")
                    raise CorruptStore(rb.file, f"refname is dangerous: {shown}", rb.offset)
                bad.add(j)
    zero = bytes(rb.hash_size)
    if zero in rb.data:
        types = rb.types
        for j in range(len(names)):
            t = types[j]
            if (t == 1 or t == 2) and rb.oid(j).strip(b"0") == b"":
                bad.add(j)
    h = frozenset(bad) if bad else NOTHING_HIDDEN
    rb.hidden = h
    if table is not None:
        table.hidden_cache[rb.offset] = h  # later decodes of this block skip the check
    return h


def _is_root_ref_syntax(name: bytes) -> bool:
    return all(c == 0x2D or c == 0x5F or 0x41 <= c <= 0x5A for c in name)


def is_current_worktree_ref(name: bytes) -> bool:
    """git's is_current_worktree_ref: root-ref syntax (HEAD, FETCH_HEAD...) or a per-worktree prefix."""
    return name.startswith(PER_WORKTREE_PREFIXES) or _is_root_ref_syntax(name)


def all_visible(rb, table: Table) -> bool:
    """Every record of the block is listed (no tombstone, hidden record or symref to resolve)."""
    return not rb.tombstones and not rb.symrefs and not hidden_in(rb, table)


def value_key(rb, j: int) -> bytes | None:
    """``RefBlock.value_key``: what makes a record's ref "the same" (``diff.ref_value``)."""
    return rb.value_key(j)


_new = tuple.__new__  # builds NamedTuples without their Python-level __new__ (hot path)


def ref_from(name: bytes, table: Table, rb, j: int) -> Ref:
    """The Ref row of record ``j`` of the decoded block ``rb`` of ``table``, listed as ``name``."""
    ui, oid, peeled, target = rb.fields(j)
    return _new(Ref, (name, oid, peeled, target, _new(Location, (TABLE, table.name, rb.offset, ui))))
