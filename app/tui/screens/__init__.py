"""Screens of the refscope TUI: the main screen (``main``, with its parts ``listing``, ``marking``,
``commit``), the storage views on ``base.ViewScreen`` (``stack``, ``packed``, ``table``, ``reflog``), and the
dialogs, help and operation screens. Screens post and handle the app's messages (``..messages``)."""
