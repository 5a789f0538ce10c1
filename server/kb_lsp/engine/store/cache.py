"""Every embedding a store made, by the hash of the text it was made from: an unchanged
paragraph, a renamed file or a moved folder costs no embedding, and the vector index can
be rebuilt (or searched exactly, `exact.py`) without the model."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kb_lsp.engine.store.db import Database


class VectorCache:
    def __init__(self, db: Database, dimension: int) -> None:
        self._db = db
        self.dimension = dimension

    def get(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """text hash -> its cached vector, for those cached (of this embedder's size)."""
        found: dict[str, np.ndarray] = {}
        rows = self._db.select_in(
            "SELECT text_hash, embedding FROM vectors WHERE text_hash IN ({marks})", text_hashes
        )
        for text_hash, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] == self.dimension:
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
                (
                    (digest, np.asarray(vector, dtype=np.float32).tobytes())
                    for digest, vector in vectors.items()
                ),
            )

    def forget_unused(self) -> None:
        """Drop cached vectors no chunk uses any more (after a sync, not during one)."""
        with self._db.writer() as db:
            db.execute(
                "DELETE FROM vectors WHERE text_hash NOT IN (SELECT text_hash FROM chunks) "
                "AND text_hash NOT IN "
                "(SELECT card_hash FROM note_cards WHERE card_hash IS NOT NULL)"
            )
