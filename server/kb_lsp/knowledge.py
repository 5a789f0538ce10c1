"""The knowledge base of a workspace: its roots, their stores, one indexer, one searcher.

This is the facade the front ends use (`lsp/`, `cli.py`, `agent/`). It owns one
`RootIndex` per workspace folder (each with its own store under
`<storage>/<sha of root>/`) and answers for all of them at once.

Threading: `sync` is the single writer and must be called from one thread at a time
(the LSP layer runs it on its indexing worker); `search`, `status`, `chunks_of` and the
summary cache are readers and may be called from any thread while a sync runs — they see
what is committed so far and never wait for the writer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.embeddings import Embedder
from kb_lsp.protocol import IndexStatus, LlmStatus, SearchHit, SearchMode


@dataclass(frozen=True)
class SyncProgress:
    """Reported to the progress callback as files are processed."""

    done: int  # files processed so far in this sync
    total: int  # files to process in this sync (changed + new + removed)
    path: str | None  # the file just processed, workspace-relative


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


class KnowledgeBase:
    """All roots of one workspace. See the module docstring for the threading rules.

    Paths: with one root, a file's path is relative to it (`payments/mexico.md`); with
    several roots it is prefixed with the root folder's name (`wiki/payments/mexico.md`),
    as VS Code shows multi-root paths. `resolve` accepts either form.
    """

    def __init__(
        self,
        roots: Iterable[Path],
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        storage: Path | None = None,
    ) -> None:
        raise NotImplementedError

    roots: list[Path]
    settings: Settings
    read_only: bool  # True when another process holds a store's writer lock

    def add_root(self, root: Path) -> None: ...
    def remove_root(self, root: Path) -> None: ...

    def sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        progress: Callable[[SyncProgress], None] | None = None,
        cancel: threading.Event | None = None,
        full: bool = False,
    ) -> SyncReport:
        """Bring the index in line with the disk: every root (`paths=None`) or only the given
        absolute paths (files or folders; ones that no longer exist are removed). `full`
        re-embeds everything. Raises `ReadOnlyStore` in read-only mode."""
        raise NotImplementedError

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """The numbered list (n = 1..), best first, grouped by file, thresholded."""
        raise NotImplementedError

    def search_in_file(self, path: str, query: str, *, limit: int = 5) -> list[SearchHit]:
        """The best passages of one file (one hit per chunk, not grouped)."""
        raise NotImplementedError

    def status(self, *, pending: int = 0, llm: LlmStatus | None = None) -> IndexStatus:
        raise NotImplementedError

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        """Indexed files, optionally filtered by a glob on the path."""
        raise NotImplementedError

    def file_info(self, path: str) -> FileInfo | None:
        raise NotImplementedError

    def chunks_of(self, path: str) -> list[StoredChunk]:
        raise NotImplementedError

    def resolve(self, path: str) -> Path:
        """The real absolute path of a workspace path; raises `PathOutsideWorkspace`
        (from `workspace.py`) for `..`, absolute paths or symlinks leading out."""
        raise NotImplementedError

    def display_path(self, absolute: Path) -> str | None:
        """The workspace path of an absolute path, or None when it is outside every root."""
        raise NotImplementedError

    def cached_summary(self, path: str, model: str) -> str | None:
        """A summary stored for this file's current content hash and `model`."""
        raise NotImplementedError

    def store_summary(self, path: str, model: str, summary: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release the writer lock and close the stores."""
        raise NotImplementedError
