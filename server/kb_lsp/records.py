"""Plain records shared by the engine's modules and its front ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from kb_lsp.protocol import IndexPhase


@dataclass(frozen=True)
class SyncProgress:
    """Reported to the progress callback as files are processed (and, inside big files,
    as their chunks are embedded). Totals are fixed when the sync has counted its work."""

    done: int  # files processed so far in this sync
    total: int  # files to process in this sync (changed + new + removed)
    path: str | None  # the file just processed, workspace-relative
    # "scanning" (counting), "keyword" (text and FTS rows), "vectors" (embeddings); a
    # sync that does both per file reports "vectors".
    phase: IndexPhase = "vectors"
    chunks_done: int = 0  # chunks written so far in this sync
    chunks_total: int = 0  # chunks known so far (grows as files are read)


@dataclass
class SyncReport:
    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_unchanged: int = 0
    chunks_embedded: int = 0  # chunks whose vectors were computed in this sync
    chunks_reused: int = 0  # chunks whose vectors came from the store (same text hash)
    chunks_removed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    cancelled: bool = False
    errors: list[str] = field(default_factory=list)


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


class ReadOnlyStore(RuntimeError):
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
