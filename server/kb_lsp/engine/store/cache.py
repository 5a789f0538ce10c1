"""Every embedding a store made, by the hash of the text it was made from: an unchanged
paragraph, a renamed file or a moved folder costs no embedding, and the vector index can
be rebuilt (or searched exactly, `exact.py`) without the model. Kept as int8
(`vector_codec.py`): this is the one copy the others derive from."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np

from kb_lsp.engine.store import vector_codec
from kb_lsp.engine.store.db import Database

log = logging.getLogger("kb_lsp.engine.store")

# `meta` key: the cache holds int8 vectors only (an older store's float32 ones narrowed).
_FORMAT = "vector_format"
_INT8 = "int8"
_BATCH = 2048


class VectorCache:
    def __init__(self, db: Database, dimension: int) -> None:
        self._db = db
        self.dimension = dimension
        if not db.read_only:  # the writer's opening
            self.narrow_old_vectors()

    def get(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """text hash -> its cached vector, for those cached (of this embedder's size)."""
        found: dict[str, np.ndarray] = {}
        rows = self._db.select_in(
            "SELECT text_hash, embedding FROM vectors WHERE text_hash IN ({marks})", text_hashes
        )
        for text_hash, blob in rows:
            vector = vector_codec.decode(blob, self.dimension)
            if vector is not None:
                found[text_hash] = vector
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        """Cache new embeddings by text hash (before they go to the vector index: a crash
        in between costs no second embedding)."""
        if not vectors:
            return
        with self._db.writer() as db:
            db.executemany(
                "INSERT OR IGNORE INTO vectors(text_hash, embedding) VALUES (?, ?)",
                ((digest, vector_codec.encode(vector)) for digest, vector in vectors.items()),
            )

    def forget_unused(self) -> None:
        """Drop cached vectors no chunk uses any more (after a sync, not during one)."""
        with self._db.writer() as db:
            db.execute(
                "DELETE FROM vectors WHERE text_hash NOT IN (SELECT text_hash FROM chunks) "
                "AND text_hash NOT IN "
                "(SELECT card_hash FROM note_cards WHERE card_hash IS NOT NULL)"
            )

    def narrow_old_vectors(self) -> int:
        """Rewrite the float32 vectors a store made before int8 (once: the first opening by
        a writer), then give the space back to the file system (and what the text's move
        freed, `text_format`). Returns how many."""
        narrowed = 0 if self._db.get_meta(_FORMAT) == _INT8 else self._narrow()
        if narrowed or self._db.needs_compaction:
            self._db.vacuum()
            self._db.needs_compaction = False
        return narrowed

    def _narrow(self) -> int:
        width = 4 * self.dimension
        select = "SELECT text_hash, embedding FROM vectors WHERE length(embedding) = ? LIMIT ?"
        narrowed = 0
        while True:
            rows = self._db.reader().execute(select, (width, _BATCH)).fetchall()
            if rows and not narrowed:
                log.info("Storing the vectors of %s as int8 (once)", self._db.directory)
            with self._db.writer() as db:
                db.executemany(
                    "UPDATE vectors SET embedding = ? WHERE text_hash = ?",
                    (
                        (vector_codec.encode(np.frombuffer(blob, dtype=np.float32)), digest)
                        for digest, blob in rows
                    ),
                )
                if len(rows) < _BATCH:
                    self._db.set_meta(db, _FORMAT, _INT8)
            narrowed += len(rows)
            if len(rows) < _BATCH:
                return narrowed
