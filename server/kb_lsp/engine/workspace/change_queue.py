"""Changed paths gathered into batches: debounced (a quiet period), coalesced (each path
once), capped in delay, a burst turned into one rescan, and a periodic reconcile; each
batch handed to a callback from a thread of its own (`watcher.py` feeds it)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("kb_lsp.engine.workspace.watcher")


@dataclass(frozen=True)
class Batch:
    """What changed since the last batch."""

    paths: tuple[Path, ...]  # absolute files or folders, existing or not, sorted
    rescan: bool = False  # True: sync every root (burst, reconcile, or asked for)
    reason: str = "changes"  # "changes" | "burst" | "reconcile" | "requested"


class ChangeQueue:
    def __init__(
        self,
        on_batch: Callable[[Batch], None],
        *,
        debounce: float,
        max_delay: float | None,
        burst_threshold: int,
        reconcile_seconds: float | None,
    ) -> None:
        self._on_batch = on_batch
        self._debounce = max(0.0, debounce)
        self._max_delay = max_delay if max_delay is not None else max(2.0, 10 * self._debounce)
        self._burst_threshold = burst_threshold
        self._reconcile_seconds = reconcile_seconds
        self._lock = threading.Condition()
        self._pending: set[Path] = set()
        self._rescan_reason: str | None = None
        self._first_at = 0.0
        self._last_at = 0.0
        self._next_reconcile = float("inf")
        self._flush_now = False
        self._stopped = False
        self._flusher = threading.Thread(target=self._run, name="kb-watcher-flush", daemon=True)

    def start(self) -> None:
        with self._lock:
            if self._reconcile_seconds:
                self._next_reconcile = time.monotonic() + self._reconcile_seconds
        self._flusher.start()

    def close(self) -> None:
        """No more batches (what is pending is dropped: the next start reconciles)."""
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def join(self) -> None:
        if self._flusher.is_alive():
            self._flusher.join(timeout=5)

    def pending(self) -> frozenset[Path]:
        with self._lock:
            return frozenset(self._pending)

    def flush(self) -> None:
        with self._lock:
            self._flush_now = True
            self._lock.notify_all()

    def drop(self, unwanted: Callable[[Path], bool]) -> None:
        """Forget pending paths that are `unwanted` (a root no longer watched)."""
        with self._lock:
            self._pending = {p for p in self._pending if not unwanted(p)}

    def add(self, paths: Iterable[Path]) -> None:
        with self._lock:
            before = len(self._pending)
            self._pending.update(paths)
            if len(self._pending) != before:
                self._touch()

    def _touch(self) -> None:
        now = time.monotonic()
        if not self._first_at:
            self._first_at = now
        self._last_at = now
        self._lock.notify_all()

    # --- flushing --------------------------------------------------------------------------

    def _due(self, now: float) -> float | None:
        """Seconds until the pending batch is due (0: now), or None when nothing is pending."""
        if not self._pending and self._rescan_reason is None:
            return None
        if self._flush_now:
            return 0.0
        quiet = self._last_at + self._debounce - now
        latest = self._first_at + self._max_delay - now
        return max(0.0, min(quiet, latest))

    def _take(self) -> Batch:
        paths = tuple(sorted(self._pending))
        reason = self._rescan_reason
        self._pending = set()
        self._rescan_reason = None
        self._first_at = self._last_at = 0.0
        self._flush_now = False
        if reason is None and len(paths) > self._burst_threshold:
            reason = "burst"
        return Batch(paths=paths, rescan=reason is not None, reason=reason or "changes")

    def _run(self) -> None:
        while True:
            with self._lock:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    if now >= self._next_reconcile:
                        self._next_reconcile = now + (self._reconcile_seconds or float("inf"))
                        self._rescan_reason = self._rescan_reason or "reconcile"
                        self._first_at = self._first_at or now
                        self._last_at = self._last_at or now
                        batch = self._take()
                        break
                    due = self._due(now)
                    if due == 0.0:
                        batch = self._take()
                        break
                    wait = self._next_reconcile - now
                    if due is not None:
                        wait = min(wait, due)
                    self._lock.wait(timeout=None if wait == float("inf") else wait)
            try:
                self._on_batch(batch)
            except Exception:
                log.exception("watcher: the batch callback failed")
