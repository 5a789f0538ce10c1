"""Whether the model answers, without making anyone wait for it; and the cancel events
of the asks in flight.

`LlmProbe.status()` answers at once from the last probe of the current agent's host and
model (`reachable` is None until the first probe is back). A stale or missing answer
starts one probe on a background thread (one at a time, short timeout); when its answer
differs from the last one, `on_change` runs (the runtime re-sends its status).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable

from kb_lsp.agent import Agent
from kb_lsp.protocol import LlmStatus

log = logging.getLogger(__name__)

LLM_FRESH_SECONDS = 10.0  # how long a reachability answer is reused by the status
LLM_PROBE_TIMEOUT = 2.0  # seconds a background probe may wait for the model server


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


class LlmProbe:
    def __init__(self, on_change: Callable[[], None], *, enabled: bool = True) -> None:
        self._on_change = on_change
        self._enabled = enabled
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
            start = stale and self._enabled and not self._probing and not self._closed
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
