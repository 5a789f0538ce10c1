"""`Store`: one root's store, its parts put together (the package doc says which is which).

Callers use the parts (`store.catalog.manifest()`, `store.fts.search(…)`, `store.extractions`);
the store itself does only what spans them: writing and removing files (SQLite, then the
vector index), vector search, the index's upkeep, the status figures, and the life cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from kb_lsp.engine.metadata.extract import FileMetadata
from kb_lsp.engine.private import tighten
from kb_lsp.engine.records import ReadOnlyStore, VectorHit
from kb_lsp.engine.store import upkeep
from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.catalog import Catalog, FileRecord
from kb_lsp.engine.store.chroma import ChromaIndex
from kb_lsp.engine.store.chunks import Chunks, NewChunk
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.exact import ExactIndex
from kb_lsp.engine.store.extractions import Extractions
from kb_lsp.engine.store.figures import StoreFigures, read_figures
from kb_lsp.engine.store.fts import Fts
from kb_lsp.engine.store.nearest import nearest_chunks
from kb_lsp.engine.store.notes import Notes
from kb_lsp.engine.store.vectors import VectorEntry, VectorIndex

log = logging.getLogger("kb_lsp.engine.store")


class Store:
    """One root's store. Readers may call from any thread; one writer (package doc)."""

    def __init__(
        self,
        directory: Path,
        *,
        root: Path,
        embedder_identity: str,
        dimension: int,
        chroma_url: str | None = None,
        exact_vectors: bool = False,
    ) -> None:
        """`exact_vectors`: vector search scans the vectors SQLite caches (`exact.py`)
        and Chroma is opened only when this process writes to it. For one-shot processes
        (the command line): opening Chroma costs them more than the search itself."""
        self.directory = directory
        self.root = root
        self.db = Database(directory)
        self.read_only = self.db.read_only
        self.catalog = Catalog(self.db)
        self.chunks = Chunks(self.db, root)
        self.cache = VectorCache(self.db, dimension)
        self.fts = Fts(self.db, self.chunks, self.catalog.file_count)
        self.notes = Notes(self.db)
        self.extractions = Extractions(self.db)
        self.exact_vectors = exact_vectors
        self.vectors: VectorIndex
        if exact_vectors:
            exact = ExactIndex(self.db, dimension, lambda: ChromaIndex(self.db, chroma_url))
            exact.on_open = self.repair_vectors
            self.vectors = exact
        else:
            self.vectors = ChromaIndex(self.db, chroma_url)
        # Checked against SQLite once per opening and after a failed write (`repair_vectors`).
        self._vectors_trusted = False
        if not self.read_only:
            tighten(directory, say=self.db.existed)  # after SQLite and Chroma made files
            upkeep.check_embedder(self.db, self.vectors, embedder_identity, dimension, str(root))
            self.notes.check_version()
            self.chunks.check_stems_version()

    # --- writing -------------------------------------------------------------------------

    def write_texts(
        self,
        files: Sequence[tuple[FileRecord, Iterable[NewChunk]]],
        metadata: dict[str, FileMetadata] | None = None,
        cards: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """Phase 1 of a sync: replace the chunks and FTS rows of `files` in one transaction,
        each file left `pending` (its vectors follow in phase 2, `upsert_vectors`), with
        their metadata when given (and each note card's text hash and text: its vector
        follows in phase 2, `Notes.missing_card_vectors`).

        Chunk ids the new version no longer has leave the index after the commit; ids it
        keeps may hold a vector of their old text until phase 2 overwrites them, which is
        why a vector hit carries its `text_hash` and search checks it (`nearest.py`)."""
        if files:
            self._in_index(lambda: self.vectors.delete(self.chunks.write(files, metadata, cards)))

    def delete_files(self, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns the number of chunks removed."""
        if not paths:
            return 0
        ids = self.chunks.delete(paths)
        self._in_index(lambda: self.vectors.delete(ids))
        return len(ids)

    def upsert_vectors(self, entries: Sequence[VectorEntry]) -> None:
        """Phase 2: vectors into the index (already cached by text hash)."""
        self._in_index(lambda: self.vectors.upsert(entries))

    def _in_index(self, write: Callable[[], None]) -> None:
        try:
            write()
        except BaseException:
            self._vectors_trusted = False  # a write stopped half way: check at next sync
            raise

    # --- reading -------------------------------------------------------------------------

    def vector_search(
        self, vector: Sequence[float] | np.ndarray, k: int, paths: list[str] | None = None
    ) -> list[VectorHit]:
        """The `k` chunks nearest to `vector`, among the chunks of `paths` when given."""
        return nearest_chunks(self.vectors, self.chunks, self.catalog.file_count, vector, k, paths)

    def figures(self) -> StoreFigures:
        """What the status shows of this store (`figures.py`)."""
        return read_figures(self.db, self.catalog, self.notes)

    # --- the vector index's upkeep -------------------------------------------------------

    def repair_vectors(self) -> int:
        """`upkeep.repair`, once per opening of the store and again after a write to the
        index failed: otherwise this process, the only writer, made every change itself,
        and every save need not read every chunk row. Returns ids fixed."""
        if self.read_only or self._vectors_trusted or not self.vectors.opened():
            return 0  # an exact index that opens Chroma later checks it then
        fixed = upkeep.repair(self.vectors, self.chunks, self.cache, self.catalog)
        self._vectors_trusted = True
        return fixed

    def rebuild_vectors(self) -> int:
        """A new index from what SQLite holds, built beside the live one and switched to
        when complete (`upkeep.rebuild`). Returns the number of vectors in it."""
        if self.read_only:
            raise ReadOnlyStore(f"the index at {self.directory} is opened read-only")
        written = upkeep.rebuild(self.vectors, self.chunks, self.cache, self.catalog)
        log.info("Rebuilt the vector collection of %s: %d vectors", self.root, written)
        return written

    def close(self) -> None:
        self.db.close()
