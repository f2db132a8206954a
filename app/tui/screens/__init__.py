"""Screens of the refscope TUI (main, dialogs, help, operations; storage views)."""
