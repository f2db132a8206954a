"""Big create-only reftable batches planned by columns: the seed's 50k ``create refs/tags/foo-N <blob>``.

The general plan (``plan.Plan``) makes one Upd per command and walks them one by one; for a batch in which
every command gives a new oid and no old value but the null one, and none names a symref, what that walk
decides is known from the names alone once none of them exists: every ref is created, none is split, and
the D/F check is whether a name is a leading directory of another name or of an existing ref, or the
reverse -- set operations over the names. So the names and values stay two lists, the records are built
from them in C loops, and any batch whose checks could fail goes back to the general plan, which then
words git's refusal (a duplicate, an existing name, HEAD or its branch, a D/F conflict, a big stack).
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import not_

from ..engines.common import log_all_ref_updates
from ..formats.reftable.record import LOG_UPDATE, VALUE_SYMREF, VALUE_VAL1, VALUE_VAL2, LogRecord, RefRecord
from .plan import dirs_of, leading_dirs

_new = tuple.__new__
_AUTO_LOGGED = (b"refs/heads/", b"refs/remotes/", b"refs/notes/")  # common.should_autocreate_reflog ("true")


def creates_only(commands, zero: bytes) -> tuple[list[bytes], list[bytes]] | None:
    """(names, new oids) of a big batch in which every command gives a new oid and no old value but the
    null one (creates, updates without an old value), none a symref: what ``build_creates`` plans by
    columns. None for anything else (a rename among them too: three fields)."""
    if len(commands) <= 256:
        return None
    cols = list(zip(*commands, strict=False))  # (a Rename: three fields, three columns)
    if len(cols) != 7:
        return None
    _verbs, names, news, olds, new_targets, old_targets, _no_deref = cols
    n = len(names)
    if new_targets.count(None) != n or old_targets.count(None) != n or None in news or zero in news:
        return None
    if olds.count(None) + olds.count(zero) != n:
        return None
    return list(names), list(news)


def build_creates(up, st) -> list | None:
    """The table plans of the create-only batch of ``up`` (a ReftableUpdate with ``columns``) on its stack
    ``st``, as the general prepare and ``build`` would make them, without an Upd per command: None when any check could fail (a duplicate,
    a name that exists, HEAD or its branch, a D/F conflict within the batch or with the stack, a stack
    too big to read whole), and the general path then words git's refusal."""
    names, news = up.columns
    n = len(names)
    nameset = set(names)
    if len(nameset) != n or b"HEAD" in nameset:
        return None
    small = up.small_stack(st, n // 4)  # the general head_ref's read-ahead for such a batch
    if small is None or not nameset.isdisjoint(small):
        return None  # an existing name: old values, symrefs (the general path)
    head = small.get(b"HEAD")
    if head is not None and head.value_type == VALUE_SYMREF and head.target in nameset:
        return None  # HEAD's branch: its log-only entry (the general path)
    # D/F: no name is a leading directory of another one, nor of an existing ref, nor the reverse
    dirs = dirs_of(names)
    if not nameset.isdisjoint(dirs) or not dirs.isdisjoint(small):
        return None
    if not nameset.isdisjoint(leading_dirs({k.rpartition(b"/")[0] for k in small})):
        return None
    ts = st.next_update_index()
    peeled = up.peeled
    peels = list(map(peeled.get, news)) if peeled else None
    if peels is None or peels.count(None) == n:
        recs = zip(names, repeat(ts), repeat(VALUE_VAL1), news, repeat(None), repeat(None))
    else:
        kinds = [VALUE_VAL1 if p is None else VALUE_VAL2 for p in peels]
        recs = zip(names, repeat(ts), kinds, news, peels, repeat(None))
    refs = list(map(_new, repeat(RefRecord), recs))
    # who gets a log entry: as ``build`` decides, per name
    mode = log_all_ref_updates(up.repo)
    if mode == "always":
        flags = [True] * n
    else:
        flags = list(map(bytes.startswith, names, repeat(_AUTO_LOGGED))) if mode == "true" else [False] * n
        check = list(compress(names, map(not_, flags)))
        if check and any(t.has_logs for t in st.tables):
            having = st.log_indexes(check)
            if having:
                flags = [f or nm in having for f, nm in zip(flags, names, strict=True)]
    logs: list[LogRecord] = []
    if any(flags):
        who = up.who(up.log_message())
        logged = compress(zip(names, news, strict=True), flags)
        logs = [_new(LogRecord, (nm, ts, LOG_UPDATE, up.zero, new, *who)) for nm, new in logged]
    up.rows = list(zip(names, repeat(None), news))
    return [up.table_plan(st, ts, refs, logs, ts)]
