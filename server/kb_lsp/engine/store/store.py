"""`Store`: one root's store, its parts put together (the package doc says which is which).

Callers use the parts (`store.catalog.manifest()`, `store.fts.search(…)`, `store.extractions`);
the store itself does only what spans them: writing and removing files (SQLite, then the
vector index), vector search, the index's upkeep, the status figures, and the life cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from pathlib import Path

import numpy as np

from kb_lsp.config import ChromaSettings
from kb_lsp.engine.metadata.extract import FileMetadata
from kb_lsp.engine.private import tighten
from kb_lsp.engine.records import ReadOnlyStore, VectorHit
from kb_lsp.engine.store import upkeep
from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.catalog import Catalog, FileRecord
from kb_lsp.engine.store.chunks import Chunks, NewChunk
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.extractions import Extractions
from kb_lsp.engine.store.figures import StoreFigures, read_figures
from kb_lsp.engine.store.fts import Fts
from kb_lsp.engine.store.indexes import open_index
from kb_lsp.engine.store.nearest import nearest_chunks
from kb_lsp.engine.store.notes import Notes
from kb_lsp.engine.store.shared import TeamUnavailable
from kb_lsp.engine.store.vectors import VectorEntry

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
        chroma: ChromaSettings | None = None,
        exact_vectors: bool = False,
    ) -> None:
        """`chroma`: a Chroma server (`url`), a team index there (`collection`, `team.py`);
        `exact_vectors`: search the vectors SQLite caches, open Chroma only to write."""
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
        self.vectors, self.team = open_index(  # `team`: a team index's shared collection
            self.db, dimension, embedder_identity, chroma, exact_vectors, self.repair_vectors
        )
        self._vectors_trusted = False  # checked once per opening, and after a failed write
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
        each file left `pending` (its vectors follow in phase 2), with their metadata and
        note cards (text hash, text) when given. Chunk ids the new version no longer has
        leave the index after the commit; ids it keeps may hold a vector of their old text
        until phase 2 overwrites them: a vector hit carries its `text_hash` (`nearest.py`)."""
        if files:
            self._in_index(lambda: self.vectors.delete(self.chunks.write(files, metadata, cards)))

    def delete_files(self, paths: Sequence[str]) -> int:
        """Remove files and their chunks; returns the number of chunks removed."""
        if not paths:
            return 0
        ids = self.chunks.delete(paths)
        self._in_index(lambda: self.vectors.delete(ids))
        return len(ids)

    def upsert_vectors(self, entries: Sequence[VectorEntry]) -> bool:
        """Phase 2: cached vectors into the index; False when a team's cannot take them."""
        return self._in_index(lambda: self.vectors.upsert(entries))

    def _in_index(self, write: Callable[[], None]) -> bool:
        try:
            write()
        except BaseException as err:
            self._vectors_trusted = False  # a write stopped half way: check at next sync
            if not isinstance(err, TeamUnavailable):
                raise
            return False
        return True

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
        """`upkeep.repair`, once per opening and after a failed write to the index (else
        this process, the only writer, made every change itself). Returns ids fixed."""
        if self.read_only or self._vectors_trusted or not self.vectors.opened():
            return 0  # an exact index that opens Chroma later checks it then
        with suppress(TeamUnavailable):  # else checked again by the next sync
            fixed = upkeep.repair(self.vectors, self.chunks, self.cache, self.catalog)
            self._vectors_trusted = True
            return fixed
        return 0

    def rebuild_vectors(self) -> int:
        """A new index from what SQLite holds, built beside the live one and switched to
        when complete (`upkeep.rebuild`). Returns the number of vectors in it."""
        if self.read_only:
            raise ReadOnlyStore(f"the index at {self.directory} is opened read-only")
        with suppress(TeamUnavailable):  # a team's: the next sync sends what it lacks
            written = upkeep.rebuild(self.vectors, self.chunks, self.cache, self.catalog)
            log.info("Rebuilt the vector collection of %s: %d vectors", self.root, written)
            return written
        return 0

    def close(self) -> None:
        self.db.close()
        if self.team is not None:
            self.team.close()
