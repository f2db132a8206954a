"""``git for-each-ref``'s output language over refscope's listing and object reader: ``spec`` (parsing
``--format``/``--sort``), ``values`` (each atom's value), ``dates``, ``order`` (sorting and versioncmp),
``reach`` (merged/contains walks), ``context`` (HEAD, worktrees, ambiguity), ``run`` (the whole command).
Imported only when a format, a sort key or a filter asks for it: plain ``refscope list`` reads no object.
"""
