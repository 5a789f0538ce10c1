"""Phase 2 of a sync: the vectors of pending files, embedded in batches of at most
`EMBED_BATCH` chunks across files, read back from SQLite a page at a time; only chunks
whose text hash has no cached vector are embedded. A file is marked complete when its
last chunk's vectors are in the index (`indexer.py` has the picture)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.index.prepare import embedding_text
from kb_lsp.engine.index.reports import SyncReport
from kb_lsp.engine.index.sync_tally import ProgressCallback, SyncTally
from kb_lsp.engine.store import TEAM_MEANWHILE, FileRecord, Store, VectorEntry

log = logging.getLogger("kb_lsp.engine.index.indexer")

# Chunks embedded per batch (the embedder sub-batches by padded tokens) and chunks per
# index upsert when their vectors are already cached (a rename, a crash).
EMBED_BATCH = 256
UPSERT_BATCH = 2048
# Passages embedded between two progress steps inside a batch: a batch of 256 can take
# minutes on a loaded machine, and a count that stands still that long looks stuck.
PROGRESS_EVERY = 32


@dataclass
class _VectorBatch:
    """Phase 2's unit of work: chunk ids with their vector or the text to embed."""

    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (id, path, hash)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # cached, by hash
    texts: dict[str, str] = field(default_factory=dict)  # to embed, by hash
    complete: list[str] = field(default_factory=list)  # files whose last chunk is here


class VectorPass:
    """Phase 2 over one root's store."""

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self.in_flight = 0  # chunks in the index of files not complete yet
        self._file_chunks: dict[str, int] = {}  # chunks stored so far per incomplete file

    def run(
        self,
        files: list[FileRecord],
        counted: SyncTally | ProgressCallback | None,
        cancel: threading.Event | None,
        report: SyncReport,
    ) -> SyncReport:
        """The vectors of `files`, in order, counted on a sync's tally (or on a tally of
        their own, reporting to a progress callback); stops between batches when
        `cancel` is set."""
        if isinstance(counted, SyncTally):
            tally = counted
        else:
            tally = SyncTally(counted)
            tally.planned(len(files), 0)
            tally.vectors(len(files), sum(r.chunk_count for r in files))
        batch = _VectorBatch()
        self.in_flight = 0

        def flush() -> None:
            nonlocal batch
            if not self._store_batch(batch, report, tally.embedded):
                batch.complete = []  # cached, not in the index: they stay pending
            self.in_flight += len(batch.entries)
            for path in batch.complete:
                self.in_flight -= self._file_chunks.pop(path, 0)
            if batch.entries or batch.complete:
                last = batch.complete[-1] if batch.complete else None
                tally.stored(len(batch.entries), len(batch.complete), last)
            batch = _VectorBatch()

        self._file_chunks = {}
        try:
            for record in files:
                if not self._one_file(record, lambda: batch, flush, cancel):
                    report.cancelled = True
                    return report
            flush()
            self._embed_cards(cancel)
            self.store.repair_vectors()  # after a failed write to the index, if one failed
            if self.store.writer.team_problem:
                report.team_error = f"{self.store.writer.team_problem}; {TEAM_MEANWHILE}"
        finally:
            self.in_flight = 0
            self._file_chunks = {}
        return report

    def _one_file(
        self,
        record: FileRecord,
        current: Callable[[], _VectorBatch],
        flush: Callable[[], None],
        cancel: threading.Event | None,
    ) -> bool:
        """Every page of one file into the batches; False when cancelled."""
        start = 0
        while True:
            if cancel is not None and cancel.is_set():
                return False
            batch = current()
            # At most what the batch still has room for: never over EMBED_BATCH.
            room = max(1, EMBED_BATCH - len(batch.texts))
            page = self.store.reader.chunk_page(record.path, start, room)
            self._add_page(batch, record.path, page)
            self._file_chunks[record.path] = self._file_chunks.get(record.path, 0) + len(page)
            start += len(page)
            last_page = len(page) < room
            if last_page:
                batch.complete.append(record.path)
            if len(batch.texts) >= EMBED_BATCH or len(batch.entries) >= UPSERT_BATCH:
                flush()
            if last_page:
                return True

    def _embed_cards(self, cancel: threading.Event | None) -> None:
        """The vectors of note cards (`metadata/cards.py`) not embedded yet, in batches."""
        missing = self.store.reader.missing_card_vectors()
        for start in range(0, len(missing), EMBED_BATCH):
            if cancel is not None and cancel.is_set():
                return
            part = missing[start : start + EMBED_BATCH]
            shared = self._from_team([digest for digest, _ in part])
            part = [(digest, text) for digest, text in part if digest not in shared]
            if not part:
                continue
            embedded = self.embedder.embed_documents([text for _, text in part])
            new = {
                digest: np.asarray(vector, dtype=np.float32)
                for (digest, _), vector in zip(part, embedded, strict=True)
            }
            self.store.writer.cache_vectors(new)
            self.store.writer.share(new)  # for the other members (not the index's)

    def _from_team(self, hashes: list[str]) -> dict[str, np.ndarray]:
        return self.store.writer.from_team(hashes)

    def _add_page(
        self, batch: _VectorBatch, path: str, page: list[tuple[str, str, str, str]]
    ) -> None:
        cached = self.store.reader.vectors_of(
            h for _, h, _, _ in page if h not in batch.vectors and h not in batch.texts
        )
        batch.vectors.update(cached)
        for cid, digest, heading, text in page:
            batch.entries.append((cid, path, digest))
            if digest not in batch.vectors and digest not in batch.texts:
                batch.texts[digest] = embedding_text(heading, text)

    def _store_batch(
        self, batch: _VectorBatch, report: SyncReport, on_embedded: Callable[..., None]
    ) -> bool:
        """The batch's vectors cached and in the index, its complete files `ok`; False
        when a team index could not take them (cached: the next sync sends them)."""
        shared = self._from_team(list(batch.texts))
        for digest in shared:
            del batch.texts[digest]
        batch.vectors.update(shared)
        report.chunks_shared += sum(1 for _, _, digest in batch.entries if digest in shared)
        if len(batch.entries) > len(batch.texts):  # counted before the wait for the rest
            on_embedded(len(batch.entries) - len(batch.texts), reused=True)
        if batch.texts:
            # In the batch's order (the open and newest files first); the embedder sorts
            # each part by length for its padding.
            todo = list(batch.texts.items())
            new: dict[str, np.ndarray] = {}
            for start in range(0, len(todo), PROGRESS_EVERY):
                part = todo[start : start + PROGRESS_EVERY]
                vectors = self.embedder.embed_documents([text for _, text in part])
                for (digest, _), vector in zip(part, vectors, strict=True):
                    new[digest] = np.asarray(vector, dtype=np.float32)
                on_embedded(len(part))
            self.store.writer.cache_vectors(new)
            batch.vectors.update(new)
        report.chunks_embedded += len(batch.texts)
        report.chunks_reused += len(batch.entries) - len(batch.texts)
        stored = self.store.writer.upsert_vectors(
            [
                VectorEntry(cid, path, digest, batch.vectors[digest])
                for cid, path, digest in batch.entries
            ]
        )
        if stored:
            self.store.writer.mark_ready(batch.complete)
        log.debug(
            "Stored %d vectors (%d embedded, %d from the team), %d files complete",
            len(batch.entries),
            len(batch.texts),
            len(shared),
            len(batch.complete) if stored else 0,
        )
        return stored
