"""A sync's progress on stderr, as a terminal user or a log reader wants it.

On a terminal: one bar, redrawn in place, with the phase's label (`Keyword search ready ·
embedding 1,204/3,036 passages`, the editor's words), the recent rate and the time left;
cleared when the sync ends (the command then prints its summary). Anywhere else (a CI log, a pipe, a
file) a bar would be one endless line of carriage returns, and silence would look like
a hang: a plain line every `KB_PROGRESS_SECONDS` seconds (default 5) instead,
`kb: Keyword search ready · embedding 1,204/3,036 passages · 45.0 passages/s · about 1
min left`, also while one step takes minutes. The lines come from `runtime/progress.py`, as
the server's log has them.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from kb_lsp.runtime.progress import (
    Progress,
    ProgressLines,
    RecentRate,
    progress_text,
    rate_line,
    time_left,
)
from kb_lsp.terminal.text import visible

ENV = "KB_PROGRESS_SECONDS"
DEFAULT_SECONDS = 5.0
BAR_EVERY = 0.1  # seconds between two redraws of the bar
BAR_WIDTH = 30


def line_seconds(environ: Mapping[str, str] | None = None) -> tuple[float, str | None]:
    """Seconds between two progress lines, from `KB_PROGRESS_SECONDS`, and the problem
    with the variable when it is not a number of seconds (the default is used then)."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return DEFAULT_SECONDS, None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        problem = f"{ENV}={raw!r} is not a number of seconds: using {DEFAULT_SECONDS:g}"
        return DEFAULT_SECONDS, problem
    return value, None


@dataclass(frozen=True)
class WireProgress:
    """A wire `IndexProgress` payload (a status from the socket or the store) as the
    progress words take it, without loading pydantic (`kb status` does not)."""

    phase: str
    files_done: int
    files_total: int
    chunks_done: int = 0
    chunks_total: int = 0
    chunks_reused: int = 0

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> WireProgress:
        return cls(
            phase=str(wire["phase"]),
            files_done=int(wire["filesDone"]),
            files_total=int(wire["filesTotal"]),
            chunks_done=int(wire.get("chunksDone") or 0),
            chunks_total=int(wire.get("chunksTotal") or 0),
            chunks_reused=int(wire.get("chunksReused") or 0),
        )


def took(seconds: float) -> str:
    """How long a step took, as a person reads it: `43 ms` below a second (a no-op sync
    takes tens of milliseconds, which a tenth of a second would show as `0.0s`), else
    `12.3s`."""
    if seconds < 1.0:
        return f"{max(1, round(seconds * 1000))} ms"
    return f"{seconds:.1f}s"


def wire_progress_text(wire: Mapping[str, Any]) -> str:
    """The label of a wire `IndexProgress`, with the server's estimate when it sent one:
    `Keyword search ready · embedding 1,204/3,036 passages · about 12 min left`."""
    text = progress_text(WireProgress.of(wire))
    left = wire.get("secondsLeft")
    if isinstance(left, int | float) and left >= 0 and wire.get("phase") != "scanning":
        text += f" · {time_left(float(left))}"
    return text


class TerminalProgress:
    """A front end's progress handle (`runtime.ProgressHandle`) for one sync: `report`
    from the indexing thread, `end` once it is over."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool,
        every: float = DEFAULT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        timer: bool = True,
    ) -> None:
        """`tty`: draw the bar (else lines every `every` seconds); `timer`: a thread
        keeps the lines coming while a step takes long (tests tick by hand)."""
        self._stream = stream
        self._tty = tty
        self._clock = clock
        self._lock = threading.Lock()
        self._drawn = 0.0
        self._shown = False
        self._rate = RecentRate()
        self._phase: str | None = None
        self._lines = ProgressLines(self._line, clock, every=every)
        self._every = every
        self._timer = timer and not tty and every > 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def report(self, progress: Progress) -> None:
        if self._tty:
            self._draw(progress)
            return
        self._lines.update(progress)
        if self._timer and self._thread is None:
            self._thread = threading.Thread(target=self._tick, name="kb-progress", daemon=True)
            self._thread.start()

    def tick(self) -> None:
        """The clock moved without a step: a line when one is due."""
        self._lines.tick()

    def end(self, message: str) -> None:
        self._stop.set()
        with self._lock:
            if self._tty and self._shown:
                self._write("\r\x1b[2K")
                self._shown = False

    def _tick(self) -> None:
        while not self._stop.wait(self._every):
            self.tick()

    def _line(self, text: str) -> None:
        with self._lock:
            self._write(f"kb: {visible(text)}\n")

    def _draw(self, progress: Progress) -> None:
        now = self._clock()
        count = progress.chunks_done if progress.phase == "vectors" else progress.files_done
        if progress.phase != self._phase:
            self._phase = progress.phase
            self._rate.start(now, count)
        else:
            self._rate.add(now, count)
        total = progress.files_total
        finished = total > 0 and progress.files_done >= total
        if now - self._drawn < BAR_EVERY and not finished:
            return
        self._drawn = now
        chunks = progress.chunks_total
        if chunks:  # chunks move inside big files: they fill the bar once they are counted
            share = progress.chunks_done / chunks
        else:
            share = progress.files_done / total if total else 0.0
        filled = int(BAR_WIDTH * min(1.0, share))
        done, seconds = self._rate.over(now, count)
        text = rate_line(progress, done, seconds) if seconds > 0 else progress_text(progress)
        line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {visible(text)}"
        columns = shutil.get_terminal_size((80, 24)).columns
        with self._lock:
            # Cut to the width: a wrapped line could not be redrawn in place.
            self._write("\r\x1b[2K" + line[: max(10, columns - 1)])
            self._shown = True

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth failing for
            pass
