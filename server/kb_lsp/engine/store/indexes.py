"""Which `VectorIndex` a store uses (`vectors.py`), from the settings and the process kind:
a team index when `kb.chroma.url` and `kb.chroma.collection` are set (`team.py`), else an
exact index for a one-shot process (`exact.py`), else Chroma (`chroma.py`)."""

from __future__ import annotations

from collections.abc import Callable

from kb_lsp.config import ChromaSettings
from kb_lsp.engine.store.chroma import ChromaIndex
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.exact import ExactIndex
from kb_lsp.engine.store.shared import SharedVectors
from kb_lsp.engine.store.team import TeamIndex
from kb_lsp.engine.store.vectors import ReconciledIndex


def open_index(
    db: Database,
    dimension: int,
    embedder: str,
    chroma: ChromaSettings | None,
    exact: bool,
    on_open: Callable[[], object],
) -> ReconciledIndex:
    """The store's vector index (a team's holds its collection). `exact`: a one-shot
    process's; `on_open`: the store's check of Chroma, for an exact index that opens it
    only to write."""
    url = chroma.url if chroma is not None else None
    if url and chroma is not None and chroma.collection:
        shared = SharedVectors(url, chroma.collection, embedder=embedder, dimension=dimension)
        return TeamIndex(db, dimension, shared)
    if exact:
        index = ExactIndex(db, dimension, lambda: ChromaIndex(db, url))
        index.on_open = on_open
        return index
    return ChromaIndex(db, url)
