"""Two processes on one workspace's index: what the writer tells the others, and how a
read-only one takes over when the writer goes away.

* The writer publishes its state in each store folder (`writer-state.json`: indexing
  or ready, its phase, files and chunks done of the totals, its pid), when a sync
  starts, as it moves and when it ends. A read-only process reads it for its status:
  during another process's cold index it says "being built by another process", with
  that process's progress, instead of "ready" with nothing in it.
* A read-only process watches the writer lock of its stores (`TakeoverWatch`): it tries
  to take each one in turn, a second at a time; once one is free it lets go at once and
  asks the runtime to reopen, which makes it the writer (or read-only again, when a
  third process was quicker). Each turn also pokes the status, so the other process's
  progress shows.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from kb_lsp.engine.storage import WRITER_LOCK, WRITER_STATE
from kb_lsp.protocol import IndexPhase

if TYPE_CHECKING:  # a light import: `kb status` reads the state without the engine
    from kb_lsp.engine.knowledge import SyncProgress

log = logging.getLogger(__name__)

STATE_FILE = WRITER_STATE
TRY_LOCK_SECONDS = 1.0  # how long each try waits for a lock (filelock polls meanwhile)


@dataclass(frozen=True)
class WriterState:
    state: str  # "indexing" | "ready"
    files_done: int = 0
    files_total: int = 0
    pid: int = 0
    phase: IndexPhase = "scanning"
    chunks_done: int = 0  # while embedding
    chunks_total: int = 0
    seconds_left: float | None = None  # the writer's estimate for its phase (no rate: None)


def publish(folders: Iterable[Path], state: WriterState) -> None:
    payload = json.dumps(
        {
            "state": state.state,
            "filesDone": state.files_done,
            "filesTotal": state.files_total,
            "pid": state.pid or os.getpid(),
            "phase": state.phase,
            "chunksDone": state.chunks_done,
            "chunksTotal": state.chunks_total,
            "secondsLeft": state.seconds_left,
            "updated": time.time(),
        }
    )
    for folder in folders:
        path = folder / STATE_FILE
        temp = path.with_name(f".{STATE_FILE}.{os.getpid()}")
        try:
            temp.write_text(payload, encoding="utf-8")
            temp.replace(path)
        except OSError as err:
            log.debug("cannot publish the writer state in %s: %s", folder, err)


def read_state(folder: Path) -> WriterState | None:
    try:
        raw = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        phase = raw.get("phase")
        left = raw.get("secondsLeft")
        return WriterState(
            state=str(raw["state"]),
            files_done=int(raw.get("filesDone", 0)),
            files_total=int(raw.get("filesTotal", 0)),
            pid=int(raw.get("pid", 0)),
            phase=phase if phase in ("scanning", "keyword", "vectors", "metadata") else "scanning",
            chunks_done=int(raw.get("chunksDone", 0)),
            chunks_total=int(raw.get("chunksTotal", 0)),
            seconds_left=max(0.0, float(left)) if isinstance(left, int | float) else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def sync_state(step: SyncProgress | None, seconds_left: float | None = None) -> WriterState:
    """What the writer publishes while its sync is at `step` (None: the sync ended), with
    its estimate of the phase's time left."""
    if step is None:
        return WriterState("ready")
    return WriterState(
        "indexing",
        step.done,
        step.total,
        phase=step.phase,
        chunks_done=step.chunks_done,
        chunks_total=step.chunks_total,
        seconds_left=seconds_left,
    )


def indexing_elsewhere(folders: Iterable[Path]) -> WriterState | None:
    """The writer's state when another process is indexing these stores now."""
    for folder in folders:
        state = read_state(folder)
        if state is not None and state.state == "indexing":
            return state
    return None


class TakeoverWatch:
    """Calls `free()` once when a writer lock of `folders` can be taken; `tick()` after
    every unsuccessful turn. Stops with `stop()` (or after `free`)."""

    def __init__(
        self, folders: list[Path], *, free: Callable[[], None], tick: Callable[[], None]
    ) -> None:
        self._locks = [FileLock(str(folder / WRITER_LOCK)) for folder in folders]
        self._free = free
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kb-takeover", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(TRY_LOCK_SECONDS * 2 + 1)

    def _run(self) -> None:
        while not self._stop.is_set():
            for lock in self._locks:
                if self._stop.is_set():
                    return
                try:
                    lock.acquire(timeout=TRY_LOCK_SECONDS)
                except Timeout:
                    continue
                except OSError as err:  # the folder went away: nothing to take over
                    log.debug("takeover: %s", err)
                    self._stop.wait(TRY_LOCK_SECONDS)
                    continue
                lock.release()
                if not self._stop.is_set():
                    log.info("takeover: the writer of %s went away", Path(lock.lock_file).parent)
                    self._free()
                return
            self._tick()
