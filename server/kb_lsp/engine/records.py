"""Plain records shared by the engine's modules and its front ends: chunks, files and
vector hits as stored (a sync's own progress and report are `index/reports.py`'s)."""

from __future__ import annotations

from dataclasses import dataclass

from kb_lsp.errors import Unavailable


@dataclass(frozen=True)
class StoredChunk:
    """One chunk as stored: what the agent's tools read."""

    path: str  # workspace-relative, `/`-separated
    root: str  # absolute root path
    index: int
    text: str
    heading: str  # heading path joined with " > "
    start_line: int  # 0-based, inclusive
    end_line: int  # 0-based, inclusive
    text_hash: str = ""  # of what was embedded (heading path + text): finds its vector
    stems: str | None = None  # `terms.stems_text` of heading and text, when stored
    blocks: str | None = None  # `snippets.blocks_text` of its text, when stored


class ReadOnlyStore(Unavailable):
    """A write was attempted on a store another process holds the writer lock of."""


@dataclass(frozen=True)
class FileInfo:
    path: str  # workspace-relative (see `KnowledgeBase.display_path`)
    root: str  # absolute root path
    uri: str
    title: str
    chunks: int
    size: int
    sha256: str
    aliases: tuple[str, ...] = ()  # front-matter aliases: names people use for the file
    mtime_ns: int = 0  # of the indexed version (the manifest's), nanoseconds


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    path: str
    similarity: float  # cosine similarity, 1 - Chroma's cosine distance
    text_hash: str = (
        ""  # of the text the vector was made from (may be stale: `StoreWriter.write_texts`)
    )
