"""`Session`: the life cycle of one workspace's knowledge base in one process.

It opens the knowledge base of the workspace folders on the indexing worker, applies new
settings (reopening only when they need it), follows folders added and removed, watches
the disk, takes the index over when another process stops writing it, tells that process
and the command line how its sync goes, and closes it all. `Runtime` holds one and runs
the operations over what it has open (`kb`, under `gate`).

Threads: the worker (`worker.py`) is the one writer and runs every change of what is
open; the watcher's threads only hand batches to it; the takeover thread only submits a
job; readers hold `gate` while they use `kb`, so a reopen waits for them.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kb_lsp import __version__
from kb_lsp.config import Settings, changed_settings
from kb_lsp.engine.agent.conversations import Conversations
from kb_lsp.engine.knowledge import KnowledgeBase, SyncProgress, default_storage
from kb_lsp.engine.store import store_dir_for
from kb_lsp.runtime import logs
from kb_lsp.runtime.changes import settings_change
from kb_lsp.runtime.disk_watch import DiskWatch
from kb_lsp.runtime.embedders import embedder_from_environment
from kb_lsp.runtime.gate import Gate
from kb_lsp.runtime.kind import Hooks, ProcessKind, Severity
from kb_lsp.runtime.probe import LlmProbe, RunningWork
from kb_lsp.runtime.takeover import (
    TakeoverWatch,
    WriterState,
    indexing_elsewhere,
    publish,
    sync_state,
)
from kb_lsp.runtime.worker import IndexingWorker, Job, ProgressHandle

if TYPE_CHECKING:
    from kb_lsp.engine.agent import Agent

log = logging.getLogger(__name__)


class Session:
    def __init__(
        self,
        kind: ProcessKind,
        hooks: Hooks,
        *,
        tell: Callable[[str, Severity], None],
        changed: Callable[[], None],
    ) -> None:
        """`tell` shows a message once (`Runtime.tell`); `changed` says the status changed."""
        self.kind = kind
        self._hooks = hooks
        self._tell = tell
        self._changed = changed
        self.gate = Gate()
        self.running = RunningWork()
        self.probe = LlmProbe(changed, enabled=kind.probe_llm)
        # Kept here, not by the agent, so that they survive new settings.
        self.conversations = Conversations()
        # A front end that writes the index serves the command line in its stores.
        self._follow_writes: Callable[[list[Path]], None] | None = None
        # The settings in use, and the latest asked for (they differ while a reopen waits).
        self.settings = self._wanted = Settings()
        self.roots: list[Path] = []
        self.kb: KnowledgeBase | None = None
        self.made_agent: Agent | None = None  # made on first use: `agent()`
        self._agent_lock = threading.Lock()
        self._takeover: TakeoverWatch | None = None
        self.error: str | None = None
        self._error_lock = threading.Lock()
        self.missing: set[Path] = set()
        # Done once the first attempt to open has ended (opened or failed).
        self.opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        # Open in the editor (didOpen/didClose): embedded first; replaced whole, never edited.
        self.editor_files: frozenset[Path] = frozenset()
        self.worker = IndexingWorker(
            lambda: self.kb,
            first=lambda: self.editor_files,
            start_progress=self._start_progress,
            changed=changed,
            set_error=self.set_error,
            after_job=self._check_roots,
            publish=self._publish,
        )
        self.disk = DiskWatch(self.worker, enabled=kind.watch)
        self.closed = False
        self._close_lock = threading.Lock()

    def open(
        self, roots: list[Path], settings: Settings, *, index: bool = True
    ) -> concurrent.futures.Future[None]:
        """Open the knowledge base of `roots` (on the worker) and, with `index`, sync it.
        Returns the opening's future: its exception says why opening failed (readers see
        the same in the status and in `Unavailable`)."""
        self.roots = list(dict.fromkeys(roots))
        self.settings = self._wanted = settings
        logs.set_level(settings.log.level)
        self.worker.start()

        def open_it() -> None:
            try:
                self._open_knowledge(settings)
            finally:
                if not self.opened.done():
                    self.opened.set_result(None)

        done = self.worker.submit(Job(fn=open_it, title="Opening the index"))
        if index:
            self.worker.submit(Job(title="Indexing the knowledge base", progress="always"))
        return done

    def apply_settings(self, settings: Settings) -> None:
        """New settings. What can change at once does (search, the model, the agent, the
        log level: `changes.py`); the watcher's settings restart the watcher; settings
        that decide what is indexed or where reopen the knowledge base (on the worker,
        stopping the asks in flight: they end with stop "cancelled") and sync it again.
        The numbered lists and the conversations survive either way."""
        change = settings_change(self._wanted, settings)
        if change.empty:
            return
        # One line per setting with its old and new value: what a user (and the editor's
        # end-to-end test) reads to know that a change reached the server.
        for line in changed_settings(self._wanted, settings):
            log.info("settings changed: %s", line)
        self._wanted = settings
        logs.set_level(settings.log.level)
        if change.reopen:
            names = ", ".join(change.reopen)
            log.info("settings changed (%s): reopening the knowledge base", names)
            self.worker.submit(Job(fn=self._reopen, title="Applying new settings"))
            self.worker.submit(
                Job(title="Indexing with new settings", progress="always", full=change.rechunk)
            )
            return
        if change.live:
            self._use_settings(settings)
            log.info("settings applied at once: %s", ", ".join(change.live))
        if change.watcher:
            self.worker.submit(Job(fn=self._restart_watcher, title="Applying watcher settings"))
            log.info("settings applied to the watcher: %s", ", ".join(change.watcher))

    def _reopen(self) -> None:
        """On the worker: close and open again with the latest settings."""
        # Asks in flight hold the gate for as long as the model talks: stop them rather
        # than hold every search back.
        self.running.cancel_all()
        with self.gate.exclusive():
            self._close_knowledge()
            self._open_knowledge(self._wanted)

    def _use_settings(self, settings: Settings) -> None:
        """Settings that need no reopening take effect now (any thread): the knowledge
        base searches with them, and the agent is made anew with them (a run in flight
        finishes with the one it started with)."""
        self.settings = settings
        kb = self.kb
        if kb is not None:
            kb.use_settings(settings)
            with self._agent_lock:
                self.made_agent = None  # made anew with these settings
            self.probe.refresh(self.agent() if self.probe.enabled else None)
        self._changed()

    def change_roots(self, added: list[Path], removed: list[Path]) -> None:
        """Workspace folders added and removed; new ones are indexed."""

        def apply() -> None:
            if removed:
                # Closing a folder's store under a read in flight would fail that read:
                # wait for the reads (and stop the asks, as a reopen does).
                self.running.cancel_all()
                with self.gate.exclusive():
                    self._remove_roots(removed)
            for root in added:
                if root in self.roots:
                    continue
                self.roots.append(root)
                if self.kb is not None:
                    self.kb.add_root(root)
                self.disk.add_root(root, self.settings)
            self._listen()

        self.worker.submit(Job(fn=apply, title="Updating workspace folders"))
        if added:
            self.worker.submit(
                Job(paths=frozenset(added), title="Indexing new folders", progress="always")
            )

    def _restart_watcher(self) -> None:
        self.disk.restart(self.roots, self.settings)

    def _remove_roots(self, removed: list[Path]) -> None:
        for root in removed:
            if root in self.roots:
                self.roots.remove(root)
            self.missing.discard(root)
            self.disk.remove_root(root)
            if self.kb is not None:
                self.kb.remove_root(root)

    def notify_changed(self, paths: list[Path]) -> None:
        """Paths an editor says changed (saved, or seen by its own file watcher)."""
        self.disk.notify(paths)

    def probe_model(self) -> None:
        """Ask the model server now (Retry, new model settings): the next status says
        what it answered, not what the last check found."""
        if self.probe.enabled:
            with self.gate.read():
                agent = self.agent()
            self.probe.probe_now(agent)

    def agent(self) -> Agent | None:
        """The agent of the open knowledge base, made on first use: a one-shot search never
        asks the model, and the agent's modules take about as long to import."""
        with self._agent_lock:
            kb = self.kb
            if self.made_agent is None and kb is not None:
                from kb_lsp.engine.agent import Agent

                self.made_agent = Agent(kb, self.settings, conversations=self.conversations)
            return self.made_agent

    def set_error(self, message: str | None) -> None:
        """The error the status shows (None: none): why opening or a sync failed."""
        with self._error_lock:
            self.error = message

    def list_folder(self) -> Path | None:
        """Where the kept numbered lists live: the first folder's store."""
        roots = self.roots
        if not roots:
            return None
        return store_dir_for(default_storage(self.settings), roots[0])

    def _open_knowledge(self, settings: Settings) -> None:
        """On the worker thread: open the stores of every root and start watching."""
        storage = default_storage(settings)
        log_file = logs.log_to_file(storage) if self.kind.log_file else None
        log.info("kb-lsp %s: storage %s, log %s", __version__, storage, log_file)
        self._check_roots()
        try:
            kb = KnowledgeBase(
                [root for root in self.roots if root.is_dir()],
                settings,
                embedder=embedder_from_environment(),
                storage=storage,
                exact_vectors=self.kind.exact_vectors,
            )
        except Exception as err:
            message = f"kb-lsp could not open its index in {storage}: {err}"
            self.set_error(message)
            log.exception("opening the knowledge base failed")
            self._tell(message, "error")
            raise
        self.settings = settings
        self.kb = kb
        with self._agent_lock:
            self.made_agent = None
        self.set_error(None)
        self.probe.refresh(self.agent() if self.probe.enabled else None)
        if kb.read_only:
            self._tell(
                "kb-lsp: another window is indexing this workspace; this one is read-only "
                "(search works, the other window keeps the index up to date).",
                "warning",
            )
            self._watch_writer(kb)
            return
        self.disk.start(self.roots, settings)
        self._listen()

    # --- two processes on one index (takeover.py) ------------------------------------------

    def _watch_writer(self, kb: KnowledgeBase) -> None:
        if not self.kind.take_over:
            return
        self._takeover = TakeoverWatch(
            _folders(kb, read_only=True), free=self._writer_gone, tick=self._changed
        )
        self._takeover.start()

    def _writer_gone(self) -> None:
        """(The takeover thread.) Reopen as the writer, then sync; say so."""
        self.worker.submit(Job(fn=self._take_over_index, title="Taking over the index"))

    def _take_over_index(self) -> None:
        kb = self.kb
        if kb is None or not kb.read_only:
            return
        with self.gate.exclusive():
            self._close_knowledge()
            self._open_knowledge(self._wanted)
        kb = self.kb
        if kb is not None and not kb.read_only:
            log.info("kb-lsp: the other process let go of the index; this one writes it now")
            self._tell(
                "kb-lsp: the other window closed; this one now keeps the index up to date.",
                "info",
            )
            self.worker.submit(Job(title="Indexing after taking over", progress="always"))
        self._changed()

    def _publish(self, step: SyncProgress | None) -> None:
        """(The worker.) Tell other processes on these stores how the sync is going."""
        kb = self.kb
        if kb is not None:
            left = self.worker.seconds_left if step is not None else None
            publish(_folders(kb, read_only=False), sync_state(step, left))

    def built_elsewhere(self) -> WriterState | None:
        """The writer's state when another process is indexing these (read-only) stores."""
        kb = self.kb
        if kb is None or not kb.read_only:
            return None
        return indexing_elsewhere(_folders(kb, read_only=True))

    def follow_writes(self, follow: Callable[[list[Path]], None]) -> None:
        """`follow(stores)` now and whenever the store folders this process writes change
        ([] when it stops writing): the front ends that write an index listen for the
        command line there (`listener.py`)."""
        self._follow_writes = follow
        if self.kb is not None:
            self.worker.submit(Job(fn=self._listen, title="Listening for the command line"))

    def _listen(self) -> None:
        """(The worker.) The stores this process writes, to whoever follows them."""
        kb = self.kb
        if self._follow_writes is not None:
            self._follow_writes([] if kb is None else _folders(kb, read_only=False))

    def _close_knowledge(self) -> None:
        """Stop watching and close the stores (releases the writer lock)."""
        if self._follow_writes is not None:
            self._follow_writes([])
        if self._takeover is not None:
            self._takeover.stop()
            self._takeover = None
        self.disk.stop()
        self.made_agent = None
        kb, self.kb = self.kb, None
        if kb is not None:
            try:
                kb.close()
            except Exception:
                log.exception("closing the knowledge base failed")

    def close(self, before_closing: Callable[[], None]) -> bool:
        """Stop the watcher, the worker and the asks, then `before_closing()`, then close
        the knowledge base. False when it was closed already."""
        with self._close_lock:
            if self.closed:
                return False
            self.closed = True
        log.info("kb-lsp: stopping")
        self.disk.stop()
        self.worker.stop()
        self.running.cancel_all()
        self.probe.close()
        before_closing()
        with self.gate.exclusive():
            self._close_knowledge()
        if not self.opened.done():
            self.opened.set_result(None)
        return True

    def _check_roots(self) -> None:
        for root in list(self.roots):
            if root.is_dir():
                self.missing.discard(root)
            elif root not in self.missing:
                self.missing.add(root)
                self._tell(
                    f"kb-lsp: the workspace folder {root} no longer exists; "
                    "its files are no longer in the knowledge base.",
                    "warning",
                )

    def _start_progress(self, title: str, cancel: threading.Event) -> ProgressHandle | None:
        if self.closed:
            return None
        try:
            return self._hooks.start_progress(title, cancel)
        except Exception:
            log.exception("the front end could not show progress")
            return None


def _folders(kb: KnowledgeBase, *, read_only: bool) -> list[Path]:
    """The store folders this process only reads (`read_only`) or writes."""
    return [folder for folder, only_read in kb.store_folders().items() if only_read == read_only]
