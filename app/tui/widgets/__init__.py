"""Reusable widgets of the refscope TUI, each with its own DEFAULT_CSS and no app state of its own.

``line_list.LineList`` is the one Line-API list base (keys, cursor, scrolling); ``ref_list.RefList`` (the
main list) and ``rows.RowsView`` (every list of the storage views) are built on it. Beside them: the
column layout, HEAD's line, the status line, the queue and operations panels, the palette, the size chart.
"""
