"""One error path for every background job of the TUI: workers and the views' polling threads.

Textual's ``@work(exit_on_error=False)`` keeps an exception inside the worker object, where nobody looks: a
worker that raised left its view at "indexing records…" forever, and a commit on a full disk showed only
its "committing…" toast. So every worker of ``app/tui`` is declared with this module's ``work`` instead of
Textual's (a test checks that none uses Textual's directly): the body runs inside a guard that turns any
exception into a ``Failure`` and hands it, on the UI thread, to the node that started the job
(``show_failure``). Screens show it in place (a view's status line, the main screen's status or a dialog);
a node without a place of its own passes it to its screen, then to the app (a notification).

A ``RefscopeError`` is shown as its own line (file and what happened). Anything else is a bug or an OS
error nobody typed yet: it is shown with its type and message and logged with its traceback.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from refscope.backend.display import printable
from refscope.backend.errors import RefscopeError
from textual import work as textual_work

log = logging.getLogger("refscope.tui")
# Never Python's last-resort handler: it writes to stderr, under the running app. Tracebacks go to the
# handlers an embedder (or a test's caplog) installs, and to Textual's log (``textual console``).
log.addHandler(logging.NullHandler())


def failure_line(error: BaseException, where: str | None = None) -> str:
    """``<file>: <what>`` for an error, on one line with nothing a terminal would obey.

    A ``RefscopeError`` knows its file; an ``OSError`` names its own; anything else is about ``where`` (the
    file or job the caller was working on) and says its type, since it is no message written for a user.
    """
    if isinstance(error, RefscopeError):
        text = str(error)
    else:
        file = getattr(error, "filename", None) or where
        what = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        what = f"{type(error).__name__}: {what}" if what else type(error).__name__
        text = f"{file}: {what}" if file else what
    return printable(" ".join(text.splitlines()))


@dataclass(frozen=True)
class Failure:
    """A background job that raised: which job (its worker group and description), the error, and the
    arguments the job was started with (so that its node can tell a superseded job's failure)."""

    group: str
    what: str
    error: BaseException
    args: tuple = ()

    @property
    def expected(self) -> bool:
        """A typed backend error (a refusal, a damaged file), as opposed to a bug or an untyped OS error."""
        return isinstance(self.error, RefscopeError)

    @property
    def line(self) -> str:
        return failure_line(self.error, None if self.expected else self.what)


def report(node: Any, failure: Failure) -> None:
    """Log ``failure`` (unexpected ones with their traceback) and show it on ``node`` from any thread."""
    app = node.app
    if failure.expected:
        log.info("%s: %s", failure.what, failure.line)
    else:
        log.error("%s failed: %s", failure.what, failure.line, exc_info=failure.error)
    if threading.get_ident() == getattr(app, "_thread_id", None):
        deliver(node, failure)
        return
    with contextlib.suppress(RuntimeError):  # the app is shutting down: nobody to show it to (it is logged)
        app.call_from_thread(deliver, node, failure)


def deliver(node: Any, failure: Failure) -> None:
    """Show ``failure`` on the nearest of ``node``, its screen, the app that has ``show_failure``."""
    if not failure.expected:
        node.app.log.error(f"{failure.what} failed: {failure.line}")
    for target in (node, getattr(node, "screen", None), node.app):
        show = getattr(target, "show_failure", None)
        if show is not None:
            try:
                show(failure)
                return
            except Exception:  # a screen closed meanwhile has no place to show it: a notification
                log.debug("%s could not show %s", target, failure.what, exc_info=True)
                break
    node.app.notify(failure.line, title=f"{failure.what} failed", severity="error", markup=False)


def work(
    *, description: str, thread: bool = False, exclusive: bool = False, group: str = "default"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Textual's ``@work`` (never exiting the app on an error) whose body cannot lose an exception.

    The decorated method's exceptions become a ``Failure`` shown by ``show_failure`` (see the module
    docstring); cancellation (``asyncio.CancelledError``) passes through as Textual expects. The worker then
    ends as finished with result None: its failure has been handled, and ``Worker.wait()`` callers are not
    handed the same error a second time.
    """

    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def guarded_async(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await method(self, *args, **kwargs)
                except Exception as error:
                    report(self, Failure(group, description, error, args))
                    return None

            body: Callable[..., Any] = guarded_async
        else:

            @functools.wraps(method)
            def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return method(self, *args, **kwargs)
                except Exception as error:
                    report(self, Failure(group, description, error, args))
                    return None

            body = guarded
        return textual_work(
            body,
            thread=thread,
            exclusive=exclusive,
            group=group,
            exit_on_error=False,
            description=description,
        )

    return decorate
