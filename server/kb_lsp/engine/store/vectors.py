"""The vector index port: where a store keeps its chunk vectors and asks for neighbours.

The store owns the manifest, the vector cache and the life cycle of embeddings (which
vectors are written when, what a crash left behind, when to rebuild: `upkeep.py`); an
index owns only vector persistence and nearest-neighbour lookup (the split of
basic-memory's vector port). Two implementations: `chroma.py` (a persistent or server
Chroma collection, HNSW) and `exact.py` (one matrix product over the vectors SQLite
caches, for one-shot processes, writing to Chroma only when it must).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class VectorHit:
    """A chunk a vector search found, resolved to its file."""

    chunk_id: str
    path: str
    similarity: float  # cosine similarity, 1 - Chroma's cosine distance
    text_hash: str = (
        ""  # of the text the vector was made from (may be stale: `StoreWriter.write_texts`)
    )


@dataclass(frozen=True)
class VectorEntry:
    chunk_id: str
    path: str
    text_hash: str  # of the text the vector was made from
    vector: np.ndarray


@dataclass(frozen=True)
class Neighbour:
    chunk_id: str
    similarity: float  # cosine similarity
    text_hash: str | None = None  # what its vector was made from, when the index knows it


class VectorIndex(Protocol):
    """The port: search, what a vector was made from, writes. A team index behind it
    also shares vectors with the other members (`team.py`)."""

    # True: `nearest` restricts to `paths` as cheaply as it searches everything (the
    # store then passes them on); False: the store over-fetches first (`nearest.py`).
    filters_cheaply: bool

    def nearest(self, query: np.ndarray, k: int, paths: Collection[str] | None) -> list[Neighbour]:
        """The `k` vectors most similar to `query`, among the chunks of `paths` if given."""
        ...

    def made_from(self, ids: Sequence[str]) -> dict[str, str]:
        """id -> the text hash its stored vector was made from ("" or absent: unknown)."""
        ...

    def upsert(self, entries: Sequence[VectorEntry]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...


class Reconciler(Protocol):
    """What the store's upkeep (`upkeep.py`) asks of an index besides the port: whether
    it is open, what it holds, a rebuild and a reset. The store's readers and its writer
    never see these (`store_reader.py`, `writer.py`)."""

    def opened(self) -> bool:
        """Whether the index's storage is open (an exact index opens Chroma only to write);
        upkeep leaves an unopened one alone."""
        ...

    def count(self) -> int: ...

    def ids(self) -> set[str]: ...

    def holds_all(self, ids: Sequence[str]) -> bool: ...

    def rebuild(self, batches: Iterable[Sequence[VectorEntry]]) -> int:
        """A new index from `batches`, built beside the live one and switched to when
        complete (readers keep answering from the old one until then); returns its size."""
        ...

    def reset(self) -> None:
        """Start empty (a new embedder: the old vectors are useless)."""
        ...


class ReconciledIndex(VectorIndex, Reconciler, Protocol):
    """An index with its reconciler: what `indexes.open_index` gives the store."""
