"""Reading git's object database natively: loose objects, packs (``.idx`` v1/v2, OFS and REF deltas),
the multi-pack-index, alternates and the commit-graph, for SHA-1 and SHA-256.

Why not pygit2 (libgit2): measured on 1M refs over 200k commits, reading each distinct tip commit through
``pygit2.Odb.read`` cost more per object than this package's reader does, and a ``Repository`` refuses
reftable repositories unless told to; the figures are in the commit that added this package. Only the
commands that show what refs point at import it: the delete path's start-up does not grow.

Layers, each over the one below: ``chunks`` (the chunk table of midx and graphs) · ``packidx`` · ``pack``
(entries, inflation, deltas) · ``loose`` · ``midx`` · ``commitgraph`` · ``odb`` (the repository's object
directories, lookups in git's order) · ``parse`` (commit and tag headers, idents) · ``tips`` (what a ref
points at, cached per object id).
"""
