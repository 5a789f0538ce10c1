"""A chunk on its way into the store, and what the vector side reads of a stored one: the
rows of a write and of the vectors' upkeep, apart from `chunks.py`, which a reader of the
store (a one-shot keyword search) loads without either."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NewChunk:
    """A chunk on its way into the store (its vector follows in phase 2)."""

    index: int
    text: str
    text_hash: str
    heading: str
    start_line: int
    end_line: int
    stems: str | None = None  # `terms.stems_text`; None: the store computes it
    blocks: str | None = None  # `snippets.blocks_text`; None: the store computes it


@dataclass(frozen=True)
class IndexedChunk:
    """What the vector index's upkeep and its searches need of a chunk row."""

    path: str
    text_hash: str
    complete: bool  # its file is "ok": every vector of its current text is in the index
