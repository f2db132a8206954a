"""The object atoms' values of many distinct tips at once, over two processes when there are enough of
them: the sort of a million refs by date spends most of its time reading their 200k tip commits, and the
second core halves that.

The split is by object id (a byte string compared with a split point), so that each process reads its own
share of every pack in pack order and only columns travel back. Whatever goes wrong on either side (a
missing object, a refused one, a failed child) leaves the work to the one-process, per-ref path of
``values.Evaluator``, which reports the first problem in ref order as git does. The evaluator ``ev`` is
``values.Evaluator``; the functions use its per-object reader (``_values_of``) and cache (``_by_oid``).
"""

from __future__ import annotations

FORK_MIN = 20000  # distinct objects below which a second process costs more than it saves
EARLY_MIN = 200_000  # refs below which ``tip_columns_early`` starts no child
EARLY_TEXT_MIN = 12 << 20  # listing text below which ``tip_columns_of_text`` starts no child (~200k refs)
EARLY_SPLIT = b"5"  # the early child's share: the tips from here up (the parent also groups the refs)


def values_in_two(ev, refs) -> bool:
    """The object atoms' values of the objects of ``refs`` made over two cores (``_values_over_two``),
    kept per id in ``ev``'s cache. Only when nothing goes wrong on either side. False: nothing was done."""
    from ..parallel import may_fork

    oids = list(dict.fromkeys(ev._oids(refs)).keys() - ev._by_oid.keys())
    if len(oids) < FORK_MIN or not may_fork():
        return False
    return _keep(ev, _values_over_two(ev, oids))


def values_here(ev, refs) -> bool:
    """``values_in_two`` in this process alone (a format whose object atoms a pass over the packs'
    headers makes: no second process is worth its start)."""
    return _keep(ev, ev._values_of(list(dict.fromkeys(ev._oids(refs)).keys() - ev._by_oid.keys())))


def _keep(ev, got: tuple[list, list] | None) -> bool:
    """Keep ``_values_of``'s ``got`` in ``ev``'s cache, per id; False when there is none."""
    if got is None:
        return False
    ids, cols = got
    rows = zip(*[zip(texts, nums, strict=True) for texts, nums in cols], strict=True)
    ev._by_oid.update(zip(ids, rows, strict=True))
    return True


def tip_columns(ev, tips: list[bytes]) -> tuple[list, list, list] | None:
    """The values of every atom that depends on the object id alone (``values.tip_atom``) for the
    distinct ids ``tips``: (the ids in the order the values come in -- the packs' --, the bytes printed,
    the numbers sorted by; 0 where an atom has none), one column per atom (None for the other atoms),
    made over two cores when there are many. None when an object is missing or refused: the per-ref
    path then reports it as git does."""
    from ..parallel import may_fork

    if ev._deref:
        return None
    ids, values = tips, []
    if ev._plain:
        got = _values_over_two(ev, tips) if len(tips) >= FORK_MIN and may_fork() else ev._values_of(tips)
        if got is None:
            return None
        ids, values = got
    return _tip_table(ev, ids, values)


def tip_columns_early(ev, oids: list[bytes]):
    """``tip_columns`` begun before the caller has its distinct tips: a forked child finds its share of
    the distinct ``oids`` (the refs' ids; those at or above ``EARLY_SPLIT``) and reads them while this
    process groups the refs by tip. ``finish(tips)`` (the distinct ``oids``) gives
    ``tip_columns(tips)``; None: no child (too few refs, one core, no object atom to read)."""
    from ..parallel import Forked

    if len(oids) < EARLY_MIN or not _may_read_early(ev):
        return None
    return _finish(ev, Forked(_share_of, ev, oids, EARLY_SPLIT), EARLY_SPLIT)


def tip_columns_of_text(ev, text: list[bytes]):
    """``tip_columns_early`` forked on the listing's text (``context.Listing.text``) before this process
    makes its columns: the child makes its own (so neither touches the other's million names and ids,
    which after a fork costs a page copy per page written) and is at work while they are made."""
    from ..parallel import Forked

    if sum(map(len, text)) < EARLY_TEXT_MIN or not _may_read_early(ev):
        return None
    return _finish(ev, Forked(_text_share, ev, text, EARLY_SPLIT), EARLY_SPLIT)


def _may_read_early(ev) -> bool:
    from ..parallel import may_fork

    return not ev._deref and bool(ev._plain) and may_fork()


def _finish(ev, child, split: bytes):
    def finish(tips: list[bytes]):
        got = _with_child(ev, child, tips, split)
        return None if got is None else _tip_table(ev, *got)

    return finish


def _values_over_two(ev, oids: list[bytes]) -> tuple[list, list] | None:
    """``ev._values_of(oids)``, the ids below ``8...`` looked up, read and evaluated here and the others
    in a forked child (``parallel.Forked``; each makes the lookup table of its half of each pack index);
    a child that fails does its half here after all. Columns travel back (marshal is quick with lists of
    bytes and of ints)."""
    from ..parallel import Forked

    return _with_child(ev, Forked(ev._values_of, [o for o in oids if o >= b"8"]), oids, b"8")


def _with_child(ev, child, oids: list[bytes], split: bytes) -> tuple[list, list] | None:
    """``ev._values_of(oids)``: those below ``split`` read here, the others by ``child`` (or here, if it
    fails)."""
    from ..parallel import FAILED

    mine = ev._values_of([o for o in oids if o < split])
    if mine is None:
        child.abandon()
        return None
    theirs = child.result()
    if theirs is FAILED:
        theirs = ev._values_of([o for o in oids if o >= split])
    if theirs is None:
        return None
    cols = [(t1 + t2, n1 + n2) for (t1, n1), (t2, n2) in zip(mine[1], theirs[1], strict=True)]
    return mine[0] + theirs[0], cols


def _tip_table(ev, ids: list[bytes], values: list) -> tuple[list, list, list]:  # tip_columns' result
    strs: list = [None] * len(ev.atoms)
    nums: list = [None] * len(ev.atoms)
    for k, a in enumerate(ev.atoms):
        if a.name == "objectname" and not a.deref:
            strs[k] = ids if a.arg is None else ev.short_ids(ids, a.arg)
            nums[k] = [0] * len(ids)
    for j, k in enumerate(ev._plain):
        strs[k], nums[k] = values[j]
    return ids, strs, nums


def _share_of(ev, oids: list[bytes], split: bytes) -> tuple[list, list] | None:
    """(in ``tip_columns_early``'s child) ``ev._values_of`` the distinct ids of ``oids`` at or above
    ``split`` (filtered before the set is made, by a C-level ``filter``: the set then holds only the
    child's share)."""
    return ev._values_of(list(set(filter(split.__le__, oids))))


def _text_share(ev, text: list[bytes], split: bytes) -> tuple[list, list] | None:
    """(in ``tip_columns_of_text``'s child) ``_share_of`` the ids of the listing's ``text``."""
    from .context import columns_of

    return _share_of(ev, columns_of(text).oids, split)
