"""``refscope verify [-C PATH] [--objects] [--json]``: integrity findings of the ref storage (with
``--objects``, also of every ref's value against the object database).

Output, one finding per line on stdout, errors and warnings in the order found:
    plain:  ``<severity>: <file>[@<offset>]: <message>`` (file names escaped like ref names)
    --json: ``{"file", "offset", "severity", "message"}`` (offset null when it applies to the whole file)
One summary line always goes to stderr, clean or not (``refscope verify: N errors, M warnings in R refs
(files: P packed, L loose)`` or ``(reftable: T tables)``, with ``; O objects`` after --objects). Exit 1 when any finding is an error, 0 otherwise (warnings only
or clean), 2 on a usage error. verify never writes to the repository.
"""

from __future__ import annotations

import sys

USAGE = "usage: refscope verify [-C PATH] [--objects] [--json]"


def format_finding(f):
    """The plain one-line form of a Finding, as ``display.Shown`` (shared with the TUI's copy-to-clipboard)."""
    from refscope.backend.display import line, path_text

    where = "" if f.offset is None else f"@{f.offset}"
    return line(f.severity, ": ", path_text(f.file), where, ": ", f.message)


def run(argv: list[str]) -> int:
    from .args import parse_or_usage

    opts = parse_or_usage(argv, USAGE, flags=("--json", "--objects"))
    if opts is None:
        return 2
    path, as_json = opts.path, "--json" in opts.flags
    import os

    from refscope.backend.errors import DubiousOwnership
    from refscope.backend.repo import discover
    from refscope.backend.verify import ERROR, Finding, Summary, verify_summary

    repo = None
    try:
        repo = discover(path)
    except DubiousOwnership as err:
        # git refuses such a repository outright; verify reports that (verify() finds it again) and
        # still checks the storage, discovering it as if safe.directory allowed it.
        env = dict(os.environ)
        n = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
        env.update({f"GIT_CONFIG_KEY_{n}": "safe.directory", f"GIT_CONFIG_VALUE_{n}": "*"})
        env["GIT_CONFIG_COUNT"] = str(n + 1)
        try:
            repo = discover(path, env)
        except DubiousOwnership:
            repo = None
        if repo is None:
            findings = [Finding(err.file or (path or "."), err.offset, ERROR, err.brief)]
    summary = None
    if repo is not None:
        findings, summary = verify_summary(repo, objects="--objects" in opts.flags)
    out = sys.stdout
    from refscope.backend.display import emit, to_json

    if as_json:
        for f in findings:
            out.write(to_json(f.to_json()) + "\n")
    else:
        emit([format_finding(f) for f in findings])
    out.flush()
    errors = sum(1 for f in findings if f.severity == ERROR)
    if summary is None:
        summary = Summary("", 0, 0, 0, 0, errors, len(findings) - errors)
    print(f"refscope verify: {summary.line()}", file=sys.stderr)
    return 1 if errors else 0
