"""One sync's progress as every front end shows it, and its log lines.

The words are the extension's one label per phase (`format.indexLabel`), so the status
bar, the window progress, the panel, the terminal and the log agree: `Scanning files…`,
`Reading 38/155 files`, then `Keyword search ready · embedding 1,204/3,036 passages`. Each
phase counts its own unit from 0, so a new phase never reads as a counter that went back.
The total of files is fixed when the sync has scanned (`sync_tally.py`).

`ProgressLines` turns one sync's progress into a line every `LOG_EVERY` seconds — time-based,
not per file, however big or small the files — with the rate of the phase over its last
`RATE_WINDOW` seconds and the time it has left at that rate: a sync that slows down (a
loaded machine, the big files last) says so within half a minute, where an average
since the start would keep promising the early pace. The log (`SyncMonitor`) and the
command line when its stderr is not a terminal (`terminal/progress.py`) print the same
lines. `SyncMonitor` also says when the status should be re-sent (at most every
`CHANGED_EVERY` seconds). Both take a clock (tests give them theirs).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # light at run time: the command line formats a wire status with it
    from kb_lsp.engine.index.reports import SyncProgress

log = logging.getLogger(__name__)

CHANGED_EVERY = 1.0  # seconds: the status is re-sent at most this often during a sync
LOG_EVERY = 5.0  # seconds between two "indexing: …" lines during a sync
RATE_WINDOW = 30.0  # seconds of recent progress the rate and the time left are taken from

SCANNING = "Scanning files…"


class Progress(Protocol):
    """A sync's progress: the wire's `IndexProgress`, or the command line's copy of a
    wire payload (`terminal/progress.py`)."""

    @property
    def phase(self) -> str: ...
    @property
    def files_done(self) -> int: ...
    @property
    def files_total(self) -> int: ...
    @property
    def chunks_done(self) -> int: ...
    @property
    def chunks_total(self) -> int: ...
    @property
    def chunks_reused(self) -> int: ...


def progress_text(progress: Progress) -> str:
    """The phase's one label: `Reading 120/155 files`, `Keyword search ready · embedding
    1,204/3,036 passages`, or `Scanning files…` while the sync does not know its total."""
    if progress.phase == "scanning" or progress.files_total == 0:
        return SCANNING
    if progress.phase == "metadata":
        # The extension's label for the third phase (`indexLabel`).
        return f"Search ready · metadata {progress.files_done:,}/{progress.files_total:,} notes"
    if progress.phase == "keyword":
        return f"Reading {progress.files_done:,}/{progress.files_total:,} files"
    if progress.chunks_total:
        counted = f"{progress.chunks_done:,}/{progress.chunks_total:,} passages"
        if progress.chunks_reused:  # `--full`: the cache's, not the model's
            counted += f" ({progress.chunks_reused:,} reused)"
    else:
        counted = f"{progress.files_done:,}/{progress.files_total:,} files"
    return f"Keyword search ready · embedding {counted}"


def time_left(seconds: float) -> str:
    """How long is left, as a person says it (the extension's `format.timeLeft`)."""
    if seconds < 45:
        return "less than a minute left"
    if seconds < 90 * 60:
        return f"about {max(1, round(seconds / 60))} min left"
    return f"about {seconds / 3600:.1f} h left"


def rate_line(progress: Progress, done: float, seconds: float) -> str:
    """The label, the phase's rate and the time it has left: `done` of its unit
    (passages once the embedding counts them, else files) were done in `seconds`.
    `… · embedding 1,204/3,036 passages · 45.0 passages/s · about 1 min left`."""
    text = progress_text(progress)
    if progress.phase == "scanning":
        return text
    if progress.chunks_total:
        unit, left = "passages", progress.chunks_total - progress.chunks_done
    else:
        unit, left = "files", progress.files_total - progress.files_done
    if done <= 0 or seconds <= 0:
        # Nothing done yet in the window (the first batch of vectors can take a minute):
        # a rate of 0 would read as a stall, and there is no time left to give.
        return text
    rate = done / seconds
    parts = [text, f"{rate:.1f} {unit}/s"]
    if rate > 0 and left > 0:
        parts.append(time_left(left / rate))
    return " · ".join(parts)


class RecentRate:
    """The rate of one count over the last `window` seconds: from its value at the
    window's start (interpolated between the steps around it) to now. A step that takes
    minutes still gives a rate (the work it finished is spread over its time), and an
    early pace is forgotten once it is `window` seconds old."""

    def __init__(self, window: float = RATE_WINDOW) -> None:
        self._window = window
        self._samples: deque[tuple[float, int]] = deque()

    def start(self, now: float, count: int) -> None:
        """A new phase: its count starts here."""
        self._samples = deque([(now, count)])

    def add(self, now: float, count: int) -> None:
        self._samples.append((now, count))
        # Keep the last sample at or before the window's start: the rate starts there.
        while len(self._samples) >= 2 and self._samples[1][0] <= now - self._window:
            self._samples.popleft()

    def over(self, now: float, count: int) -> tuple[float, float]:
        """(what was done, in how many seconds) over the window, up to `count` now; the
        whole phase while it is younger than the window."""
        if not self._samples:
            return 0.0, 0.0
        begin = now - self._window
        first_time, first_count = self._samples[0]
        if first_time >= begin:
            return float(count - first_count), now - first_time
        at_begin = float(first_count)
        for time_, count_ in self._samples:
            if time_ > begin:  # the step that crossed the window's start
                share = (begin - first_time) / (time_ - first_time)
                at_begin = first_count + (count_ - first_count) * share
                break
            first_time, first_count = time_, count_
            at_begin = float(count_)
        return count - at_begin, self._window


class ProgressLines:
    """One sync's progress (`IndexProgress`, from any thread) as a line every `every`
    seconds, handed to `emit`: `update` with each step, `tick` from a timer while a step
    takes long. Nothing while scanning (no total yet), nor in the instant a phase starts
    (no rate yet)."""

    def __init__(
        self,
        emit: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        *,
        every: float = LOG_EVERY,
        window: float = RATE_WINDOW,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._every = every
        self._lock = threading.Lock()
        self._last_line = clock()
        self._phase: str | None = None
        self._phase_started = 0.0
        self._rate = RecentRate(window)
        self._latest: Progress | None = None

    def update(self, progress: Progress) -> None:
        with self._lock:
            now = self._clock()
            count = _count(progress)
            if progress.phase != self._phase:
                self._phase, self._phase_started = progress.phase, now
                self._rate.start(now, count)
            else:
                self._rate.add(now, count)
            self._latest = progress
            self._line_if_due(now)

    def tick(self) -> None:
        """The clock moved without a step: a line when one is due."""
        with self._lock:
            self._line_if_due(self._clock())

    def seconds_left(self) -> float | None:
        """The time the phase has left at its recent rate (`RATE_WINDOW`), now; None
        while there is no rate (scanning, the instant a phase starts, nothing done yet)."""
        with self._lock:
            latest = self._latest
            if latest is None or latest.phase == "scanning" or not latest.files_total:
                return None
            now = self._clock()
            done, seconds = self._rate.over(now, _count(latest))
            if done <= 0 or seconds <= 0:
                return None
            return max(0.0, _left(latest) * seconds / done)

    def _line_if_due(self, now: float) -> None:
        latest = self._latest
        if latest is None or latest.phase == "scanning" or not latest.files_total:
            return  # no total yet, or nothing to do
        if now - self._last_line < self._every:
            return
        if now <= self._phase_started:
            return  # the phase starts now: no rate yet (its first step comes with one)
        self._last_line = now
        done, seconds = self._rate.over(now, _count(latest))
        self._emit(rate_line(latest, done, seconds))


def _left(progress: Progress) -> int:
    """What the phase has left, in its unit (`_count`)."""
    if progress.phase == "vectors":
        return max(0, progress.chunks_total - progress.chunks_done)
    return max(0, progress.files_total - progress.files_done)


def _count(progress: Progress) -> int:
    """The phase's unit: chunks while embedding (they move inside a big file), else files."""
    return progress.chunks_done if progress.phase == "vectors" else progress.files_done


class SyncMonitor:
    """Watches one sync's steps (on the worker thread) and the clock (`tick`, from a
    timer thread): a step can take minutes on a loaded machine — one batch of vectors —
    and the log still gets its line every `LOG_EVERY` seconds meanwhile."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_changed = clock()
        self._phase = "scanning"  # where every sync starts (the worker says so itself)
        self._lines = ProgressLines(lambda line: log.info("indexer: %s", line), clock)
        self.total: int | None = None  # files in the sync, once it has scanned

    def step(self, step: SyncProgress) -> bool:
        """Take a step: log when a line is due; True when the status should be re-sent:
        at a new phase (the totals are known: say them at once), else at most every
        `CHANGED_EVERY` seconds."""
        with self._lock:
            now = self._clock()
            if self.total is None and step.phase != "scanning":
                self.total = step.total
                log.info("indexer: %s files in this sync", f"{step.total:,}")
            self._lines.update(step.as_wire())
            new_phase = step.phase != self._phase
            self._phase = step.phase
            if new_phase or now - self._last_changed >= CHANGED_EVERY:
                self._last_changed = now
                return True
            return False

    def tick(self) -> None:
        """The clock moved without a step: log the latest step when a line is due."""
        self._lines.tick()

    def seconds_left(self) -> float | None:
        """The sync's estimate of its phase's time left (`IndexProgress.secondsLeft`)."""
        return self._lines.seconds_left()
