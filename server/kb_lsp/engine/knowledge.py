"""The knowledge base of a workspace: its roots, the one sync over them, and what they
answer — the facade the front ends use (`lsp/`, `cli/`, `agent/`).

Its parts, each a module of its own: `roots.py` (one `RootIndex` per workspace folder,
each with its own store under `<storage>/<sha of root>/`, and the workspace paths that
name their files), `sync.py` (the sync), `queries.py` (search and the other reads of the
index), `file_reads.py` (the indexed files and one file's record, text and summary),
`index_status.py` (the status). The methods here hand each call to its part; the
seldom-used reads are on `queries` and `file_reads` themselves.

Threading: `sync` is the single writer and must be called from one thread at a time
(the LSP layer runs it on its indexing worker); `search`, `status`, `chunks_of` and the
summary cache are readers and may be called from any thread while a sync runs — they see
what is committed so far and never wait for the writer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.embed.providers import make_embedder
from kb_lsp.engine.file_reads import FileInfo, FileReads
from kb_lsp.engine.index.extraction import MetadataPhase
from kb_lsp.engine.index.reports import SyncProgress, SyncReport
from kb_lsp.engine.index_status import index_status
from kb_lsp.engine.metadata.schema import TOP_VALUES
from kb_lsp.engine.queries import Queries
from kb_lsp.engine.records import ReadOnlyStore, StoredChunk
from kb_lsp.engine.related import NotIndexed
from kb_lsp.engine.roots import Roots
from kb_lsp.engine.search import Searcher
from kb_lsp.engine.storage import default_storage as default_storage  # its home before storage.py
from kb_lsp.engine.sync import WorkspaceSync
from kb_lsp.protocol import IndexStatus, LlmStatus, SchemaResponse, SearchHit, SearchMode

__all__ = [
    "FileInfo",
    "KnowledgeBase",
    "NotIndexed",
    "ReadOnlyStore",
    "StoredChunk",
    "SyncProgress",
    "SyncReport",
]


def model_cache() -> Path:
    """Where the packaged model's int8 copy is kept (`int8_copy.py`): `$KB_MODEL_CACHE`,
    else `$XDG_CACHE_HOME/kb-lsp/models`. Per user, not per store: the editor gives every
    workspace its own storage folder, and the copy depends only on the model and the
    onnxruntime version, so it is made once per machine."""
    if os.environ.get("KB_MODEL_CACHE"):
        return Path(os.environ["KB_MODEL_CACHE"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kb-lsp" / "models"


class KnowledgeBase:
    """All roots of one workspace. See the module docstring for the threading rules and
    `roots.py` for the paths (a root's folder name prefixes them when there are several).
    """

    def __init__(
        self,
        roots: Iterable[Path],
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        storage: Path | None = None,
        exact_vectors: bool = False,
    ) -> None:
        """`exact_vectors`: for a one-shot process, search vectors without Chroma
        (`Store`)."""
        self.settings = settings
        self.storage = storage if storage is not None else default_storage(settings)
        self.embedder = embedder if embedder is not None else make_embedder(settings, model_cache())
        self.searcher = Searcher(self.embedder)
        self.metadata_phase = MetadataPhase(settings)
        self._roots = Roots(settings, self.embedder, self.storage, exact_vectors=exact_vectors)
        self._sync = WorkspaceSync(self.metadata_phase)
        self.file_reads = FileReads(self._roots)
        self.queries = Queries(self._roots, lambda: self.searcher, self.file_reads, settings)
        for root in roots:
            self.add_root(root)

    def use_settings(self, settings: Settings) -> None:
        """Settings that apply without reopening (the search threshold) take effect now.
        The rest (roots' file rules, chunking, the embedder, the store) were fixed when
        the knowledge base was opened."""
        self.settings = settings
        self._roots.settings = settings
        self.queries.settings = settings
        self.metadata_phase.use_settings(settings)

    # --- roots -----------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        return [index.root for index in self._roots.snapshot()]

    @property
    def read_only(self) -> bool:
        return any(index.store.read_only for index in self._roots.snapshot())

    def store_folders(self) -> dict[Path, bool]:
        """Each root's store folder, and whether it was opened read-only."""
        return {i.store.directory: i.store.read_only for i in self._roots.snapshot()}

    def add_root(self, root: Path) -> None:
        self._roots.add(root)

    def remove_root(self, root: Path) -> None:
        self._roots.remove(root)

    def display_path(self, absolute: Path) -> str | None:
        """The workspace path of an absolute path, or None when it is outside every root."""
        return self._roots.display_path(absolute)

    # --- writing ---------------------------------------------------------------------------

    def sync(
        self,
        paths: Iterable[Path] | None = None,
        *,
        progress: Callable[[SyncProgress], None] | None = None,
        cancel: threading.Event | None = None,
        full: bool = False,
        extract: bool = False,
        yield_to: threading.Event | None = None,
        first: Iterable[Path] = (),
    ) -> SyncReport:
        """Bring the index in line with the disk: every root (`paths=None`) or only the given
        absolute paths (files or folders; ones that no longer exist are removed). `full`
        re-embeds everything. `extract`: then the model's metadata of every note not
        extracted yet (`index/extraction.py`), stopping at once when `yield_to` is set
        (other work waits). `first`: files (absolute paths: those open in the editor) whose
        vectors come before the others'. Raises `ReadOnlyStore` in read-only mode."""
        return self._sync.run(
            self._roots.snapshot(),
            paths,
            progress=progress,
            cancel=cancel,
            full=full,
            extract=extract,
            yield_to=yield_to,
            first=first,
        )

    def store_summary(self, path: str, model: str, summary: str) -> None:
        self.file_reads.store_summary(path, model, summary)

    # --- reading ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
        filter: str | None = None,
    ) -> list[SearchHit]:
        """The numbered list (n = 1..), best first, grouped by file, thresholded.

        `filter` (the metadata filter language) and any filter typed in `query` itself
        (`payments tag:runbook`) keep files before ranking; a query that is only a filter
        lists the files it keeps, most recently modified first. Raises `FilterError`
        (a `ValueError` with the offending character) for a malformed filter.
        """
        return self.queries.search(query, limit=limit, paths=paths, mode=mode, filter=filter)

    def did_you_mean(
        self,
        query: str,
        filter: str | None = None,
        *,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
    ) -> str | None:
        """`query` with each word the index does not know replaced by one it does, such
        that the same search lists something (`search/spelling.py`), or None."""
        return self.queries.did_you_mean(query, filter, paths=paths, mode=mode)

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks of every root hold each term (`queries.py`)."""
        return self.queries.term_counts(terms)

    def field_names(self) -> set[str]:
        """Every metadata field some indexed file has."""
        return self.queries.field_names()

    def schema(self, top: int = TOP_VALUES, *, extracted: bool = False) -> SchemaResponse:
        """The metadata fields of every root: types, file counts, frequent values, kept
        and rejected extracted values per model; `extracted`: also every note's
        extracted values, kept (with their spans) and rejected (with the reasons)."""
        return self.queries.schema(top, extracted=extracted)

    def search_in_file(self, path: str, query: str, *, limit: int = 5) -> list[SearchHit]:
        """The best passages of one file (one hit per chunk, not grouped)."""
        return self.queries.search_in_file(path, query, limit=limit)

    def related(
        self, path: str, *, limit: int = 10, exclude_linked: bool = False
    ) -> list[SearchHit]:
        """The files nearest to `path` by meaning, from stored vectors (`related.py`):
        numbered, best first, without the file itself and, with `exclude_linked`, without
        the files it links to. Raises `NotIndexed` for a file that is not in the index and
        `PathOutsideWorkspace` for a path outside every root."""
        return self.queries.related(path, limit=limit, exclude_linked=exclude_linked)

    def status(self, *, pending: int = 0, llm: LlmStatus | None = None) -> IndexStatus:
        return index_status(
            self._roots.snapshot(),
            self._sync,
            self.metadata_phase,
            self.settings,
            embedder=self.embedder.identity,
            storage=self.storage,
            pending=pending,
            llm=llm,
        )

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        """Indexed files, optionally filtered by a glob on the path."""
        return self.file_reads.files(pattern)

    def file_info(self, path: str) -> FileInfo | None:
        return self.file_reads.file_info(path)

    def chunks_of(self, path: str) -> list[StoredChunk]:
        return self.file_reads.chunks_of(path)

    def resolve(self, path: str) -> Path:
        """The real absolute path of a workspace path; raises `PathOutsideWorkspace`
        (from `workspace.py`) for `..`, absolute paths or symlinks leading out."""
        return self.file_reads.resolve(path)

    def read_text(self, path: str) -> str:
        """The text of a workspace file as it is on disk now (`file_reads.py`)."""
        return self.file_reads.read_text(path)

    def cached_summary(self, path: str, model: str) -> str | None:
        """A summary stored for this file's current content hash and `model`."""
        return self.file_reads.cached_summary(path, model)

    def close(self) -> None:
        """Stop the query-embedding threads, release the writer lock, close the stores."""
        self.searcher.close()
        self._roots.close()
