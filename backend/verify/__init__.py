"""Integrity findings for a repository's ref storage, deeper than ``git refs verify``.

Why a separate walker: the readers are built to be fast and to stop at the first problem; verify must
find *every* problem, say exactly where, and keep going. So it walks the raw bytes itself (packed-refs
line by line, reftable block by block, record by record), checks everything git's readers check plus what
git leaves unchecked (restart tables, block lengths against the file, index and obj entries against the
blocks they point to, update-index ranges through the stack), and then cross-checks by opening the store
with refscope's own readers: anything they reject that the walker missed is reported too.

verify never writes. Lock files are reported with their age and an owner hint; ``remove_stale_lock``
removes one only when no process could be holding it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import struct
import time
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from ..display import escape_name, needs_escape
from ..errors import LockBusy, RefscopeError, TransactionRefused, UnreadableFile
from ..fileio import map_fd, open_regular, read_fd
from ..formats.loose import read_contents
from ..refname import check_refname, is_safe_refname

ERROR = "error"
WARNING = "warning"

HASH_SIZES = {"sha1": 20, "sha256": 32}
_HASH_IDS = {b"sha1": "sha1", b"s256": "sha256"}
_TABLE_NAME = re.compile(r"\A0x([0-9a-f]{12})-0x([0-9a-f]{12})-[0-9a-f]{8}\.ref\Z")
_HEX_LOWER = re.compile(rb"\A[0-9a-f]+\Z")
_HEX_ANY = re.compile(rb"\A[0-9a-fA-F]+\Z")
# Bytes/characters a terminal would act on even though git accepts them in a name.
# Names under the per-worktree part of the ref namespace (git's worktree.c / refs.c).
_PER_WORKTREE = (b"refs/bisect/", b"refs/worktree/", b"refs/rewritten/")
# Locks older than this with no live holder are "stale" (an error: git commands needing them will fail).
STALE_AFTER_S = 60.0
_MAP_ABOVE = 1 << 20
# Findings shown per file (a file with DOS line ends or a wrong hash has one problem per line).
MAX_PER_FILE = 100


class Finding(NamedTuple):
    """One problem: where (file, byte offset or None), how bad, and a sentence a git engineer understands."""

    file: str
    offset: int | None
    severity: str  # "error" | "warning"
    message: str

    def to_json(self) -> dict:
        return {"file": self.file, "offset": self.offset, "severity": self.severity, "message": self.message}


class LockInfo(NamedTuple):
    """A ``.lock`` file found in the ref storage, with what is known about who might own it."""

    path: str
    age_s: float  # seconds since its mtime
    mtime: float
    size: int
    holders: list[tuple[int, str]]  # (pid, comm) of processes with the file open
    git_processes: list[tuple[int, str]]  # (pid, comm) of git processes whose cwd is inside the repository

    def owner_hint(self) -> str:
        if self.holders:
            return "held open by " + ", ".join(f"pid {p} ({c})" for p, c in self.holders)
        if self.git_processes:
            return (
                "no process has it open, but git is running in this repository ("
                + ", ".join(f"pid {p}" for p, _ in self.git_processes)
                + ")"
            )
        return "no process has it open and no git process runs in this repository"

    def could_be_held(self) -> bool:
        return bool(self.holders or self.git_processes)


def _q(name: bytes) -> str:
    """A ref name for a message: escaped and quoted."""
    text = escape_name(name)
    if len(text) > 160:
        text = text[:160] + "..."
    return "'" + text + "'"


class _Bad(Exception):
    """Internal: a decode failure at an offset inside the walker (never escapes this module)."""

    def __init__(self, offset: int, what: str) -> None:
        super().__init__(offset, what)
        self.offset = offset
        self.what = what


class _Out:
    """Collects findings for one verify run."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.error_files: set[str] = set()
        self.checked = {"refs": 0, "tables": 0, "packed": 0, "loose": 0}  # what was read, for the summary

        self.per_file: dict[str, int] = {}

    def _room(self, file: str) -> bool:
        n = self.per_file.get(file, 0) + 1
        self.per_file[file] = n
        if n == MAX_PER_FILE + 1:
            self.findings.append(
                Finding(
                    file,
                    None,
                    WARNING,
                    f"more than {MAX_PER_FILE} findings in this file; the rest are not shown",
                )
            )
        return n <= MAX_PER_FILE

    def error(self, file: str, offset: int | None, message: str) -> None:
        self.error_files.add(file)
        if self._room(file):
            self.findings.append(Finding(file, offset, ERROR, message))

    def warning(self, file: str, offset: int | None, message: str) -> None:
        if self._room(file):
            self.findings.append(Finding(file, offset, WARNING, message))


# --------------------------------------------------------------------------------------------- names


def _check_name(
    out: _Out, file: str, offset: int | None, name: bytes, what: str = "ref", where: str = ""
) -> bool:
    """Report a broken, unsafe or terminal-hostile name; True when git would accept the name.

    ``where`` prefixes the message (e.g. "line 12: ")."""
    reason = check_refname(name)
    if reason is not None:
        if not is_safe_refname(name):
            out.error(
                file,
                offset,
                f"{where}{what} name {_q(name)} {reason} and is unsafe: git dies reading it "
                "('refname is dangerous')",
            )
        else:
            out.error(
                file,
                offset,
                f"{where}{what} name {_q(name)} {reason}: git ignores this ref "
                "('ignoring ref with broken name')",
            )
        return False
    _warn_hostile_name(out, file, offset, name, what, where)
    return True


def _warn_hostile_name(
    out: _Out, file: str, offset: int | None, name: bytes, what: str = "ref", where: str = ""
) -> None:
    if name.isascii():
        return  # the common case; an ASCII name that passed check_refname has no control bytes
    text = name.decode("utf-8", "surrogateescape")
    if needs_escape(text):
        out.warning(
            file,
            offset,
            f"{where}{what} name {_q(name)} is valid for git but contains bytes a terminal may "
            "obey or hide (C1 control, 8-bit CSI, invalid UTF-8, bidi override, line or paragraph "
            "separator, invisible or unassigned character); tools that print it raw "
            "can be spoofed",
        )


# --------------------------------------------------------------------------------------------- packed-refs


def _parse_oid(field: bytes, hexsz: int) -> str | None:
    """None when ``field`` is a valid oid for git; else why not."""
    if len(field) != hexsz:
        return f"is {len(field)} characters, not {hexsz}"
    if not _HEX_ANY.match(field):
        return "is not hexadecimal"
    return None


def verify_packed(out: _Out, path: str, hash_name: str) -> dict[bytes, bytes]:
    """Check one packed-refs file; returns the names (valid ones) it holds -> oid, for symref checks."""
    refs: dict[bytes, bytes] = {}
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
    if not stat.S_ISREG(st.st_mode):
        out.error(path, None, "packed-refs is not a regular file")
        return refs
    try:
        data = _read_all(path)
    except (OSError, UnreadableFile) as err:
        out.error(path, None, f"cannot read packed-refs: {_why(err)}")
        return refs
    hexsz = HASH_SIZES.get(hash_name, 20) * 2
    n = len(data)
    if n == 0:
        return refs
    pos = 0
    line_no = 1
    sorted_trait = False
    if data[:1] == b"#":
        eol = data.find(b"\n")
        line = data[: eol if eol >= 0 else n]
        if not line.startswith(b"# pack-refs with: "):
            out.error(
                path,
                0,
                f"header line '{escape_name(line[:60])}' does not start with "
                "'# pack-refs with: '; git refuses the file",
            )
        else:
            traits = line[len(b"# pack-refs with: ") :].split(b" ")
            sorted_trait = b"sorted" in traits
        if line.endswith(b"\r"):
            out.error(path, eol - 1, "header line ends in CR LF; packed-refs lines must end in LF alone")
        if eol < 0:
            out.error(path, n, "the header is the only line and does not end in LF")
            return refs
        pos = eol + 1
        line_no = 2
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
                    f"line {line_no}: ref name {_q(name)} "
                    "contains a NUL byte; git dies reading it ('packed refname contains embedded NULL')",
                )
            elif _check_name(out, path, pos, name, where=f"line {line_no}: "):
                refs[name] = oid.lower()
            if prev_name is not None:
                if name == prev_name:
                    out.error(path, pos, f"line {line_no}: ref {_q(name)} appears twice")
                elif name < prev_name and not unsorted_reported:
                    unsorted_reported = True
                    if sorted_trait:
                        out.error(
                            path,
                            pos,
                            f"line {line_no}: ref {_q(name)} sorts before the previous ref "
                            f"{_q(prev_name)} although the header declares 'sorted'; git's binary "
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


def _read_all(path: str):
    """The file's bytes: read when small, mapped when large (a huge table or packed-refs is walked
    without copying it into memory; the walkers only index and slice). Through ``fileio``: a FIFO or a
    directory raises UnreadableFile, never blocks."""
    fd, st = open_regular(path)
    try:
        if st.st_size > _MAP_ABOVE:
            return map_fd(fd, path, st.st_size)
        return read_fd(fd, path, st.st_size)
    finally:
        os.close(fd)


def _why(err: OSError | UnreadableFile) -> str:
    """What kept a file from being read, as the kernel (or ``fileio``) says it."""
    return err.why if isinstance(err, UnreadableFile) else (err.strerror or str(err))


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


def _loose_content(out: _Out, path: str, name: bytes, data: bytes, hexsz: int) -> tuple[str, bytes] | None:
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
            out.error(path, 0, f"symref {_q(name)} has no target after 'ref:'")
            return None
        if tail == b"":
            out.warning(path, len(data), f"symref {_q(name)} does not end in a newline")
        elif tail != b"\n":
            if tail.strip(b" \t\n\r\v\f"):
                out.warning(path, len(data) - len(tail), f"symref {_q(name)} has garbage after its target")
            else:
                out.warning(path, len(data) - len(tail), f"symref {_q(name)} has trailing whitespace")
        return "sym", target
    oid = data[:hexsz]
    why = _parse_oid(oid, hexsz)
    if why is not None:
        out.error(
            path,
            0,
            f"loose ref {_q(name)} does not hold an oid (content '{escape_name(data[:50])}'); "
            "git reports it as broken",
        )
        return None
    tail = data[hexsz:]
    if tail == b"":
        out.warning(path, hexsz, f"loose ref {_q(name)} does not end in a newline")
    elif tail != b"\n":
        if tail[:1] not in (b"\n", b" ", b"\t", b"\r"):
            out.error(path, hexsz, f"loose ref {_q(name)} has garbage right after the oid")
            return None
        out.warning(path, hexsz, f"loose ref {_q(name)} has trailing content after the oid")
    if not _HEX_LOWER.match(oid):
        out.warning(path, 0, f"loose ref {_q(name)} holds an oid that is not lowercase hex")
    return "oid", oid.lower()


def verify_loose(
    out: _Out, gitdir: str, commondir: str, hash_name: str
) -> dict[bytes, tuple[str, bytes, str]]:
    """Loose refs of the files backend: name -> (kind, value, path)."""
    hexsz = HASH_SIZES.get(hash_name, 20) * 2
    found: dict[bytes, tuple[str, bytes, str]] = {}
    same = os.path.realpath(gitdir) == os.path.realpath(commondir)
    for base in (commondir,) if same else (commondir, gitdir):
        for name, path, st in _walk_refs_dir(base, b"refs"):
            if name.endswith(b".lock"):
                continue  # reported by the lock scan
            per_wt = name.startswith(_PER_WORKTREE)
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


def _loose_one(out: _Out, path: str, name: bytes, st: os.stat_result, hexsz: int, found: dict) -> None:
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.fsencode(os.readlink(path))
        except OSError:
            return
        out.warning(path, None, f"ref {_q(name)} is a symbolic link (an obsolete symref form)")
        if target.startswith(b"refs/"):
            found[name] = ("sym", target, path)
            return
        # git follows any other symlink and reads the file it reaches (a loop: "cannot read ref")
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.stat(path).st_mode):
                return
    elif not stat.S_ISREG(st.st_mode):
        out.error(path, None, f"ref {_q(name)} is not a regular file")
        return
    if not _check_name(out, path, None, name):
        return
    try:
        data = read_contents(path)  # bounded, as the stores read it: a huge file is not read whole
    except (OSError, UnreadableFile) as err:
        out.error(path, None, f"cannot read ref {_q(name)}: {_why(err)}")
        return
    got = _loose_content(out, path, name, data, hexsz)
    if got is not None:
        found[name] = (got[0], got[1], path)


# --------------------------------------------------------------------------------------------- reftable


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    """git's reftable varint (ofs-delta style, +1 per continuation), overflow- and bounds-checked."""
    if pos >= end:
        raise _Bad(pos, "varint runs past the end of its block")
    c = buf[pos]
    pos += 1
    val = c & 0x7F
    while c & 0x80:
        val += 1
        if val >> 57:
            raise _Bad(pos - 1, "varint overflows 64 bits")
        if pos >= end:
            raise _Bad(pos, "varint runs past the end of its block")
        c = buf[pos]
        pos += 1
        val = (val << 7) | (c & 0x7F)
    return val, pos


class _Block(NamedTuple):
    offset: int
    type: str  # 'r' 'g' 'o' 'i'
    first_key: bytes
    last_key: bytes
    next_offset: int
    records: list  # decoded per type (refs: (name, value_type, value, peeled, target); obj/index: key,pos)
    header_off: int = 0  # 24/28 for the first block (the file header precedes the block header)
    block_len: int = 0
    restart_off: int = -1  # file offset of the restart table (-1 for log blocks: it is compressed)
    data_end: int = 0  # file offset after the block's bytes (compressed bytes for log blocks), before padding


class TableInfo(NamedTuple):
    """What verify learned about one table (for stack-level checks)."""

    path: str
    ok: bool  # header/footer readable
    hash_name: str
    min_update_index: int
    max_update_index: int
    refs: list  # (name, value_type, value_hex, peeled_hex, target, update_index, block_offset)


class _TableVerifier:
    def __init__(self, out: _Out, path: str, data: bytes, expect_hash: str | None) -> None:
        self.out = out
        self.path = path
        self.data = data
        self.expect_hash = expect_hash
        self.refs: list = []

    def err(self, offset: int | None, msg: str) -> None:
        self.out.error(self.path, offset, msg)

    def warn(self, offset: int | None, msg: str) -> None:
        self.out.warning(self.path, offset, msg)

    # -- header and footer
    def run(self) -> TableInfo:
        d = self.data
        n = len(d)
        bad = TableInfo(self.path, False, "", 0, 0, [])
        if n >= 4 and d[:4] != b"REFT":
            self.err(0, f"bad magic '{escape_name(bytes(d[:4]))}': a reftable starts with 'REFT'")
            return bad
        if n < 5:
            self.err(n, f"file is {n} bytes, too short for a reftable header: truncated")
            return bad
        version = d[4]
        if version not in (1, 2):
            self.err(4, f"unsupported reftable version {version} (git reads 1 and 2)")
            return bad
        hsz = 24 if version == 1 else 28
        fsz = 68 if version == 1 else 72
        if n < hsz + fsz:
            self.err(
                n,
                f"file is {n} bytes, shorter than a version {version} header plus footer "
                f"({hsz + fsz} bytes): truncated",
            )
            return bad
        block_size = int.from_bytes(d[5:8], "big")
        min_ui, max_ui = struct.unpack_from(">QQ", d, 8)
        hash_name = "sha1"
        if version == 2:
            hid = bytes(d[24:28])
            if hid not in _HASH_IDS:
                self.err(
                    24, f"unknown hash id '{escape_name(hid)}' in the header (git knows 'sha1' and 's256')"
                )
                return bad
            hash_name = _HASH_IDS[hid]
        foot = n - fsz
        if d[foot : foot + hsz] != d[:hsz]:
            if d[foot : foot + 4] != b"REFT":
                self.err(
                    foot, "the footer does not start with 'REFT': the file is truncated or has bytes appended"
                )
            else:
                self.err(
                    foot,
                    "the footer does not repeat the header (magic, version, block size, update "
                    "indexes, hash id)",
                )
            return bad
        crc_have = struct.unpack_from(">I", d, n - 4)[0]
        crc_want = zlib.crc32(d[foot : n - 4])
        if crc_have != crc_want:
            self.err(n - 4, f"footer CRC-32 is {crc_have:08x} but the footer's bytes give {crc_want:08x}")
            return bad
        ref_index, obj_word, obj_index, log_pos, log_index = struct.unpack_from(">QQQQQ", d, foot + hsz)
        obj_pos, obj_id_len = obj_word >> 5, obj_word & 31
        self.version, self.hsz, self.block_size, self.foot = version, hsz, block_size, foot
        self.min_ui, self.max_ui, self.hash_name = min_ui, max_ui, hash_name
        self.hash_size = HASH_SIZES[hash_name]
        ok = True
        self.positions_bad = False
        if min_ui > max_ui:
            self.err(8, f"min_update_index {min_ui} is greater than max_update_index {max_ui}")
        if obj_pos and not obj_id_len:
            self.err(foot + hsz + 8, "the footer has an obj section but obj_id_len 0; git refuses the table")
            ok = False
        if obj_id_len > self.hash_size:
            self.err(foot + hsz + 8, f"obj_id_len {obj_id_len} exceeds the hash size {self.hash_size}")
        for label, pos, at in (
            ("ref_index_position", ref_index, foot + hsz),
            ("obj_position", obj_pos, foot + hsz + 8),
            ("obj_index_position", obj_index, foot + hsz + 16),
            ("log_position", log_pos, foot + hsz + 24),
            ("log_index_position", log_index, foot + hsz + 32),
        ):
            if pos >= foot and pos:
                self.err(
                    at,
                    f"footer {label} {pos} points past the last block (the footer starts at {foot}): the "
                    "table lost bytes or the footer is wrong",
                )
                self.positions_bad = True
        if block_size == 0:
            pass
        elif block_size < hsz + 4 + 2 + 1:
            self.warn(5, f"block size {block_size} is too small to hold any record")
        self.positions = {
            "ref_index": ref_index,
            "obj": obj_pos,
            "obj_index": obj_index,
            "log": log_pos,
            "log_index": log_index,
        }
        self.obj_id_len = obj_id_len
        if ok:
            self.walk()
        return TableInfo(self.path, True, hash_name, min_ui, max_ui, self.refs)

    # -- blocks
    def walk(self) -> None:
        d = self.data
        off = 0
        blocks: list[_Block] = []
        self.blocks = blocks
        self.failed: set[int] = set()  # offsets of blocks that did not decode
        self.walk_broken = False  # the walk stopped early: later blocks were never seen
        while off < self.foot:
            header_off = self.hsz if off == 0 else 0
            if off + header_off + 4 > self.foot:
                self.err(off, f"block header at {off} runs into the footer: the table is truncated")
                break
            typ = chr(d[off + header_off])
            if typ not in "rgoi":
                self.walk_broken = True
                self.err(
                    off + header_off,
                    f"unknown block type '{escape_name(bytes([d[off + header_off]]))}' "
                    f"(0x{d[off + header_off]:02x}) at {off}; git expects r, g, o or i",
                )
                break
            try:
                blk = self.block(off, header_off, typ)
            except _Bad as bad:
                self.err(bad.offset, f"{_BLOCK_NAMES[typ]} block at {off}: {bad.what}")
                blk = None
            if blk is None:
                # Without a trustworthy length we cannot find the next block.
                self.failed.add(off)
                nxt = self._fallback_next(off, header_off, typ)
                if nxt is None:
                    self.walk_broken = True
                    break
                off = nxt
                continue
            blocks.append(blk)
            off = blk.next_offset
        else:
            if off > self.foot:
                self.err(self.foot, f"the last block runs {off - self.foot} bytes into the footer")
        self.check_layout(blocks)

    def _fallback_next(self, off: int, header_off: int, typ: str) -> int | None:
        if typ == "g" or self.block_size == 0:
            return None
        nxt = off + self.block_size
        return nxt if nxt < self.foot else None

    def block(self, off: int, header_off: int, typ: str) -> _Block | None:
        d = self.data
        start = off + header_off  # where the 4-byte block header is
        block_len = int.from_bytes(d[start + 1 : start + 4], "big")
        if typ == "g":
            return self.log_block(off, header_off, block_len)
        end = off + block_len  # block_len counts from the block's start (incl. the file header in block 0)
        if block_len < header_off + 4 + 2:
            raise _Bad(start + 1, f"block_len {block_len} is too small to hold a restart count")
        if end > self.foot:
            raise _Bad(
                start + 1,
                f"block_len {block_len} reaches past the last block (to {end}, footer at "
                f"{self.foot}): the table is truncated or the length corrupt",
            )
        if self.block_size and block_len > self.block_size:
            self.warn(
                start + 1,
                f"{_BLOCK_NAMES[typ]} block at {off}: block_len {block_len} exceeds the "
                f"table's block size {self.block_size}",
            )
        # next block: git's rule (aligned tables pad to block_size unless the next byte is not padding)
        if self.block_size == 0 or block_len >= self.block_size or end < len(d) and d[end] != 0:
            nxt = end
        else:
            nxt = off + self.block_size
            pad = d[end : min(nxt, self.foot)]
            if pad.count(0) != len(pad):
                self.warn(end, f"padding after the {_BLOCK_NAMES[typ]} block at {off} is not all NUL bytes")
        records = self.records(d, off, header_off, end, typ)
        first = records[0][0] if records else b""
        last = records[-1][0] if records else b""
        rc = int.from_bytes(d[end - 2 : end], "big")
        return _Block(off, typ, first, last, nxt, records, header_off, block_len, end - 2 - 3 * rc, end)

    def log_block(self, off: int, header_off: int, block_len: int) -> _Block:
        d = self.data
        skip = header_off + 4
        if block_len < skip + 2:
            raise _Bad(off + header_off + 1, f"block_len {block_len} is too small for a log block")
        want = block_len - skip
        z = zlib.decompressobj()
        # The compressed stream cannot be longer than deflate's bound for ``want`` bytes: a bounded window
        # keeps each block's work (and zlib's copy of the unused input) proportional to the block.
        src = memoryview(d)[off + skip : min(self.foot, off + skip + want + (want >> 11) + 64)]
        try:
            body = z.decompress(src, want + 1)
        except zlib.error as err:
            raise _Bad(off + skip, f"zlib data does not inflate ({err})") from None
        if len(body) > want:
            raise _Bad(off + header_off + 1, f"zlib data inflates to more than block_len {block_len} says")
        if not z.eof:
            raise _Bad(
                off + skip,
                f"zlib stream ends early (missing data or checksum) after inflating {len(body) + skip} of the "
                f"{block_len} block_len promises (truncated or damaged log block)",
            )
        if len(body) != want:
            raise _Bad(
                off + header_off + 1,
                f"log block inflates to {len(body) + skip} bytes but block_len says {block_len}",
            )
        consumed = len(src) - len(z.unused_data)
        buf = bytes(d[off : off + skip]) + body
        records = self.records(buf, 0, header_off, len(buf), "g", base=off)
        first = records[0][0] if records else b""
        last = records[-1][0] if records else b""
        nxt = off + skip + consumed
        return _Block(off, "g", first, last, nxt, records, header_off, block_len, -1, nxt)

    def records(self, buf, boff: int, header_off: int, end: int, typ: str, base: int | None = None) -> list:
        """Decode every record of a block in ``buf[boff:end]`` and check the restart table.

        Offsets in messages are file offsets: ``base`` maps buffer offsets (log blocks are inflated)."""

        def at(p: int) -> int:
            return p if base is None else base

        rc = int.from_bytes(buf[end - 2 : end], "big")
        if rc == 0:
            raise _Bad(at(end - 2), "restart_count is 0; every block needs at least one restart point")
        rstart = end - 2 - 3 * rc
        if rstart < boff + header_off + 4:
            raise _Bad(at(end - 2), f"restart_count {rc} does not fit in block_len {end - boff}")
        restarts = [int.from_bytes(buf[rstart + 3 * i : rstart + 3 * i + 3], "big") for i in range(rc)]
        p = boff + header_off + 4
        key = b""
        prev_key: bytes | None = None
        out: list = []
        starts: dict[int, int] = {}  # block-relative offset -> prefix length
        hs = self.hash_size
        while p < rstart:
            rec_at = p
            prefix, p = _varint(buf, p, rstart)
            word, p = _varint(buf, p, rstart)
            suffix_len, extra = word >> 3, word & 7
            if prefix > len(key):
                raise _Bad(
                    at(rec_at),
                    f"record at {at(rec_at)}: prefix length {prefix} exceeds the previous "
                    f"key's length {len(key)}",
                )
            if not out and prefix:
                raise _Bad(at(rec_at), f"first record has prefix length {prefix}; it must be 0")
            if suffix_len > rstart - p:
                raise _Bad(
                    at(rec_at),
                    f"record at {at(rec_at)}: suffix length {suffix_len} runs past the restart table",
                )
            key = key[:prefix] + bytes(buf[p : p + suffix_len])
            p += suffix_len
            if not key:
                raise _Bad(at(rec_at), "record with an empty key")
            starts[rec_at - boff] = prefix
            if prev_key is not None and key <= prev_key:
                raise _Bad(
                    at(rec_at),
                    f"record key {_q(key)} does not sort after the previous key "
                    f"{_q(prev_key)} (keys must be unique and ascending)",
                )
            prev_key = key
            if typ == "r":
                delta, p = _varint(buf, p, rstart)
                value = peeled = target = None
                if extra in (1, 2):
                    need = hs * extra
                    if rstart - p < need:
                        raise _Bad(at(p), f"ref {_q(key)}: value runs past the restart table")
                    value = bytes(buf[p : p + hs]).hex().encode()
                    if extra == 2:
                        peeled = bytes(buf[p + hs : p + 2 * hs]).hex().encode()
                    p += need
                elif extra == 3:
                    tlen, p = _varint(buf, p, rstart)
                    if tlen > rstart - p:
                        raise _Bad(
                            at(p), f"symref {_q(key)}: target length {tlen} runs past the restart table"
                        )
                    target = bytes(buf[p : p + tlen])
                    p += tlen
                elif extra != 0:
                    raise _Bad(
                        at(rec_at),
                        f"ref {_q(key)}: value type {extra} is reserved (0-3 are defined); git aborts on it",
                    )
                ui = self.min_ui + delta
                if ui > self.max_ui:
                    self.warn(
                        at(rec_at),
                        f"ref {_q(key)} has update index {ui}, above the table's "
                        f"max_update_index {self.max_ui}",
                    )
                out.append((key, extra, value, peeled, target, ui))
            elif typ == "g":
                if len(key) <= 9 or key[-9] != 0:
                    raise _Bad(at(rec_at), f"log key {_q(key)} is not 'refname NUL reversed-update-index'")
                ui = 0xFFFFFFFFFFFFFFFF - int.from_bytes(key[-8:], "big")
                # Below min is legal (a log deletion or replacement names the entry's own index); git's
                # writer refuses only indexes above the table's max.
                if ui > self.max_ui:
                    self.warn(
                        at(rec_at),
                        f"log record of {_q(key[:-9])} has update index {ui}, above the table's "
                        f"max_update_index {self.max_ui} (git's writer refuses that)",
                    )
                if extra == 1:
                    if rstart - p < 2 * hs:
                        raise _Bad(at(p), f"log record of {_q(key[:-9])}: old/new ids run past the block")
                    p += 2 * hs
                    for field in ("name", "email"):
                        ln, p = _varint(buf, p, rstart)
                        if ln > rstart - p:
                            raise _Bad(
                                at(p),
                                f"log record of {_q(key[:-9])}: {field} length {ln} runs past the block",
                            )
                        p += ln
                    _, p = _varint(buf, p, rstart)
                    if rstart - p < 2:
                        raise _Bad(at(p), f"log record of {_q(key[:-9])}: time zone runs past the block")
                    p += 2
                    ln, p = _varint(buf, p, rstart)
                    if ln > rstart - p:
                        raise _Bad(
                            at(p), f"log record of {_q(key[:-9])}: message length {ln} runs past the block"
                        )
                    p += ln
                elif extra != 0:
                    raise _Bad(at(rec_at), f"log record of {_q(key[:-9])}: log type {extra} is not 0 or 1")
                out.append((key, extra))
            elif typ == "o":
                count = extra
                if extra == 0:
                    count, p = _varint(buf, p, rstart)
                if count > rstart - p:
                    raise _Bad(
                        at(rec_at),
                        f"obj record {key.hex()}: {count} positions cannot fit in the "
                        "remaining bytes of the block",
                    )
                positions = []
                last = 0
                for j in range(count):
                    v, p = _varint(buf, p, rstart)
                    last = v if j == 0 else last + v
                    if j and v == 0:
                        self.warn(at(rec_at), f"obj record {key.hex()}: repeated block position {last}")
                    positions.append(last)
                out.append((key, positions, at(rec_at)))
            else:  # index
                if extra != 0:
                    raise _Bad(at(rec_at), f"index record {_q(key)}: extra bits {extra} must be 0")
                pos, p = _varint(buf, p, rstart)
                out.append((key, pos, at(rec_at)))
        if p != rstart:
            raise _Bad(at(p), "the last record runs into the restart table")
        prev_r = -1
        for i, r in enumerate(restarts):
            r_at = at(rstart + 3 * i)
            if r <= prev_r:
                raise _Bad(r_at, f"restart offset {r} is not greater than the previous one {prev_r}")
            prev_r = r
            if not (header_off + 4 <= r < rstart - boff):
                raise _Bad(
                    r_at,
                    f"restart offset {r} lies outside the block's records "
                    f"({header_off + 4}..{rstart - boff - 1})",
                )
            if r not in starts:
                raise _Bad(r_at, f"restart offset {r} does not point at the start of a record")
            if starts[r] != 0:
                raise _Bad(
                    r_at,
                    f"restart offset {r} points at a prefix-compressed record (prefix length "
                    f"{starts[r]}); restart records must have prefix length 0",
                )
        return out

    # -- whole-table layout, indexes, obj entries, key order across blocks
    def check_layout(self, blocks: list[_Block]) -> None:
        by_off = {b.offset: b for b in blocks}
        if self.walk_broken or self.failed:
            # Positions, index and obj entries can only be judged against a complete walk; what broke
            # the walk is already reported.
            self._check_entries_partial(blocks)
            return
        order = "".join(b.type for b in blocks)
        m = re.fullmatch(r"(r*)(i*)(o*)(i*)(g*)(i*)", order)
        if m is None:
            # find the first block out of place
            for i in range(1, len(blocks)):
                if not re.fullmatch(r"r*i*o*i*g*i*", order[: i + 1]):
                    self.err(
                        blocks[i].offset,
                        f"{_BLOCK_NAMES[blocks[i].type]} block at {blocks[i].offset} is "
                        "out of place (sections must be ref, ref index, obj, obj index, log, log index)",
                    )
                    break
            return
        # Which 'i' run belongs to which section depends on what precedes it.
        idx = 0
        sections: dict[str, list[_Block]] = {}
        for label, grp in zip(("r", "ri", "o", "oi", "g", "gi"), m.groups(), strict=True):
            sections[label] = blocks[idx : idx + len(grp)]
            idx += len(grp)
        if not sections["r"] and sections["ri"]:
            self.err(sections["ri"][0].offset, "index block without ref blocks before it")
        if not sections["o"] and sections["oi"]:
            self.err(sections["oi"][0].offset, "index block after the ref index without obj blocks")
        if not sections["g"] and sections["gi"]:
            self.err(sections["gi"][0].offset, "index block after the obj section without log blocks")
        pos = self.positions
        foot_hsz = self.foot + self.hsz
        if not self.positions_bad:
            self._check_pos("obj_position", pos["obj"], sections["o"], foot_hsz + 8, first=True)
            self._check_pos("log_position", pos["log"], sections["g"], foot_hsz + 24, first=True)
            self._check_pos("ref_index_position", pos["ref_index"], sections["ri"], foot_hsz)
            self._check_pos("obj_index_position", pos["obj_index"], sections["oi"], foot_hsz + 16)
            self._check_pos("log_index_position", pos["log_index"], sections["gi"], foot_hsz + 32)
        # key order across blocks of one section
        for label in ("r", "o", "g"):
            prev: _Block | None = None
            for b in sections[label]:
                if prev is not None and b.records and prev.records and b.first_key <= prev.last_key:
                    self.err(
                        b.offset,
                        f"{_BLOCK_NAMES[b.type]} block at {b.offset} starts with "
                        f"{self._key_text(label, b.first_key)}, which does not sort after the last key "
                        f"{self._key_text(label, prev.last_key)} of the block before",
                    )
                if b.records:
                    prev = b
        # index entries
        for label, target in (("ri", "r"), ("oi", "o"), ("gi", "g")):
            for ib in sections[label]:
                for key, bpos, rec_at in ib.records:
                    tb = by_off.get(bpos)
                    if tb is None or tb.type not in (target, "i"):
                        self.err(
                            rec_at,
                            f"index entry {self._key_text(target, key)} points at {bpos}, which is "
                            f"not the start of a {_BLOCK_NAMES[target]} or index block",
                        )
                    elif tb.last_key != key:
                        self.err(
                            rec_at,
                            f"index entry {self._key_text(target, key)} does not equal the last key "
                            f"{self._key_text(target, tb.last_key)} of the block at {bpos}",
                        )
        # obj entries
        if sections["o"]:
            refblocks = {b.offset: b for b in sections["r"]}
            for ob in sections["o"]:
                for key, positions, rec_at in ob.records:
                    if len(key) != self.obj_id_len:
                        self.warn(
                            rec_at,
                            f"obj record {key.hex()} is {len(key)} bytes, but obj_id_len is "
                            f"{self.obj_id_len}",
                        )
                    hexkey = key.hex().encode()
                    for bpos in positions:
                        rb = refblocks.get(bpos)
                        if rb is None:
                            self.err(
                                rec_at,
                                f"obj record {key.hex()} points at {bpos}, which is not the start "
                                "of a ref block",
                            )
                            continue
                        if not any(
                            (r[2] is not None and r[2].startswith(hexkey))
                            or (r[3] is not None and r[3].startswith(hexkey))
                            for r in rb.records
                        ):
                            self.err(
                                rec_at,
                                f"obj record {key.hex()} points at the ref block at {bpos}, which "
                                "holds no ref with that object id",
                            )
        for b in sections["r"]:
            for name, vt, value, peeled, target, ui in b.records:
                self.refs.append((name, vt, value, peeled, target, ui, b.offset))

    def _check_entries_partial(self, blocks: list[_Block]) -> None:
        """After a broken walk: index/obj entries pointing at blocks that were read must still match."""
        by_off = {b.offset: b for b in blocks}
        for ib in blocks:
            if ib.type != "i":
                continue
            for key, bpos, rec_at in ib.records:
                tb = by_off.get(bpos)
                if tb is not None and tb.type != "i" and tb.last_key != key:
                    self.err(
                        rec_at,
                        f"index entry {self._key_text(tb.type, key)} does not equal the last key "
                        f"{self._key_text(tb.type, tb.last_key)} of the block at {bpos}",
                    )

    def _key_text(self, label: str, key: bytes) -> str:
        if label in ("o", "oi"):
            return key.hex()
        if label in ("g", "gi") and len(key) > 9:
            return f"{_q(key[:-9])}@{0xFFFFFFFFFFFFFFFF - int.from_bytes(key[-8:], 'big')}"
        return _q(key)

    def _check_pos(self, label: str, pos: int, blocks: list[_Block], at: int, first: bool = False) -> None:
        offsets = [b.offset for b in blocks]
        if pos == 0:
            if first and blocks and blocks[0].offset != 0:
                self.err(at, f"footer {label} is 0 but the table has such blocks (first at {offsets[0]})")
            elif not first and len(blocks) > 0:
                self.warn(at, f"footer {label} is 0 but the table has index blocks at {offsets}")
            return
        if first:
            if not blocks or offsets[0] != pos:
                self.err(
                    at,
                    f"footer {label} is {pos}, but the first such block is at "
                    f"{offsets[0] if blocks else 'nowhere'}",
                )
        elif pos not in offsets:
            self.err(at, f"footer {label} is {pos}, which is not the start of an index block of that section")


_BLOCK_NAMES = {"r": "ref", "g": "log", "o": "obj", "i": "index"}


def table_blocks(data: bytes, path: str = "<table>") -> tuple[list[_Block], list[Finding]]:
    """The blocks of one reftable (offset, type, lengths, restart table, keys) as verify walked them,
    and the findings: for the TUI's table view and for building corrupted tables in tests."""
    out = _Out()
    tv = _TableVerifier(out, path, data, None)
    tv.blocks = []
    tv.run()
    return tv.blocks, out.findings


def verify_table_bytes(out: _Out, path: str, data: bytes, expect_hash: str | None = None) -> TableInfo:
    """Check one reftable file's bytes (used by verify and by tests/fuzzers)."""
    return _TableVerifier(out, path, data, expect_hash).run()


def verify_reftable(out: _Out, commondir: str, hash_name: str) -> dict[bytes, tuple]:
    """Check the stack in ``commondir/reftable``; returns the merged view name -> ref tuple."""
    rdir = os.path.join(commondir, "reftable")
    lpath = os.path.join(rdir, "tables.list")
    merged: dict[bytes, tuple] = {}
    try:
        st = os.lstat(lpath)
    except FileNotFoundError:
        out.error(lpath, None, "tables.list is missing: the reftable stack cannot be read")
        return merged
    except OSError as err:  # reftable/ itself cannot be searched (EACCES) or is not a directory
        out.error(rdir, None, f"cannot read the reftable directory: {_why(err)}")
        return merged
    if not stat.S_ISREG(st.st_mode):
        out.error(lpath, None, "tables.list is not a regular file")
        return merged
    try:
        data = _read_all(lpath)
    except (OSError, UnreadableFile) as err:
        out.error(lpath, None, f"cannot read tables.list: {_why(err)}")
        return merged
    names: list[str] = []
    pos = 0
    while pos < len(data):
        eol = data.find(b"\n", pos)
        if eol < 0:
            out.error(
                lpath, len(data), "the last line of tables.list does not end in LF; git refuses the stack"
            )
            eol = len(data)
        raw = data[pos:eol]
        name = os.fsdecode(raw)
        if not raw:
            out.warning(lpath, pos, "tables.list has an empty line (git skips it; git never writes one)")
        elif not _TABLE_NAME.match(name):
            if "/" in name or name in (".", ".."):
                out.error(
                    lpath,
                    pos,
                    f"tables.list names '{escape_name(raw)}', a path outside reftable/; git "
                    "joins names to the directory unchecked, refscope refuses it",
                )
            else:
                out.error(
                    lpath,
                    pos,
                    f"tables.list names '{escape_name(raw)}', which is not of git's form "
                    "0x<min:12 hex>-0x<max:12 hex>-<8 hex>.ref",
                )
        elif name in names:
            out.error(lpath, pos, f"tables.list names {name} twice")
        else:
            names.append(name)
        pos = eol + 1
    out.checked["tables"] += len(names)
    infos: list[TableInfo] = []
    for name in names:
        path = os.path.join(rdir, name)
        try:
            tst = os.lstat(path)
        except FileNotFoundError:
            out.error(path, None, f"table {name} is listed in tables.list but does not exist")
            continue
        except OSError as err:
            out.error(path, None, f"cannot read table {name}: {_why(err)}")
            continue
        if not stat.S_ISREG(tst.st_mode):
            out.error(path, None, f"table {name} is not a regular file")
            continue
        try:
            tdata = _read_all(path)
        except (OSError, UnreadableFile) as err:
            out.error(path, None, f"cannot read table {name}: {_why(err)}")
            continue
        info = verify_table_bytes(out, path, tdata, hash_name)
        if not info.ok:
            continue
        if info.hash_name != hash_name:
            out.error(
                path,
                24 if tdata[4] == 2 else 4,
                f"table {name} uses {info.hash_name} but the repository "
                f"uses {hash_name}; all tables of a stack must share one hash",
            )
        m = _TABLE_NAME.match(name)
        if m and (int(m.group(1), 16), int(m.group(2), 16)) != (info.min_update_index, info.max_update_index):
            out.warning(
                path,
                8,
                f"table {name}'s name says update indexes {int(m.group(1), 16)}.."
                f"{int(m.group(2), 16)} but its header says {info.min_update_index}.."
                f"{info.max_update_index}",
            )
        infos.append(info)
    for prev, cur in zip(infos, infos[1:], strict=False):
        if cur.min_update_index <= prev.max_update_index:
            out.error(
                cur.path,
                8,
                f"update indexes must increase through the stack: this table starts at "
                f"{cur.min_update_index} but the table before ({os.path.basename(prev.path)}) ends at "
                f"{prev.max_update_index}",
            )
    # merged view: newest table wins; tombstones hide older values
    for info in infos:
        for rec in info.refs:
            merged[rec[0]] = (info.path, rec)
    for name in list(merged):
        path, rec = merged[name]
        if rec[1] == 0:
            del merged[name]
            continue
        if b"\0" in name:
            as_git = name.split(b"\0")[0]
            out.error(
                path,
                rec[6],
                f"ref name {_q(name)} holds a NUL byte: git reads it as {_q(as_git)}; "
                "refscope does not list it and refuses writes that name it",
            )
            continue
        _check_name(out, path, rec[6], name)
    # stray files
    listed = set(names)
    try:
        entries = sorted(os.listdir(rdir))
    except OSError:
        entries = []
    for entry in entries:
        if entry == "tables.list" or entry in listed or entry.endswith(".lock"):
            continue
        path = os.path.join(rdir, entry)
        if _TABLE_NAME.match(entry):
            out.warning(
                path,
                None,
                f"stray table {entry}: present in reftable/ but not listed in tables.list "
                "(left by an interrupted write or compaction; git ignores it)",
            )
        elif ".temp." in entry:
            out.warning(path, None, f"leftover temporary file {entry} from an interrupted table write")
        else:
            out.warning(path, None, f"unexpected file '{escape_name(os.fsencode(entry))}' in reftable/")
    return merged


# --------------------------------------------------------------------------------------------- locks


def _proc_scan() -> Iterator[tuple[int, str, str | None, list[str]]]:
    """(pid, comm, cwd, open file paths) of every process we may inspect."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        base = f"/proc/{pid}"
        try:
            with open(f"{base}/comm", "rb") as fh:
                comm = fh.read().decode("utf-8", "replace").strip()
        except OSError:
            continue
        try:
            cwd = os.readlink(f"{base}/cwd")
        except OSError:
            cwd = None
        files: list[str] = []
        try:
            for fd in os.listdir(f"{base}/fd"):
                with contextlib.suppress(OSError):
                    files.append(os.readlink(f"{base}/fd/{fd}"))
        except OSError:
            pass
        yield pid, comm, cwd, files


def _repo_dirs(repo) -> list[str]:
    dirs = {os.path.realpath(repo.gitdir), os.path.realpath(repo.commondir)}
    if getattr(repo, "worktree", None):
        dirs.add(os.path.realpath(repo.worktree))
    return sorted(dirs)


def _inside(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _lock_candidates(repo) -> list[str]:
    found: list[str] = []
    seen: set[str] = set()
    for base in {repo.commondir, repo.gitdir}:
        for rel in ("packed-refs.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock"):
            p = os.path.join(base, rel)
            if os.path.lexists(p):
                found.append(p)
        # Ref locks beside the refs; reflog locks (git reflog expire rewrites logs/<ref> via <ref>.lock).
        for sub in ("refs", "logs"):
            _find_locks(os.path.join(base, sub), found)
        rdir = os.path.join(base, "reftable")
        try:
            for entry in sorted(os.listdir(rdir)):
                if entry.endswith(".lock"):
                    found.append(os.path.join(rdir, entry))
        except OSError:
            pass
    out = []
    for p in found:
        rp = os.path.realpath(p)
        if rp not in seen:
            seen.add(rp)
            out.append(p)
    return sorted(out)


def _find_locks(top: str, found: list[str]) -> None:
    """Every ``*.lock`` under ``top`` (names and d_type only: no stat per file, cheap on 100k reflogs)."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".lock"):
            found.append(entry.path)
        elif entry.is_dir(follow_symlinks=False):
            _find_locks(entry.path, found)


def _lock_info(path: str, procs: list, dirs: list[str], now: float) -> LockInfo | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    real = os.path.realpath(path)
    holders = [(pid, comm) for pid, comm, _cwd, files in procs if real in files or path in files]
    gits = [
        (pid, comm)
        for pid, comm, cwd, _files in procs
        if comm.startswith("git") and cwd is not None and _inside(cwd, dirs) and pid != os.getpid()
    ]
    return LockInfo(path, max(0.0, now - st.st_mtime), st.st_mtime, st.st_size, holders, gits)


def stale_locks(repo) -> list[LockInfo]:
    """Every ref-storage ``.lock`` file of ``repo`` with its age and owner hint (nothing is removed)."""
    paths = _lock_candidates(repo)
    if not paths:
        return []
    procs = list(_proc_scan())
    dirs = _repo_dirs(repo)
    now = time.time()
    infos = [_lock_info(p, procs, dirs, now) for p in paths]
    return [i for i in infos if i is not None]


def remove_stale_lock(path: str, repo=None, *, min_age_s: float = STALE_AFTER_S) -> LockInfo:
    """Remove one stale lock, refusing (LockBusy) when any process could hold it.

    git closes lock fds right after creating loose-ref locks, so "nobody has it open" is not enough:
    refuse also when the lock is younger than ``min_age_s`` or a git process runs inside the repository.
    Returns what was removed.
    """
    if not path.endswith(".lock"):
        raise TransactionRefused(path, "not a lock file (name does not end in '.lock')")
    procs = list(_proc_scan())
    dirs = _repo_dirs(repo) if repo is not None else [os.path.dirname(os.path.realpath(path))]
    if repo is not None and not _inside(os.path.realpath(path), dirs):
        raise TransactionRefused(path, "lock file is not inside this repository")
    info = _lock_info(path, procs, dirs, time.time())
    if info is None:
        raise TransactionRefused(path, "lock file does not exist")
    if info.holders:
        raise LockBusy(path, f"lock is in use: {info.owner_hint()}")
    if info.git_processes:
        raise LockBusy(path, f"lock may be in use: {info.owner_hint()}")
    if info.age_s < min_age_s:
        raise LockBusy(path, f"lock is only {info.age_s:.0f} s old; it may belong to a running operation")
    os.unlink(path)
    return info


def _fmt_age(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def _verify_locks(out: _Out, repo) -> None:
    for info in stale_locks(repo):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info.mtime))
        text = f"lock file left behind, {_fmt_age(info.age_s)} old (mtime {stamp} UTC); {info.owner_hint()}"
        if info.age_s >= STALE_AFTER_S and not info.could_be_held():
            out.error(
                info.path,
                None,
                text + "; git commands that need it fail with 'File exists' until it is removed",
            )
        else:
            out.warning(info.path, None, text)


# --------------------------------------------------------------------------------------------- ownership


def check_ownership(repo, env=None) -> Finding | None:
    """git's ``ensure_valid_ownership`` (as ``repo.py`` implements it): the worktree and git dir must be
    ours unless ``safe.directory`` in protected config allows them. None when git would accept it."""
    env = os.environ if env is None else env
    try:
        from ..repo import _ownership_ok
    except ImportError:  # pragma: no cover - repo.py always has it
        return None
    if _ownership_ok(None, repo.worktree, repo.gitdir, env):
        return None
    top = repo.worktree or repo.gitdir
    try:
        owner = os.stat(top).st_uid
    except OSError:
        owner = -1
    return Finding(
        top,
        None,
        ERROR,
        f"detected dubious ownership in repository at '{top}' (owner uid {owner}, running as uid "
        f"{os.geteuid()}): safe.directory does not allow it, so git refuses to work here "
        f"(git config --global --add safe.directory {top})",
    )


# --------------------------------------------------------------------------------------------- cross-check


def _reader_crosscheck(out: _Out, repo) -> None:
    """Open the store with refscope's readers and read everything: report what they reject that the
    walker did not, and any exception that is not a typed error (a decoder bug)."""
    try:
        from ..store import open_store
    except ImportError:
        return
    try:
        snap = open_store(repo).snapshot()
        for _ref in snap:
            pass
        snap.head()
    except ImportError:
        return  # a store not written yet (development); nothing to cross-check against
    except RefscopeError as err:
        f = err.file or repo.commondir
        if f not in out.error_files and not any(fe.startswith(f) for fe in out.error_files):
            out.error(f, err.offset, f"refscope's reader rejects it: {err.what}")
    except (MemoryError, RecursionError) as err:  # pragma: no cover - decoder bug
        out.error(repo.commondir, None, f"refscope's reader failed with {type(err).__name__}: a refscope bug")
    except Exception as err:  # noqa: BLE001 - verify must keep running; this is a decoder bug to report
        if not out.error_files:
            out.error(
                repo.commondir,
                None,
                f"refscope's reader crashed ({type(err).__name__}: {err}): a refscope "
                "bug; the walker found nothing wrong here",
            )


# --------------------------------------------------------------------------------------------- entry point


class Summary(NamedTuple):
    """What one verify run read: the ref storage format, the refs found, the reftable tables (both stacks
    of a linked worktree), the packed-refs records and loose refs, and the findings by severity."""

    format: str
    refs: int
    tables: int
    packed: int
    loose: int
    errors: int
    warnings: int

    def line(self) -> str:
        """The one line ``refscope verify`` ends with on stderr."""
        e, w = self.errors, self.warnings
        counts = f"{e} error{'s' if e != 1 else ''}, {w} warning{'s' if w != 1 else ''}"
        if not self.format:  # the repository could not be opened: nothing was read
            return counts
        if self.format == "reftable":
            what = f"reftable: {self.tables:,} table{'s' if self.tables != 1 else ''}"
        else:
            what = f"files: {self.packed:,} packed, {self.loose:,} loose"
        return f"{counts} in {self.refs:,} ref{'s' if self.refs != 1 else ''} ({what})"


def verify(repo, *, crosscheck: bool = True, env=None) -> list[Finding]:
    """Every finding for ``repo`` (a ``backend.repo.Repo``), errors and warnings, in a stable order.

    Never raises for anything on disk: a failure of verify itself (a refscope bug) becomes an error
    finding on the repository, so the CLI and the TUI always get a list."""
    return verify_summary(repo, crosscheck=crosscheck, env=env)[0]


def verify_summary(repo, *, crosscheck: bool = True, env=None) -> tuple[list[Finding], Summary]:
    """``verify`` and what it read (for the CLI's closing line)."""
    out = _Out()
    try:
        owner = check_ownership(repo, env)
        if owner is not None:
            out.findings.append(owner)
        _verify_storage(out, repo)
        _verify_locks(out, repo)
        if crosscheck:
            _reader_crosscheck(out, repo)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 - verify reports, it does not crash
        out.error(
            repo.commondir,
            None,
            f"verify stopped early: {type(err).__name__}: {err} (a refscope bug; the findings above still hold)",
        )
    errors = sum(1 for f in out.findings if f.severity == ERROR)
    c = out.checked
    summary = Summary(
        repo.ref_storage, c["refs"], c["tables"], c["packed"], c["loose"], errors, len(out.findings) - errors
    )
    return out.findings, summary


def _verify_storage(out: _Out, repo) -> None:
    hexname = repo.hash_name
    symrefs: list[tuple[bytes, bytes, str]] = []
    present: set[bytes] = set()
    if repo.ref_storage == "reftable":
        merged = verify_reftable(out, repo.commondir, hexname)
        if os.path.realpath(repo.gitdir) != os.path.realpath(repo.commondir) and os.path.isdir(
            os.path.join(repo.gitdir, "reftable")
        ):
            # A linked worktree has its own stack for HEAD and the per-worktree refs.
            merged.update(verify_reftable(out, repo.gitdir, hexname))
        for name, (path, rec) in merged.items():
            present.add(name)
            if rec[1] == 3:
                symrefs.append((name, rec[4], path))
        out.checked["refs"] = len(merged)
        head = os.path.join(repo.gitdir, "HEAD")
        # In a reftable repository HEAD on disk is a stub; the real HEAD is in the tables.
        if b"HEAD" not in merged and not os.path.exists(head):
            out.error(head, None, "HEAD is missing")
    else:
        packed = verify_packed(out, os.path.join(repo.commondir, "packed-refs"), hexname)
        present.update(packed)
        loose = verify_loose(out, repo.gitdir, repo.commondir, hexname)
        for name, (kind, value, path) in loose.items():
            present.add(name)
            if kind == "sym":
                symrefs.append((name, value, path))
        out.checked.update(refs=len(present), packed=len(packed), loose=len(loose))
        if b"HEAD" not in loose and not os.path.lexists(os.path.join(repo.gitdir, "HEAD")):
            out.error(os.path.join(repo.gitdir, "HEAD"), None, "HEAD is missing")
        new = os.path.join(repo.commondir, "packed-refs.new")
        if os.path.lexists(new):
            out.warning(
                new,
                None,
                "packed-refs.new left behind by an interrupted packed-refs rewrite (the writer died before "
                "renaming it); git ignores it, and the next rewrite replaces it",
            )
    # A store with errors has an incomplete view of its refs: "points nowhere" would be a guess.
    storage_broken = bool(out.error_files)
    for name, target, path in symrefs:
        if check_refname(target) is not None and target != b"HEAD":
            out.error(path, None, f"symref {_q(name)} points at {_q(target)}, which is not a valid ref name")
            continue
        if not target.startswith(b"refs/") and not all(0x41 <= c <= 0x5A or c == 0x5F for c in target):
            out.warning(
                path,
                None,
                f"symref {_q(name)} points at {_q(target)}, which is not a ref (not under "
                "refs/ nor a root ref like HEAD)",
            )
            continue
        if target not in present and not storage_broken:
            if name == b"HEAD" and target.startswith(b"refs/heads/"):
                continue  # an unborn branch is normal (fresh repository, orphan checkout)
            out.warning(path, None, f"symref {_q(name)} points at {_q(target)}, which does not exist")


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == ERROR for f in findings)
