"""What the screens show, without Textual widgets: the filter (``filtering``), the row sources of the storage
views (``packed_rows``, ``stack_rows``, ``table_rows``: one-line rows for ``widgets.rows.RowsView``), and the
text formats every screen shares (``format``, ``report``). Nothing here holds app state or reads a key.
"""
