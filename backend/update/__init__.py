"""General ref transactions: git's ``update-ref --stdin`` language, committed natively or through git.

- ``commands``: the language (LF and ``-z`` forms) parsed as git parses it, with git's wording;
- ``txn``: ``UpdateTransaction`` -- queued updates validated at once, committed all or nothing;
- ``objects``: what git checks of a new value before queueing it (exists; a commit for a branch; peeled);
- ``plan``: the prepare step both native engines share (symref and HEAD splits, old values, D/F);
- ``files`` / ``reftable`` / ``gitfeed``: the engines;
- ``rename``: ``commands.Rename`` (``git branch -m`` for any ref) checked when queued and executed by both
  native engines in the batch's one transaction (worktree HEADs follow); ``branchconfig``: the branch's
  config section moved with it, as git moves it.

``refscope delete`` keeps its own tuned transaction (``backend/txn.py``); deletions queued here go
through these engines with the same protocol.
"""
