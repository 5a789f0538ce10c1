"""The vector index in Chroma: a persistent collection in the store folder (`chroma/`), or
a collection on a Chroma server (`kb.chroma.url`), in cosine space.

Which collection is the live one is recorded in the store's `meta` (`collection`): a
rebuild (or a new embedder) builds a new collection beside the live one and switches
`meta` to it when it is complete, so readers — threads of this process, or another
process that opened the store read-only — always find a whole collection; they look the
name up again when it changed, or when the collection they hold was dropped under them.
Each vector carries `path` and `text_hash` metadata (the text it was made from).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.outage import StoreUnavailable
from kb_lsp.engine.store.vectors import Neighbour, VectorEntry

log = logging.getLogger("kb_lsp.engine.store")

# `meta` key naming the live Chroma collection (absent: the first one, `kb_<dir>`).
LIVE_COLLECTION = "collection"
_COSINE = {"hnsw:space": "cosine"}


class ChromaIndex:
    """Implements `VectorIndex`. A reader's collection is None until the writer made one."""

    filters_cheaply = False  # a `$in` over thousands of paths is slow in Chroma

    def __init__(self, db: Database, url: str | None) -> None:
        self._db = db
        self._client = _client(db, url)
        self._max_batch = int(self._client.get_max_batch_size())
        name = self.live_name()
        self._collection: Any | None
        if db.read_only:
            self._collection = self._get(name)
        else:
            self._collection = self._client.get_or_create_collection(
                name, metadata=_COSINE, embedding_function=None
            )

    # --- which collection ------------------------------------------------------------------

    def _first_name(self) -> str:
        return "kb_" + self._db.directory.name

    def live_name(self) -> str:
        return self._db.get_meta(LIVE_COLLECTION) or self._first_name()

    def collection_names(self) -> list[str]:
        return [c.name for c in self._client.list_collections()]

    def _get(self, name: str) -> Any | None:
        try:
            return self._client.get_collection(name, embedding_function=None)
        except Exception:  # not there (yet, or any more)
            return None

    def _live(self, *, again: bool = False) -> Any | None:
        """The live collection for a reader: a rebuild (here or in the process that
        writes) may have switched it since this store last looked. `again`: look it up
        even when the name did not change (the one held failed)."""
        current = self._collection
        name = self.live_name()
        if current is not None and current.name == name and not again:
            return current
        fresh = self._get(name)
        if fresh is not None:
            self._collection = fresh
            return fresh
        return current

    def _new(self) -> Any:
        name = f"{self._first_name()}_{uuid.uuid4().hex[:8]}"
        return self._client.get_or_create_collection(
            name, metadata=_COSINE, embedding_function=None
        )

    def _switch(self, collection: Any) -> None:
        old = self._collection
        with self._db.writer() as db:
            self._db.set_meta(db, LIVE_COLLECTION, collection.name)
        self._collection = collection
        if old is not None and old.name != collection.name:
            try:
                self._client.delete_collection(old.name)
            except Exception as err:  # gone already: nothing to drop
                log.debug("dropping the collection %s: %s", old.name, err)

    # --- VectorIndex -----------------------------------------------------------------------

    def nearest(self, query: np.ndarray, k: int, paths: Collection[str] | None) -> list[Neighbour]:
        # No `collection.count()` first (2 ms a query): Chroma returns what it has when
        # asked for more, and nothing from an empty collection.
        vector = np.asarray(query, dtype=np.float32).tolist()
        where: dict[str, Any] | None = None
        if paths is not None:
            wanted = list(dict.fromkeys(paths))
            if not wanted:
                return []
            where = {"path": {"$in": wanted}} if len(wanted) > 1 else {"path": wanted[0]}
        try:
            return self._query(self._live(), vector, k, where)
        except Exception:
            # A rebuild switched collections and dropped the one this reader held: the
            # live one is named in meta by then.
            with _unavailable("search"):
                return self._query(self._live(again=True), vector, k, where)

    @staticmethod
    def _query(
        collection: Any | None, vector: list[float], k: int, where: dict[str, Any] | None
    ) -> list[Neighbour]:
        if collection is None:
            return []
        # Distances only: reading the hits' metadata back was half of Chroma's time (the
        # store knows each chunk's path and text; `made_from` asks for the rest).
        result = collection.query(
            query_embeddings=[vector], n_results=k, where=where, include=["distances"]
        )
        return [
            Neighbour(str(cid), 1.0 - float(distance))
            for cid, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    def made_from(self, ids: Sequence[str]) -> dict[str, str]:
        if not ids or self._collection is None:
            return {}
        # An id being upserted or deleted may have no metadata: unknown.
        got = self._collection.get(ids=list(ids), include=["metadatas"])
        return {
            str(cid): str(meta.get("text_hash", ""))
            for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=False)
            if meta
        }

    def upsert(self, entries: Sequence[VectorEntry]) -> None:
        if entries:
            with _unavailable("store vectors in"):
                self._upsert_into(self._collection, entries)

    def _upsert_into(self, collection: Any, entries: Sequence[VectorEntry]) -> None:
        for start in range(0, len(entries), self._max_batch):
            part = entries[start : start + self._max_batch]
            collection.upsert(
                ids=[e.chunk_id for e in part],
                embeddings=[np.asarray(e.vector, dtype=np.float32).tolist() for e in part],
                metadatas=[{"path": e.path, "text_hash": e.text_hash} for e in part],
            )

    def delete(self, ids: Sequence[str]) -> None:
        if not ids or self._collection is None:
            return
        with _unavailable("delete vectors from"):
            for start in range(0, len(ids), self._max_batch):
                self._collection.delete(ids=list(ids[start : start + self._max_batch]))

    def opened(self) -> bool:
        return self._collection is not None

    def count(self) -> int:
        return 0 if self._collection is None else int(self._collection.count())

    def ids(self) -> set[str]:
        present: set[str] = set()
        offset = 0
        while self._collection is not None:
            page = self._collection.get(include=[], limit=self._max_batch, offset=offset)
            if not page["ids"]:
                break
            present.update(page["ids"])
            offset += len(page["ids"])
        return present

    def holds_all(self, ids: Sequence[str]) -> bool:
        if not ids or self._collection is None:
            return not ids
        return len(self._collection.get(ids=list(ids), include=[])["ids"]) == len(ids)

    def rebuild(self, batches: Iterable[Sequence[VectorEntry]]) -> int:
        collection = self._new()
        written = 0
        for entries in batches:
            if entries:
                self._upsert_into(collection, entries)
                written += len(entries)
        self._switch(collection)
        return written

    def reset(self) -> None:
        self._switch(self._new())


@contextmanager
def _unavailable(doing: str) -> Iterator[None]:
    """Chroma failing (its files, its server, its own errors: chromadb raises many types)
    as the contract's `Unavailable`, at this boundary."""
    try:
        yield
    except Exception as err:
        raise StoreUnavailable(
            f"Cannot {doing} the vector index (Chroma: {type(err).__name__}: {err}). "
            "Keyword search still works; if it persists, rebuild the index."
        ) from err


def _client(db: Database, url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        from urllib.parse import urlparse

        parsed = urlparse(url)
        return chromadb.HttpClient(
            host=parsed.hostname or "localhost",
            port=parsed.port or (443 if parsed.scheme == "https" else 8000),
            ssl=parsed.scheme == "https",
            settings=settings,
        )
    return chromadb.PersistentClient(path=str(db.directory / "chroma"), settings=settings)
