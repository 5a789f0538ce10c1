"""`Store`: one root's store, its parts put together (the package doc says which is which).

Search and the other readers read through `store.reader` (`store_reader.py`: the text side
and the vectors), the indexer writes through `store.writer` (`writer.py`); the store itself
puts them together and does the index's upkeep, the status figures and the life cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import numpy as np

from kb_lsp.config import ChromaSettings
from kb_lsp.engine.private import tighten
from kb_lsp.engine.records import ReadOnlyStore
from kb_lsp.engine.store import upkeep
from kb_lsp.engine.store.cache import VectorCache
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.figures import StoreFigures
from kb_lsp.engine.store.indexes import open_index
from kb_lsp.engine.store.shared import TeamUnavailable
from kb_lsp.engine.store.store_reader import StoreReader
from kb_lsp.engine.store.team import TeamIndex
from kb_lsp.engine.store.vectors import VectorHit
from kb_lsp.engine.store.writer import StoreWriter

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
        self.cache = VectorCache(self.db, dimension)
        self.vectors = open_index(
            self.db, dimension, embedder_identity, chroma, exact_vectors, self.repair_vectors
        )
        self.reader = StoreReader(self.db, root, self.cache, self.vectors)
        # The parts the store writes through (the reader's own; read through `reader`).
        self.catalog = self.reader.catalog
        self.chunks = self.reader.chunks
        self.fts = self.reader.fts
        self.notes = self.reader.notes
        self.extractions = self.reader.extractions
        self.writer = StoreWriter(self.reader, self.vectors)
        if not self.read_only:
            tighten(directory, say=self.db.existed)  # after SQLite and Chroma made files
            upkeep.check_embedder(self.db, self.vectors, embedder_identity, dimension, str(root))
            self.notes.check_version()
            self.chunks.check_derived()

    # --- reading -------------------------------------------------------------------------

    def vector_search(
        self, vector: Sequence[float] | np.ndarray, k: int, paths: list[str] | None = None
    ) -> list[VectorHit]:
        """The `k` chunks nearest to `vector`, among the chunks of `paths` when given."""
        return self.reader.vector_search(vector, k, paths)

    def figures(self) -> StoreFigures:
        """What the status shows of this store (`figures.py`)."""
        return self.reader.figures()

    # --- the vector index's upkeep -------------------------------------------------------

    def repair_vectors(self) -> int:
        """`upkeep.repair`, once per opening and after a failed write to the index (else
        this process, the only writer, made every change itself). Returns ids fixed."""
        if self.read_only or self.writer.index_trusted or not self.vectors.opened():
            return 0  # an exact index that opens Chroma later checks it then
        with suppress(TeamUnavailable):  # else checked again by the next sync
            fixed = upkeep.repair(self.vectors, self.chunks, self.cache, self.catalog)
            self.writer.index_trusted = True
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
        if isinstance(self.vectors, TeamIndex):
            self.vectors.close()  # its collection's client
