"""Reusable widgets of the refscope TUI: the ref list, status line, queue and operations panels."""
