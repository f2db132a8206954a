"""Rows as column batches: the general form of the Snapshot protocol's ``iter_bulk`` (both stores use it
where no block-by-block fast path applies)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def ref_batches(refs: Iterable, chunk: int = 1024) -> Iterator[tuple[None, tuple[list, list, list, list]]]:
    """``(None, (names, oids, peeled, targets))`` batches of up to ``chunk`` rows of ``refs`` (Ref rows)."""
    names: list = []
    oids: list = []
    peeled: list = []
    targets: list = []
    for ref in refs:
        names.append(ref.name)
        oids.append(ref.oid)
        peeled.append(ref.peeled)
        targets.append(ref.target)
        if len(names) >= chunk:
            yield None, (names, oids, peeled, targets)
            names, oids, peeled, targets = [], [], [], []
    if names:
        yield None, (names, oids, peeled, targets)
