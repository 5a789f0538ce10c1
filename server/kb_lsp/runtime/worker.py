"""The one indexing worker: a thread that owns every write to the knowledge base.

Work arrives from the watcher and the editor (paths that changed, coalesced while a sync
runs), from `reindex`, and from the runtime itself (the first sync, new workspace
folders, new settings, taking over from another process). The worker runs it one piece
at a time on its own thread, so nobody who reads ever waits for it: searches read what
is committed.

Explicit jobs run first, in order; then a rescan when one was asked for (a burst, the
periodic reconcile); then the paths gathered meanwhile, as one `sync(paths)`.

Progress has one source: the knowledge base's `SyncProgress` (files done of a total fixed
once the sync has scanned, `sync_tally.py`; in the embedding phase chunks too). The
knowledge base keeps the latest for the status; here it feeds the front end's progress
bar, the status re-sent every second, and a log line every few seconds with the rate and
the time left (`progress.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from kb_lsp.engine.knowledge import KnowledgeBase, ReadOnlyStore, SyncProgress, SyncReport
from kb_lsp.errors import Unavailable
from kb_lsp.protocol import IndexProgress
from kb_lsp.runtime.progress import CHANGED_EVERY, SyncMonitor

log = logging.getLogger(__name__)

# A sync without a progress bar of its own gets one once it has this many files to do.
LARGE_SYNC = 50

ShowProgress = Literal["always", "large", "never"]


class ProgressHandle(Protocol):
    """A front end's progress display for one sync (a work-done bar, a terminal bar)."""

    def report(self, progress: IndexProgress) -> None: ...
    def end(self, message: str) -> None: ...


# (title, cancel event the front end sets when its user cancels) -> a handle, or None
ProgressFactory = Callable[[str, threading.Event], ProgressHandle | None]


@dataclass
class Job:
    """A sync (`fn` None) or any other write to run on the worker thread (`fn`)."""

    title: str = "Indexing the knowledge base"
    paths: frozenset[Path] | None = None  # None: every root
    full: bool = False
    progress: ShowProgress = "never"
    extract: bool = True  # the model's metadata phase (`engine/index/extraction.py`)
    fn: Callable[[], Any] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future[Any] = field(default_factory=Future)


class IndexingWorker:
    def __init__(
        self,
        knowledge: Callable[[], KnowledgeBase | None],
        *,
        start_progress: ProgressFactory,
        changed: Callable[[], None],
        set_error: Callable[[str | None], None],
        after_job: Callable[[], None] = lambda: None,
        publish: Callable[[SyncProgress | None], None] = lambda step: None,
        first: Callable[[], frozenset[Path]] = frozenset,
    ) -> None:
        """`publish(step)`: a sync is running and got this far (None: it ended), for
        other processes on the same store; `first()`: the files a sync embeds first (open
        in the editor)."""
        self._knowledge = knowledge
        self._first = first
        self._start_progress = start_progress
        self._changed = changed
        self._set_error = set_error
        self._after_job = after_job
        self._publish = publish

        self._cond = threading.Condition()
        self._jobs: deque[Job] = deque()
        self._paths: set[Path] = set()
        self._rescan: str | None = None
        self._current: Job | None = None
        self._progress: SyncProgress | None = None
        self._monitor: SyncMonitor | None = None  # the running sync's, for its estimate
        self._started = False
        self._stopped = False
        self._paused = False
        self._interrupted = False  # `pause` stopped a sync: `resume` finishes it
        # Set when work is queued: the running sync's metadata phase gives way to it.
        self._waiting = threading.Event()
        # A sync of everything was cancelled: the index may lack files until the next one.
        self.incomplete = False
        self._thread = threading.Thread(target=self._run, name="kb-indexer", daemon=True)

    # --- control ----------------------------------------------------------------------

    def start(self) -> None:
        with self._cond:
            if self._started:
                return
            self._started = True
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel the running sync, drop queued work and wait for the thread."""
        with self._cond:
            self._stopped = True
            if self._current is not None:
                self._current.cancel.set()
            for job in self._jobs:
                job.future.cancel()
            self._jobs.clear()
            self._cond.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # --- input ------------------------------------------------------------------------

    def submit(self, job: Job) -> Future[Any]:
        with self._cond:
            if self._stopped:
                job.future.cancel()
                return job.future
            self._jobs.append(job)
            self._waiting.set()
            self._cond.notify_all()
        self._changed()
        return job.future

    def submit_paths(self, paths: Iterable[Path]) -> None:
        with self._cond:
            if self._stopped:
                return
            self._paths.update(paths)
            self._waiting.set()
            self._cond.notify_all()
        self._changed()

    def submit_rescan(self, reason: str) -> None:
        with self._cond:
            if self._stopped:
                return
            self._rescan = self._rescan or reason
            self._waiting.set()
            self._cond.notify_all()

    # --- the user's control (kb/indexControl) ---------------------------------------------

    def pause(self) -> None:
        """Stop the running sync at its next step and hold every sync until `resume`;
        changes keep queueing meanwhile."""
        with self._cond:
            self._paused = True
            current = self._current
            if current is not None and current.fn is None:
                current.cancel.set()
                self._interrupted = True
            self._cond.notify_all()
        self._changed()

    def resume(self) -> None:
        """Run what waited, and finish the sync `pause` interrupted (a rescan: it only
        does what is left)."""
        with self._cond:
            self._paused = False
            if self._interrupted:
                self._interrupted = False
                self._rescan = self._rescan or "resumed"
            self._cond.notify_all()
        self._changed()

    def cancel_syncs(self) -> None:
        """Stop the running sync and drop the queued ones and the queued changes (the
        status says the index may be incomplete until the next sync)."""
        with self._cond:
            current = self._current
            if current is not None and current.fn is None:
                current.cancel.set()
            kept: deque[Job] = deque()
            for job in self._jobs:
                if job.fn is None:
                    job.future.cancel()
                else:
                    kept.append(job)
            self._jobs = kept
            self._paths.clear()
            self._rescan = None
            self._interrupted = False
            self.incomplete = True
            self._cond.notify_all()
        self._changed()

    @property
    def paused(self) -> bool:
        with self._cond:
            return self._paused

    # --- state ------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        with self._cond:
            waiting = self._jobs or self._paths or self._rescan or self._interrupted
            return self._current is not None or bool(waiting)

    @property
    def pending(self) -> int:
        """Files known to be waiting: the rest of the running sync plus queued paths."""
        with self._cond:
            step = self._progress if self._current is not None else None
            if step is not None and step.phase == "metadata":
                step = None  # notes the model reads: every file is indexed already
            running = max(0, step.total - step.done) if step is not None else 0
            return running + len(self._paths)

    @property
    def seconds_left(self) -> float | None:
        """The running sync's estimate of its phase's time left (None: no rate yet)."""
        with self._cond:
            running = self._current is not None
        monitor = self._monitor
        return monitor.seconds_left() if running and monitor is not None else None

    # --- the thread ---------------------------------------------------------------------

    def _ready(self) -> bool:
        """(Under the lock.) Is there something to run now? While paused, only jobs that
        are not syncs (reopening, folders) run; syncs and changes wait."""
        if self._paused:
            return bool(self._jobs) and self._jobs[0].fn is not None
        return bool(self._jobs or self._paths or self._rescan)

    def _next(self) -> Job | None:
        with self._cond:
            while not self._stopped and not self._ready():
                self._cond.wait()
            if self._stopped:
                return None
            if self._jobs:
                job = self._jobs.popleft()
                if job.fn is None and job.paths is None:
                    self._paths.clear()  # a sync of everything covers them
            elif self._rescan is not None:
                job = Job(title=f"Indexing ({self._rescan})", progress="large")
                self._rescan = None
                self._paths.clear()
            else:
                job = Job(paths=frozenset(self._paths), title="Indexing changes", progress="large")
                self._paths = set()
            self._current = job
            self._progress = None
            self._waiting.clear()  # what waited is this job, or still queued behind it
            if self._jobs or self._paths or self._rescan:
                self._waiting.set()
            return job

    def _run(self) -> None:
        while (job := self._next()) is not None:
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        result = job.fn() if job.fn is not None else self._sync(job)
                    except BaseException as err:  # handed to whoever waits on the job
                        job.future.set_exception(err)
                    else:
                        job.future.set_result(result)
            finally:
                with self._cond:
                    self._current = None
                    self._progress = None
                try:
                    self._after_job()
                except Exception:
                    log.exception("indexer: after-job check failed")
                self._changed()

    def _ticking(self, monitor: SyncMonitor) -> Callable[[], None]:
        """`_tick` on a thread of its own for one sync; returns what stops it."""
        done = threading.Event()
        ticker = threading.Thread(
            target=self._tick, args=(monitor, done), name="kb-progress-log", daemon=True
        )
        ticker.start()

        def stop() -> None:
            done.set()
            ticker.join()

        return stop

    def _tick(self, monitor: SyncMonitor, done: threading.Event) -> None:
        """The clock of the log and of what other processes read during one sync (a step
        — one batch of vectors — may take minutes under load): the log gets its line when
        one is due (`LOG_EVERY`), and the latest step is published again every
        `CHANGED_EVERY` seconds, with the time left as it stands now."""
        while not done.wait(CHANGED_EVERY):
            monitor.tick()
            with self._cond:
                latest = self._progress if self._current is not None else None
            if latest is not None:
                self._publish(latest)

    def _sync(self, job: Job) -> SyncReport:
        kb = self._knowledge()
        if kb is None:
            raise Unavailable("The knowledge base is not open.")
        if kb.read_only:
            raise ReadOnlyStore("another kb-lsp process holds this workspace's index")

        handle: ProgressHandle | None = None
        if job.progress == "always":
            handle = self._start_progress(job.title, job.cancel)
        started = time.monotonic()
        self._monitor = monitor = SyncMonitor()  # (one reference: read without the lock)
        self._publish(SyncProgress(0, 0, None, phase="scanning"))

        def on_progress(step: SyncProgress) -> None:
            nonlocal handle
            with self._cond:
                self._progress = step
            # Other processes and the status first: a display may take its time.
            if monitor.step(step):  # counts move during a long sync
                self._changed()
                self._publish(step)
            if handle is None and job.progress == "large" and step.total >= LARGE_SYNC:
                handle = self._start_progress(job.title, job.cancel)
            if handle is not None:
                handle.report(step.as_wire())

        stop_ticking = self._ticking(monitor)
        try:
            report = kb.sync(
                sorted(job.paths) if job.paths is not None else None,
                progress=on_progress,
                cancel=job.cancel,
                full=job.full,
                extract=job.extract,
                yield_to=self._waiting,
                first=self._first(),
            )
        except Exception as err:
            self._set_error(f"indexing failed: {err}")
            log.exception("indexer: sync failed")
            if handle is not None:
                handle.end(f"Failed: {err}")
            raise
        finally:
            stop_ticking()  # before the end is published, which it must not overwrite
            self._publish(None)
        self._set_error(None)
        if job.paths is None:
            # (A sync stopped by `pause` is finished by `resume`: not "incomplete".)
            self.incomplete = report.cancelled and not self._interrupted
        summary = _summary(report)
        log.info("indexer: %s in %.2fs (%s)", summary, time.monotonic() - started, job.title)
        for error in [*report.errors[:20], *filter(None, [report.team_error])]:
            log.warning("indexer: %s", error)
        if handle is not None:
            handle.end("Cancelled" if report.cancelled else summary)
        return report


def _summary(report: SyncReport) -> str:
    if report.cancelled:
        return "cancelled"
    parts = []
    for count, what in (
        (report.files_added, "added"),
        (report.files_changed, "changed"),
        (report.files_removed, "removed"),
    ):
        if count:
            parts.append(f"{count} {what}")
    if not parts:
        return f"up to date ({report.files_unchanged} files)"
    return ", ".join(parts) + f"; {report.chunks_embedded} chunks embedded"
