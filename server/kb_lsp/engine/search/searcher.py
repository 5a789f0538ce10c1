"""`Searcher`: a query to the numbered list, over every root's store (the package doc
says how)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.search.candidates import (
    Candidate,
    FileScore,
    SearchSource,
    TermStats,
    allowed_paths,
    card_candidates,
    fill_cosines,
    first_chunks,
    keyword_candidates,
    keyword_queries,
    placeholder,
    resolve,
)
from kb_lsp.engine.search.hits import numbered_hits
from kb_lsp.engine.search.query_pool import QueryPool
from kb_lsp.engine.search.scoring import (
    choose_shown,
    chunk_score,
    group_files,
    marked_terms,
    rare_terms,
    score_cards,
    score_files,
    topic_shares,
)
from kb_lsp.engine.search.weights import DEFAULT_FUSION, Fusion
from kb_lsp.engine.store import FileRecord, KeywordHit
from kb_lsp.engine.terms import fts_query, query_terms, query_words

# numpy, the embedder and the wire models load with the vector side (or the first hit
# built as a wire model): a one-shot keyword search reads SQLite alone (`lean.py`).
if TYPE_CHECKING:
    import numpy as np

    from kb_lsp.engine.embed.embeddings import Embedder
    from kb_lsp.engine.metadata.filters import Node as FilterNode
    from kb_lsp.engine.store.vectors import VectorHit
    from kb_lsp.protocol import SearchHit, SearchMode


class Searcher:
    def __init__(
        self, embedder: Embedder, fusion: Fusion = DEFAULT_FUSION, models: Any = None
    ) -> None:
        self.embedder = embedder
        self.fusion = fusion
        # What hits are built of: the wire models, or a one-shot keyword search's
        # pydantic-free stand-ins for them (`hits.wire_models`).
        self.models = models
        self.queries = QueryPool()  # its threads embed queries (`query_pool.py`)

    def close(self) -> None:
        """Stop the query-embedding threads: the knowledge base is closing."""
        self.queries.close()

    def search(
        self,
        sources: Sequence[SearchSource],
        query: str,
        *,
        limit: int = 10,
        threshold: float = 0.0,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
        filter: FilterNode | None = None,
    ) -> list[SearchHit]:
        """The numbered list for `query`, among the files `paths` (globs) and `filter`
        (metadata) keep: both restrict the candidates before ranking."""
        terms = query_terms(query)
        stats = TermStats.of(sources, terms)
        ranked = self._rank_files(sources, query, limit, paths, mode, filter, stats)
        kept = [f for f in ranked if f.score >= threshold][:limit]
        marked = marked_terms(stats, terms) if kept else []
        match = fts_query(query_words(query))
        return numbered_hits(kept, terms, None, marked, match, self.models)

    def list_matching(
        self,
        sources: Sequence[SearchSource],
        filter: FilterNode,
        *,
        limit: int = 10,
        paths: list[str] | None = None,
    ) -> list[SearchHit]:
        """A filter without words (`tag:payments`): the files it keeps, most recently
        modified first, each shown from its start."""
        found: list[tuple[int, str, SearchSource, FileRecord]] = []
        for source in sources:
            manifest = source.reader.manifest()
            for path in allowed_paths(source, paths, filter) or []:
                record = manifest.get(path)
                if record is not None:
                    found.append((record.mtime_ns, source.display(path), source, record))
        found.sort(key=lambda item: (-item[0], item[1]))
        firsts = first_chunks((source, record.path) for _, _, source, record in found[:limit])
        kept: list[FileScore] = []
        for _, _, source, record in found[:limit]:
            first = firsts.get((source.root, record.path))
            if first is not None:
                cand = Candidate(source, first)
                kept.append(FileScore(source, record.path, record.title, cand, 1.0, 0.0))
        return numbered_hits(kept, [], "context match", [], "", self.models)

    def passages(
        self,
        source: SearchSource,
        path: str,
        query: str,
        *,
        limit: int = 5,
        threshold: float = 0.0,
    ) -> list[SearchHit]:
        """The best chunks of one file, one hit per chunk, best first."""
        chunks = source.reader.chunks_of(path)
        if not chunks:
            return []
        record = source.reader.file(path)
        title = record.title if record else PurePosixPath(path).stem
        terms = query_terms(query)
        import numpy as np

        vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        candidates = [Candidate(source, c) for c in chunks]
        fill_cosines(source, candidates, vector)
        for rank, cand in enumerate(sorted(candidates, key=lambda c: -c.cosine)):
            cand.vector_rank = rank
        for cand in candidates:
            cand.score = chunk_score(self.fusion, cand, terms, title, path, "hybrid")
        best = sorted(candidates, key=lambda c: -c.score)
        kept = [c for c in best if c.score >= threshold][:limit]
        marked = marked_terms(TermStats.of([source], terms), terms) if kept else []
        files = [FileScore(source, path, title, c, c.score, 0.0) for c in kept]
        match = fts_query(query_words(query))
        return numbered_hits(files, terms, "context match", marked, match, self.models)

    def _rank_files(
        self,
        sources: Sequence[SearchSource],
        query: str,
        limit: int,
        paths: list[str] | None,
        mode: SearchMode,
        filter: FilterNode | None = None,
        stats: TermStats | None = None,
    ) -> list[FileScore]:
        """Every candidate file, best first: candidates from each root (`_gather`), their
        rows and ranks (`resolve`), chunk scores grouped by file, then file scores."""
        terms = query_terms(query)
        if not terms:
            return []
        stats = stats or TermStats.of(sources, terms)
        words = query_words(query)
        match = fts_query(words)
        candidates, keyword_order, allowed_by_root, vector = self._gather(
            sources,
            query,
            max(40, limit * 5),
            paths,
            mode,
            filter,
            keyword_queries(self.fusion, words, stats),
        )
        card_ranks = card_candidates(self.fusion, sources, candidates, match, allowed_by_root, mode)
        if not candidates:
            return []
        resolve(sources, candidates, keyword_order, vector)
        rare = rare_terms(self.fusion, stats) if mode == "hybrid" else frozenset()
        files = group_files(self.fusion, sources, candidates, terms, mode, rare)
        if mode != "semantic":
            score_cards(self.fusion, sources, files, terms, vector, card_ranks, mode)
            if self.fusion.topic > 0:
                topic_shares(self.fusion, stats, files.values(), terms)
        score_files(self.fusion, files.values(), terms, mode)
        ordered = sorted(files.values(), key=lambda f: (-max(f.score, f.raw), f.path))
        if mode != "semantic":
            choose_shown(self.fusion, ordered[: limit * 2], terms, vector, mode, rare)
        return ordered

    def _gather(
        self,
        sources: Sequence[SearchSource],
        query: str,
        k: int,
        paths: list[str] | None,
        mode: SearchMode,
        filter: FilterNode | None,
        queries: list[str],
    ) -> tuple[
        dict[tuple[str, str], Candidate],
        list[tuple[float, tuple[str, str]]],
        dict[str, list[str] | None],
        np.ndarray | None,
    ]:
        """The `k` best chunks by words and by meaning from each root, among the files
        the globs and the filter keep; the query's vector (None in keyword mode)."""
        allowed_by_root = {s.root: allowed_paths(s, paths, filter) for s in sources}
        # The query is embedded and its nearest chunks found while SQLite runs the keyword
        # queries on this thread: onnxruntime, Chroma's core and SQLite each let go of the
        # GIL, so on two cores the vector side costs little time of its own. Keyword mode
        # never embeds (nor loads the model for a one-shot search).
        by_meaning = (
            self.queries.submit(self._nearest, sources, query, k, allowed_by_root)
            if mode != "keyword"
            else None
        )
        keyword_hits: dict[str, list[KeywordHit]] = {}
        if mode in ("hybrid", "keyword"):
            for source in sources:
                allowed = allowed_by_root[source.root]
                keyword_hits[source.root] = keyword_candidates(source, queries, k, allowed)
        vector, vector_hits = by_meaning.result() if by_meaning is not None else (None, {})
        candidates: dict[tuple[str, str], Candidate] = {}
        keyword_order: list[tuple[float, tuple[str, str]]] = []
        for source in sources:
            for hit in vector_hits.get(source.root, []):
                key = (source.root, hit.chunk_id)
                candidates.setdefault(key, Candidate(source, placeholder(hit.path)))
                candidates[key].cosine = hit.similarity
                candidates[key].has_vector = candidates[key].vector_hit = True
                candidates[key].vector_hash = hit.text_hash
            for kw in keyword_hits.get(source.root, []):
                key = (source.root, kw.chunk_id)
                candidates.setdefault(key, Candidate(source, placeholder(kw.path)))
                candidates[key].keyword_rowid = kw.rowid
                keyword_order.append((kw.bm25, key))
        return candidates, keyword_order, allowed_by_root, vector

    def _nearest(
        self,
        sources: Sequence[SearchSource],
        query: str,
        k: int,
        allowed_by_root: dict[str, list[str] | None],
    ) -> tuple[np.ndarray, dict[str, list[VectorHit]]]:
        """The query's vector and each root's `k` nearest chunks (on the query pool)."""
        import numpy as np

        vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        return vector, {
            s.root: s.reader.vector_search(vector, k, allowed_by_root[s.root]) for s in sources
        }
