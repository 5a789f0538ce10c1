"""What `kb/ask` and `kb/summarize` need around the agent: work-done progress, the
cancel events of the runs in flight, and the cached LLM reachability of `kb/status`.

The agent itself runs on the server's `asks` pool (see `server.py`); nothing here blocks
the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from kb_lsp.agent import Agent
from kb_lsp.protocol import LlmStatus

if TYPE_CHECKING:
    from kb_lsp.lsp.server import KbLanguageServer

log = logging.getLogger(__name__)

PROGRESS_CREATE_TIMEOUT = 5.0  # seconds: a client that never answers still gets its answer
PROGRESS_TEXT_CHARS = 200  # a progress message is one line in a status bar, not the step
LLM_FRESH_SECONDS = 10.0  # how long a reachability answer is reused by kb/status
LLM_PROBE_TIMEOUT = 2.0  # seconds a background probe may wait for Ollama


class RunningWork:
    """The cancel events of the asks and summaries in flight, so that reopening the
    knowledge base (new settings, shutdown) can stop them instead of waiting for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: set[threading.Event] = set()

    def add(self, cancel: threading.Event) -> None:
        with self._lock:
            self._events.add(cancel)

    def discard(self, cancel: threading.Event) -> None:
        with self._lock:
            self._events.discard(cancel)

    def cancel_all(self) -> int:
        with self._lock:
            events = list(self._events)
        for event in events:
            event.set()
        return len(events)


class WorkProgress:
    """One work-done progress bar for an ask or a summary. Without client support (or
    when the client does not create the token) every call does nothing.

    `report` and `end` may be called from any thread: the protocol hands messages from
    other threads to the event loop before writing them."""

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
        progress = server.work_done_progress
        progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
        user_cancel = progress.tokens.get(token)
        if user_cancel is not None:
            user_cancel.add_done_callback(lambda f: cancel.set() if f.cancelled() else None)
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


class LlmProbe:
    """`kb/status`'s `llm` without making `kb/status` wait for Ollama.

    `status()` answers at once from the last probe of the current agent's host and model
    (`reachable` is null until the first probe is back). A stale or missing answer starts
    one probe on a background thread (one at a time, short timeout); when its answer
    differs from the last one, `on_change` runs (the server sends `kb/indexChanged`)."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], tuple[bool, float]] = {}
        self._probing = False
        self._closed = False
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="kb-llm-probe"
        )

    def status(self, agent: Agent | None, host: str, model: str) -> LlmStatus:
        """The status for `agent` (None: not open yet → the settings' host and model)."""
        if agent is None:
            return LlmStatus(host=host, model=model)
        llm = agent.llm
        key = (llm.host, llm.model)
        with self._lock:
            known = self._known.get(key)
            stale = known is None or time.monotonic() - known[1] > LLM_FRESH_SECONDS
            start = stale and not self._probing and not self._closed
            if start:
                self._probing = True
        if start:
            try:
                self._pool.submit(self._probe, agent, key)
            except RuntimeError:  # shut down meanwhile
                with self._lock:
                    self._probing = False
        return LlmStatus(host=key[0], model=key[1], reachable=known[0] if known else None)

    def refresh(self, agent: Agent | None) -> None:
        """Forget what is known (the model just failed or answered) and probe again."""
        with self._lock:
            self._known.clear()
        if agent is not None:
            self.status(agent, agent.llm.host, agent.llm.model)

    def _probe(self, agent: Agent, key: tuple[str, str]) -> None:
        reachable: bool | None = None
        try:
            reachable = agent.llm.status(timeout=LLM_PROBE_TIMEOUT).reachable
        except Exception:
            log.exception("probing Ollama failed")
            reachable = False
        finally:
            with self._lock:
                self._probing = False
                before = self._known.get(key)
                self._known[key] = (bool(reachable), time.monotonic())
        if before is None or before[0] != bool(reachable):
            log.info("Ollama at %s is %s", key[0], "reachable" if reachable else "not reachable")
            self._on_change()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
