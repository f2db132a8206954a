"""The whole-file check a splice needs (``PackedRefs.validate``): its C-speed chunk check
(``checked_names``) never passes what the record-by-record reader rejects or hides, and the check split
over two processes reports exactly what one process reports.

A reference for "reads cleanly": every record decodes and names strictly increase (``iter_records`` raises
otherwise), and no name is dangerous (git dies on those while it rewrites the file)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend import parallel
from refscope.backend.errors import CorruptStore
from refscope.backend.formats.packed import PackedRefs, checked_names
from refscope.backend.formats.packed import check as packed
from refscope.backend.refname import check_refname, is_safe_refname, is_valid_refname

HEADER = b"# pack-refs with: peeled fully-peeled sorted \n"
COMPONENT = st.text(alphabet="abcXYZ019-_.@{}/é k~^\t", min_size=1, max_size=6).map(lambda s: s.encode())
NAME = st.one_of(
    st.lists(COMPONENT, min_size=1, max_size=4).map(lambda cs: b"refs/" + b"/".join(cs)),
    st.sampled_from([b"HEAD", b"refs/", b"refs//x", b"rexs/x", b"refs/a.lock", b"refs/x.", b"@"]),
)
OID = st.binary(min_size=20, max_size=20).map(lambda b: b.hex().encode())
RECORDS = st.lists(st.tuples(NAME, OID, st.one_of(st.none(), OID)), min_size=1, max_size=25)
MUTATIONS = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(b"\n ^\x00g/.A\t")), max_size=3)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


def _run(records) -> bytes:
    return b"".join(
        o + b" " + n + b"\n" + (b"^" + p + b"\n" if p is not None else b"") for n, o, p in records
    )


def _mutated(records, in_order: bool, mutations) -> bytes:
    """The records (names holding no LF; sorted by name if ``in_order``) with bytes overwritten."""
    records = [r for r in records if b"\n" not in r[0]]
    if in_order:
        records.sort(key=lambda r: r[0])
    raw = bytearray(_run(records))
    for pos, byte in mutations if raw else ():
        raw[pos % len(raw)] = byte
    return bytes(raw)


def _reference(p: PackedRefs) -> list[bytes]:
    """Names in file order; raises CorruptStore as the record-by-record reader does, and at a name git
    hides (verify's error: a write refuses a store that does not read cleanly)."""
    names = []
    for rec in p.iter_records():
        if not is_valid_refname(rec.name) and not is_safe_refname(rec.name):
            raise p.corrupt("dangerous", rec.offset)
        if not is_valid_refname(rec.name):
            raise p.broken_name(rec.name, rec.offset)
        names.append(rec.name)
    return names


@SETTINGS
@given(RECORDS, st.booleans(), MUTATIONS)
def test_checked_names_only_for_clean_runs(records, in_order, mutations) -> None:
    run = _mutated(records, in_order, mutations)
    if not run:
        return
    if run[-1:] != b"\n":
        run += b"\n"
    names = checked_names(run, 40)
    if names is None:
        return
    p = PackedRefs.from_bytes(HEADER + run)
    assert _reference(p) == names  # decodes, in strict order, nothing dangerous
    assert all(check_refname(n) is None for n in names)  # and nothing git would hide


@SETTINGS
@given(RECORDS, st.booleans(), MUTATIONS)
def test_validate_refuses_exactly_what_the_reader_refuses(records, in_order, mutations) -> None:
    try:
        p = PackedRefs.from_bytes(HEADER + _mutated(records, in_order, mutations))
    except CorruptStore:
        return
    try:
        _reference(p)
        clean = True
    except CorruptStore:
        clean = False
    if clean:
        p.validate()
    else:
        with pytest.raises(CorruptStore):
            p.validate()


def test_checked_names_accepts_plain_runs_with_peeled_lines() -> None:
    records = [
        (b"refs/tags/v%05d" % i, b"%040x" % i, b"%040x" % (i + 7) if i % 3 else None) for i in range(300)
    ]
    run = _run(records)
    assert checked_names(run, 40) == [n for n, _o, _p in records]
    for bad in (b"refs/heads/a..b", b"refs/heads/a/", b"refs/x.lock", b"refs/x@{1}", b"refs/.x", b"refs/x."):
        assert checked_names(run + b"%040x " % 1 + bad + b"\n", 40) is None, bad
    assert checked_names(run + b"%040x refs/tags/v00299\n" % 1, 40) is None  # a duplicate
    assert checked_names(run + b"^%040x\n" % 1, 40) is None  # a peeled line after a peeled line
    assert checked_names(run.replace(b"\n^", b"\n^^", 1), 40) is None
    for first in (
        b"",
        b".x",
        b"/x",
        b"-x",
    ):  # sorts before refs/: only strict order plus refs/ rule these out
        assert checked_names(b"%040x " % 1 + first + b"\n" + run, 40) is None, first
    # one space too many on a line and none on the next: the pieces still pair up as (oid, name), but
    # "refs/zz" has no oid (git: "unexpected line"); spaces and LFs must alternate
    assert checked_names(run + b"%040x refs/x %040x\nrefs/zz\n" % (1, 2), 40) is None
    for line in (
        b"%039x refs/tags/w\n",
        b"%041x refs/tags/w\n",
        b"%040X refs/tags/w\n",
        b"%040x\trefs/tags/w\n",
    ):
        assert checked_names(run + line % 10, 40) is None, line  # git reads the last two: decoded one by one
    shuffled = _run(records[1:2] + records[:1] + records[2:])
    assert checked_names(shuffled, 40) is None


# -- two processes ------------------------------------------------------------------------------------
N_BIG = 40_000  # ~2.7 MB: above packed._FORK_MIN, so validate splits the file


def _big(tmp_path, mutate=None) -> str:
    lines = [b"%040x refs/heads/branch-%06d\n" % (i, i) for i in range(N_BIG)]
    if mutate is not None:
        mutate(lines)
    path = tmp_path / "packed-refs"
    path.write_bytes(HEADER + b"".join(lines))
    return str(path)


def _outcome(path: str):
    p = PackedRefs.open(path)
    try:
        p.validate()
    except CorruptStore as err:
        return err.what, err.offset
    finally:
        p.close()
    return None


def _set(i: int, line: bytes):
    def mutate(lines: list[bytes]) -> None:
        lines[i] = line

    return mutate


def _swap(i: int):
    def mutate(lines: list[bytes]) -> None:
        lines[i], lines[i + 1] = lines[i + 1], lines[i]

    return mutate


MID = N_BIG // 2  # the first record of the child's half
CASES = {
    "clean": None,
    "bad oid near the end": _set(N_BIG - 5, b"%039xg refs/heads/branch-%06d\n" % (1, N_BIG - 5)),
    "bad oid in the first half": _set(17, b"%039xg refs/heads/branch-%06d\n" % (1, 17)),
    "dangerous name in the second half": _set(
        N_BIG - 2, b"%040x refs/heads/branch-%06d/../../x\n" % (1, N_BIG - 2)
    ),
    "hidden name (refused for writes, as verify reports it)": _set(
        N_BIG - 2, b"%040x refs/heads/branch-%06d~\n" % (1, N_BIG - 2)
    ),
    "disorder inside the second half": _swap(N_BIG - 100),
    "disorder across the halves": _swap(MID - 1),
    "duplicate at the end": _set(N_BIG - 1, b"%040x refs/heads/branch-%06d\n" % (1, N_BIG - 2)),
    "unterminated peeled line": _set(
        N_BIG - 3, b"%040x refs/heads/branch-%06d\n^%039x\n" % (1, N_BIG - 3, 2)
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_two_processes_report_what_one_does(case, tmp_path, monkeypatch) -> None:
    path = _big(tmp_path, CASES[case])
    monkeypatch.setattr(parallel, "may_fork", lambda: True)
    started = []
    real = parallel.Forked
    monkeypatch.setattr(parallel, "Forked", lambda *a: started.append(a[1:]) or real(*a))
    split = _outcome(path)
    assert len(started) == 1 and started[0][1] == os.path.getsize(path)  # the second half went to a child
    monkeypatch.setattr(packed, "FORK_MIN", 1 << 60)
    assert split == _outcome(path)  # what, offset: exactly as in one process
    if case == "clean":
        assert split is None
    else:
        assert split is not None
    if case.startswith("disorder across"):
        assert "packedRefUnsorted" in split[0]


def test_a_failing_child_leaves_the_check_to_the_parent(tmp_path, monkeypatch) -> None:
    """A child that dies (here: its check raises something unexpected) is not a verdict: the parent
    checks that half itself and finds what is there."""
    path = _big(tmp_path, CASES["bad oid near the end"])
    monkeypatch.setattr(parallel, "may_fork", lambda: True)
    real = PackedRefs._range_verdict
    parent = os.getpid()

    def verdict(self, start, end):
        if os.getpid() != parent:
            raise RuntimeError("child broke")
        return real(self, start, end)

    monkeypatch.setattr(PackedRefs, "_range_verdict", verdict)
    got = _outcome(path)
    assert got is not None and got[0].startswith("unexpected line in")


def test_forked_result_failure_and_abandon() -> None:
    assert parallel.Forked(lambda a, b: {a: [b, (1, b"x")]}, "k", 2).result() == {"k": [2, (1, b"x")]}
    assert parallel.Forked(lambda: 1 / 0).result() is parallel.FAILED
    assert parallel.Forked(lambda: object()).result() is parallel.FAILED  # not marshallable
    child = parallel.Forked(__import__("time").sleep, 30)
    child.abandon()
    assert child.pid == -1
