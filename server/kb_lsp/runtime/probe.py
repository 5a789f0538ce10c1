"""Whether the model answers, without making anyone wait for it; and the cancel events
of the asks in flight.

`LlmProbe.status()` answers at once from the last probe of the current agent's provider,
server and model — the model's own status, whole: whether it answers, why not (`message`,
naming the provider actually configured) and whether it calls tools. Until the first
probe is back it is the configured status (`reachable` None). A stale or missing answer
starts one probe on a background thread (one at a time, short timeout); when its answer
differs from the last one, `on_change` runs (the runtime re-sends its status).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kb_lsp.engine.llm import ChatModel
from kb_lsp.protocol import LlmStatus

if TYPE_CHECKING:
    from kb_lsp.engine.agent import Agent

log = logging.getLogger(__name__)

LLM_FRESH_SECONDS = 10.0  # how long a reachability answer is reused by the status
LLM_PROBE_TIMEOUT = 2.0  # seconds a background probe may wait for the model server

_Key = tuple[str, str, str]  # provider, server, configured model


def _key(llm: ChatModel) -> _Key:
    return (llm.provider, llm.host, llm.config.model or "")


def _shown(status: LlmStatus) -> tuple[bool | None, str | None, bool | None, str]:
    """What the status shows of a probe (a change re-sends the status)."""
    return (status.reachable, status.message, status.tools, status.model)


class RunningWork:
    """The cancel events of the asks and summaries in flight, so that reopening the
    knowledge base (new settings, shutdown) can stop them instead of waiting for them, and
    a client can stop its own (`kb/stopAsk`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[threading.Event, str | None] = {}

    def add(self, cancel: threading.Event, owner: str | None = None) -> None:
        with self._lock:
            self._events[cancel] = owner

    def discard(self, cancel: threading.Event) -> None:
        with self._lock:
            self._events.pop(cancel, None)

    def cancel_all(self, owner: str | None = None) -> int:
        """Stop the work in flight (only `owner`'s, when given); how many were stopped."""
        with self._lock:
            events = [e for e, o in self._events.items() if owner is None or o == owner]
        for event in events:
            event.set()
        return len(events)


class LlmProbe:
    def __init__(self, on_change: Callable[[], None], *, enabled: bool = True) -> None:
        self._on_change = on_change
        self._enabled = enabled
        self._lock = threading.Lock()
        self._known: dict[_Key, tuple[LlmStatus, float]] = {}
        self._probing = False
        self._closed = False
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="kb-llm-probe"
        )

    @property
    def enabled(self) -> bool:
        return self._enabled

    def status(self, agent: Agent | None, configured: LlmStatus) -> LlmStatus:
        """The status of `agent`'s model (None: not open yet → `configured`, the status
        the settings describe)."""
        if agent is None or (not self._enabled and not agent.has_llm):
            return configured  # nothing to probe: the client need not be made for it
        llm = agent.llm
        key = _key(llm)
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
        return known[0] if known else llm.configured_status()

    def refresh(self, agent: Agent | None) -> None:
        """Forget what is known (the model just failed or answered) and probe again."""
        with self._lock:
            self._known.clear()
        if agent is not None and self._enabled:
            self.status(agent, agent.llm.configured_status())

    def probe_now(self, agent: Agent | None) -> None:
        """Ask the model server now, on this thread (`LLM_PROBE_TIMEOUT` at most), so the
        next `status` says what it answered: Retry, or the model's settings changed."""
        if agent is None or not self._enabled:
            return
        with self._lock:
            self._known.clear()
        self._probe(agent, _key(agent.llm))

    def _probe(self, agent: Agent, key: _Key) -> None:
        llm = agent.llm
        try:
            status = llm.status(timeout=LLM_PROBE_TIMEOUT)
        except Exception as err:  # the model's status() answers its own errors; not this
            log.exception("probing the model at %s failed", llm.host)
            status = llm.configured_status().model_copy(
                update={"reachable": False, "message": f"{llm.label} at {llm.host}: {err}"}
            )
        finally:
            with self._lock:
                self._probing = False
        with self._lock:
            before = self._known.get(key)
            self._known[key] = (status, time.monotonic())
        if before is None or _shown(before[0]) != _shown(status):
            log.info(
                "%s at %s is %s%s",
                llm.label,
                llm.host,
                "reachable" if status.reachable else "not reachable",
                f": {status.message}" if status.message else "",
            )
            self._on_change()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
