"""Repository discovery and config against git: the same git dir, common dir, worktree and formats as
``git rev-parse`` reports, and git's wording when there is no repository or it is not ours."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from refscope.backend.config import Config, ConfigError, parse_bool, parse_config, parse_int
from refscope.backend.errors import DubiousOwnership, NotARepository, UnsupportedFormat
from refscope.backend.repo import discover

from tests.support.git import git, git_binary, git_env, init_repo


def rev_parse(cwd: Path, env: dict | None = None) -> tuple[str, str, str]:
    import subprocess

    from tests.support.git import git_binary

    out = subprocess.run(
        [git_binary(), "rev-parse", "--absolute-git-dir", "--git-common-dir", "--is-bare-repository"],
        cwd=cwd,
        capture_output=True,
        env=env or git_env(),
        check=True,
    ).stdout.decode()
    gd, cd, bare = out.splitlines()
    if not os.path.isabs(cd):
        cd = os.path.join(cwd, cd)
    return os.path.realpath(gd), os.path.realpath(cd), bare


@pytest.fixture(scope="module")
def repos(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("disc")
    main = init_repo(root / "main")
    (main / "sub" / "deeper").mkdir(parents=True)
    git(main, "worktree", "add", "-q", str(root / "wt"), "-b", "side")
    bare = init_repo(root / "bare.git", bare=True)
    sha256 = init_repo(root / "s256", hash_name="sha256")
    rt = init_repo(root / "rt", fmt="reftable")
    # a .git file pointing elsewhere, with a relative path
    sep = root / "separate"
    git(root, "init", "-q", "--separate-git-dir", str(root / "sep-gitdir"), str(sep))
    (sep / ".git").write_text("gitdir: ../sep-gitdir\n")
    return {"root": root, "main": main, "wt": root / "wt", "bare": bare, "s256": sha256, "rt": rt, "sep": sep}


@pytest.mark.parametrize("which", ["main", "wt", "bare", "s256", "rt", "sep"])
def test_discover_matches_rev_parse(repos, which: str) -> None:
    path = repos[which]
    r = discover(str(path), env=git_env())
    gd, cd, bare = rev_parse(path)
    assert (r.gitdir, r.commondir, r.bare) == (gd, cd, bare == "true")
    assert r.ref_storage == ("reftable" if which == "rt" else "files")
    assert r.hash_name == ("sha256" if which == "s256" else "sha1")


def test_discover_from_subdirectory_and_cwd(repos, monkeypatch) -> None:
    sub = repos["main"] / "sub" / "deeper"
    r = discover(str(sub), env=git_env())
    assert r.worktree == os.path.realpath(repos["main"])
    monkeypatch.chdir(sub)
    assert discover(None, env=git_env()).gitdir == r.gitdir


def test_git_dir_environment(repos) -> None:
    env = git_env()
    env["GIT_DIR"] = str(repos["main"] / ".git")
    r = discover(str(repos["root"]), env=env)
    assert r.gitdir == os.path.realpath(repos["main"] / ".git")
    env["GIT_DIR"] = str(repos["root"] / "nope")
    with pytest.raises(NotARepository) as exc:
        discover(str(repos["root"]), env=env)
    assert "not a git repository" in exc.value.what


def test_not_a_repository_wording(tmp_path: Path) -> None:
    env = git_env()
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    d = tmp_path / "empty"
    d.mkdir()
    with pytest.raises(NotARepository) as exc:
        discover(str(d), env=env)
    assert exc.value.what == "not a git repository (or any of the parent directories): .git"
    import subprocess

    from tests.support.git import git_binary

    proc = subprocess.run([git_binary(), "rev-parse"], cwd=d, capture_output=True, env=env)
    assert proc.stderr.decode().strip() == "fatal: " + exc.value.what


def test_invalid_gitfile(tmp_path: Path) -> None:
    d = tmp_path / "x"
    d.mkdir()
    (d / ".git").write_text("nonsense\n")
    with pytest.raises(NotARepository) as exc:
        discover(str(d), env=git_env())
    assert exc.value.what.startswith("invalid gitfile format")


def test_unsupported_formats(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.refStorage", "mystery")
    with pytest.raises(UnsupportedFormat):
        discover(str(repo), env=git_env())
    cfg = str(repo / ".git" / "config")
    git(tmp_path, "config", "--file", cfg, "extensions.refStorage", "files")
    git(tmp_path, "config", "--file", cfg, "extensions.objectFormat", "sha512")
    with pytest.raises(UnsupportedFormat):
        discover(str(repo), env=git_env())


def test_dubious_ownership(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    env = git_env(home=tmp_path)
    env["GIT_TEST_ASSUME_DIFFERENT_OWNER"] = "1"
    with pytest.raises(DubiousOwnership) as exc:
        discover(str(repo), env=env)
    assert exc.value.what.startswith(
        f"detected dubious ownership in repository at '{os.path.realpath(repo)}'"
    )
    # safe.directory from the global config allows it; from the repository config it does not
    git(repo, "config", "safe.directory", "*")
    with pytest.raises(DubiousOwnership):
        discover(str(repo), env=env)
    glob = tmp_path / "global"
    glob.write_text(f"[safe]\n\tdirectory = {os.path.realpath(repo)}\n")
    env["GIT_CONFIG_GLOBAL"] = str(glob)
    assert discover(str(repo), env=env).worktree == os.path.realpath(repo)


def test_config_values_and_timeouts(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    git(repo, "config", "core.fsync", "reference")
    git(repo, "config", "core.filesRefLockTimeout", "2k")
    git(repo, "config", "reftable.geometricFactor", "3")
    cfg = discover(str(repo), env=git_env()).config
    assert cfg.fsync_references()
    assert cfg.files_ref_lock_timeout() == 2048
    assert cfg.packed_refs_timeout() == 1000
    assert cfg.reftable_lock_timeout() == 100
    assert cfg.reftable_geometric_factor() == 3
    assert not Config([]).fsync_references()
    assert Config([("core.fsync", "committed")]).fsync_references()
    assert not Config([("core.fsync", "committed"), ("core.fsync", "pack")]).fsync_references()  # last wins


def test_config_parser_against_git(tmp_path: Path) -> None:
    text = (
        '[core]\n\tbare = false\n\tFooBar = "quoted # not a comment" ; comment\n'
        '[remote "Origin"]\n\turl = a\\tb\\\\c\n\tflag\n'
        "[Section.Sub]\n\tkey = one \\\n two\n\tempty =\n\tsize = 1m\n"
    )
    cfgfile = tmp_path / "cfg"
    cfgfile.write_text(text)
    ours = parse_config(text, str(cfgfile))
    out = git(tmp_path, "config", "--file", str(cfgfile), "--list", "-z")
    theirs = []
    for item in out.split(b"\0"):
        if not item:
            continue
        if b"\n" in item:
            k, v = item.split(b"\n", 1)
            theirs.append((k.decode(), v.decode()))
        else:
            theirs.append((item.decode(), None))
    assert ours == theirs
    assert parse_int("1m") == 1 << 20 and parse_int("0x10") == 16
    assert parse_bool(None) and not parse_bool("") and parse_bool("yes") and not parse_bool("off")


def test_safe_bare_repository_explicit(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "b.git", bare=True)
    glob = tmp_path / "global"
    glob.write_text("[safe]\n\tbareRepository = explicit\n")
    env = git_env(home=tmp_path)
    env["GIT_CONFIG_GLOBAL"] = str(glob)
    with pytest.raises(NotARepository) as exc:
        discover(str(bare), env=env)
    assert (
        exc.value.what
        == f"cannot use bare repository '{os.path.realpath(bare)}' (safe.bareRepository is 'explicit')"
    )
    env["GIT_DIR"] = str(bare)
    assert discover(str(tmp_path), env=env).bare  # explicit GIT_DIR is fine
    repo = init_repo(tmp_path / "nb")
    del env["GIT_DIR"]
    assert discover(str(repo / ".git" / "refs"), env=env).gitdir == os.path.realpath(repo / ".git")


@pytest.mark.parametrize(
    ("key", "values"),
    [
        ("reftable.geometricFactor", ["2", "0x40", "+7", " 5", "255", "256", "1k", "3g", "-1", "abc"]),
        ("reftable.lockTimeout", ["100", "-1", "-2", "3g", "2k", "9999999999999999999"]),
        ("reftable.blockSize", ["8192", "1m", "16m", "-5"]),
        ("reftable.restartInterval", ["16", "65535", "65536", "-1"]),
        ("reftable.indexObjects", ["true", "off", "2", "maybe"]),
        ("core.filesRefLockTimeout", ["100", "-1", "2k", "3g", "abc"]),
    ],
)
def test_ref_config_read_as_git_reads_it(tmp_path: Path, key: str, values: list[str]) -> None:
    """Each setting of the ref backends is typed and bounded as git reads it: git refuses to write
    with exactly the values whose getter raises (and the error is git's line)."""
    repo = init_repo(tmp_path / "r", "files" if key.startswith("core.") else "reftable")
    getter = {
        "core.filesRefLockTimeout": Config.files_ref_lock_timeout,
        "reftable.geometricFactor": Config.reftable_geometric_factor,
        "reftable.lockTimeout": Config.reftable_lock_timeout,
        "reftable.blockSize": Config.reftable_block_size,
        "reftable.restartInterval": Config.reftable_restart_interval,
        "reftable.indexObjects": Config.reftable_index_objects,
    }[key]
    for i, value in enumerate(values):
        proc = subprocess.run(
            [git_binary(), "-c", f"{key}={value}", "update-ref", f"refs/heads/t{i}", "HEAD"],
            cwd=repo,
            capture_output=True,
            env=git_env(),
        )
        try:
            getter(Config([(key.lower(), value)]))
            ours = None
        except ConfigError as err:
            ours = str(err)
        theirs = proc.stderr.decode().strip() if proc.returncode else None
        assert (ours is None) == (theirs is None), (value, ours, theirs)
        if theirs is not None:
            assert theirs == f"fatal: {ours}"
