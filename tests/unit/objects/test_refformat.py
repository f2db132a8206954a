"""``for-each-ref`` formats, sorting and filters against git's own output, byte for byte: every supported
atom and modifier, alone and together, on generated repositories of both ref formats and both hashes
(loose and packed refs and objects, annotated and nested tags, tags of blobs and trees, symrefs, merges,
zones east and west, CRLF and multi-paragraph messages), and git's errors for what git refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import count

import pytest
from refscope.backend.errors import RefscopeError
from refscope.backend.objects.commitgraph import open_commit_graph
from refscope.backend.objects.odb import Odb
from refscope.backend.refformat import dates
from refscope.backend.refformat.context import context, resolved
from refscope.backend.refformat.order import versioncmp
from refscope.backend.refformat.run import NO_FILTERS, Filters, for_each_ref, plan
from refscope.backend.refformat.spec import FormatError
from refscope.backend.repo import discover
from refscope.backend.store import open_store

from tests.support.git import git, git_binary, git_env, init_repo
from tests.support.history import history

NOW = 1700100000

FORMATS = [
    "%(refname) %(refname:short) %(refname:lstrip=1) %(refname:lstrip=-1) %(refname:rstrip=1) %(refname:rstrip=-2) %(refname:strip=2)",
    "%(refname:lstrip=2)|%(refname:lstrip=3)|%(refname:lstrip=9)|%(refname:rstrip=2)|%(refname:rstrip=3)"
    "|%(refname:rstrip=9)|%(refname:strip=0)|%(HEAD)|%(worktreepath)|%(*refname:lstrip=2)",
    "%(objectname) %(objectname:short) %(objectname:short=4) %(objectname:short=12) %(objecttype) %(objectsize)",
    "%(*objectname) %(*objecttype) %(*objectsize) %(*objectname:short)",
    "%(tree) %(tree:short) %(parent) %(parent:short=5) %(numparent) %(object) %(type) %(tag)",
    "%(author)|%(authorname)|%(authoremail)|%(authoremail:trim)|%(authoremail:localpart)|%(authoremail:trim,localpart)",
    "%(committer)|%(committername)|%(committeremail)|%(tagger)|%(taggername)|%(taggeremail:trim)",
    "%(authordate)|%(committerdate)|%(taggerdate)|%(creatordate)|%(creator)",
    "%(committerdate:unix) %(committerdate:iso8601) %(committerdate:iso) %(committerdate:iso8601-strict)",
    "%(creatordate:short) %(creatordate:rfc2822) %(creatordate:rfc) %(creatordate:raw) %(authordate:iso-strict)",
    "%(committerdate:relative)|%(creatordate:relative)|%(*committerdate:relative)",
    "%(subject)|%(body)|%(contents:subject)|%(contents:body)|%(contents:signature)|%(contents:size)",
    "[%(contents)]",
    "%(*subject)|%(*authorname)|%(*committerdate:unix)|%(*body)|%(*tree)",
    "%(symref) %(symref:short) %(symref:lstrip=2) %(flag) %(HEAD) %(worktreepath)",
    "100%% %41%42 %zz %4 %(refname)%0a%(objectname:short)%",
    "%(refname:short=)",
]
SORTS = [
    [],
    ["-refname"],
    ["committerdate"],
    ["-committerdate"],
    ["creatordate", "-objecttype"],
    ["version:refname"],
    ["-v:refname"],
    ["objectname"],
    ["authordate", "subject"],
    ["objectsize"],
    ["committerdate:unix"],
    ["-*committerdate"],
]


def _repo(tmp_path, fmt: str, hash_name: str, *, packed_refs: bool):
    repo = init_repo(tmp_path / "r", fmt, hash_name)
    git(repo, "config", "gc.auto", "0")
    git(repo, "config", "maintenance.auto", "false")
    history(repo, 24)
    git(repo, "tag", "v1.2", "main~2")
    git(repo, "tag", "v1.10", "main~1")
    git(repo, "tag", "v1.9-rc1", "main~4")
    git(repo, "tag", "-a", "heads/main", "-m", "ambiguous", "main")
    git(repo, "branch", "tags/v1.2", "main~6")
    git(repo, "update-ref", "refs/remotes/origin/main", "main~5")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "side")
    if packed_refs:
        git(repo, "pack-refs", "--all")
        git(repo, "branch", "loose-after", "main~3")
    git(repo, "repack", "-adq")
    git(repo, "commit", "-q", "--allow-empty", "-m", "loose commit\r\n\r\nwith crlf\r\n")
    return repo


def _ours(repo, fmt, sort, filters=NO_FILTERS, count=None, commit_graph=False):
    r = discover(str(repo))
    snap = open_store(r).snapshot()
    refs = []
    for ref in snap:
        ref = resolved(snap, ref)
        if ref is not None:
            refs.append(ref)
    ctx = context(r, snap)
    odb = Odb(os.path.join(r.commondir, "objects"), r.hash_name, {})
    cg = open_commit_graph(os.path.join(r.commondir, "objects"), odb.rawsz) if commit_graph else None
    p = plan(fmt.encode(), sort)
    lines = for_each_ref(
        p,
        refs,
        odb,
        head=ctx.head,
        worktrees=ctx.worktrees,
        exists=ctx.exists,
        filters=filters,
        count=count,
        commit_graph=cg,
    )
    return b"".join(lines)


def _theirs(repo, fmt, sort, extra=()):
    args = ["for-each-ref", f"--format={fmt}", *[f"--sort={s}" for s in sort], *extra]
    env = git_env()
    env["GIT_TEST_DATE_NOW"] = str(NOW)
    proc = subprocess.run([git_binary(), *args], cwd=repo, capture_output=True, env=env)
    return proc


@pytest.fixture(autouse=True)
def _fixed_now(monkeypatch):
    monkeypatch.setenv("GIT_TEST_DATE_NOW", str(NOW))


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
@pytest.mark.parametrize(("fmt", "packed"), [("files", False), ("files", True), ("reftable", False)])
def test_every_format_matches_git(tmp_path, fmt, hash_name, packed):
    repo = _repo(tmp_path, fmt, hash_name, packed_refs=packed)
    for f in FORMATS:
        proc = _theirs(repo, f, [])
        if proc.returncode:
            with pytest.raises(RefscopeError) as e:
                _ours(repo, f, [])
            assert proc.stderr.decode().strip().endswith(e.value.what), f
            continue
        assert _ours(repo, f, []) == proc.stdout, f


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_every_sort_matches_git(tmp_path, fmt):
    repo = _repo(tmp_path, fmt, "sha1", packed_refs=True)
    for sort in SORTS:
        proc = _theirs(repo, "%(refname) %(committerdate:unix) %(objecttype)", sort)
        assert proc.returncode == 0, proc.stderr
        assert _ours(repo, "%(refname) %(committerdate:unix) %(objecttype)", sort) == proc.stdout, sort


@pytest.mark.parametrize("graph", [False, True])
def test_reachability_filters_match_git(tmp_path, graph):
    repo = _repo(tmp_path, "files", "sha1", packed_refs=True)
    if graph:
        git(repo, "commit-graph", "write", "--reachable")
        git(
            repo, "commit", "-q", "--allow-empty", "-m", "newer than the graph"
        )  # walked by id, parents by position
    rev = lambda name: git(repo, "rev-parse", name).strip()  # noqa: E731
    cases = [
        (Filters(merged=(rev("main"),)), ["--merged=main"]),
        (Filters(merged=(rev("side"), rev("main~5"))), ["--merged=side", "--merged=main~5"]),
        (Filters(no_merged=(rev("main~3"),)), ["--no-merged=main~3"]),
        (Filters(contains=(rev("main~4"),)), ["--contains=main~4"]),
        (Filters(no_contains=(rev("main~4"),)), ["--no-contains=main~4"]),
        (Filters(points_at=(rev("main~2"),)), ["--points-at=main~2"]),
        (Filters(points_at=(rev("main"),)), ["--points-at=main"]),
        (Filters(merged=(rev("main"),), contains=(rev("main~8"),)), ["--merged=main", "--contains=main~8"]),
    ]
    for filters, args in cases:
        proc = _theirs(repo, "%(refname)", [], args)
        assert proc.returncode == 0, proc.stderr
        assert _ours(repo, "%(refname)", [], filters, commit_graph=graph) == proc.stdout, args


def test_count_matches_git(tmp_path):
    repo = _repo(tmp_path, "files", "sha1", packed_refs=False)
    for sort in ([], ["-committerdate"]):
        proc = _theirs(repo, "%(refname)", sort, ["--count=5"])
        assert _ours(repo, "%(refname)", sort, count=5) == proc.stdout


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("%(nosuch)", "unknown field name: nosuch"),
        ("%(refname", "malformed format string %(refname"),
        ("%(objecttype:x)", "%(objecttype) does not take arguments"),
        ("%(refname:bogus)", "unrecognized %(refname) argument: bogus"),
        ("%(refname:lstrip=x)", "Integer value expected refname:lstrip=x"),
        ("%(objectname:short=0)", "positive value expected '0' in %(objectname:short=0)"),
        ("%(authoremail:bogus)", "unrecognized %(authoremail) argument: bogus"),
        ("%(committerdate:bogus)", "unknown date format bogus"),
        ("%()", "malformed field name: "),
    ],
)
def test_refusals_carry_gits_words(tmp_path, fmt, message):
    repo = _repo(tmp_path, "files", "sha1", packed_refs=False)
    proc = _theirs(repo, fmt, [])
    assert proc.returncode != 0
    # git dies for most, and reports a malformed format string as an error before its usage
    first = proc.stderr.decode().split("\n")[0]
    assert first in (f"fatal: {message}", f"error: {message}")
    with pytest.raises(RefscopeError) as e:
        _ours(repo, fmt, [])
    assert e.value.what == message


@pytest.mark.parametrize("fmt", ["%(align:4)x%(end)", "%(color:red)", "%(upstream)", "%(describe)", "%(raw)"])
def test_unsupported_atoms_are_named(fmt):
    with pytest.raises(FormatError, match="unsupported field name"):
        plan(fmt.encode(), [])


def test_missing_object_is_gits_error(tmp_path):
    repo = init_repo(tmp_path / "r")
    gone = "1" * 40
    (repo / ".git" / "refs" / "heads" / "gone").write_text(gone + "\n")
    proc = _theirs(repo, "%(objecttype) %(refname)", [])
    assert proc.returncode == 128
    with pytest.raises(RefscopeError) as e:
        _ours(repo, "%(objecttype) %(refname)", [])
    assert proc.stderr.decode().strip() == f"fatal: {e.value.what}"
    # a format that reads no object lists it, as git does
    assert _ours(repo, "%(refname)", []) == _theirs(repo, "%(refname)", []).stdout


@pytest.mark.parametrize(
    ("when", "tz"),
    [
        (0, 0),
        (1, -1),
        (951782400, 100),
        (1700000000, -1230),
        (4102444800, 545),
        (253402300799, 0),
        (2**40, -800),
    ],
)
def test_dates_match_git_log(tmp_path, when, tz):
    repo = init_repo(tmp_path / "r")
    env = git_env()
    sign = "-" if tz < 0 else "+"
    env["GIT_COMMITTER_DATE"] = f"@{when} {sign}{abs(tz):04d}"
    subprocess.run([git_binary(), "commit", "-q", "--allow-empty", "-m", "d"], cwd=repo, env=env, check=True)
    for mode in ("default", "iso8601", "iso8601-strict", "short", "rfc2822", "raw", "unix"):
        proc = subprocess.run(
            [git_binary(), "log", "-1", "--format=%cd", f"--date={mode}"],
            cwd=repo,
            env=git_env(),
            capture_output=True,
        )
        if proc.returncode:
            with pytest.raises(RefscopeError) as e:
                dates.show(when, tz, mode)
            assert proc.stderr.decode().strip() == f"fatal: {e.value.what}", mode
            continue
        assert dates.show(when, tz, mode) == proc.stdout.rstrip(b"\n").decode(), mode


def test_relative_dates_match_git(tmp_path):
    repo = init_repo(tmp_path / "r")
    for ago in (0, 5, 89, 90, 3000, 5400, 100000, 1000000, 5000000, 20000000, 40000000, 100000000, 400000000):
        env = git_env()
        env["GIT_COMMITTER_DATE"] = f"@{NOW - ago} +0000"
        env["GIT_TEST_DATE_NOW"] = str(NOW)
        subprocess.run(
            [git_binary(), "commit", "-q", "--allow-empty", "-m", "d"], cwd=repo, env=env, check=True
        )
        want = (
            subprocess.run(
                [git_binary(), "log", "-1", "--format=%cd", "--date=relative"],
                cwd=repo,
                env=env,
                capture_output=True,
            )
            .stdout.rstrip(b"\n")
            .decode()
        )
        assert dates.relative(NOW - ago, NOW) == want, ago


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("v1.2", "v1.10"),
        ("v1.9-rc1", "v1.9"),
        ("a01", "a1"),
        ("a001", "a01"),
        ("1.0", "1.0.1"),
        ("x9", "x10"),
        ("abc", "abd"),
    ],
)
def test_versioncmp_orders_as_git(tmp_path, a, b):
    repo = init_repo(tmp_path / "r")
    git(repo, "tag", a)
    git(repo, "tag", b)
    order = git(repo, "tag", "--sort=version:refname").split()
    assert (versioncmp(a.encode(), b.encode()) < 0) == (order.index(a.encode()) < order.index(b.encode()))


def _cli(repo, *args):
    env = git_env()
    env["GIT_TEST_DATE_NOW"] = str(NOW)
    return subprocess.run(
        [sys.executable, "-m", "refscope.app", "list", *args], cwd=repo, env=env, capture_output=True
    )


CLI_CASES = [
    ["--format=%(refname:short) %(subject)", "--sort=-committerdate"],
    ["--sort=objectsize", "--count=3"],
    ["--sort=refname"],
    ["--merged=main", "--format=%(refname)"],
    ["--format=%(refname)", "--no-merged"],
    ["--no-merged", "refs/heads"],  # git's "last argument default": the next argument is the commit
    ["--points-at=main", "--format=%(refname)"],
    ["--contains", "v1.2", "--format=%(refname) %(HEAD)"],
    ["--format=%(refname)", "refs/tags/v*"],
    ["--format=%(refname) %(objectname:short)", "--count=0", "refs/remotes"],
    ["--omit-empty", "--format=%(taggername)"],
]


@pytest.mark.parametrize("fmt", ["files", "reftable"])
def test_cli_list_speaks_for_each_ref(tmp_path, fmt):
    repo = _repo(tmp_path, fmt, "sha1", packed_refs=fmt == "files")
    for args in CLI_CASES:
        theirs = subprocess.run(
            [git_binary(), "for-each-ref", *args], cwd=repo, capture_output=True, env=git_env()
        )
        ours = _cli(repo, *args)
        if theirs.returncode:
            assert ours.returncode == 1
            assert ours.stderr.decode().strip() == theirs.stderr.decode().strip().replace(
                "fatal:", "refscope:"
            )
            continue
        assert (ours.returncode, ours.stderr, ours.stdout) == (0, b"", theirs.stdout), args


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (
            ["--json", "--format=%(refname)"],
            2,
            "refscope: --json cannot be combined with for-each-ref's options",
        ),
        (["--count=-1"], 2, "refscope: invalid --count argument: `-1'"),
        (["--count=x"], 2, "refscope: option `count' expects an integer value with an optional k/m/g suffix"),
        (["--format=%(nosuch)"], 1, "refscope: unknown field name: nosuch"),
        (["--merged=nosuch"], 1, "refscope: malformed object name nosuch"),
        (
            ["--merged=main@{1}"],
            1,
            "refscope: unsupported revision syntax: main@{1} (reflogs, paths and ^{/text} are not read)",
        ),
        (["--points-at=nosuch"], 1, "refscope: malformed object name 'nosuch'"),
        (["--sort=-nosuch"], 1, "refscope: unknown field name: nosuch"),
    ],
)
def test_cli_refusals_are_one_line_and_change_nothing(tmp_path, args, status, message):
    from tests.support.git import tree_bytes

    repo = _repo(tmp_path, "files", "sha1", packed_refs=False)
    before = tree_bytes(repo / ".git")
    got = _cli(repo, *args)
    assert got.returncode == status
    assert got.stderr.decode().split("\n")[0] == message
    assert got.stdout == b""
    assert tree_bytes(repo / ".git") == before


def test_cli_merged_on_a_tree_is_refused(tmp_path):
    repo = _repo(tmp_path, "files", "sha1", packed_refs=False)
    tree = git(repo, "rev-parse", "main^{tree}").strip().decode()
    got = _cli(repo, f"--merged={tree}")
    assert (got.returncode, got.stderr.decode().strip()) == (
        1,
        "refscope: option `merged' must point to a commit",
    )


def test_objects_read_over_two_processes_match_git(tmp_path, monkeypatch):
    """The forked half of a big run (here every run: the threshold is 1) gives git's bytes, and a missing
    object still fails with git's words for the first ref that names one."""
    from refscope.backend import parallel
    from refscope.backend.refformat import tipreads

    forks = []
    real = parallel.Forked
    monkeypatch.setattr(tipreads, "FORK_MIN", 1)
    monkeypatch.setattr(parallel, "Forked", lambda *a, **k: forks.append(1) or real(*a, **k))
    repo = _repo(tmp_path, "files", "sha1", packed_refs=True)
    for f, sort in [
        ("%(committerdate:unix) %(refname)", ["-committerdate"]),
        ("%(authordate:iso)|%(creatordate)|%(subject)|%(objecttype)", ["creatordate"]),
        ("%(refname)%(committerdate:relative)", ["authordate", "-objectsize"]),
    ]:
        assert _ours(repo, f, sort) == _theirs(repo, f, sort).stdout, f
    assert forks
    (repo / ".git" / "refs" / "heads" / "gone").write_text("1" * 40 + "\n")
    proc = _theirs(repo, "%(objecttype) %(refname)", [])
    with pytest.raises(RefscopeError) as e:
        _ours(repo, "%(objecttype) %(refname)", [])
    assert proc.stderr.decode().strip() == f"fatal: {e.value.what}"


def test_points_at_over_two_processes_matches_git(tmp_path, monkeypatch):
    """--points-at without a commit-graph reads every tip, split by id between this process and a
    forked one (here every run: the threshold is 1): git's refs, and a tip that will not read fails for
    the first ref that names it, whichever process read it."""
    from refscope.backend import parallel
    from refscope.backend.refformat import tipreads

    forks = []
    real = parallel.Forked
    monkeypatch.setattr(tipreads, "FORK_MIN", 1)
    monkeypatch.setattr(parallel, "Forked", lambda *a, **k: forks.append(1) or real(*a, **k))
    repo = _repo(tmp_path, "files", "sha1", packed_refs=True)
    git(repo, "tag", "-a", "deep", "-m", "a tag of a tag", "heads/main")
    rev = lambda name: git(repo, "rev-parse", name).strip()  # noqa: E731
    for target in ("main", "main~2", "heads/main"):
        proc = _theirs(repo, "%(refname)", [], [f"--points-at={target}"])
        assert proc.returncode == 0 and proc.stdout, proc.stderr
        assert _ours(repo, "%(refname)", [], Filters(points_at=(rev(target),))) == proc.stdout, target
    assert forks
    tree = rev("main^{tree}").decode()
    made: dict[bool, bytes] = {}  # a loose commit whose id is from 8... (the child's share), and one below
    for i in count():
        oid = git(repo, "commit-tree", tree, "-m", f"damaged {i}").strip()
        made.setdefault(oid >= b"8", oid)
        if len(made) == 2:
            break
    git(repo, "update-ref", "refs/heads/zz-a", made[True].decode())  # first in ref order: the child's
    git(repo, "update-ref", "refs/heads/zz-b", made[False].decode())
    for oid in made.values():
        path = repo / ".git" / "objects" / oid[:2].decode() / oid[2:].decode()
        path.chmod(0o644)
        path.write_bytes(b"not zlib")
    with pytest.raises(RefscopeError) as e:
        _ours(repo, "%(refname)", [], Filters(points_at=(rev("main"),)))
    assert f"{made[True][:2].decode()}/{made[True][2:].decode()}" in str(e.value)
    assert _theirs(repo, "%(refname)", [], ["--points-at=main"]).returncode == 128


def _ours_columns(repo, fmt, sort, filters=NO_FILTERS, count=None, commit_graph=False):
    """``_ours`` through the CLI's way in (``listed_for``): the refs as two columns where the format needs
    no more, which a format of the refname and tip atoms takes the bulk way."""
    from refscope.backend.refformat.context import listed_for

    r = discover(str(repo))
    snap = open_store(r).snapshot()
    ctx = context(r, snap)
    odb = Odb(os.path.join(r.commondir, "objects"), r.hash_name, {})
    cg = open_commit_graph(os.path.join(r.commondir, "objects"), odb.rawsz) if commit_graph else None
    p = plan(fmt.encode(), sort)
    lines = for_each_ref(p, listed_for(snap, [], p.atoms), odb, head=ctx.head,
                         worktrees=ctx.worktrees, exists=ctx.exists, filters=filters, count=count,
                         commit_graph=cg)  # fmt: skip
    return b"".join(lines)


def _tied_repo(tmp_path, fmt: str, hash_name: str = "sha1"):
    """Refs sharing tips, and tips sharing dates: commits made at one committer time (with different
    author times), refs to each interleaved by name, annotated tags, a blob and a tree."""
    repo = init_repo(tmp_path / "t", fmt, hash_name)
    git(repo, "config", "gc.auto", "0")
    lines = []
    for i in range(1, 9):
        lines.append(
            f"commit refs/heads/c{i}\nmark :{i}\n"
            f"author A{i} <a@x> {1600000000 + (i * 37) % 5} +0100\n"
            f"committer C <c@x> {1600000000 + i // 3} -0200\n"
            f"data 4\nm{i}\n\n"
        )
    git(repo, "fast-import", "--quiet", "--force", input="".join(lines).encode())
    oids = [git(repo, "rev-parse", f"c{i}").strip().decode() for i in range(1, 9)]
    git(repo, "tag", "-a", "ann", "-m", "annotated", "c3")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"blob\n").strip().decode()
    tree = git(repo, "rev-parse", "c1^{tree}").strip().decode()
    stdin = "".join(f"create refs/pull/{n}/head {oids[(n * 5) % 8]}\n" for n in range(40))
    stdin += f"create refs/x/blob {blob}\ncreate refs/x/tree {tree}\ncreate refs/x/blob2 {blob}\n"
    git(repo, "update-ref", "--stdin", input=stdin.encode())
    if fmt == "files":
        git(repo, "pack-refs", "--all")
    git(repo, "repack", "-adq")
    return repo


BULK_FORMATS = [
    "%(committerdate:unix) %(refname)",
    "%(refname)",
    "%(objectname) %(objecttype)\t%(refname)",
    "%(refname) %(committerdate:iso) %(authordate)|%(subject)",
    "%(objectname:short)%(committerdate:unix)",  # no refname: one line per ref all the same
    "<%(refname)|%(creatordate:short)> 100%% %(objectsize) %(authorname)",
]
BULK_SORTS = [
    [],
    ["-refname"],
    ["committerdate"],
    ["-committerdate"],
    ["-committerdate", "authordate"],
    ["creatordate", "-objecttype"],
    ["committerdate:unix"],
    ["objectname"],
    ["-objectsize", "refname"],
    ["subject"],
]


@pytest.mark.parametrize(("fmt", "split"), [("files", False), ("reftable", False), ("files", True)])
def test_columns_way_matches_git_with_ties(tmp_path, fmt, split, monkeypatch):
    """The bulk way (refs as columns, values per distinct tip) on tips tied on every key: git's order,
    ties by refname, for every format and sort, with --count cutting inside a tied run; ``split``: the
    objects read and the lines made half in a forked child (every run: the thresholds are 1)."""
    from refscope.backend.refformat import bulk, tipreads

    if split:
        monkeypatch.setattr(tipreads, "FORK_MIN", 1)
        monkeypatch.setattr(bulk, "_FORK_MIN", 1)
        monkeypatch.setattr(tipreads, "EARLY_MIN", 1)
    repo = _tied_repo(tmp_path, fmt)
    for f in BULK_FORMATS:
        for sort in BULK_SORTS:
            proc = _theirs(repo, f, sort)
            assert proc.returncode == 0, proc.stderr
            assert _ours_columns(repo, f, sort) == proc.stdout, (f, sort)
    for n in (1, 3, 7, 20, 100):
        for sort in (["-committerdate"], [], ["-refname"]):
            proc = _theirs(repo, "%(committerdate:unix) %(refname)", sort, [f"--count={n}"])
            assert _ours_columns(repo, "%(committerdate:unix) %(refname)", sort, count=n) == proc.stdout


@pytest.mark.parametrize("hash_name", ["sha1", "sha256"])
def test_columns_way_matches_git_on_every_format(tmp_path, hash_name, monkeypatch):
    """Every format and sort of the per-ref tests through the columns (those that do not fit the bulk way
    go the per-ref way from them), the object reads over two processes."""
    from refscope.backend.refformat import tipreads

    monkeypatch.setattr(tipreads, "FORK_MIN", 1)
    repo = _repo(tmp_path, "files", hash_name, packed_refs=True)
    for f in FORMATS:
        proc = _theirs(repo, f, ["-committerdate"])
        if proc.returncode:
            continue
        assert _ours_columns(repo, f, ["-committerdate"]) == proc.stdout, f
    for sort in SORTS:
        proc = _theirs(repo, "%(refname) %(committerdate:unix) %(objecttype)", sort)
        assert _ours_columns(repo, "%(refname) %(committerdate:unix) %(objecttype)", sort) == proc.stdout, (
            sort
        )


@pytest.mark.parametrize("split", [b"0", b"7", b"g"])
@pytest.mark.parametrize("way", ["ids", "text"])
def test_columns_way_early_child_matches_git(tmp_path, monkeypatch, split, way):
    """The child started before the refs are grouped finds its share of the distinct tips itself -- all
    of them, some, none -- from the refs' ids (``tip_columns_early``) or from the listing's text before
    the columns are made (``tip_columns_of_text``), and the lines are git's; with a ref naming no
    object, on either side of the split, the run fails in git's words for it."""
    from refscope.backend import parallel
    from refscope.backend.refformat import tipreads

    forks = []
    real = parallel.Forked
    monkeypatch.setattr(tipreads, "EARLY_MIN", 1)
    monkeypatch.setattr(tipreads, "EARLY_TEXT_MIN", 1 if way == "text" else 1 << 40)
    monkeypatch.setattr(tipreads, "EARLY_SPLIT", split)
    monkeypatch.setattr(parallel, "Forked", lambda *a, **k: forks.append(a[0]) or real(*a, **k))
    repo = _tied_repo(tmp_path, "files")
    for sort in (["-committerdate"], ["committerdate", "-objectsize"]):
        f = "%(committerdate:unix) %(refname) %(objecttype)"
        proc = _theirs(repo, f, sort)
        assert _ours_columns(repo, f, sort) == proc.stdout, sort
    assert forks and set(forks) == {tipreads._text_share if way == "text" else tipreads._share_of}
    for gone in ("1" * 40, "e" * 40):
        (repo / ".git" / "refs" / "heads" / "gone").write_text(gone + "\n")
        proc = _theirs(repo, "%(committerdate:unix) %(refname)", ["-committerdate"])
        assert proc.returncode
        with pytest.raises(RefscopeError) as e:
            _ours_columns(repo, "%(committerdate:unix) %(refname)", ["-committerdate"])
        assert proc.stderr.decode().strip() == f"fatal: {e.value.what}"


def _odd_dates_repo(tmp_path):
    """Plain commits and commits whose author or committer line git reads oddly (made by ``hash-object
    --literally``, packed): a ``>`` before the email's end, a time with leading zeros or of 20 digits, a
    zone of five digits or none, the line first in the object or twice, after an empty line, a NUL before
    it or after it, no such line at all, a commit of more than 2047 bytes (a longer entry header) --
    interleaved, so that a chunk of objects holds plain ones only, odd ones only, or both."""
    repo = init_repo(tmp_path / "odd", "files", "sha1")
    git(repo, "config", "gc.auto", "0")
    tree = git(repo, "hash-object", "-t", "tree", "-w", "--stdin", input=b"").strip().decode()
    head = f"tree {tree}\n".encode()
    odd = [
        b"committer C <c> x> 5 +0000\nauthor A <a> 7 +0100\n",
        b"author A <a> 9 +0100\ncommitter C <c>x> 5 +0000\n",
        b"author A <a> 0009 +0100\ncommitter C <c> 0005 +0000\n",
        b"author A <a> 1234567890123456789 +0100\ncommitter C <c> 99999999999999999999 +0000\n",
        b"author A <a> 9 +01000\ncommitter C <c> 5 +00000\n",
        b"author A <a> 9\ncommitter C <c> 5\n",
        b"author A <a> 9 +0100\ncommitter C <c> 5 +0000\ncommitter D <d> 6 +0000\n",
        b"author A <a> 9 +0100\n\ncommitter C <c> 5 +0000\n",
        b"author A <a\0> 9 +0100\ncommitter C <c> 5 +0000\n",
        b"author A <a> 9 +0100\ncommitter C <c> 5 +0000\0\n",
        b"author A <a> 9 +0100\ncommitter C <c\n",
        b"author A <a> 9 +0100\n",
        b"author A <a> 9 +0100\ncommitter C <c> 5 +0000\n\n" + b"long " * 500 + b"\n",
        b"author A <a> 0 +0000\ncommitter C <c> 0 +0000\n",
    ]
    oids = []
    for i in range(60):
        plain = f"author A <a> {1600000000 + i % 7} +0100\ncommitter C <c> {1600000000 + i % 5} -0200\n"
        body = head + plain.encode() + f"\nm{i}\n".encode() if i % 4 else head + odd[(i // 4) % len(odd)]
        got = git(repo, "hash-object", "-t", "commit", "-w", "--literally", "--stdin", input=body)
        oids.append(got.strip().decode())
    refs = sorted((f"refs/pull/{n}/head", oids[(n * 7) % len(oids)]) for n in range(150))
    body = "".join(f"{oid} {name}\n" for name, oid in refs)  # (update-ref refuses some of these commits)
    (repo / ".git" / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted \n" + body)
    listed = "".join(f"{oid}\n" for oid in [tree, *oids]).encode()  # (repack would parse the commits)
    git(repo, "pack-objects", "-q", str(repo / ".git" / "objects" / "pack" / "pack"), input=listed)
    git(repo, "prune-packed")
    return repo


@pytest.mark.parametrize("chunk", [3, 4096])
def test_columns_way_reads_odd_dates_as_git(tmp_path, monkeypatch, chunk):
    """The sort by date over many commits reads each commit's date by C-level passes over a chunk of
    them (``fields.dates_columns``, ``Pack.inflate_many``); every commit it cannot read that way sends
    its chunk the per-object way: the lines are git's for the odd committer and author lines, whatever
    the chunks hold."""
    from refscope.backend.objects import pack

    monkeypatch.setattr(pack, "CHUNK", chunk)
    repo = _odd_dates_repo(tmp_path)
    for f, sort in (
        ("%(committerdate:unix) %(refname)", ["-committerdate"]),
        ("%(committerdate:unix) %(refname)", ["committerdate"]),
        ("%(authordate:unix) %(refname)", ["-authordate"]),
        ("%(refname)", ["-committerdate"]),
        ("%(committerdate:unix) %(refname)", []),
    ):
        proc = _theirs(repo, f, sort)
        assert proc.returncode == 0, proc.stderr
        assert _ours_columns(repo, f, sort) == proc.stdout, (f, sort)


@pytest.mark.parametrize(
    ("fork", "graph"), [("child", True), ("failed", True), ("none", True), ("child", False)]
)
def test_merged_over_two_processes_matches_git(tmp_path, monkeypatch, capfd, fork, graph):
    """--merged, --no-merged, --contains, --no-contains and --points-at (with a commit-graph or not) over
    a packed-refs file cut in two (every file here:
    ``SPLIT_MIN`` is 0): each half listed and filtered in its own process -- a child, a child that fails
    (its half done by the parent), or no child to be had -- and the lines are git's, tips the graph does
    not hold (a commit newer than it, tags, a blob) on either side of the cut."""
    from refscope.backend import listing, parallel
    from refscope.backend.refformat import command

    repo = _repo(tmp_path, "files", "sha1", packed_refs=True)
    if graph:
        git(repo, "commit-graph", "write", "--reachable")
    git(repo, "commit", "-q", "--allow-empty", "-m", "newer than the graph")
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"blob\n").strip().decode()
    stdin = "".join(f"create refs/z/{n} {'HEAD' if n % 3 else 'v1.2'}\n" for n in range(30))
    git(repo, "update-ref", "--stdin", input=(stdin + f"create refs/a/blob {blob}\n").encode())
    git(repo, "pack-refs", "--all")
    monkeypatch.setattr(listing, "SPLIT_MIN", 0)
    forks = []
    real = parallel.Forked
    if fork == "failed":
        monkeypatch.setattr(parallel, "Forked", lambda *a, **k: forks.append(a) or real(lambda: 1 / 0))
    elif fork == "none":
        monkeypatch.setattr(parallel, "pipes_and_fork", lambda n: forks.append(n))
    else:
        monkeypatch.setattr(parallel, "Forked", lambda *a, **k: forks.append(a) or real(*a, **k))
    tag = git(repo, "rev-parse", "v1.9-rc1").strip().decode()  # (a full id: no revision syntax here)
    cases = [("main", "merged"), (tag, "no_merged"), ("HEAD", "merged"), ("side", "merged")]
    cases += [("main~2", "contains"), ("side", "no_contains"), ("HEAD", "points_at"), (blob, "points_at")]
    for rev, key in cases:
        r = discover(str(repo))
        snap = open_store(r).snapshot()
        fmt = "%(refname) %(objectname:short)"
        command.run(r, snap, plan(fmt.encode(), []), [], revs={key: [rev]}, count=None, omit_empty=False,
                    escape=None)  # fmt: skip
        ours = capfd.readouterr().out.encode()
        opt = f"--{key.replace('_', '-')}={rev}"
        assert ours == git(repo, "for-each-ref", f"--format={fmt}", opt), opt
    assert forks


@pytest.mark.parametrize("graph", [False, True])
def test_columns_way_filters_match_git(tmp_path, graph):
    repo = _repo(tmp_path, "files", "sha1", packed_refs=True)
    if graph:
        git(repo, "commit-graph", "write", "--reachable")
        git(repo, "commit", "-q", "--allow-empty", "-m", "newer than the graph")
    rev = lambda name: git(repo, "rev-parse", name).strip()  # noqa: E731
    cases = [
        (Filters(merged=(rev("main"),)), ["--merged=main"]),
        (Filters(no_merged=(rev("main~3"),)), ["--no-merged=main~3"]),
        (Filters(contains=(rev("main~4"),)), ["--contains=main~4"]),
        (Filters(points_at=(rev("main"),)), ["--points-at=main"]),
        (Filters(merged=(rev("main"),), contains=(rev("main~8"),)), ["--merged=main", "--contains=main~8"]),
    ]
    for filters, args in cases:
        for f, sort in (("%(refname)", []), ("%(committerdate:unix) %(refname)", ["-committerdate"])):
            proc = _theirs(repo, f, sort, args)
            assert proc.returncode == 0, proc.stderr
            assert _ours_columns(repo, f, sort, filters, commit_graph=graph) == proc.stdout, args


def test_columns_way_missing_object_is_gits_error(tmp_path):
    """A tip whose object is missing sends the bulk way back to the per-ref one: git's words."""
    repo = _tied_repo(tmp_path, "files")
    (repo / ".git" / "refs" / "heads" / "gone").write_text("1" * 40 + "\n")
    for f, sort in (("%(committerdate:unix) %(refname)", ["-committerdate"]), ("%(objecttype)", [])):
        proc = _theirs(repo, f, sort)
        assert proc.returncode
        with pytest.raises(RefscopeError) as e:
            _ours_columns(repo, f, sort)
        assert proc.stderr.decode().strip() == f"fatal: {e.value.what}"


def test_version_key_orders_as_versioncmp():
    """The sort key of ``version:refname`` orders every pair as ``versioncmp`` (which the test above holds
    to git's order) does: random strings of digits, zeros, separators and a NUL."""
    import random

    from refscope.backend.refformat.order import version_key

    rng = random.Random(16)
    for alphabet, longest in (
        (b"00019a-.~/\0", 7),
        (b"0123456789", 9),
        (b"0001v.-rc", 12),
        (b"\xff0:9A/", 5),
    ):
        for _ in range(20000):
            a, b = (bytes(rng.choice(alphabet) for _ in range(rng.randrange(longest))) for _ in "ab")
            c = versioncmp(a, b)
            assert ((c > 0) - (c < 0)) == (version_key(a) > version_key(b)) - (
                version_key(a) < version_key(b)
            ), (a, b)


def test_columns_of_any_chunking(monkeypatch):
    """The listing's text split into columns whatever its chunks: a line each (a listing ref by ref), cut
    anywhere (the pending part carried), one chunk, across the batch size."""
    from refscope.backend.refformat import context

    monkeypatch.setattr(context, "COLUMNS_BATCH", 4096)
    lines = [b"%040x refs/heads/n%d\n" % (i, i) for i in range(5000)]
    text = b"".join(lines)
    for chunks in (
        list(lines),
        [text[i : i + 7] for i in range(0, len(text), 7)],
        [text],
        [text[:-1], b"\n"],
    ):
        got = context.columns_of(list(chunks))
        assert got.names == [b"refs/heads/n%d" % i for i in range(5000)]
        assert got.oids == [b"%040x" % i for i in range(5000)]
