"""Whether git would read objects through replace refs here: ``refs/replace/<oid>`` (or under
``GIT_REPLACE_REF_BASE``) makes git read the replacement's content for every atom, filter and walk
(OBJECT_INFO_LOOKUP_REPLACE, parse_object), and turns the commit-graph off, unless
``GIT_NO_REPLACE_OBJECTS`` is set or ``core.useReplaceRefs`` is false. refscope's object reader does not
follow replacements, so a run that would read objects is refused rather than answered from the
replaced objects."""

from __future__ import annotations

import os

from ..config import parse_bool
from ..errors import RefscopeError
from .spec import NEEDS_OBJECT, Atom


def replacing(repo, snap) -> bytes | None:
    """The replace-ref prefix when git would follow replacements in this repository (some ref under it
    exists), else None."""
    if "GIT_NO_REPLACE_OBJECTS" in os.environ:
        return None
    config = repo.config
    if config.has("core.usereplacerefs") and not parse_bool(
        config.get("core.usereplacerefs"), "core.usereplacerefs"
    ):
        return None
    base = os.fsencode(os.environ.get("GIT_REPLACE_REF_BASE") or "refs/replace/")
    if not base.endswith(b"/"):
        base += b"/"
    first = next(iter(snap.iter_names(base)), None)
    return base if first is not None and first.startswith(base) else None


def refuse_replaced(repo, snap, atoms: list[Atom], filtered: bool) -> None:
    """Refuse (one line) a run that reads objects -- an atom of the object, a reachability or
    --points-at filter, an ahead-behind walk -- in a repository whose objects git would replace."""
    reads = filtered or any(
        (a.name in NEEDS_OBJECT and not (a.name == "objectname" and not a.deref)) or a.name == "ahead-behind"
        for a in atoms
    )
    if not reads:
        return
    base = replacing(repo, snap)
    if base is not None:
        raise RefscopeError(
            None,
            f"replace refs ({base.decode('utf-8', 'replace')}*) are not supported: git reads the replacement"
            " objects (GIT_NO_REPLACE_OBJECTS=1 lists without them, as git does then)",
        )
