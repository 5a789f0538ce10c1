"""The one sync over every workspace folder: scan them all, then write every root's text
(keyword search sees each file from then on), then embed every root's pending chunks,
then, when asked, the model's metadata — one tally from start to end (`sync_tally.py`).

Threading: one sync at a time (the LSP layer runs it on its indexing worker); the status
reads `syncing` and `progress` from any thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from kb_lsp.engine.index.extraction import MetadataPhase
from kb_lsp.engine.index.reports import SyncProgress, SyncReport
from kb_lsp.engine.index.sync_tally import SyncTally
from kb_lsp.engine.memory import release_free_memory
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.engine.roots import RootIndex
from kb_lsp.protocol import IndexProgress


class WorkspaceSync:
    """Brings every root's index in line with the disk, and says how far it is."""

    def __init__(self, metadata_phase: MetadataPhase) -> None:
        self.metadata_phase = metadata_phase
        self.syncing = False
        self.progress: SyncProgress | None = None  # the running sync's latest step
        self.keyword_incomplete = False  # a sync stopped before its text phase ended

    def wire_progress(self) -> IndexProgress | None:
        step = self.progress
        if not self.syncing or step is None:
            return None
        return step.as_wire()

    def keyword_complete(self) -> bool:
        """Whether keyword search sees every file: no sync stopped in, or is still in,
        its text phase."""
        in_text_phase = (
            self.syncing
            and self.progress is not None
            and self.progress.phase not in ("vectors", "metadata")
        )
        return not self.keyword_incomplete and not in_text_phase

    def run(
        self,
        roots: list[RootIndex],
        paths: Iterable[Path] | None = None,
        *,
        progress: Callable[[SyncProgress], None] | None = None,
        cancel: threading.Event | None = None,
        full: bool = False,
        extract: bool = False,
        yield_to: threading.Event | None = None,
        first: Iterable[Path] = (),
    ) -> SyncReport:
        """See `KnowledgeBase.sync`."""
        if any(index.store.read_only for index in roots):
            raise ReadOnlyStore(
                "this window opened the index read-only: another kb-lsp process is "
                "indexing this workspace; it stays current there"
            )
        started = time.monotonic()
        report = SyncReport()
        wanted = None if paths is None else [Path(p) for p in paths]

        def step(update: SyncProgress) -> None:
            self.progress = update
            if progress is not None:
                progress(update)

        self.syncing = True
        self.progress = SyncProgress(0, 0, None, "scanning")
        tally = SyncTally(step)
        try:
            self._texts(roots, wanted, tally, cancel, report, full=full)
            if not report.cancelled:
                self._vectors(roots, tally, cancel, report, frozenset(first))
            if full and not report.cancelled:
                # The vector collection anew, beside the live one (`Store.rebuild_vectors`).
                for index in roots:
                    index.store.rebuild_vectors()
            if extract and not report.cancelled:
                self.metadata_phase.run(roots, tally, cancel, report, yield_to)
        finally:
            self.syncing = False
            self.progress = None
            release_free_memory()
        report.seconds = time.monotonic() - started  # what `kb index` prints
        return report

    def _texts(
        self,
        roots: list[RootIndex],
        wanted: list[Path] | None,
        tally: SyncTally,
        cancel: threading.Event | None,
        report: SyncReport,
        *,
        full: bool,
    ) -> None:
        # Every root is scanned before any is written, so the sync's total is known once
        # and never changes (`sync_tally.py`).
        tally.scanning()
        plans = []
        in_sync: set[tuple[Path, str]] = set()
        for index in roots:
            mine = None
            if wanted is not None:
                mine = [p for p in wanted if index.workspace.relative(p) is not None]
                if not mine:
                    # Nothing to read here, but its pending vectors are finished after.
                    in_sync.update((index.root, r.path) for r in index.store.reader.pending_files())
                    continue
            plan = index.indexer.plan(mine, full=full)
            in_sync.update((index.root, path) for path in plan.files)
            plans.append((index, plan))
        tally.planned(len(in_sync), sum(plan.to_read for _, plan in plans))
        for index, plan in plans:
            index.indexer.write_texts(plan, tally=tally, cancel=cancel, report=report)
            if report.cancelled:
                break
        self.keyword_incomplete = report.cancelled

    @staticmethod
    def _vectors(
        roots: list[RootIndex],
        tally: SyncTally,
        cancel: threading.Event | None,
        report: SyncReport,
        first: frozenset[Path],
    ) -> None:
        pending = []
        for index in roots:
            mine = frozenset(rel for path in first if (rel := index.workspace.relative(path)))
            files = index.indexer.pending_files(mine)
            pending.append((not (files and files[0].path in mine), index, files))
        # A root with a file open in the editor goes first (its open files lead its list);
        # the sort is stable: otherwise the roots' own order.
        pending.sort(key=lambda item: item[0])
        tally.vectors(
            sum(len(files) for _, _, files in pending),
            sum(r.chunk_count for _, _, files in pending for r in files),
        )
        for _, index, files in pending:
            index.indexer.embed_pending(files=files, tally=tally, cancel=cancel, report=report)
            if report.cancelled:
                break
