"""Exact nearest-neighbour search over the vectors a store caches in SQLite.

Every chunk's vector is kept in SQLite by text hash (`cache.py`), so the nearest chunks to
a query can be found without Chroma: one matrix product over all of them. A one-shot
process (the command line) uses it instead of importing and opening Chroma, which costs
it more than a search (`bench/results/README.md`: on tldr-pages' 9,041 chunks HNSW holds
96 % of the exact 50 nearest; an exact scan holds all of them). A chunk whose text has no
vector yet (its file waits for phase 2) is left out, as Chroma would not hold it either;
a vector here is always the one of the chunk's current text.

`ExactIndex` is the `VectorIndex` of such a process: it searches here, and opens Chroma
only when something must be written there (and lets the store check Chroma first, as the
first sync of every opening does).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence

import numpy as np

from kb_lsp.engine.store import vector_codec
from kb_lsp.engine.store.chroma import ChromaIndex
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.vectors import Neighbour, VectorEntry, VectorHit

_ROWS = (
    "SELECT c.id, c.path, c.text_hash, v.embedding FROM chunks c "
    "JOIN vectors v ON v.text_hash = c.text_hash"
)


class ExactVectors:
    """The chunk vectors of one store as one matrix, read again when the database changed."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._version: tuple[int, int] | None = None  # (connection, its data_version)
        self._ids: list[str] = []
        self._paths: list[str] = []
        self._hashes: list[str] = []
        self._matrix = np.zeros((0, dimension), dtype=np.float32)

    def nearest(
        self, db: sqlite3.Connection, query: np.ndarray, k: int, paths: set[str] | None
    ) -> list[VectorHit]:
        """The `k` chunks most similar to `query`, among the chunks of `paths` when given."""
        self._refresh(db)
        norm = float(np.linalg.norm(query))
        if k <= 0 or not self._ids or norm == 0.0:
            return []
        scores = self._matrix @ (query.astype(np.float32) / norm)
        if paths is None:
            rows = np.arange(len(self._ids))
        else:
            rows = np.fromiter(
                (i for i, path in enumerate(self._paths) if path in paths), dtype=np.int64
            )
            if rows.size == 0:
                return []
        wanted = scores[rows]
        top = np.argpartition(-wanted, k - 1)[:k] if rows.size > k else np.arange(rows.size)
        top = top[np.argsort(-wanted[top], kind="stable")]
        return [
            VectorHit(self._ids[i], self._paths[i], float(scores[i]), self._hashes[i])
            for i in rows[top].tolist()
        ]

    def neighbours(
        self, db: Database, query: np.ndarray, k: int, paths: Collection[str] | None
    ) -> list[Neighbour]:
        """`nearest` as a `VectorIndex` answers it (each neighbour says what it was made
        from), on `db`'s reader: what every index searching this matrix returns."""
        wanted = None if paths is None else set(paths)
        hits = self.nearest(db.reader(), query, k, wanted)
        return [Neighbour(h.chunk_id, h.similarity, h.text_hash) for h in hits]

    def _refresh(self, db: sqlite3.Connection) -> None:
        # data_version changes when another connection (this process's writer included)
        # commits; it is per connection, so a different one reads again.
        version = (id(db), int(db.execute("PRAGMA data_version").fetchone()[0]))
        if version == self._version:
            return
        ids, paths, hashes, blobs = [], [], [], []
        for cid, path, digest, blob in db.execute(_ROWS):
            if vector_codec.readable(blob, self.dimension):  # else not this embedder's
                ids.append(str(cid))
                paths.append(str(path))
                hashes.append(str(digest))
                blobs.append(blob)
        self._matrix = vector_codec.decode_matrix(blobs, self.dimension)
        self._ids, self._paths, self._hashes = ids, paths, hashes
        self._version = version


class ExactIndex:
    """Implements `VectorIndex`: exact search over the cached vectors, writes to Chroma."""

    filters_cheaply = True

    def __init__(
        self, db: Database, dimension: int, open_chroma: Callable[[], ChromaIndex]
    ) -> None:
        self._db = db
        self._matrix = ExactVectors(dimension)
        self._open_chroma = open_chroma
        self._chroma: ChromaIndex | None = None
        self.on_open: Callable[[], object] | None = None  # the store's check of Chroma

    def _writes(self) -> ChromaIndex:
        if self._chroma is None:
            self._chroma = self._open_chroma()
            if self.on_open is not None and not self._db.read_only:
                self.on_open()
        return self._chroma

    def nearest(self, query: np.ndarray, k: int, paths: Collection[str] | None) -> list[Neighbour]:
        return self._matrix.neighbours(self._db, query, k, paths)

    def made_from(self, ids: Sequence[str]) -> dict[str, str]:
        return {}  # every neighbour says what it was made from

    def upsert(self, entries: Sequence[VectorEntry]) -> None:
        if entries:  # nothing to write: Chroma need not be opened for it
            self._writes().upsert(entries)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._writes().delete(ids)

    def opened(self) -> bool:
        return self._chroma is not None and self._chroma.opened()

    def count(self) -> int:
        return self._writes().count()

    def ids(self) -> set[str]:
        return self._writes().ids()

    def holds_all(self, ids: Sequence[str]) -> bool:
        return self._writes().holds_all(ids)

    def rebuild(self, batches: Iterable[Sequence[VectorEntry]]) -> int:
        return self._writes().rebuild(batches)

    def reset(self) -> None:
        self._writes().reset()
