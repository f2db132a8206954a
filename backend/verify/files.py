"""The files backend's checks: packed-refs line by line, loose refs file by file.

packed-refs goes through the packed parser's own whole-file check first (``formats.packed.checked_names``,
the check ``validate`` runs before a rewrite): a file it passes holds only well-formed records with valid
names in strict order, so nothing is left to report but names a terminal could be fooled by. Any file it is
unsure of is walked line by line here, to name every problem and its line, as git's ``packed_fsck`` does.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator

from ..display import escape_name
from ..errors import UnreadableFile
from ..formats.loose import read_contents
from ..formats.packed import checked_names
from ..model import HASH_HEXSZ, PER_WORKTREE_PREFIXES
from .findings import Collector, check_name, quoted, read_checked, why

_HEX_LOWER = re.compile(rb"\A[0-9a-f]+\Z")
_HEX_ANY = re.compile(rb"\A[0-9a-fA-F]+\Z")
_HEADER = b"# pack-refs with: "
_CHUNK = 512 * 1024  # bytes of records per call of the parser's check


def _parse_oid(field: bytes, hexsz: int) -> str | None:
    """None when ``field`` is a valid oid for git; else why not."""
    if len(field) != hexsz:
        return f"is {len(field)} characters, not {hexsz}"
    if not _HEX_ANY.match(field):
        return "is not hexadecimal"
    return None


def verify_packed(out: Collector, path: str, hash_name: str) -> set[bytes]:
    """Check one packed-refs file; returns the (valid) names it holds, for the symref checks."""
    refs: set[bytes] = set()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return refs
    except OSError as err:
        out.error(path, None, f"cannot stat packed-refs: {err.strerror}")
        return refs
    if stat.S_ISLNK(st.st_mode):
        out.error(
            path,
            None,
            "packed-refs is a symbolic link: git follows it (and 'git fsck' flags it), "
            "refscope refuses to read or rewrite through it",
        )
        try:
            st = os.stat(path)
        except OSError:
            out.error(path, None, "packed-refs is a dangling symbolic link")
            return refs
    data = read_checked(out, path, st, "packed-refs")
    if data is None:
        return refs
    hexsz = HASH_HEXSZ.get(hash_name, 40)
    n = len(data)
    if n == 0:
        return refs
    pos = 0
    line_no = 1
    sorted_trait = False
    before = len(out.findings)
    if data[:1] == b"#":
        eol = data.find(b"\n")
        line = data[: eol if eol >= 0 else n]
        if not line.startswith(_HEADER):
            out.error(
                path,
                0,
                f"header line '{escape_name(line[:60])}' does not start with "
                "'# pack-refs with: '; git refuses the file",
            )
        else:
            traits = line[len(_HEADER) :].split(b" ")
            sorted_trait = b"sorted" in traits
        if line.endswith(b"\r"):
            out.error(path, eol - 1, "header line ends in CR LF; packed-refs lines must end in LF alone")
        if eol < 0:
            out.error(path, n, "the header is the only line and does not end in LF")
            return refs
        pos = eol + 1
        line_no = 2
    if len(out.findings) == before:
        # The parser's own check: an ASCII body it passes has nothing left to report (names that are
        # not ASCII may still fool a terminal: the walk below warns about those, line by line).
        names = _checked(data, pos, hexsz)
        if names is not None:
            return names
    return _walk_lines(out, path, data, pos, line_no, sorted_trait, hexsz)


def _checked(data, pos: int, hexsz: int) -> set[bytes] | None:
    """The names of the body from ``pos`` when the parser's check passes all of it, else None. In
    chunks of whole records (a ref line with its ``^`` line), as ``validate`` checks: a chunk's copies
    and splits stay small, and names must also increase from one chunk to the next."""
    n = len(data)
    if data[n - 1 : n] != b"\n":
        return None  # checked_names takes whole records only
    names: set[bytes] = set()
    last = b""
    while pos < n:
        end = data.find(b"\n", min(pos + _CHUNK, n - 1)) + 1
        if data[end : end + 1] == b"^":
            end = data.find(b"\n", end) + 1
        chunk = data[pos:end]
        got = checked_names(chunk, hexsz) if chunk.isascii() else None
        if got is None or (last and got and not last < got[0]):
            return None
        if got:
            last = got[-1]
        names.update(got)
        pos = end
    return names


def _walk_lines(
    out: Collector, path: str, data, pos: int, line_no: int, sorted_trait: bool, hexsz: int
) -> set[bytes]:
    """Every line of the body from ``pos`` (line ``line_no``), each problem reported with its line."""
    refs: set[bytes] = set()
    n = len(data)
    prev_name: bytes | None = None
    prev_line_was_ref = False
    unsorted_reported = False
    crlf_reported = False
    while pos < n:
        eol = data.find(b"\n", pos)
        if eol < 0:
            out.error(
                path,
                pos,
                f"line {line_no} does not end in LF (the file's last byte must be a "
                "newline); git dies reading it ('unterminated line')",
            )
            eol = n
        line = data[pos:eol]
        if line.endswith(b"\r"):
            if not crlf_reported:
                crlf_reported = True
                out.error(
                    path,
                    eol - 1,
                    f"line {line_no} ends in CR LF (DOS line ends); git reads the CR as part "
                    "of the name (and hides the ref) or of the peeled value (and dies)",
                )
            line = line[:-1]  # reported once; judge the rest of the line as if it ended in LF
        if line[:1] == b"^":
            if not prev_line_was_ref:
                out.error(
                    path,
                    pos,
                    f"line {line_no}: peeled line '^...' does not follow a ref line (orphan); "
                    "git dies reading it",
                )
            else:
                why = _parse_oid(line[1:], hexsz)
                if why is not None:
                    out.error(
                        path,
                        pos,
                        f"line {line_no}: peeled oid '{escape_name(line[1:])}' {why}; git dies reading it",
                    )
                elif not _HEX_LOWER.match(line[1:]):
                    out.warning(path, pos, f"line {line_no}: peeled oid is not lowercase hex")
            prev_line_was_ref = False
        elif not line:
            out.error(path, pos, f"line {line_no} is empty; git dies reading it")
            prev_line_was_ref = False
        elif line[:1] == b"#":
            out.error(path, pos, f"line {line_no}: a comment line is only allowed as the first line")
            prev_line_was_ref = False
        else:
            prev_line_was_ref = True
            oid = line[:hexsz]
            why = _parse_oid(oid, hexsz)
            sep = line[hexsz : hexsz + 1]
            if why is not None:
                out.error(path, pos, f"line {line_no}: oid '{escape_name(oid)}' {why}; git dies reading it")
                pos = eol + 1
                line_no += 1
                continue
            if sep not in (b" ", b"\t", b"\r", b"\v", b"\f"):
                out.error(path, pos + hexsz, f"line {line_no}: no space after the oid; git dies reading it")
                pos = eol + 1
                line_no += 1
                continue
            if sep != b" ":
                out.warning(
                    path,
                    pos + hexsz,
                    f"line {line_no}: oid and name are separated by '{escape_name(sep)}', not a space",
                )
            if not _HEX_LOWER.match(oid):
                out.warning(path, pos, f"line {line_no}: oid is not lowercase hex")
            name = line[hexsz + 1 :]
            if b"\0" in name:
                out.error(
                    path,
                    pos + hexsz + 1 + name.index(b"\0"),
                    f"line {line_no}: ref name {quoted(name)} "
                    "contains a NUL byte; git dies reading it ('packed refname contains embedded NULL')",
                )
            elif check_name(out, path, pos, name, where=f"line {line_no}: "):
                refs.add(name)
            if prev_name is not None:
                if name == prev_name:
                    out.error(path, pos, f"line {line_no}: ref {quoted(name)} appears twice")
                elif name < prev_name and not unsorted_reported:
                    unsorted_reported = True
                    if sorted_trait:
                        out.error(
                            path,
                            pos,
                            f"line {line_no}: ref {quoted(name)} sorts before the previous ref "
                            f"{quoted(prev_name)} although the header declares 'sorted'; git's binary "
                            "search will miss refs",
                        )
                    else:
                        out.warning(
                            path,
                            pos,
                            f"line {line_no}: records are not sorted (no 'sorted' trait); "
                            "git sorts the whole file in memory on every read",
                        )
            prev_name = name
        pos = eol + 1
        line_no += 1
    return refs


# --------------------------------------------------------------------------------------------- loose refs


def _walk_refs_dir(base: str, rel: bytes) -> Iterator[tuple[bytes, str, os.stat_result]]:
    """(relative name, path, lstat) of every non-directory under ``base/rel``; symlinks not followed."""
    top = os.path.join(base, os.fsdecode(rel))
    try:
        entries = list(os.scandir(top))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError:
        return
    for entry in sorted(entries, key=lambda e: e.name):
        name = rel + b"/" + os.fsencode(entry.name)
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_refs_dir(base, name)
        else:
            yield name, entry.path, st


def _loose_content(
    out: Collector, path: str, name: bytes, data: bytes, hexsz: int
) -> tuple[str, bytes] | None:
    """('oid', oid) or ('sym', target) from a loose ref file's bytes, reporting problems."""
    if data.startswith(b"ref:"):
        # git: skip whitespace after "ref:", the target runs to the next whitespace, and only a single
        # LF may follow (more whitespace is "trailing content", anything else garbage).
        rest = data[4:].lstrip(b" \t")
        end = len(rest)
        for i, ch in enumerate(rest):
            if ch in b" \t\n\r\v\f":
                end = i
                break
        target, tail = rest[:end], rest[end:]
        if not target:
            out.error(path, 0, f"symref {quoted(name)} has no target after 'ref:'")
            return None
        if tail == b"":
            out.warning(path, len(data), f"symref {quoted(name)} does not end in a newline")
        elif tail != b"\n":
            if tail.strip(b" \t\n\r\v\f"):
                out.warning(
                    path, len(data) - len(tail), f"symref {quoted(name)} has garbage after its target"
                )
            else:
                out.warning(path, len(data) - len(tail), f"symref {quoted(name)} has trailing whitespace")
        return "sym", target
    oid = data[:hexsz]
    why = _parse_oid(oid, hexsz)
    if why is not None:
        out.error(
            path,
            0,
            f"loose ref {quoted(name)} does not hold an oid (content '{escape_name(data[:50])}'); "
            "git reports it as broken",
        )
        return None
    tail = data[hexsz:]
    if tail == b"":
        out.warning(path, hexsz, f"loose ref {quoted(name)} does not end in a newline")
    elif tail != b"\n":
        if tail[:1] not in (b"\n", b" ", b"\t", b"\r"):
            out.error(path, hexsz, f"loose ref {quoted(name)} has garbage right after the oid")
            return None
        out.warning(path, hexsz, f"loose ref {quoted(name)} has trailing content after the oid")
    if not _HEX_LOWER.match(oid):
        out.warning(path, 0, f"loose ref {quoted(name)} holds an oid that is not lowercase hex")
    return "oid", oid.lower()


def verify_loose(
    out: Collector, gitdir: str, commondir: str, hash_name: str
) -> dict[bytes, tuple[str, bytes, str]]:
    """Loose refs of the files backend: name -> (kind, value, path)."""
    hexsz = HASH_HEXSZ.get(hash_name, 40)
    found: dict[bytes, tuple[str, bytes, str]] = {}
    same = os.path.realpath(gitdir) == os.path.realpath(commondir)
    for base in (commondir,) if same else (commondir, gitdir):
        for name, path, st in _walk_refs_dir(base, b"refs"):
            if name.endswith(b".lock"):
                continue  # reported by the lock scan
            per_wt = name.startswith(PER_WORKTREE_PREFIXES)
            if not same and ((base == gitdir) != per_wt):
                continue  # shared refs come from commondir only, per-worktree ones from the worktree's gitdir
            _loose_one(out, path, name, st, hexsz, found)
    for pseudo in (b"HEAD",):
        path = os.path.join(gitdir, os.fsdecode(pseudo))
        try:
            st = os.lstat(path)
        except OSError:
            continue
        _loose_one(out, path, pseudo, st, hexsz, found)
    return found


def _loose_one(out: Collector, path: str, name: bytes, st: os.stat_result, hexsz: int, found: dict) -> None:
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.fsencode(os.readlink(path))
        except OSError:
            return
        out.warning(path, None, f"ref {quoted(name)} is a symbolic link (an obsolete symref form)")
        if target.startswith(b"refs/"):
            found[name] = ("sym", target, path)
            return
        # git follows any other symlink and reads the file it reaches (a loop: "cannot read ref")
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.stat(path).st_mode):
                return
    elif not stat.S_ISREG(st.st_mode):
        out.error(path, None, f"ref {quoted(name)} is not a regular file")
        return
    if not check_name(out, path, None, name):
        return
    try:
        data = read_contents(path)  # bounded, as the stores read it: a huge file is not read whole
    except (OSError, UnreadableFile) as err:
        out.error(path, None, f"cannot read ref {quoted(name)}: {why(err)}")
        return
    got = _loose_content(out, path, name, data, hexsz)
    if got is not None:
        found[name] = (got[0], got[1], path)
