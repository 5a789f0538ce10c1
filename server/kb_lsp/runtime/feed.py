"""Status changes, to whoever subscribed (the language server's `kb/indexChanged`, an MCP
session), at most a few times a second and only when the status actually changed.

Anyone may call `changed()` from any thread (the worker after each job and during a
sync, the LLM probe, the takeover watch); one thread computes the status and calls the
subscribers, so a burst of changes costs one status.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kb_lsp.protocol import IndexStatus, dump

log = logging.getLogger(__name__)

Subscriber = Callable[[IndexStatus], None]


class StatusFeed:
    def __init__(self, compute: Callable[[], IndexStatus], *, interval: float) -> None:
        self._compute = compute
        self._interval = interval
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._poked = threading.Event()
        self._stop = threading.Event()
        self._last: dict[str, object] | None = None
        self._thread = threading.Thread(target=self._run, name="kb-status-feed", daemon=True)
        self._started = False

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber(status)` on every change from now on; returns the unsubscribe."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._thread.start()

    def changed(self) -> None:
        self._poked.set()

    def stop(self) -> None:
        self._stop.set()
        self._poked.set()

    def _run(self) -> None:
        while True:
            self._poked.wait()
            if self._stop.is_set():
                return
            self._poked.clear()
            with self._lock:
                subscribers = list(self._subscribers)
            if subscribers:
                self._send(subscribers)
            # At most one status per interval: changes meanwhile are sent after it.
            if self._stop.wait(self._interval):
                return

    def _send(self, subscribers: list[Subscriber]) -> None:
        try:
            status = self._compute()
        except Exception:  # closing meanwhile: the next change sends it
            log.debug("status not available", exc_info=True)
            return
        payload = dump(status)
        if payload == self._last:
            return
        self._last = payload
        for subscriber in subscribers:
            try:
                subscriber(status)
            except Exception:
                log.exception("a status subscriber failed")
