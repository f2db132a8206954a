"""Hypothesis fuzzing of the packed-refs and reftable decoders, and of verify's own walker.

Inputs are mutations of real files git wrote (bit flips, byte stores, truncations, cuts, insertions,
splices of other parts of the file) and fully random bytes. The property: decoding either works or raises
``CorruptStore``; nothing else (no IndexError, struct.error, ValueError, zlib.error, MemoryError,
RecursionError), no endless loop (each example runs under an interval timer) and no huge allocation
(the address space is capped while the fuzzers run: a decoder trusting a corrupt 64-bit length would hit
the cap and raise MemoryError, which fails the test). verify's walker must never raise at all.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import zlib
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refscope.backend import verify as V
from refscope.backend.errors import CorruptStore, UnsupportedFormat
from refscope.backend.formats.packed import PackedRefs
from refscope.backend.formats.reftable.table import Table

from tests.support.git import create_refs, git, init_repo

# The typed errors a decoder may raise on bad input (an unknown reftable version is UnsupportedFormat).
TYPED = (CorruptStore, UnsupportedFormat)
PER_EXAMPLE_S = 2.0
MAX_ITEMS = 20000  # iteration cap: a decoder must not yield more records than its bytes could hold anyway
ADDRESS_SPACE_HEADROOM = 1 << 30  # 1 GiB above what the process already maps

# REFSCOPE_FUZZ_SCALE=20 explores 20x as many (random, not derandomized) examples: for bug hunting
# outside the suite's time budget.
SCALE = int(os.environ.get("REFSCOPE_FUZZ_SCALE", "0") or "0")


def _n(examples: int) -> int:
    return examples * SCALE if SCALE else examples


FUZZ = settings(
    max_examples=_n(800),
    deadline=None,  # the interval timer bounds each example; deadline flakiness on a loaded CI helps nobody
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not SCALE,
    database=None,
)


class Timeout(BaseException):
    """Raised by the interval timer (BaseException: decoders must not be able to swallow it)."""


def _alarm(signum, frame):
    raise Timeout()


@pytest.fixture(scope="module", autouse=True)
def bounded():
    """Cap address space and arm a per-example timer for every fuzz test in this module."""
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = 0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                vm = int(line.split()[1]) * 1024
    cap = vm + ADDRESS_SPACE_HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, old_handler)


class _Timer:
    def __enter__(self):
        signal.setitimer(signal.ITIMER_REAL, PER_EXAMPLE_S)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        return False


# --------------------------------------------------------------------------------------------- seeds


SEEDS: dict[str, list[bytes]] = {}


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> None:
    """Small real files with every structure: multi-block tables (256-byte blocks, restarts every 4),
    ref and log indexes, obj blocks, tombstones, symrefs, peeled tags; SHA-1 and SHA-256; packed-refs."""
    root = tmp_path_factory.mktemp("fuzz-seeds")
    out: dict[str, list[bytes]] = {"reftable": [], "packed": []}
    for hash_name in ("sha1", "sha256"):
        repo = init_repo(root / f"rt-{hash_name}", fmt="reftable", hash_name=hash_name)
        git(repo, "config", "reftable.blockSize", "256")
        git(repo, "config", "reftable.restartInterval", "4")
        git(repo, "tag", "-a", "-m", "annotated", "v1.0")
        lines = b"".join(b"create refs/heads/br/%03d HEAD\n" % i for i in range(40))
        git(repo, "update-ref", "--stdin", input=lines)
        git(repo, "pack-refs")
        git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
        git(repo, "update-ref", "-d", "refs/heads/br/007")
        rdir = repo / ".git" / "reftable"
        for name in (rdir / "tables.list").read_text().split():
            out["reftable"].append((rdir / name).read_bytes())
        files = init_repo(root / f"files-{hash_name}", fmt="files", hash_name=hash_name)
        git(files, "tag", "-a", "-m", "annotated", "v1.0")
        git(files, "update-ref", "--stdin", input=lines)
        git(files, "pack-refs", "--all")
        out["packed"].append((files / ".git" / "packed-refs").read_bytes())
    out["packed"].append(b"0" * 40 + b" refs/heads/unsorted-b\n" + b"1" * 40 + b" refs/heads/unsorted-a\n")
    SEEDS.update(out)  # a module global, not a test argument: hypothesis would print it on failure


@st.composite
def mutated(draw, pool: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        kind = draw(st.sampled_from(["flip", "byte", "truncate", "cut", "insert", "splice", "varint"]))
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[i] = draw(st.sampled_from([0x00, 0xFF, 0x80, 0x7F, ord("r"), ord("g"), ord("i"), ord("\n")]))
        elif kind == "truncate":
            del data[i:]
        elif kind == "cut":
            j = draw(st.integers(i, min(len(data), i + 300)))
            del data[i:j]
        elif kind == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "splice":
            j = draw(st.integers(0, len(data) - 1))
            n = draw(st.integers(1, 64))
            data[i : i + n] = data[j : j + n]
        else:  # a run of continuation bytes: the longest varints
            data[i : i + 10] = b"\xff" * 10
    if data[:4] == b"REFT" and len(data) > 100 and draw(st.booleans()):
        data = _reseal(draw, data)
    return bytes(data)


def _reseal(draw, data: bytearray) -> bytearray:
    """Change a header/footer field and make the table self-consistent again (footer repeats the header,
    CRC recomputed): gets past the cheap checks into position and block handling."""
    version = data[4]
    hsz, fsz = (24, 68) if version == 1 else (28, 72)
    if len(data) < hsz + fsz:
        return data
    foot = len(data) - fsz
    size = len(data)
    value = draw(
        st.one_of(
            st.integers(0, size + 16),
            st.sampled_from([0, 1, 24, 28, foot - 1, foot, 2**24 - 1, 2**32, 2**63 - 1, 2**64 - 1]),
        )
    )
    field = draw(st.integers(0, 6))
    if field < 5:  # a footer position (obj_position is shifted by 5 with obj_id_len in the low bits)
        at = foot + hsz + 8 * field
        if field == 1:
            value = ((value << 5) | draw(st.integers(0, 31))) & (2**64 - 1)
        data[at : at + 8] = (value & (2**64 - 1)).to_bytes(8, "big")
    elif field == 5:  # block size, mirrored into the footer
        data[5:8] = data[foot + 5 : foot + 8] = (value & 0xFFFFFF).to_bytes(3, "big")
    else:  # min/max update index, mirrored
        at = draw(st.sampled_from([8, 16]))
        data[at : at + 8] = data[foot + at : foot + at + 8] = (value & (2**64 - 1)).to_bytes(8, "big")
    data[size - 4 :] = zlib.crc32(bytes(data[foot : size - 4])).to_bytes(4, "big")
    return data


# --------------------------------------------------------------------------------------------- exercise


def exercise_table(data: bytes) -> None:
    """Everything a reader does with a table; only CorruptStore may escape."""
    try:
        t = Table.from_bytes(data, "fuzz.ref")
    except TYPED:
        return
    for step in (
        lambda: list(islice(t.iter_refs(), MAX_ITEMS)),
        lambda: list(islice(t.iter_refs(b"refs/heads/br/02"), MAX_ITEMS)),
        lambda: t.seek_ref(b"refs/heads/br/013"),
        lambda: t.seek_ref(b"refs/tags/v1.0"),
        lambda: t.seek_ref(b"zzz"),
        lambda: list(islice(t.iter_logs(), MAX_ITEMS)),
        lambda: list(islice(t.iter_logs(b"refs/heads/main"), MAX_ITEMS)),
        lambda: list(islice(t.iter_objs(), MAX_ITEMS)),
        lambda: t.blocks(),
        lambda: t.refs_for_oid(b"00" * t.hash_size),
    ):
        with contextlib.suppress(TYPED):
            step()


def exercise_packed(data: bytes) -> None:
    for hash_name in ("sha1", "sha256", None):
        try:
            p = PackedRefs.from_bytes(data, "fuzz-packed-refs", hash_name)
            list(islice(iter(p), MAX_ITEMS))
            p.lookup(b"refs/heads/br/013")
            p.locate(b"refs/tags/v1.0")
            len(p)
            p.row_range(b"refs/heads/")
            list(islice(p.iter_from(b"refs/heads/br/02"), MAX_ITEMS))
            p.validate()
        except TYPED:
            pass


def walk_table(data: bytes) -> None:
    """verify's walker never raises; a table it finds no error in must read the same refs with the reader."""
    out = V.Collector()
    info = V.verify_table_bytes(out, "fuzz.ref", data)
    if out.error_files or not info.ok:
        return
    t = Table.from_bytes(data, "fuzz.ref")
    got = [(r.name, r.value_type, r.value, r.peeled, r.target, r.update_index) for r in t.iter_refs()]
    want = [rec[:6] for rec in info.refs]
    assert got == want


def walk_packed(tmp: Path, data: bytes) -> None:
    path = tmp / "packed-refs"
    path.write_bytes(data)
    V.verify_packed(V.Collector(), str(path), "sha1")


# --------------------------------------------------------------------------------------------- tests


@pytest.mark.usefixtures("seeds")
@FUZZ
@given(data=st.data())
def test_fuzz_reftable_mutations(data):
    blob = data.draw(mutated(SEEDS["reftable"]))
    with _Timer():
        exercise_table(blob)
        walk_table(blob)


@pytest.mark.usefixtures("seeds")
@settings(FUZZ, max_examples=_n(500))
@given(data=st.data())
def test_fuzz_packed_mutations(data):
    blob = data.draw(mutated(SEEDS["packed"]))
    with _Timer():
        exercise_packed(blob)


@settings(FUZZ, max_examples=_n(800))
@given(blob=st.binary(max_size=400))
def test_fuzz_reftable_random(blob):
    # Give random bodies a valid-looking header sometimes so the decoders get past the magic check.
    for data in (
        blob,
        b"REFT\x01\x00\x01\x00" + blob,
        b"REFT\x02\x00\x00\x00" + blob[:20] + b"s256" + blob[20:],
    ):
        with _Timer():
            exercise_table(data)
            walk_table(data)


@settings(FUZZ, max_examples=_n(800))
@given(blob=st.binary(max_size=300))
def test_fuzz_packed_random(blob):
    for data in (blob, b"# pack-refs with: peeled fully-peeled sorted \n" + blob):
        with _Timer():
            exercise_packed(data)


@settings(FUZZ, max_examples=_n(300))
@given(lines=st.lists(st.binary(max_size=80), max_size=12), header=st.booleans())
def test_fuzz_verify_packed_walker(tmp_path_factory, lines, header):
    data = (b"# pack-refs with: peeled sorted \n" if header else b"") + b"\n".join(lines)
    tmp = tmp_path_factory.mktemp("fz", numbered=True)
    with _Timer():
        walk_packed(tmp, data)


# --------------------------------------------------------------------------------------------- stores

STORE_SEEDS: dict[str, object] = {}


@pytest.fixture(scope="module")
def store_seeds(tmp_path_factory: pytest.TempPathFactory, git_bin: str) -> None:
    """A reftable repository (three tables) and a files repository (packed + loose), each fuzzed in place:
    the store layer (merged view, row index, lookups, reflogs) must only raise typed errors too."""
    root = tmp_path_factory.mktemp("fuzz-stores")
    for fmt in ("reftable", "files"):
        repo = init_repo(root / fmt, fmt=fmt)
        git(repo, "config", "reftable.blockSize", "256")
        git(repo, "tag", "-a", "-m", "annotated", "v1.0")
        create_refs(repo, (b"refs/heads/br/%03d" % i for i in range(30)))
        git(repo, "pack-refs", "--all")
        git(repo, "update-ref", "refs/heads/loose", "HEAD")
        git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/heads/main")
        if fmt == "reftable":
            rdir = repo / ".git" / "reftable"
            victims = [rdir / n for n in (rdir / "tables.list").read_text().split()] + [rdir / "tables.list"]
        else:
            victims = [repo / ".git" / "packed-refs", repo / ".git" / "refs" / "heads" / "loose"]
        STORE_SEEDS[fmt] = (repo, [(p, p.read_bytes()) for p in victims])


def exercise_store(repo: Path) -> None:
    from refscope.backend.errors import RefscopeError
    from refscope.backend.repo import discover
    from refscope.backend.store import open_store

    try:
        snap = open_store(discover(str(repo))).snapshot()
        refs = list(islice(iter(snap), MAX_ITEMS))
        len(snap)
        snap.prefix_range(b"refs/heads/")
        for name in (b"refs/heads/br/013", b"refs/tags/v1.0", b"refs/heads/zzz"):
            snap.lookup(name)
        list(islice(snap.iter_from(b"refs/heads/br/02"), MAX_ITEMS))
        snap.head()
        for ref in refs[:3]:
            snap.reflog(ref.name)
        if refs:
            snap.row(len(refs) - 1)
    except RefscopeError:
        pass


@pytest.mark.usefixtures("store_seeds")
@settings(FUZZ, max_examples=_n(150))
@given(data=st.data(), fmt=st.sampled_from(["reftable", "files"]))
def test_fuzz_stores(data, fmt):
    repo, victims = STORE_SEEDS[fmt]
    i = data.draw(st.integers(0, len(victims) - 1))
    path, original = victims[i]
    blob = data.draw(mutated([original]))
    try:
        path.write_bytes(blob)
        with _Timer():
            exercise_store(repo)
    finally:
        path.write_bytes(original)
