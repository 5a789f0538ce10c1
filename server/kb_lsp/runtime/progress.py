"""One sync's progress as every front end shows it, and its log lines.

The words are the extension's (`format.progressDetail`), so the status bar, the window
progress, the panel, the terminal and the log agree:
`38/155 files · 1,204/3,036 chunks · embedding`. The total of files is fixed when the
sync has scanned (`sync_tally.py`); before that it reads `scanning files…`.

`SyncMonitor` watches one sync's steps with a clock it is given (tests give it theirs):
it says when the status should be re-sent (at most every `CHANGED_EVERY` seconds) and
logs a line every `LOG_EVERY` seconds — time-based, not per file, however big or small
the files — with the rate of the phase and the time it has left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kb_lsp.protocol import IndexProgress
from kb_lsp.records import SyncProgress

log = logging.getLogger(__name__)

CHANGED_EVERY = 1.0  # seconds: the status is re-sent at most this often during a sync
LOG_EVERY = 5.0  # seconds between two "indexing: …" lines during a sync

SCANNING = "scanning files…"
PHASE_WORDS = {"scanning": "scanning", "keyword": "reading", "vectors": "embedding"}


def progress_text(progress: IndexProgress) -> str:
    """`38/155 files · 1,204/3,036 chunks · embedding`, `120/155 files · reading`, or
    `scanning files…` while the sync does not know its total yet."""
    if progress.phase == "scanning" or progress.files_total == 0:
        return SCANNING
    parts = [f"{progress.files_done:,}/{progress.files_total:,} files"]
    if progress.chunks_total:
        parts.append(f"{progress.chunks_done:,}/{progress.chunks_total:,} chunks")
    parts.append(PHASE_WORDS[progress.phase])
    return " · ".join(parts)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def rate_line(progress: IndexProgress, done: int, seconds: float) -> str:
    """The progress, the phase's rate and the time it has left: `done` of its unit
    (chunks once the embedding counts them, else files) were done in `seconds`.
    `… · embedding · 45.0 chunks/s · about 40 s left`."""
    text = progress_text(progress)
    if progress.phase == "scanning":
        return text
    if progress.chunks_total:
        unit, left = "chunks", progress.chunks_total - progress.chunks_done
    else:
        unit, left = "files", progress.files_total - progress.files_done
    rate = done / seconds if seconds > 0 else 0.0
    parts = [text, f"{rate:.1f} {unit}/s"]
    if rate > 0 and left > 0:
        # Reading comes before embedding: its time left is only the reading's.
        then = " of reading" if progress.phase == "keyword" else ""
        parts.append(f"about {_duration(left / rate)} left{then}")
    return " · ".join(parts)


class SyncMonitor:
    """Watches one sync's steps (on the worker thread) and the clock (`tick`, from a
    timer thread): a step can take minutes on a loaded machine — one batch of vectors —
    and the log still gets its line every `LOG_EVERY` seconds meanwhile."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_changed = self._last_logged = clock()
        self._phase: str | None = None
        self._phase_started = 0.0
        self._phase_base = 0  # the phase's count when it began (reading starts part done)
        self._latest: SyncProgress | None = None
        self.total: int | None = None  # files in the sync, once it has scanned

    def step(self, step: SyncProgress) -> bool:
        """Take a step: log when a line is due; True when the status should be re-sent."""
        with self._lock:
            now = self._clock()
            count = self._count(step)
            if step.phase != self._phase:
                self._phase, self._phase_started, self._phase_base = step.phase, now, count
            self._latest = step
            if self.total is None and step.phase != "scanning":
                self.total = step.total
                log.info("indexer: %s files in this sync", f"{step.total:,}")
            self._log_if_due(now)
            if now - self._last_changed >= CHANGED_EVERY:
                self._last_changed = now
                return True
            return False

    def tick(self) -> None:
        """The clock moved without a step: log the latest step when a line is due."""
        with self._lock:
            self._log_if_due(self._clock())

    @staticmethod
    def _count(step: SyncProgress) -> int:
        return step.chunks_done if step.phase == "vectors" else step.done

    def _log_if_due(self, now: float) -> None:
        step = self._latest
        if step is None or step.phase == "scanning" or now - self._last_logged < LOG_EVERY:
            return
        if now <= self._phase_started:
            return  # the phase starts now: no rate yet (its first step comes with one)
        self._last_logged = now
        done = self._count(step) - self._phase_base
        log.info("indexer: %s", rate_line(step.as_wire(), done, now - self._phase_started))
