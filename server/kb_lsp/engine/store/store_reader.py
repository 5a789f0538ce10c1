"""What search reads of a whole store: the text side (`reader.py`) and the vectors — the
cached embeddings by text hash and the index's nearest chunks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from kb_lsp.engine.metadata.claims import StoredClaim
from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.catalog import FileRecord
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.nearest import nearest_chunks
from kb_lsp.engine.store.reader import TextReader
from kb_lsp.engine.store.vectors import VectorHit, VectorIndex


class StoreReader(TextReader):
    """A `Store`'s reader: the text side plus its vectors (`Store.reader`)."""

    def __init__(self, db: Database, root: Path, cache: VectorCache, index: VectorIndex) -> None:
        super().__init__(db, root)
        self.cache = cache
        self.index = index

    def vectors_of(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached embedding of each text hash that has one (normalised)."""
        return self.cache.get(text_hashes)

    def file_count(self) -> int:
        return self.catalog.file_count()

    # --- what the schema, value completion and the summaries read ----------------------

    def values_containing(
        self, field: str, fragment: str, limit: int = 20
    ) -> list[tuple[str, int]]:
        return self.notes.values_containing(field, fragment, limit)

    def claims(self) -> list[StoredClaim]:
        """Every value a model gave for a file of this store, kept or rejected."""
        return self.extractions.claims()

    def cached_summary(self, content_hash: str, model: str) -> str | None:
        return self.catalog.cached_summary(content_hash, model)

    # --- what a sync reads -----------------------------------------------------------------

    def pending_files(self) -> list[FileRecord]:
        """The files whose vectors phase 2 of a sync has yet to write."""
        return self.catalog.pending_files()

    def records_under(self, prefix: str) -> dict[str, FileRecord]:
        """The records of the files under the folder `prefix` ("notes/")."""
        return self.catalog.records_under(prefix)

    def chunk_page(self, path: str, start: int, limit: int) -> list[tuple[str, str, str, str]]:
        """A page of a file's chunks as phase 2 embeds them (`chunks.py`)."""
        return self.chunks.chunk_page(path, start, limit)

    def missing_card_vectors(self) -> list[tuple[str, str]]:
        """(text hash, text) of the note cards not embedded yet."""
        return self.notes.missing_card_vectors()

    def vector_search(
        self, vector: Sequence[float] | np.ndarray, k: int, paths: list[str] | None = None
    ) -> list[VectorHit]:
        """The `k` chunks nearest to `vector`, among the chunks of `paths` when given."""
        return nearest_chunks(self.index, self.chunks, self.catalog.file_count, vector, k, paths)
