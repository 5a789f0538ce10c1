"""A team index: the store's vectors shared with every workstation that has the same notes
(`kb.chroma.url` + `kb.chroma.collection`; docs/team-index.md).

The shared collection holds vectors by text hash (`shared.py`); everything else stays in
the store: the manifest, chunks, FTS5 (keyword search ranks as it does alone), metadata,
and the vector cache, which holds every vector of this member's chunks whichever member
embedded it. So `TeamIndex`, the `VectorIndex` of such a store:

* searches exactly over the cached vectors (`exact.py`), in every process kind: it finds
  this member's chunks of this member's text, never a vector of another member's version
  of a file, needs no round trip, and keeps answering while the server is down;
* writes by text hash: `upsert` puts the vectors the server does not hold yet; `delete`
  deletes nothing (another member may hold the same text); `reset` and `rebuild` leave
  the collection where it is (the collection is per embedder, checked on connecting);
* is "holding" a chunk when the server holds its text hash: `upkeep.repair`, once this
  process reached the server, puts back what the server lost (a dropped collection is
  refilled from the members' caches, with no embedding).

Phase 2 asks the team before the model (`StoreWriter.from_team`): the local cache first,
then the server, then the embedder; what it embeds goes to the server with the file's
upsert. A file is `ok` when its vectors are cached and on the server; while the server
cannot be reached they stay cached (and searched) and the file stays pending, so the
next sync sends them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.exact import ExactVectors
from kb_lsp.engine.store.shared import SharedVectors, TeamUnavailable
from kb_lsp.engine.store.vectors import Neighbour, VectorEntry

log = logging.getLogger("kb_lsp.engine.store")

__all__ = ["TeamIndex", "TeamUnavailable"]


class TeamIndex:
    """Implements `VectorIndex` and its `Reconciler` over a team collection (the module
    doc), and holds the collection: the store reaches the team only through it."""

    filters_cheaply = True

    def __init__(self, db: Database, dimension: int, shared: SharedVectors) -> None:
        self._db = db
        self._matrix = ExactVectors(dimension)
        self.shared = shared

    def nearest(self, query: np.ndarray, k: int, paths: Collection[str] | None) -> list[Neighbour]:
        return self._matrix.neighbours(self._db, query, k, paths)

    def made_from(self, ids: Sequence[str]) -> dict[str, str]:
        return {}  # every neighbour says what it was made from

    def upsert(self, entries: Sequence[VectorEntry]) -> None:
        self.shared.put({e.text_hash: e.vector for e in entries})

    def delete(self, ids: Sequence[str]) -> None:
        """Nothing: a text this member no longer has may be another member's."""

    def opened(self) -> bool:
        """Once this process reached the server: the store's repair waits until then, as
        it does for an exact index's Chroma (`kb search` with nothing to send sends nothing)."""
        return self.shared.connected

    def count(self) -> int:
        return len(self.ids())

    def ids(self) -> set[str]:
        """This store's chunk ids whose text the server holds."""
        rows = [(str(cid), str(h)) for cid, h in self._db.reader().execute(_CHUNKS)]
        present = self.shared.present({h for _, h in rows})
        return {cid for cid, h in rows if h in present}

    def holds_all(self, ids: Sequence[str]) -> bool:
        rows = self._db.select_in(_CHUNKS + " WHERE id IN ({marks})", ids)
        hashes = {str(h) for _, h in rows}
        return len(self.shared.present(hashes)) == len(hashes)

    def rebuild(self, batches: Iterable[Sequence[VectorEntry]]) -> int:
        """This member's vectors onto the server again (the collection stays: it is the
        team's); returns how many it holds of them."""
        written = 0
        for entries in batches:
            self.upsert(entries)
            written += len(entries)
        return written

    def reset(self) -> None:
        """Nothing: the collection holds one embedder's vectors, checked on connecting."""

    # --- the team's side: what the writer shares and fetches -----------------------------

    def fetch(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors the server holds of `hashes` (another member embedded them);
        raises `TeamUnavailable`."""
        return self.shared.fetch(hashes)

    def share(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Vectors no chunk id stands for (note cards) onto the server, for the others."""
        self.shared.put(vectors)

    @property
    def problem(self) -> str | None:
        """Why the server could not be used last time; None when it could."""
        return self.shared.problem

    def close(self) -> None:
        self.shared.close()


_CHUNKS = "SELECT id, text_hash FROM chunks"
