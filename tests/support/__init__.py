"""The one helper library of the tests (no tests here).

- ``git``: the oracle git (``git``, ``run_git``, ``git_noauto``), repositories (``init_repo``,
  ``create_refs``, ``copy_repo``) and fingerprints (``tree_bytes``, ``ref_storage``).
- ``cli``: ``refscope`` run as a child with its output captured (``refscope``, ``refscope_delete``).
- ``terminal``: the same on a pseudo-terminal (``run_tty``, ``type_in_pty``, ``raw_pty``, ``pump``).
- ``listing``: ``refscope list``'s JSON as rows, the odd names, the in-process listings compared.
- ``tui``: Pilot helpers (``wait_for``, ``Host``, ``make_app``, ``set_filter``) and TUI repositories.
- ``memsnapshot``: an in-memory Snapshot for TUI tests without disk.
- ``txn``: repositories and git-side comparisons of the transaction tests.
- ``watch``: the watcher's event collector and settling.
- ``faults``, ``corruptions``: files the OS refuses to read, and the corpus of damaged stores.
"""
