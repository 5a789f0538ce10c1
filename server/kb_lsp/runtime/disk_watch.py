"""The watcher over a session's workspace folders: it follows the disk (watchdog,
debounced) and hands the changes to the indexing worker; without it (a process that does
not watch), the paths an editor reports go to the worker directly."""

from __future__ import annotations

import logging
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.workspace.files import WorkspaceRoot
from kb_lsp.engine.workspace.watcher import Batch, Watcher
from kb_lsp.runtime.worker import IndexingWorker

log = logging.getLogger(__name__)


class DiskWatch:
    def __init__(self, worker: IndexingWorker, *, enabled: bool) -> None:
        self._worker = worker
        self._enabled = enabled
        self._watcher: Watcher | None = None

    def start(self, roots: list[Path], settings: Settings) -> None:
        if not self._enabled:
            return
        watcher = Watcher(
            self._on_batch,
            debounce=settings.debounce_ms / 1000,
            reconcile_seconds=settings.reconcile_seconds,
        )
        for root in roots:
            _watch(watcher, root, settings)
        watcher.start()
        self._watcher = watcher

    def restart(self, roots: list[Path], settings: Settings) -> None:
        """Again with new settings, if it runs."""
        if self._watcher is None:
            return
        self.stop()
        self.start(roots, settings)

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def add_root(self, root: Path, settings: Settings) -> None:
        if self._watcher is not None:
            _watch(self._watcher, root, settings)

    def remove_root(self, root: Path) -> None:
        if self._watcher is not None:
            self._watcher.remove_root(root)

    def notify(self, paths: list[Path]) -> None:
        """Paths an editor says changed (saved, or seen by its own file watcher)."""
        if self._watcher is not None:
            self._watcher.notify(paths)
        else:
            self._worker.submit_paths(paths)

    def _on_batch(self, batch: Batch) -> None:
        if batch.rescan:
            self._worker.submit_rescan(batch.reason)
        else:
            self._worker.submit_paths(batch.paths)


def _watch(watcher: Watcher, root: Path, settings: Settings) -> None:
    try:
        rules = WorkspaceRoot(root, settings)
    except Exception as err:
        log.warning("cannot read the file rules of %s: %s", root, err)
        watcher.add_root(root)
        return
    watcher.add_root(rules.root, rules.is_ignored_dir)
