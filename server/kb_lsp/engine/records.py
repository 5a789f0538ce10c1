"""Plain records shared by the engine's modules and its front ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb_lsp.errors import Unavailable

if TYPE_CHECKING:
    from kb_lsp.protocol import IndexPhase, IndexProgress


@dataclass(frozen=True)
class SyncProgress:
    """Reported to the progress callback as files are processed.

    Phase "keyword" (text, chunks, FTS rows: keyword search sees each file as it is
    done): `done`/`total` count changed, new and removed files. Phase "vectors" (the
    embeddings, in batches across files): `done`/`total` count files whose vectors are
    complete, `chunks_done`/`chunks_total` their chunks.
    """

    done: int
    total: int
    path: str | None  # the file just processed, workspace-relative
    phase: IndexPhase = "keyword"
    chunks_done: int = 0
    chunks_total: int = 0
    chunks_reused: int = 0  # of chunks_done: vectors from the cache or a team, not embedded

    def as_wire(self) -> IndexProgress:
        """The wire contract's `IndexStatus.progress` of this moment."""
        from kb_lsp.protocol import IndexProgress  # the wire models load only when asked for

        return IndexProgress(
            phase=self.phase,
            files_done=self.done,
            files_total=self.total,
            chunks_done=self.chunks_done,
            chunks_total=self.chunks_total,
            chunks_reused=self.chunks_reused,
        )


@dataclass
class SyncReport:
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_unchanged: int = 0
    chunks_embedded: int = 0  # chunks whose vectors were computed in this sync
    chunks_reused: int = 0  # chunks whose vectors came from the store (same text hash)
    chunks_shared: int = 0  # of those, vectors another member put on a team index
    chunks_removed: int = 0
    notes_extracted: int = 0  # notes a model read for their fields (cache misses)
    skipped: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    errors: list[str] = field(default_factory=list)
    team_error: str | None = None  # a team index could not be used: vectors wait here


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
