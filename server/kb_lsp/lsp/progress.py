"""LSP work-done progress: the indexing bar (fed by the runtime's worker) and the bar of
an ask or a summary (fed by the agent's steps).

`report` and `end` may be called from any thread: the protocol hands messages from other
threads to the event loop before writing them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types

from kb_lsp.lsp.jsonrpc import KbProtocol
from kb_lsp.protocol import IndexProgress
from kb_lsp.runtime.progress import SCANNING, progress_text

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer as KbLanguageServer

log = logging.getLogger(__name__)

PROGRESS_CREATE_TIMEOUT = 5.0  # seconds: a client that never answers still gets its answer
INDEX_CREATE_TIMEOUT = 10.0
PROGRESS_TEXT_CHARS = 200  # a progress message is one line in a status bar, not the step
REPORT_EVERY = 0.1  # seconds between two reports of the indexing bar


def _watch_cancel(
    server: KbLanguageServer, token: types.ProgressToken, cancel: threading.Event
) -> None:
    """The bar's cancel button sets `cancel`."""
    user_cancel = server.work_done_progress.tokens.get(token)
    if user_cancel is not None:
        user_cancel.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)


# Share of the bar for the text phase; the vectors phase (the slow one) fills the rest.
TEXT_SHARE = 20


def index_percentage(progress: IndexProgress) -> int:
    """One bar over both phases, never going back."""
    if progress.phase == "scanning":
        return 0
    if progress.phase == "keyword":
        total = progress.files_total
        return progress.files_done * TEXT_SHARE // total if total else TEXT_SHARE
    total = progress.chunks_total
    return TEXT_SHARE + (
        progress.chunks_done * (100 - TEXT_SHARE) // total if total else 100 - TEXT_SHARE
    )


class IndexProgressBar:
    """One work-done progress bar on the client for one sync."""

    def __init__(self, server: KbLanguageServer, token: str) -> None:
        self._server = server
        self._token = token
        self._last = 0.0

    @classmethod
    def start(
        cls, server: KbLanguageServer, title: str, cancel: threading.Event
    ) -> IndexProgressBar | None:
        """On the worker thread: ask the client for a bar; None when it has none."""
        window = server.client_capabilities.window
        loop = cast(KbProtocol, server.protocol).loop
        if window is None or not window.work_done_progress or loop is None:
            return None
        token = f"kb-index-{uuid.uuid4().hex[:12]}"
        created = asyncio.run_coroutine_threadsafe(
            server.work_done_progress.create_async(token), loop
        )
        try:
            created.result(timeout=INDEX_CREATE_TIMEOUT)
        except Exception as err:
            log.info("the client did not create a progress bar: %s", err)
            return None
        server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=title, cancellable=True, message=SCANNING, percentage=0
            ),
        )
        _watch_cancel(server, token, cancel)
        return cls(server, token)

    def report(self, progress: IndexProgress) -> None:
        now = time.monotonic()
        finished = progress.files_done >= progress.files_total
        if now - self._last < REPORT_EVERY and not finished:
            return
        self._last = now
        self._server.work_done_progress.report(
            self._token,
            types.WorkDoneProgressReport(
                message=progress_text(progress),
                percentage=index_percentage(progress),
                cancellable=True,
            ),
        )

    def end(self, message: str) -> None:
        progress = self._server.work_done_progress
        progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        progress.tokens.pop(self._token, None)


class WorkProgress:
    """One work-done progress bar for an ask or a summary. Without client support (or
    when the client does not create the token) every call does nothing."""

    def __init__(self, server: KbLanguageServer | None, token: types.ProgressToken | None) -> None:
        self._server = server
        self._token = token
        self._ended = False
        self._lock = threading.Lock()

    @classmethod
    async def start(
        cls, server: KbLanguageServer, raw: Any, title: str, cancel: threading.Event
    ) -> WorkProgress:
        """Begin a bar: on the request's own `workDoneToken` when the client sent one,
        else on a token the server asks the client to create. Cancelling the bar (its
        cancel button) sets `cancel`."""
        token: types.ProgressToken | None = None
        given = raw.get("workDoneToken") if isinstance(raw, dict) else None
        if isinstance(given, (str, int)) and not isinstance(given, bool):
            token = given
        else:
            window = server.client_capabilities.window
            if window is None or not window.work_done_progress:
                return cls(None, None)
            token = f"kb-ask-{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(
                    server.work_done_progress.create_async(token), PROGRESS_CREATE_TIMEOUT
                )
            except Exception as err:
                log.info("the client did not create a progress bar: %s", err)
                return cls(None, None)
        server.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, cancellable=True)
        )
        _watch_cancel(server, token, cancel)
        return cls(server, token)

    def report(self, message: str) -> None:
        if self._server is None or self._token is None or self._ended:
            return
        line = " ".join(message.split())
        if len(line) > PROGRESS_TEXT_CHARS:
            line = line[: PROGRESS_TEXT_CHARS - 1] + "…"
        self._server.work_done_progress.report(
            self._token, types.WorkDoneProgressReport(message=line, cancellable=True)
        )

    def end(self, message: str) -> None:
        with self._lock:
            if self._server is None or self._token is None or self._ended:
                return
            self._ended = True
        progress = self._server.work_done_progress
        progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        progress.tokens.pop(self._token, None)
