"""What ``refscope --help``, ``refscope help COMMAND`` and ``refscope COMMAND -h`` print.

Kept apart from the commands: a command imports nothing for its help, and every text lives in one place,
where the README's command reference is checked against it (tests/cli/test_cli_help.py).
"""

from __future__ import annotations

VERSION_FALLBACK = "0.1.0"

SUMMARY = """\
usage: refscope [-C PATH] [--version] [--help] [COMMAND [ARGS]]
       refscope [-C PATH] [--demo [files|reftable]] [--demo-dir DIR] [--engine native|git] [--no-watch]

Inspect and edit git refs: packed-refs and reftable storage, live, with the cost of every operation.
Without a command, refscope opens the terminal app in the repository (as git finds it from the current
directory, -C, GIT_DIR).

commands:
  list     the refs git for-each-ref prints, in its order, as raw bytes or --json
  stack    the packed-refs summary, or the reftable stack table by table
  dump     one packed-refs or reftable file, block by block, record by record, with offsets
  verify   integrity findings (file, offset, severity, message); exit 1 on errors
  delete   delete refs in one atomic transaction, through the native engine or git
  update   git's update-ref --stdin language (create, update, delete, verify, symrefs), one transaction
  watch    change events with the ref-level diff, one per line, until interrupted
  bench    the same transaction through both engines (and other git binaries) on scratch copies

options:
  -C PATH              run as if started in PATH (repeatable; each is relative to the one before;
                       an empty PATH changes nothing), before any command, as in git
  --version            print refscope's version
  -h, --help           this text; `refscope help COMMAND` or `refscope COMMAND -h` for one command
  --demo [FORMAT]      open the embedded demo repository (built without git, in a temporary
                       directory removed on exit); FORMAT files (default) or reftable
  --demo-dir DIR       with --demo: build the demo repositories in DIR and keep them
  --engine ENGINE      the TUI's engine for commits: native (default) or git (`git update-ref --stdin`)
  --no-watch           do not follow changes on disk live

examples:
  refscope -C ~/src/linux                      the TUI over linux's refs
  refscope list refs/tags | head               the first tags, exactly as git for-each-ref prints them
  refscope list 'refs/pull/*/head' | refscope delete --stdin
"""

COMMANDS = {
    "list": """\
usage: refscope list [-C PATH] [--json] [--format=FORMAT] [--sort=KEY]... [--count=N]
                     [--points-at=OBJECT] [--merged[=COMMIT]] [--no-merged[=COMMIT]]
                     [--contains[=COMMIT]] [--no-contains[=COMMIT]] [--omit-empty] [PATTERN...]

The refs `git for-each-ref --format='%(objectname) %(refname)'` prints, byte for byte and in its order
(a symref shows the oid it resolves to). Into a pipe names are git's raw bytes, so the output feeds
`refscope delete --stdin`; on a terminal they are shown escaped. With for-each-ref's options, what
`git for-each-ref` prints with them, byte for byte, reading objects natively (packs, deltas, alternates,
the commit-graph); without them no object is read.

options:
  -C PATH        run as if started in PATH
  --json         one object per line: {"name", "oid", "peeled", "target"}: peeled as the store records
                 it, target for a symref, else null; a name or target that is not UTF-8 also carries its
                 exact bytes, base64, in name_b64 / target_b64
  --format F     git's format: %(refname[:short|:lstrip=N|:rstrip=N]), %(objectname[:short[=N]]),
                 %(objecttype), %(objectsize), %(*...) of the peeled object, %(tree), %(parent),
                 %(numparent), %(object), %(type), %(tag), %(author|committer|tagger[name|email|date]),
                 %(creator), %(creatordate), dates :unix :iso8601 :iso8601-strict :short :rfc2822 :raw
                 :relative, %(subject), %(body), %(contents[:subject|:body|:signature|:size]),
                 %(symref), %(flag), %(HEAD), %(worktreepath), %(ahead-behind:C), %% and %xx; another
                 git atom is refused naming it
  --sort KEY     an atom, `-` before it to reverse, `version:` for version order; the last key given
                 is the primary one, ties in refname order
  --count N      at most N refs (after sorting; 0: all)
  --points-at O  refs pointing at object O (or at a tag chain that reaches it)
  --merged C     refs whose commit is reachable from C (HEAD when left out: an object id, full or
                 abbreviated, or a ref name; as git, the argument after it is taken as C)
  --no-merged C  refs whose commit is not reachable from C
  --contains C   refs from whose commit C is reachable
  --no-contains C  refs from whose commit C is not reachable
  --omit-empty   no line for a ref whose format comes out empty
  PATTERN        as git for-each-ref: a path prefix up to a `/` (refs/heads matches refs/heads/x, not
                 refs/headsx), or with * ? [ \\ a wildmatch glob whose * stops at `/` (** crosses it)

examples:
  refscope list refs/heads refs/tags
  refscope list --json 'refs/pull/*/head' | jq -r .name
  refscope list --sort=-committerdate --format='%(committerdate:short) %(refname:short)' refs/heads
  refscope list --no-merged=main --format='%(refname)' refs/heads
""",
    "stack": """\
usage: refscope stack [-C PATH] [--json]

What the ref storage is made of. A files repository: the packed-refs summary (path, size, records,
header traits, order, peeled records, loose refs). A reftable repository: each table of the stack,
oldest first (name, size, update-index range, version, hash, block size, record counts, blocks), for
the common stack and, in a linked worktree, the worktree's own stack. The counts are the TUI's: refs
(ref records with a value), tombstones (ref deletions), logs (reflog entries), log-deletions (log
records git writes when it deletes a ref's reflog).

options:
  -C PATH        run as if started in PATH
  --json         one JSON object

example:
  refscope stack -C repo.git --json
""",
    "dump": """\
usage: refscope dump [--json] FILE

One packed-refs or reftable table file (the kind is read from its first bytes: `REFT` is a table), block
by block and record by record, with the byte offset of each. Only FILE is read; no repository is needed.

options:
  --json         one JSON object (header, blocks with their records, footer)

examples:
  refscope dump .git/packed-refs
  refscope dump .git/reftable/0x000000000001-0x000000000003-1a2b3c4d.ref
""",
    "verify": """\
usage: refscope verify [-C PATH] [--objects] [--json]

Integrity findings deeper than `git refs verify`: every packed-refs record, loose ref and reftable block,
record, index and footer; lock files left behind and who holds them; names a terminal would obey. Each
finding is one line, `SEVERITY: FILE@OFFSET: MESSAGE`; a count goes to stderr. Exit 1 when there is an
error, 0 otherwise. verify never writes.

options:
  -C PATH        run as if started in PATH
  --objects      also read every ref's object: it exists and is not corrupt, HEAD and refs/heads/* name
                 commits, a recorded peeled value is what the tag chain peels to (as `git fsck` judges
                 refs; in a partial clone a missing object is a warning)
  --json         one object per finding: {"file", "offset", "severity", "message"}

examples:
  refscope verify -C repo.git
  refscope verify --objects
""",
    "delete": """\
usage: refscope delete [-C PATH] [--engine native|git] [--no-deref] [--allow-checked-out]
                       [--stdin] [--json] [REF...]

Delete every REF in one atomic transaction: all are deleted or none (then nothing on disk changed).
REF is a full name (refs/heads/topic; a short one is refused with the full name it would mean). Refs that
do not exist are reported, not refused (as git deletes them silently). Branches checked out in any
worktree are refused unless --allow-checked-out. Exit 0 committed, 1 refused (one line on stderr), 2 usage.

options:
  -C PATH              run as if started in PATH
  --engine ENGINE      native (default: refscope's own engine, git's locking protocol) or git
                       (`git update-ref --stdin`)
  --no-deref           delete a symref itself rather than the ref it points to
  --allow-checked-out  also delete branches checked out in a worktree (git update-ref allows it too)
  --stdin              read the refs from standard input, one per line: `REF [OLD_OID]`; names are raw
                       bytes (as `refscope list` prints them); an OLD_OID is checked under the lock
  --json               one object: {"committed", "engine", "deleted", "missing", "wall_ms", "cpu_ms",
                       "syscalls", "phases"}; the top-level figures are the commit's (first lock to last
                       unlink); "missing" lists the refs that did not exist

examples:
  refscope delete refs/heads/old-topic
  refscope list 'refs/pull/*/merge' | refscope delete --stdin --json
""",
    "update": """\
usage: refscope update [-C PATH] [--engine native|git] [-m MSG] [-z] [--stdin] [--json] [--no-deref]
                       [--allow-checked-out]

Read git's `update-ref --stdin` commands from standard input (create, update, delete, verify,
symref-create/-update/-delete/-verify, option no-deref, start/prepare/commit/abort) and commit them as
one atomic transaction, with reflogs as git writes them. Refusals are git's own words, one line on
stderr; nothing on disk changed. Exit 0 committed, 1 refused, 2 usage.

options:
  -C PATH              run as if started in PATH
  --engine ENGINE      native (default: refscope's own engine, git's locking protocol) or git
                       (`git update-ref --stdin -z`)
  -m MSG               the reflog message of every update
  -z                   NUL-terminated input (git's -z form)
  --stdin              accepted for git's sake: standard input is the only input
  --no-deref           update symrefs themselves rather than the refs they point to
  --allow-checked-out  also delete branches checked out in a worktree (git update-ref allows it too)
  --json               one object: {"committed", "engine", "updates", "wall_ms", "cpu_ms", "syscalls",
                       "phases"}; "updates" lists {"name", "old", "new"} of every ref written

examples:
  seq -f "create refs/tags/foo-%g $blob" 50000 | refscope update --json
  printf 'update refs/heads/main %s %s\\n' "$new" "$old" | refscope update -m 'move main'
""",
    "watch": """\
usage: refscope watch [-C PATH] [--json]

Follow the ref storage: one line per change made by any process (refs added `+`, removed `-` or changed
`~`, and what changed on disk: tables appended or compacted, loose refs, HEAD, lock files), with what the
refresh cost, until interrupted (Ctrl-C exits 0). A line on stderr says when the watches are in place.

options:
  -C PATH        run as if started in PATH
  --json         one object per event: {"seq", "kind", "changes", "added", "removed", "changed", ...}

example:
  refscope watch --json | jq .kind
""",
    "bench": """\
usage: refscope bench [-C PATH] [--git PATH ...] [--runs N] [--warmup N] [--json]
                      (REF... | --stdin | --update [-z] [-m MSG])

Run the same transaction through refscope's native engine and through git (`$REFSCOPE_GIT`, or git on
PATH, then every --git binary) on scratch copies of the ref storage (objects shared read-only through
alternates), one fresh copy per run, alternating runs with the order rotating each round, and print wall
time, CPU time and syscalls side by side. The repository itself is only read.

The transaction is a deletion (REF... or --stdin), or with --update any transaction in git's
`update-ref --stdin` language read from standard input, checked once before anything runs (a bad line:
one line on stderr, exit 2). An update bench prints hyperfine's figures per engine (mean ± σ, min … max,
median, runs) and its summary against the repository's git ("native ran 1.10 ± 0.15 times faster than
git 2.55.0", CPU beside it); an engine that refuses the transaction is a row `refused: <git's words>`.
Rows: native is the commit, first lock to last unlink (reftable auto-compaction included, as git's figure
has it); native+snapshot the whole transaction (snapshot, object checks, the plan, the commit); a git row
the whole `git update-ref --stdin -z <input` process (input from a file, as hyperfine runs it).
Exit 0 after printing, 1 on an error or when every engine refused, 2 on a usage error or a bad input line.

options:
  -C PATH        run as if started in PATH
  --git PATH     another git binary to compare (repeatable), e.g. one built with a patch
  --runs N       measured runs of each engine (default 5)
  --warmup N     runs of each engine before the measured ones, not counted (default 0)
  --stdin        read the refs to delete from standard input, one per line: `REF [OLD_OID]`
  --update       bench the update-ref --stdin transaction on standard input (start/commit: one at most)
  -z             with --update: the input is NUL-terminated (git's -z form)
  -m MSG         with --update: the reflog message
  --json         one JSON object. A deletion: {"repo", "ref_storage", "refs_total", "deletions", "runs",
                 "warmup", "source", "engines": [{"label", "engine", "git", "runs", "wall_ms": {"median",
                 "min", "max"}, "cpu_ms", "syscalls": {"median", "by_name", "source"}, "ratio_to_git",
                 "reports"}]}. An update: {"kind": "update", "repo", "ref_storage", "refs_total",
                 "commands" (count), "verbs": {VERB: count}, "message", "runs", "warmup", "source",
                 "relative_to" (the git row the ratios are against, or null), "engines": [{"label",
                 "engine", "git", "runs", "refused" (git's one line, or null), "wall_ms": {"mean", "stddev",
                 "median", "min", "max"} (null if refused), "cpu_ms" (the same), "syscalls": {"median",
                 "by_name", "source"}, "relative": {"wall", "cpu"}: {"ratio", "stddev"} (git's mean / the
                 row's: above 1 is faster; null for the reference itself), "reports": [one per run]}]}

examples:
  refscope bench --git ~/git-patched/bin/git --runs 9 refs/heads/topic
  # the seed's experiment: 50k creates into a fresh reftable repository, git before and after a patch
  git init --ref-format=reftable fresh && cd fresh
  blob=$(echo x | git hash-object -w --stdin)
  seq -f "create refs/tags/foo-%g $blob" 50000 >input
  refscope bench --update --git ./git.new --runs 5 --warmup 1 <input
""",
}


def version() -> str:
    """The installed distribution's version (metadata is read only when asked)."""
    try:
        from importlib.metadata import version as dist_version

        return dist_version("refscope")
    except Exception:  # not installed as a distribution (a plain checkout on sys.path)
        return VERSION_FALLBACK
