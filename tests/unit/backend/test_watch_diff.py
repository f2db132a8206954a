"""backend/diff.py: candidate derivation (pure), and diffs of real snapshot pairs checked against git."""

from __future__ import annotations

import hashlib
import random
from typing import NamedTuple

import pytest
from refscope.backend import diff as D


class T(NamedTuple):
    name: str
    min_update_index: int
    max_update_index: int


def t(lo: int, hi: int, tag: str = "00000000") -> T:
    return T(f"0x{lo:012x}-0x{hi:012x}-{tag}.ref", lo, hi)


# --- plan_tables -----------------------------------------------------------------------------------------


def test_plan_unchanged():
    a = [t(1, 5), t(6, 6)]
    assert D.plan_tables(a, list(a)) == D.TablePlan((), (), False, True)


def test_plan_append():
    a = [t(1, 5), t(6, 6)]
    b = [*a, t(7, 7), t(8, 9)]
    plan = D.plan_tables(a, b)
    assert plan == D.TablePlan((t(7, 7).name, t(8, 9).name), (), False, False)


def test_plan_pure_compaction_whole_stack():
    a = [t(1, 5), t(6, 6), t(7, 7)]
    b = [t(1, 7, "aaaaaaaa")]
    plan = D.plan_tables(a, b)
    assert plan.appended == () and not plan.unexplained
    assert plan.compactions == (D.Compaction(tuple(x.name for x in a), b[0].name, True),)
    assert D.table_candidates(plan, a, b) == set()  # nothing is read


def test_plan_compaction_in_the_middle_with_survivor_above():
    a = [t(1, 5), t(6, 6), t(7, 7), t(8, 8)]
    b = [t(1, 5), t(6, 7, "bbbbbbbb"), t(8, 8)]
    plan = D.plan_tables(a, b)
    assert plan.compactions == (D.Compaction((a[1].name, a[2].name), b[1].name, True),)


def test_plan_compaction_with_unseen_writes():
    # git appended 0x8 and compacted it with 0x7 before the watcher looked
    a = [t(1, 5), t(6, 6), t(7, 7)]
    b = [t(1, 5), t(6, 6), t(7, 8, "cccccccc")]
    plan = D.plan_tables(a, b)
    assert plan.compactions == (D.Compaction((a[2].name,), b[2].name, False, 8),)


def test_plan_compaction_plus_append():
    a = [t(1, 5), t(6, 6)]
    b = [t(1, 6, "dddddddd"), t(7, 7)]
    plan = D.plan_tables(a, b)
    assert plan.appended == (t(7, 7).name,)
    assert plan.compactions == (D.Compaction((a[0].name, a[1].name), b[0].name, True),)


def test_plan_unexplained_replacement():
    a = [t(1, 5), t(6, 6)]
    assert D.plan_tables(a, [t(1, 3, "eeeeeeee")]).unexplained  # tables vanished uncovered
    assert D.plan_tables(a, [t(1, 5), t(3, 9, "ffffffff")]).unexplained  # overlapping, covers nothing
    assert D.table_candidates(D.plan_tables(a, [t(1, 3, "eeeeeeee")]), a, []) is None


# --- packed_candidates -----------------------------------------------------------------------------------


def _oid(i: int) -> bytes:
    return hashlib.sha1(str(i).encode()).hexdigest().encode()


def _mutate(rng, b: dict, k: bytes, drop: float, plain: float, other) -> None:
    """One random edit of ``b`` at ``k``: dropped (below ``drop``), a plain value (below ``plain``), else
    ``other()`` (a value with a peeled id)."""
    r = rng.random()
    if r < drop:
        b.pop(k, None)
    elif r < plain:
        b[k] = (_oid(rng.randint(0, 5)), None)
    else:
        b[k] = other()


def _render(d: dict) -> bytes:
    out = [b"# pack-refs with: peeled fully-peeled sorted \n"]
    for k in sorted(d):
        o, p = d[k]
        out.append(o + b" " + k + b"\n")
        if p:
            out.append(b"^" + p + b"\n")
    return b"".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_packed_candidates_cover_every_difference(seed: int):
    rng = random.Random(seed)
    for trial in range(400):
        n = rng.randint(0, 40)
        a = {
            b"refs/heads/%d" % rng.randint(0, 80): (
                _oid(rng.randint(0, 5)),
                _oid(9) if rng.random() < 0.3 else None,
            )
            for _ in range(n)
        }
        b = dict(a)
        edits = 1 if trial % 2 == 0 else rng.randint(0, 4)
        for _ in range(edits):
            k = b"refs/heads/%d" % rng.randint(0, 80)
            _mutate(
                rng,
                b,
                k,
                0.3,
                0.6,
                lambda: (_oid(rng.randint(0, 5)), _oid(rng.randint(7, 9)) if rng.random() < 0.5 else None),
            )  # noqa: B023
        truth = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
        cands = D.packed_candidates(_render(a), _render(b))
        assert truth <= cands, (seed, trial)
        if edits == 1:  # one edit: at most the record itself and its neighbours are parsed
            assert len(cands) <= len(truth) + 2, (seed, trial, truth, cands)


def test_packed_candidates_identical_and_empty():
    data = _render({b"refs/heads/a": (_oid(1), None)})
    assert D.packed_candidates(data, data) == set()
    assert D.packed_candidates(b"", data) == {b"refs/heads/a"}
    assert D.packed_candidates(data, b"") == {b"refs/heads/a"}


def test_packed_candidates_large_file_one_delete_parses_one_record():
    a = {b"refs/heads/b%06d" % i: (_oid(i), None) for i in range(50_000)}
    b = dict(a)
    del b[b"refs/heads/b025000"]
    cands = D.packed_candidates(_render(a), _render(b))
    assert b"refs/heads/b025000" in cands and len(cands) <= 2


# --- loose names -----------------------------------------------------------------------------------------


def test_loose_name_and_changes():
    cd = "/r/.git"
    gd = "/r/.git/worktrees/w"
    assert D.loose_name("/r/.git/refs/heads/x", cd, cd) == b"refs/heads/x"
    assert D.loose_name("/r/.git/worktrees/w/refs/bisect/bad", gd, cd) == b"refs/bisect/bad"
    assert D.loose_name("/r/.git/packed-refs", cd, cd) is None
    old = {
        "/r/.git/refs/heads/a": (1, 1, 41),
        "/r/.git/refs/heads/b": (1, 2, 41),
        "/r/.git/packed-refs": (1, 3, 9),
    }
    new = {
        "/r/.git/refs/heads/b": (1, 4, 41),
        "/r/.git/refs/heads/c": (1, 5, 41),
        "/r/.git/packed-refs": (1, 3, 9),
    }
    assert D.loose_changes(old, new, cd, cd) == [
        D.LooseChange("deleted", "/r/.git/refs/heads/a", b"refs/heads/a"),
        D.LooseChange("changed", "/r/.git/refs/heads/b", b"refs/heads/b"),
        D.LooseChange("created", "/r/.git/refs/heads/c", b"refs/heads/c"),
    ]


# --- against git: a diff of two real snapshots equals the change of git's ref set ----------------------


def _git_set(repo) -> dict[bytes, tuple[bytes, bytes]]:
    from tests.support.git import for_each_ref

    return {n: (b"" if t else o, t) for n, o, _p, t in for_each_ref(repo)}


def test_full_and_candidate_diffs_match_git(repo, ref_format):
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    from tests.support.git import git

    oid = git(repo, "rev-parse", "HEAD").strip().decode()
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    oid2 = git(repo, "rev-parse", "HEAD").strip().decode()
    setup = "".join(f"create refs/heads/k{i} {oid}\n" for i in range(20))
    git(repo, "update-ref", "--stdin", input=setup.encode())
    git(repo, "pack-refs", "--all")
    git(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/k1")
    store = open_store(discover(str(repo)))
    before = store.snapshot()
    git_before = _git_set(repo)
    change = "".join(
        [f"delete refs/heads/k{i}\n" for i in (3, 4)]
        + [f"update refs/heads/k{i} {oid2}\n" for i in (5, 6)]
        + [f"create refs/heads/n{i} {oid}\n" for i in (1, 2)]
    )
    git(repo, "update-ref", "--stdin", input=change.encode())
    git(repo, "symbolic-ref", "refs/heads/sym", "refs/heads/k2")
    after = store.refresh(before)
    git_after = _git_set(repo)
    want = (
        tuple(sorted(git_after.keys() - git_before.keys())),
        tuple(sorted(git_before.keys() - git_after.keys())),
        tuple(sorted(n for n in git_before.keys() & git_after.keys() if git_before[n] != git_after[n])),
    )
    assert want == (
        (b"refs/heads/n1", b"refs/heads/n2"),
        (b"refs/heads/k3", b"refs/heads/k4"),
        (b"refs/heads/k5", b"refs/heads/k6", b"refs/heads/sym"),
    )
    full = D.full_diff(before, after)
    assert full[:3] == want and full.method == D.FULL
    names = {n for n in git_before.keys() | git_after.keys()}
    cand = D.diff_names(before, after, names)
    assert cand[:3] == want and cand.method == D.CANDIDATES


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_packed_diff_equals_the_change_of_values_in_any_chunking(tmp_path, chunk, monkeypatch):
    """``packed_diff`` (the watcher's diff of a rewritten packed-refs, chunk by chunk against the new
    file's seek) gives exactly the names whose oid changed, appeared or went, in name order; a change of
    the peeled line alone changes no ref."""
    from refscope.backend.formats.packed import PackedRefs

    monkeypatch.setattr(D, "PACKED_CHUNK", chunk)
    rng = random.Random(chunk)
    for trial in range(150):
        a = {
            b"refs/heads/%04d" % rng.randint(0, 900): (
                _oid(rng.randint(0, 5)),
                _oid(9) if rng.random() < 0.3 else None,
            )
            for _ in range(rng.randint(0, 300))
        }
        b = dict(a)
        for _ in range(rng.choice([1, 5, 200])):
            k = b"refs/heads/%04d" % rng.randint(0, 900)
            _mutate(rng, b, k, 0.5, 0.8, lambda: (b[k][0] if k in b else _oid(1), _oid(rng.randint(7, 9))))  # noqa: B023
        pa, pb = tmp_path / f"a{trial}", tmp_path / f"b{trial}"
        pa.write_bytes(_render(a))
        pb.write_bytes(_render(b))
        old, new = PackedRefs.open(str(pa), "sha1"), PackedRefs.open(str(pb), "sha1")
        got = D.packed_diff(old.buf, new.buf, None, 40, new.seek)
        want = (
            sorted(b.keys() - a.keys()),
            sorted(a.keys() - b.keys()),
            sorted(k for k in a.keys() & b.keys() if a[k][0] != b[k][0]),
        )
        assert tuple(got) == want, trial
        assert tuple(D.packed_diff(old.buf, new.buf, None, 40, None)) == want  # whole middles at once


@pytest.mark.parametrize("seed", range(60))
def test_packed_records_diff_is_the_change_of_records_with_their_peeled_lines(seed: int, monkeypatch):
    """``packed_records_diff(peeled=True)`` (the packed-refs view's feed): a record counts as changed when
    its oid or its ``^peeled`` line differs, exactly as comparing every record of both files would say,
    whatever the chunking and whether the files are in name order or not."""
    from refscope.backend.formats.packed import PackedRefs

    rng = random.Random(seed)
    monkeypatch.setattr(D, "PACKED_CHUNK", rng.choice([64, 200, 1 << 20]))

    def oid() -> bytes:
        return b"%040x" % rng.getrandbits(160)

    def render(recs: dict, traits: bytes) -> bytes:
        out = [b"# pack-refs with: peeled fully-peeled " + traits + b"\n"]
        for name, (o, peeled) in sorted(recs.items()):
            out.append(o + b" " + name + b"\n" + (b"^" + peeled + b"\n" if peeled else b""))
        return b"".join(out)

    peels = [None, oid(), oid()]  # two tags may peel to the same commit
    names = sorted({b"refs/tags/t%03d" % rng.randrange(300) for _ in range(rng.randrange(1, 60))})
    a = {n: (oid(), rng.choice(peels)) for n in names}
    b = dict(a)
    for _ in range(rng.randrange(0, 8)):
        n, op = rng.choice(names), rng.randrange(4)
        if op == 0:
            b.pop(n, None)
        elif op == 1:
            b[b"refs/tags/t%03d" % rng.randrange(300)] = (oid(), rng.choice(peels))
        elif n in b:
            b[n] = (b[n][0], rng.choice(peels)) if op == 2 else (oid(), b[n][1])
    traits = b"sorted " if rng.random() < 0.8 else b""
    old, new = PackedRefs.from_bytes(render(a, traits)), PackedRefs.from_bytes(render(b, traits))
    want = (
        sorted(set(b) - set(a)),
        sorted(set(a) - set(b)),
        sorted(n for n in b if n in a and a[n] != b[n]),
    )
    assert D.packed_records_diff(old, new, peeled=True) == want
