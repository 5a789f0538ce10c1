"""What a sync writes into a store, under names that say what each write is for: the two
phases' texts and vectors (SQLite first, then the vector index), the manifest's own
bookkeeping (touched, skipped, ready files), the vectors cache and, with a team index,
the team's collection, and the model's extractions. The indexer's one way in
(`Store.writer`); it reads through `Store.reader` like everyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress

import numpy as np

from kb_lsp.engine.metadata.claims import Extraction
from kb_lsp.engine.metadata.extract import FileMetadata
from kb_lsp.engine.store.catalog import FileRecord
from kb_lsp.engine.store.chunk_rows import NewChunk
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.extractions import ExtractionKey
from kb_lsp.engine.store.reader import GLOB_MEMO, saved_glob_memo
from kb_lsp.engine.store.shared import TeamUnavailable
from kb_lsp.engine.store.store_reader import StoreReader
from kb_lsp.engine.store.team import TeamIndex
from kb_lsp.engine.store.vectors import VectorEntry, VectorIndex


class StoreWriter:
    """One store's writes; one writer per store (the package doc)."""

    def __init__(self, parts: StoreReader, index: VectorIndex) -> None:
        self._parts = parts
        self._index = index
        self._team = index if isinstance(index, TeamIndex) else None  # behind the port
        # False until the store's repair checked the index, and again after a write to it
        # stopped half way (`Store.repair_vectors`); else this writer made every change.
        self.index_trusted = False

    # --- the two phases ------------------------------------------------------------------

    def write_texts(
        self,
        files: Sequence[tuple[FileRecord, Iterable[NewChunk]]],
        metadata: dict[str, FileMetadata] | None = None,
        cards: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """Phase 1 of a sync: replace the chunks and FTS rows of `files` in one transaction,
        each file left `pending` (its vectors follow in phase 2), with their metadata and
        note cards (text hash, text) when given. Chunk ids the new version no longer has
        leave the index after the commit; ids it keeps may hold a vector of their old text
        until phase 2 overwrites them: a vector hit carries its `text_hash` (`nearest.py`)."""
        if files:
            chunks = self._parts.chunks
            self._in_index(lambda: self._index.delete(chunks.write(files, metadata, cards)))

    def delete_files(self, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns the number of chunks removed."""
        if not paths:
            return 0
        ids = self._parts.chunks.delete(paths)
        self._in_index(lambda: self._index.delete(ids))
        return len(ids)

    def upsert_vectors(self, entries: Sequence[VectorEntry]) -> bool:
        """Phase 2: cached vectors into the index; False when a team's cannot take them."""
        return self._in_index(lambda: self._index.upsert(entries))

    def _in_index(self, write: Callable[[], None]) -> bool:
        try:
            write()
        except BaseException as err:
            self.index_trusted = False  # a write stopped half way: check at next sync
            if not isinstance(err, TeamUnavailable):
                raise
            return False
        return True

    def mark_ready(self, paths: Sequence[str]) -> None:
        """Files whose every vector is cached and in the index: `ok`."""
        self._parts.catalog.mark_ready(paths)

    # --- the manifest's bookkeeping ------------------------------------------------------

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """A file read again and found the same: its new size and time, no new chunks."""
        self._parts.catalog.touch(path, size, mtime_ns)

    def set_skipped(self, entries: Iterable[tuple[str, str]], *, replace_all: bool) -> None:
        self._parts.catalog.set_skipped(entries, replace_all=replace_all)

    def clear_skipped(self, paths: Iterable[str]) -> None:
        self._parts.catalog.clear_skipped(paths)

    def save_glob_memo(self, row: str | None) -> None:
        """Keep a sync's glob translations for a one-shot scan (`workspace/glob_memo.py`);
        written only when they changed, nothing when there are none to keep."""
        if row is not None and row != saved_glob_memo(self._parts):
            with self._parts.db.writer() as db:
                Database.set_meta(db, GLOB_MEMO, row)

    def store_summary(self, content_hash: str, model: str, summary: str) -> None:
        """A model's summary of a file's text, kept for the next time it is asked."""
        self._parts.catalog.store_summary(content_hash, model, summary)

    def fill_derived(self) -> int:
        """Chunks whose stems or readable blocks were dropped or never made: theirs
        (`chunks.py`)."""
        return self._parts.chunks.fill_derived()

    def refresh_anchors(self, *, everywhere: bool = False) -> int:
        """Incoming anchor texts on the note cards, after the links changed: of the notes
        the files written or removed since the last refresh can re-target, or (a whole
        sync, which may have changed most files) of every note."""
        if everywhere:
            return self._parts.notes.refresh_anchors()
        return self._parts.notes.refresh_due_anchors()

    # --- vectors: the cache and a team's collection --------------------------------------

    def cache_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        self._parts.cache.put(vectors)

    def forget_unused_vectors(self) -> None:
        """Drop cached vectors of text no chunk or card has any more."""
        self._parts.cache.forget_unused()

    def share(self, vectors: dict[str, np.ndarray]) -> None:
        """Vectors the index does not hold (note cards) onto a team's collection, for the
        other members; nothing without a team or while it cannot be reached."""
        if self._team is not None:
            with suppress(TeamUnavailable):
                self._team.share(vectors)

    def from_team(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Of `hashes`, the vectors a team index holds (another member embedded them),
        cached here before they are used; none without a team, or while it cannot be
        reached (`team_problem` says why)."""
        found: dict[str, np.ndarray] = {}
        if self._team is not None and hashes:
            with suppress(TeamUnavailable):
                found = self._team.fetch(hashes)
            self._parts.cache.put(found)
        return found

    @property
    def team_problem(self) -> str | None:
        """Why the team's server could not be used last time; None alone or when it could."""
        return self._team.problem if self._team is not None else None

    # --- the model's extractions (phase 3) -----------------------------------------------

    def extraction_todo(self, key: ExtractionKey) -> list[tuple[str, str]]:
        return self._parts.extractions.todo(key)

    def cached_extraction(self, content_hash: str, key: ExtractionKey) -> Extraction | None:
        return self._parts.extractions.cached(content_hash, key)

    def apply_extraction(
        self, path: str, content_hash: str, key: ExtractionKey, extraction: Extraction
    ) -> bool:
        return self._parts.extractions.apply(path, content_hash, key, extraction)

    def extractions_done(self, key: ExtractionKey) -> int:
        return self._parts.extractions.done(key)

    def forget_unused_extractions(self) -> None:
        self._parts.extractions.forget_unused()
