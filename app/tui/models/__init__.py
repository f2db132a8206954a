"""Widgets and models behind the storage views (packed-refs records, reftable stack, table internals, reflogs).

Owned by TUI-VIEWS. Screens live in ``app/tui/screens/{packed,stack,table,reflog}.py``; everything here is
reusable by them and holds no app state.
"""
