"""The knowledge base of a workspace: its roots, their stores, one indexer, one searcher.

This is the facade the front ends use (`lsp/`, `cli/`, `agent/`). It owns one
`RootIndex` per workspace folder (each with its own store under
`<storage>/<sha of root>/`) and answers for all of them at once.

Threading: `sync` is the single writer and must be called from one thread at a time
(the LSP layer runs it on its indexing worker); `search`, `status`, `chunks_of` and the
summary cache are readers and may be called from any thread while a sync runs — they see
what is committed so far and never wait for the writer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.embed.embeddings import Embedder
from kb_lsp.engine.embed.providers import make_embedder
from kb_lsp.engine.examples import IndexExamples, index_examples
from kb_lsp.engine.index.extraction import MetadataPhase
from kb_lsp.engine.index.indexer import Indexer
from kb_lsp.engine.index.sync_tally import SyncTally
from kb_lsp.engine.memory import release_free_memory
from kb_lsp.engine.metadata.filters import Node as FilterNode
from kb_lsp.engine.metadata.hints import merged_values, query_warnings
from kb_lsp.engine.metadata.hits import hit_meta
from kb_lsp.engine.metadata.schema import TOP_VALUES, build_schema, note_extractions
from kb_lsp.engine.records import (
    FileInfo,
    ReadOnlyStore,
    StoredChunk,
    SyncProgress,
    SyncReport,
)
from kb_lsp.engine.related import NotIndexed, outgoing_links, related_files
from kb_lsp.engine.search import Searcher, SearchSource
from kb_lsp.engine.search.query import parse_query, ranked
from kb_lsp.engine.search.spelling import did_you_mean
from kb_lsp.engine.storage import default_storage as default_storage  # its home before storage.py
from kb_lsp.engine.storage import store_dir_for
from kb_lsp.engine.store import TEAM_MEANWHILE, FileRecord, Store
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, WorkspaceRoot
from kb_lsp.globs import GlobList
from kb_lsp.protocol import (
    FileProblem,
    HitMeta,
    IndexProgress,
    IndexState,
    IndexStatus,
    LlmStatus,
    QueryWarning,
    SchemaResponse,
    SearchHit,
    SearchMode,
    SkippedFile,
)

__all__ = [
    "FileInfo",
    "KnowledgeBase",
    "NotIndexed",
    "ReadOnlyStore",
    "StoredChunk",
    "SyncProgress",
    "SyncReport",
]


class RootIndex:
    """One workspace folder: its file rules, its store and its indexer."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedder: Embedder,
        storage: Path,
        prefix: str,
        *,
        exact_vectors: bool = False,
    ) -> None:
        self.root = root.resolve()
        self.prefix = prefix
        self.workspace = WorkspaceRoot(self.root, settings)
        self.store = Store(
            store_dir_for(storage, self.root),
            root=self.root,
            embedder_identity=embedder.identity,
            dimension=embedder.dimension,
            chroma=settings.chroma,
            exact_vectors=exact_vectors,
        )
        self.indexer = Indexer(self.workspace, self.store, embedder, settings)
        self.source = SearchSource(self.store.reader, str(self.root), prefix)


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
        exact_vectors: bool = False,
    ) -> None:
        """`exact_vectors`: for a one-shot process, search vectors without Chroma
        (`Store`)."""
        self.settings = settings
        self._exact_vectors = exact_vectors
        self.storage = storage if storage is not None else default_storage(settings)
        self.embedder = embedder if embedder is not None else make_embedder(settings, model_cache())
        self.searcher = Searcher(self.embedder)
        self.metadata_phase = MetadataPhase(settings)
        self._roots: list[RootIndex] = []
        self._syncing = False
        self._progress: SyncProgress | None = None  # the running sync's latest step
        self._keyword_incomplete = False  # a sync stopped before its text phase ended
        self._lock = threading.Lock()  # guards the list of roots, not the stores
        for root in roots:
            self.add_root(root)

    def use_settings(self, settings: Settings) -> None:
        """Settings that apply without reopening (the search threshold) take effect now.
        The rest (roots' file rules, chunking, the embedder, the store) were fixed when
        the knowledge base was opened."""
        self.settings = settings
        self.metadata_phase.use_settings(settings)

    # --- roots -----------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        return [index.root for index in self._roots]

    @property
    def read_only(self) -> bool:
        return any(index.store.read_only for index in self._roots)

    def store_folders(self) -> dict[Path, bool]:
        """Each root's store folder, and whether it was opened read-only."""
        return {index.store.directory: index.store.read_only for index in self._snapshot()}

    def add_root(self, root: Path) -> None:
        root = root.resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"workspace folder {root} does not exist")
        with self._lock:
            if any(index.root == root for index in self._roots):
                return
            paths = [*self.roots, root]
            self._roots.append(
                RootIndex(
                    root,
                    self.settings,
                    self.embedder,
                    self.storage,
                    "",
                    exact_vectors=self._exact_vectors,
                )
            )
            self._reprefix(paths)

    def remove_root(self, root: Path) -> None:
        root = root.resolve()
        with self._lock:
            for index in [i for i in self._roots if i.root == root]:
                index.store.close()
                self._roots.remove(index)
            self._reprefix(self.roots)

    def _reprefix(self, paths: list[Path]) -> None:
        prefixes = _root_prefixes(paths)
        for index in self._roots:
            index.prefix = prefixes[index.root]
            index.source = SearchSource(index.store.reader, str(index.root), index.prefix)

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks of every root hold each term: the notes' vocabulary, stemmed
        as the index stems (what tells a follow-up question from a new one)."""
        counts: dict[str, int] = {}
        for index in self._snapshot():
            for term, chunks in index.store.reader.term_counts(terms).items():
                counts[term] = counts.get(term, 0) + chunks
        return counts

    def _snapshot(self) -> list[RootIndex]:
        with self._lock:
            return list(self._roots)

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
    ) -> SyncReport:
        """Bring the index in line with the disk: every root (`paths=None`) or only the given
        absolute paths (files or folders; ones that no longer exist are removed). `full`
        re-embeds everything. `extract`: then the model's metadata of every note not
        extracted yet (`index/extraction.py`), stopping at once when `yield_to` is set
        (other work waits). Raises `ReadOnlyStore` in read-only mode."""
        roots = self._snapshot()
        if any(index.store.read_only for index in roots):
            raise ReadOnlyStore(
                "this window opened the index read-only: another kb-lsp process is "
                "indexing this workspace; it stays current there"
            )
        started = time.monotonic()
        report = SyncReport()
        wanted = None if paths is None else [Path(p) for p in paths]

        def step(update: SyncProgress) -> None:
            self._progress = update
            if progress is not None:
                progress(update)

        self._syncing = True
        self._progress = SyncProgress(0, 0, None, "scanning")
        tally = SyncTally(step)
        try:
            # Every root is scanned before any is written, so the sync's total is known
            # once and never changes (`sync_tally.py`); then keyword search for every
            # root, then the vectors of every root.
            tally.scanning()
            plans = []
            in_sync: set[tuple[Path, str]] = set()
            for index in roots:
                mine = None
                if wanted is not None:
                    mine = [p for p in wanted if index.workspace.relative(p) is not None]
                    if not mine:
                        # Nothing to read here, but its pending vectors are finished below.
                        in_sync.update(
                            (index.root, r.path) for r in index.store.reader.pending_files()
                        )
                        continue
                plan = index.indexer.plan(mine, full=full)
                in_sync.update((index.root, path) for path in plan.files)
                plans.append((index, plan))
            tally.planned(len(in_sync), sum(plan.to_read for _, plan in plans))
            for index, plan in plans:
                index.indexer.write_texts(plan, tally=tally, cancel=cancel, report=report)
                if report.cancelled:
                    break
            self._keyword_incomplete = report.cancelled
            if not report.cancelled:
                pending = [(index, index.indexer.pending_files()) for index in roots]
                tally.vectors(
                    sum(len(files) for _, files in pending),
                    sum(r.chunk_count for _, files in pending for r in files),
                )
                for index, files in pending:
                    index.indexer.embed_pending(
                        files=files, tally=tally, cancel=cancel, report=report
                    )
                    if report.cancelled:
                        break
            if full and not report.cancelled:
                # The vector collection anew, beside the live one (`Store.rebuild_vectors`).
                for index in roots:
                    index.store.rebuild_vectors()
            if extract and not report.cancelled:
                self.metadata_phase.run(roots, tally, cancel, report, yield_to)
        finally:
            self._syncing = False
            self._progress = None
            release_free_memory()
        report.seconds = time.monotonic() - started  # what `kb index` prints
        return report

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
        parsed = parse_query(query, filter, self.field_names, examples=self._example)
        sources = [index.source for index in self._snapshot()]
        threshold = self.settings.search.threshold
        return ranked(
            self.searcher, sources, parsed, limit=limit, threshold=threshold, paths=paths, mode=mode
        )

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
        text, _ = self.parse_query(query, filter)

        def finds(suggested: str) -> bool:
            return bool(self.search(suggested, limit=1, paths=paths, mode=mode, filter=filter))

        return did_you_mean(query, text, [index.store.reader for index in self._snapshot()], finds)

    def query_warnings(self, query: str, filter: str | None = None) -> list[QueryWarning]:
        """What in `query` or `filter` looks mistyped (`metadata/hints.py`)."""
        roots = [
            (
                lambda term, i=index: bool(i.store.reader.filter_paths(term, i.prefix)),
                lambda field, fragment, limit, i=index: i.store.reader.values_containing(
                    field, fragment, limit
                ),
            )
            for index in self._snapshot()
        ]
        return query_warnings(query, filter, self.field_names, merged_values(roots))

    def parse_query(self, query: str, filter: str | None = None) -> tuple[str, FilterNode | None]:
        """The words of `query` and the filter (`filter` AND the one typed in `query`);
        an error's example is a term of this index (`examples.py`)."""
        parsed = parse_query(query, filter, self.field_names, examples=self._example)
        return parsed.text, parsed.filter

    def _example(self, name: str) -> str | None:
        return self.examples().term(name)

    def examples(self) -> IndexExamples:
        """Searches, questions and filter terms made from this index (`examples.py`)."""
        return index_examples(self.schema(), self.files())

    def field_names(self) -> set[str]:
        """Every metadata field some indexed file has."""
        names: set[str] = set()
        for index in self._snapshot():
            names |= index.store.reader.field_names()
        return names

    def schema(self, top: int = TOP_VALUES, *, extracted: bool = False) -> SchemaResponse:
        """The metadata fields of every root: types, file counts, frequent values, kept
        and rejected extracted values per model; `extracted`: also every note's
        extracted values, kept (with their spans) and rejected (with the reasons)."""
        roots = self._snapshot()
        files = sum(index.store.reader.file_count() for index in roots)
        schema = build_schema(
            files, [index.store.reader.field_summaries(top * 4) for index in roots], top
        )
        if extracted:
            schema.notes = [
                note
                for index in roots
                for note in note_extractions(index.prefix, index.store.reader.claims())
            ]
        return schema

    def search_in_file(self, path: str, query: str, *, limit: int = 5) -> list[SearchHit]:
        """The best passages of one file (one hit per chunk, not grouped)."""
        index, relative = self._locate(path)
        return self.searcher.passages(index.source, relative, query, limit=limit)

    def related(
        self, path: str, *, limit: int = 10, exclude_linked: bool = False
    ) -> list[SearchHit]:
        """The files nearest to `path` by meaning, from stored vectors (`related.py`):
        numbered, best first, without the file itself and, with `exclude_linked`, without
        the files it links to. Raises `NotIndexed` for a file that is not in the index and
        `PathOutsideWorkspace` for a path outside every root."""
        index, relative = self._locate(path)
        index.workspace.resolve_inside(relative)
        sources = [root.source for root in self._snapshot()]
        exclude: frozenset[tuple[str, str]] = frozenset()
        if exclude_linked:
            text = "\n\n".join(chunk.text for chunk in index.store.reader.chunks_of(relative))
            linked = outgoing_links(text, relative, index.store.reader.manifest())
            exclude = frozenset((index.source.root, p) for p in linked)
        return related_files(sources, index.source, relative, limit=limit, exclude=exclude)

    def _team_notes(self, roots: list[RootIndex]) -> list[str]:
        """What the status says of a team index that cannot be used (docs/team-index.md)."""
        chroma = self.settings.chroma
        if chroma.collection and not chroma.url:
            return ["kb.chroma.collection is set without kb.chroma.url: the index is local"]
        problems = {p for i in roots if (p := i.store.writer.team_problem)}
        return [f"{problem}; {TEAM_MEANWHILE}" for problem in sorted(problems)]

    def status(self, *, pending: int = 0, llm: LlmStatus | None = None) -> IndexStatus:
        roots = self._snapshot()
        files = chunks = ready = with_text = 0
        skipped: list[SkippedFile] = []
        problems: list[FileProblem] = []
        for index in roots:
            figures = index.store.figures()
            files += figures.files
            chunks += figures.chunks
            ready += figures.complete_chunks + index.indexer.vectors_in_flight
            with_text += figures.written_chunks
            skipped += [SkippedFile(path=index.prefix + p, reason=r) for p, r in figures.skipped]
            problems += [
                FileProblem(path=index.prefix + p.path, line=p.line, message=p.message)
                for p in figures.problems
            ]
        state: IndexState = "indexing" if self._syncing or pending else "ready"
        notes = self._team_notes(roots)
        if self.read_only:
            notes.insert(0, "read-only: another kb-lsp process is indexing this workspace")
        message = "; ".join(notes) or None
        return IndexStatus(
            state=state,
            files=files,
            chunks=chunks,
            pending=pending,
            embedder=self.embedder.identity,
            store=str(self.storage),
            llm=llm or LlmStatus(host=self.settings.ollama.host, model=self.settings.ollama.model),
            read_only=self.read_only,
            roots=[str(index.root) for index in roots],
            skipped=skipped,
            problems=problems,
            message=message,
            progress=self._index_progress(),
            keyword_complete=not self._keyword_incomplete
            and not (
                self._syncing
                and self._progress is not None
                and self._progress.phase not in ("vectors", "metadata")
            ),
            vectors_ready=min(1.0, ready / with_text) if with_text else 1.0,
            metadata=self.metadata_phase.status(roots),
        )

    def _index_progress(self) -> IndexProgress | None:
        step = self._progress
        if not self._syncing or step is None:
            return None
        return step.as_wire()

    def files(self, pattern: str | None = None) -> list[FileInfo]:
        """Indexed files, optionally filtered by a glob on the path."""
        spec = GlobList([pattern]) if pattern else None
        out = []
        for index in self._snapshot():
            records = [
                record
                for record in index.store.reader.manifest().values()
                if spec is None or spec.matches(index.prefix + record.path)
            ]
            cards = index.store.reader.cards(r.path for r in records)
            for record in records:
                card = cards.get(record.path)
                out.append(self._info(index, record, card.aliases if card else ()))
        return sorted(out, key=lambda info: info.path)

    def file_info(self, path: str) -> FileInfo | None:
        try:
            index, relative = self._locate(path)
        except PathOutsideWorkspace:
            return None
        record = index.store.reader.file(relative)
        if record is None:
            return None
        card = index.store.reader.cards([relative]).get(relative)
        return self._info(index, record, card.aliases if card else ())

    def file_meta(self, path: str) -> HitMeta | None:
        """A file's key metadata (tags, status, modified), as search hits carry it."""
        try:
            index, relative = self._locate(path)
        except PathOutsideWorkspace:
            return None
        if index.store.reader.file(relative) is None:
            return None
        return hit_meta(index.store.reader, [relative]).get(relative)

    def chunks_of(self, path: str) -> list[StoredChunk]:
        index, relative = self._locate(path)
        return [
            replace(chunk, path=index.prefix + chunk.path)
            for chunk in index.store.reader.chunks_of(relative)
        ]

    def resolve(self, path: str) -> Path:
        """The real absolute path of a workspace path; raises `PathOutsideWorkspace`
        (from `workspace.py`) for `..`, absolute paths or symlinks leading out."""
        index, relative = self._locate(path)
        return index.workspace.resolve_inside(relative)

    def read_text(self, path: str) -> str:
        """The text of a workspace file as it is on disk now, read from one confined
        descriptor (`WorkspaceRoot.read`: a regular file inside its root, within
        `kb.maxFileSize`). Raises `PathOutsideWorkspace` or `UnreadableFile`."""
        index, relative = self._locate(path)
        index.workspace.resolve_inside(relative)  # its message for `..` and absolute paths
        return index.workspace.read(relative)[1]

    def display_path(self, absolute: Path) -> str | None:
        """The workspace path of an absolute path, or None when it is outside every root."""
        for index in self._snapshot():
            relative = index.workspace.relative(absolute)
            if relative is not None:
                return index.prefix + relative
        return None

    def cached_summary(self, path: str, model: str) -> str | None:
        """A summary stored for this file's current content hash and `model`."""
        index, relative = self._locate(path)
        record = index.store.reader.file(relative)
        return None if record is None else index.store.reader.cached_summary(record.sha256, model)

    def store_summary(self, path: str, model: str, summary: str) -> None:
        index, relative = self._locate(path)
        record = index.store.reader.file(relative)
        if record is not None and not index.store.read_only:
            index.store.writer.store_summary(record.sha256, model, summary)

    def close(self) -> None:
        """Stop the query-embedding threads, release the writer lock, close the stores."""
        self.searcher.close()
        with self._lock:
            for index in self._roots:
                index.store.close()
            self._roots.clear()

    # --- helpers ---------------------------------------------------------------------------

    def _locate(self, path: str) -> tuple[RootIndex, str]:
        """The root a workspace path belongs to, and the path relative to that root."""
        roots = self._snapshot()
        if not roots:
            raise PathOutsideWorkspace(f"{path!r}: no workspace folder is open")
        cleaned = path.replace("\\", "/").strip()
        if cleaned.startswith("./"):
            cleaned = cleaned[2:]
        for index in roots:
            if index.prefix and cleaned.startswith(index.prefix):
                return index, cleaned[len(index.prefix) :]
        return roots[0], cleaned

    @staticmethod
    def _info(index: RootIndex, record: FileRecord, aliases: tuple[str, ...] = ()) -> FileInfo:
        return FileInfo(
            path=index.prefix + record.path,
            root=str(index.root),
            uri=(index.root / record.path).as_uri(),
            title=record.title,
            chunks=record.chunk_count,
            size=record.size,
            sha256=record.sha256,
            aliases=aliases,
            mtime_ns=record.mtime_ns,
        )


def _root_prefixes(roots: list[Path]) -> dict[Path, str]:
    """ "" for a single root; the folder name (made unique) for several."""
    if len(roots) <= 1:
        return {root: "" for root in roots}
    out: dict[Path, str] = {}
    seen: dict[str, int] = {}
    for root in roots:
        name = root.name or "root"
        seen[name] = seen.get(name, 0) + 1
        out[root] = f"{name}/" if seen[name] == 1 else f"{name}-{seen[name]}/"
    return out
