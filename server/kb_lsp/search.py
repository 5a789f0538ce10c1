"""Hybrid retrieval: vector neighbours + FTS5 BM25 + file-name/title match, per file.

How a query becomes the numbered list:

1. Candidates: the nearest chunks by cosine similarity (Chroma) and the best chunks by
   BM25 (FTS5 over path, title, heading and text), from every root.
2. Every candidate chunk gets absolute signals — its exact cosine similarity to the query
   (from the stored vector, so a keyword-only candidate has one too), the share of the
   query's words it contains (with its heading, title and file name), and its ranks in
   both lists — fused into one score in [0, 1] (`Fusion`). Absolute signals, unlike rank
   fusion alone, let a threshold say "nothing here is relevant": a query about something
   the notes do not contain returns few or no files instead of the nearest junk.
3. Files are scored by their best chunk plus how well the query names the file
   (file name and title); files below the threshold are dropped; the rest are numbered.

The label says what a reader takes it to mean: `filename match` when the query's words
(all of them, or at least two and half) are in the file's path — its file or folder
names — else `context match`; a title or heading holding the query ranks the file high
but is a context match. Snippets are plain text from `snippets.py`, starting at the
sentence with the most query words; `marks` are the words in them worth highlighting.
The weights and the default threshold were chosen with `python -m bench quality` on the
FastAPI docs query set (see README, "Search quality").
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

import numpy as np

from kb_lsp.embeddings import Embedder
from kb_lsp.globs import GlobList
from kb_lsp.metadata.cards import Card
from kb_lsp.metadata.filters import Node as FilterNode
from kb_lsp.metadata.hits import hit_meta
from kb_lsp.protocol import Label, Range, SearchHit, SearchMode
from kb_lsp.records import StoredChunk
from kb_lsp.snippets import inline_text, readable_blocks
from kb_lsp.store import FileRecord, KeywordHit, Store, chunk_id
from kb_lsp.terms import FILE_WORDS as FILE_WORDS  # re-exported: where they were defined
from kb_lsp.terms import STOPWORDS as STOPWORDS
from kb_lsp.terms import WORD as _WORD
from kb_lsp.terms import fts_query as fts_query
from kb_lsp.terms import name_stems, parse_stems
from kb_lsp.terms import query_terms as query_terms
from kb_lsp.terms import query_words as query_words
from kb_lsp.terms import word_stems as _word_stems


@dataclass(frozen=True)
class Fusion:
    """How the signals combine into one score in [0, 1] (see the module docstring)."""

    kind: str = "linear"  # "linear": weighted absolute signals; "rrf": reciprocal rank fusion
    cosine: float = 0.6
    coverage: float = 0.3
    rank: float = 0.1
    name: float = 0.25
    # Query words found across the file's matching chunks but not in its best one: a
    # file that covers the whole question in two sections beats one that mentions half.
    file_coverage: float = 0.15
    # A query that holds a word few chunks contain (an identifier, an error code, a name):
    # a chunk with all of the query exactly beats chunks that only look alike to the
    # embedder (`burstword5x` vs `addedword5x`, which share most of their subword tokens).
    # "Few" is counted in FTS5's own vocabulary (`terms.py`): 1% of the chunks was chosen
    # while most ordinary words missed that lookup, and with every word counted it let
    # words like "domain" or "template" in; 0.2% keeps it to names and codes.
    rare: float = 0.3
    rare_share: float = 0.002  # "few": at most this share of all chunks…
    rare_min: int = 5  # …or this many, on a small index
    rrf_k: int = 60
    # Cosine similarities of MiniLM below `cosine_floor` mean "unrelated"; the range
    # above it is stretched to [0, 1] so the weights act on a comparable scale.
    cosine_floor: float = 0.1
    cosine_ceiling: float = 0.7
    # Note-level evidence (`metadata/cards.py`). A note's card — its title, aliases and
    # front-matter description, embedded on their own — is scored like a chunk standing
    # at the page's start, times `description` (0 leaves cards out). `anchors`: weight of
    # the share of the query found in the texts of links pointing at the note (distinct
    # texts, each linking note once, so a hub page gains no more than any other page).
    description: float = 1.0
    anchors: float = 0.15
    # The topic page: the share of the query, each word weighted by how rare it is in the
    # index (idf), that the file's title, name, aliases or description hold. "how do I add
    # CORS" is about CORS, not about adding: the CORS page beats pages that mention both.
    # It orders files, but is not relevance: the threshold compares scores without it.
    topic: float = 0.15
    # A file matched by name or by its card shows its page start, unless a passage beats
    # the start by this much.
    page_start_margin: float = 0.1


DEFAULT_FUSION = Fusion()

# `_path_share` at or above this labels a file `filename match`.
FILENAME_MATCH = 0.5
# A query word in more than this share of all chunks is not highlighted in snippets.
COMMON_SHARE = 0.2
# Notes that their aliases, description or incoming anchor text match, joining the
# candidates of a query.
CARD_CANDIDATES = 20


@dataclass(frozen=True)
class TermStats:
    """How many chunks the searched stores hold, and how many of them contain each query
    term (FTS5's vocabulary): looked up once per query, used by the rare-word bonus,
    the topic share and the choice of words to mark."""

    chunks: int
    counts: dict[str, int]

    @staticmethod
    def of(sources: Sequence[SearchSource], terms: Sequence[str]) -> TermStats:
        chunks = 0
        found: dict[str, int] = {}
        for source in sources:
            chunks += source.store.chunk_count()
            for term, count in source.store.term_chunk_counts(terms).items():
                found[term] = found.get(term, 0) + count
        return TermStats(chunks, found)


@dataclass(frozen=True)
class SearchSource:
    """One root's store as seen by search: its display prefix makes paths unique."""

    store: Store
    root: str  # absolute root path
    prefix: str  # "" for a single root, "<folder name>/" with several

    def display(self, path: str) -> str:
        return self.prefix + path


@dataclass
class _Candidate:
    source: SearchSource
    chunk: StoredChunk
    cosine: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    keyword_rowid: int | None = None  # its FTS row, when a keyword hit (for FTS's snippet)
    score: float = 0.0
    matched: frozenset[str] = frozenset()
    # False while the chunk's vector is pending (phase 2 of a sync has not reached it).
    has_vector: bool = False
    vector_hit: bool = False  # among the nearest chunks Chroma returned
    vector_hash: str = ""  # the text hash Chroma's vector was made from


@dataclass
class _FileScore:
    source: SearchSource
    path: str
    title: str
    best: _Candidate
    score: float
    name_share: float
    chunks: list[_Candidate] = field(default_factory=list)
    raw: float = 0.0
    card: Card | None = None
    card_score: float = 0.0
    card_matched: frozenset[str] = frozenset()
    anchor_share: float = 0.0
    topic_share: float = 0.0
    shown: _Candidate | None = None  # what the hit shows and jumps to, when not `best`


_QUERY_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_QUERY_POOL_LOCK = threading.Lock()


def _query_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that embed queries beside the keyword search (one per concurrent search
    the LSP layer runs, give or take)."""
    global _QUERY_POOL
    with _QUERY_POOL_LOCK:
        if _QUERY_POOL is None:
            _QUERY_POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="kb-query-embed"
            )
        return _QUERY_POOL


class Searcher:
    def __init__(self, embedder: Embedder, fusion: Fusion = DEFAULT_FUSION) -> None:
        self.embedder = embedder
        self.fusion = fusion

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
        marked = self._marked_terms(stats, terms) if kept else []
        match = fts_query(query_words(query))
        hits = [
            self._hit(n, f, terms, marked=marked, match=match) for n, f in enumerate(kept, start=1)
        ]
        return _with_meta(hits, kept)

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
            manifest = source.store.manifest()
            for path in self._allowed_paths(source, paths, filter) or []:
                record = manifest.get(path)
                if record is not None:
                    found.append((record.mtime_ns, source.display(path), source, record))
        found.sort(key=lambda item: (-item[0], item[1]))
        kept: list[_FileScore] = []
        for _, _, source, record in found:
            if len(kept) >= limit:
                break
            chunks = source.store.chunks_of(record.path)[:1]
            if chunks:
                cand = _Candidate(source, chunks[0])
                kept.append(_FileScore(source, record.path, record.title, cand, 1.0, 0.0))
        hits = [self._hit(n, f, [], "context match") for n, f in enumerate(kept, start=1)]
        return _with_meta(hits, kept)

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
        chunks = source.store.chunks_of(path)
        if not chunks:
            return []
        record = source.store.file(path)
        title = record.title if record else PurePosixPath(path).stem
        terms = query_terms(query)
        vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        candidates = [_Candidate(source, c) for c in chunks]
        self._fill_cosines(source, candidates, vector)
        for rank, cand in enumerate(sorted(candidates, key=lambda c: -c.cosine)):
            cand.vector_rank = rank
        for cand in candidates:
            cand.score = self._chunk_score(cand, terms, title, path, "hybrid")
        best = sorted(candidates, key=lambda c: -c.score)
        kept = [c for c in best if c.score >= threshold][:limit]
        marked = self._marked_terms(TermStats.of([source], terms), terms) if kept else []
        match = fts_query(query_words(query))
        return [
            self._hit(
                n,
                _FileScore(source, path, title, c, c.score, 0.0),
                terms,
                "context match",
                marked=marked,
                match=match,
            )
            for n, c in enumerate(kept, start=1)
        ]

    # --- ranking ---------------------------------------------------------------------------

    def _rank_files(
        self,
        sources: Sequence[SearchSource],
        query: str,
        limit: int,
        paths: list[str] | None,
        mode: SearchMode,
        filter: FilterNode | None = None,
        stats: TermStats | None = None,
    ) -> list[_FileScore]:
        terms = query_terms(query)
        if not terms:
            return []
        stats = stats or TermStats.of(sources, terms)
        k = max(40, limit * 5)
        # The query is embedded while SQLite runs the keyword queries: both let go of the
        # GIL, and on two cores the embedding (3-4 ms) then costs no time of its own.
        # Keyword mode never embeds (nor loads the model for a one-shot search).
        embedding = (
            _query_pool().submit(self.embedder.embed_query, query) if mode != "keyword" else None
        )
        match = fts_query(query_words(query))
        candidates: dict[tuple[str, str], _Candidate] = {}
        keyword_order: list[tuple[float, tuple[str, str]]] = []

        allowed_by_root: dict[str, list[str] | None] = {}
        keyword_hits: dict[str, list[KeywordHit]] = {}
        for source in sources:
            allowed = self._allowed_paths(source, paths, filter)
            allowed_by_root[source.root] = allowed
            if mode in ("hybrid", "keyword"):
                keyword_hits[source.root] = source.store.keyword_search(match, k, allowed)
        vector = np.asarray(embedding.result(), dtype=np.float32) if embedding is not None else None
        for source in sources:
            allowed = allowed_by_root[source.root]
            if vector is not None:
                for hit in source.store.vector_search(vector, k, allowed):
                    key = (source.root, hit.chunk_id)
                    candidates.setdefault(key, _Candidate(source, _placeholder(hit.path)))
                    candidates[key].cosine = hit.similarity
                    candidates[key].has_vector = candidates[key].vector_hit = True
                    candidates[key].vector_hash = hit.text_hash
            if mode in ("hybrid", "keyword"):
                for kw in keyword_hits[source.root]:
                    key = (source.root, kw.chunk_id)
                    candidates.setdefault(key, _Candidate(source, _placeholder(kw.path)))
                    candidates[key].keyword_rowid = kw.rowid
                    keyword_order.append((kw.bm25, key))
        card_ranks = self._card_candidates(sources, candidates, match, allowed_by_root, mode)
        if not candidates:
            return []

        # Real chunk rows, and exact cosines for the keyword-only candidates.
        for source in sources:
            ids = [cid for (root, cid) in candidates if root == source.root]
            rows = source.store.chunks_by_id(ids)
            for cid in ids:
                cand = candidates[(source.root, cid)]
                row = rows.get(cid)
                if row is None:
                    del candidates[(source.root, cid)]  # deleted since the query ran
                    continue
                cand.chunk = row
                if cand.vector_hash and cand.vector_hash != row.text_hash:
                    # Chroma still holds the vector of this chunk's previous text.
                    cand.has_vector = cand.vector_hit = False
                    cand.cosine = 0.0
            if vector is not None:
                missing = [
                    c
                    for (root, _), c in candidates.items()
                    if root == source.root and not c.has_vector
                ]
                self._fill_cosines(source, missing, vector)
        vector_order = [(c.cosine, key) for key, c in candidates.items() if c.vector_hit]
        keyword_order = [(score, key) for score, key in keyword_order if key in candidates]
        for rank, (_, key) in enumerate(sorted(vector_order, key=lambda item: -item[0])):
            candidates[key].vector_rank = rank
        for rank, (_, key) in enumerate(sorted(keyword_order, key=lambda item: -item[0])):
            candidates[key].keyword_rank = rank

        rare = self._rare_terms(stats) if mode == "hybrid" else frozenset()
        files: dict[tuple[str, str], _FileScore] = {}
        titles: dict[tuple[str, str], str] = {}
        for source in sources:
            paths_here = {
                c.chunk.path for (root, _), c in candidates.items() if root == source.root
            }
            for path, title in source.store.titles(paths_here).items():
                titles[(source.root, path)] = title
        for cand in candidates.values():
            key = (cand.source.root, cand.chunk.path)
            stored_title = titles.get(key)
            title = PurePosixPath(cand.chunk.path).stem if stored_title is None else stored_title
            cand.score = self._chunk_score(cand, terms, title, cand.chunk.path, mode, rare)
            current = files.get(key)
            if current is None:
                name_share = _name_share(terms, title, cand.chunk.path)
                files[key] = _FileScore(
                    cand.source, cand.chunk.path, title, cand, 0.0, name_share, [cand]
                )
            else:
                current.chunks.append(cand)
                if cand.score > current.best.score:
                    current.best = cand
        if mode != "semantic":
            self._score_cards(sources, files, terms, vector, card_ranks, mode)
            if self.fusion.topic > 0:
                self._topic_shares(stats, files.values(), terms)
        for file in files.values():
            if mode == "semantic":
                file.score = file.best.score
                continue
            spread = frozenset().union(file.card_matched, *(c.matched for c in file.chunks))
            evidence = max(file.best.score, file.card_score)
            matched = file.best.matched if file.best.score >= file.card_score else file.card_matched
            extra = (len(spread) - len(matched)) / len(terms)
            # Ordered by the raw sum; shown (and thresholded) capped at 1, so files that
            # all reach the cap on a one-word query still come in order of evidence. The
            # topic share orders (which page is *the* page for the query) but adds no
            # relevance: the threshold does not let a title word alone through.
            relevance = (
                evidence
                + self.fusion.name * file.name_share
                + self.fusion.file_coverage * extra
                + self.fusion.anchors * file.anchor_share
            )
            file.raw = relevance + self.fusion.topic * file.topic_share
            file.score = min(1.0, relevance)
        ordered = sorted(files.values(), key=lambda f: (-max(f.score, f.raw), f.path))
        if mode != "semantic":
            for file in ordered[: limit * 2]:
                self._choose_shown(file, terms, vector, mode, rare)
        return ordered

    # --- note-level evidence ---------------------------------------------------------------

    def _card_candidates(
        self,
        sources: Sequence[SearchSource],
        candidates: dict[tuple[str, str], _Candidate],
        match: str,
        allowed_by_root: dict[str, list[str] | None],
        mode: SearchMode,
    ) -> dict[tuple[str, str], int]:
        """Files that only their aliases, description or incoming anchor texts match join
        the candidates (their first chunk stands for them); returns their card ranks."""
        ranks: dict[tuple[str, str], int] = {}
        f = self.fusion
        if mode == "semantic" or (f.description <= 0 and f.anchors <= 0):
            return ranks
        for source in sources:
            named = source.store.matching_notes(
                match, CARD_CANDIDATES, allowed_by_root.get(source.root)
            )
            have = {c.chunk.path for (root, _), c in candidates.items() if root == source.root}
            for rank, path in enumerate(named):
                ranks[(source.root, path)] = rank
                if path in have:
                    continue
                first = source.store.chunks_of(path)[:1]
                if first:
                    key = (source.root, chunk_id(path, first[0].index))
                    candidates[key] = _Candidate(source, first[0])
        return ranks

    def _score_cards(
        self,
        sources: Sequence[SearchSource],
        files: dict[tuple[str, str], _FileScore],
        terms: Sequence[str],
        vector: np.ndarray | None,
        card_ranks: dict[tuple[str, str], int],
        mode: SearchMode,
    ) -> None:
        f = self.fusion
        if f.description <= 0 and f.anchors <= 0:
            return
        for source in sources:
            mine = [file for (root, _), file in files.items() if root == source.root]
            cards = source.store.note_cards(file.path for file in mine)
            hashes = [c.card_hash for c in cards.values() if c.card_hash]
            vectors = source.store.cached_vectors(hashes) if vector is not None else {}
            for file in mine:
                card = cards.get(file.path)
                if card is None:
                    continue
                file.card = card
                if card.aliases:
                    file.name_share = max(file.name_share, _alias_share(terms, card.aliases))
                if f.anchors > 0 and card.anchors:
                    found = _word_stems(" ".join(card.anchors))
                    file.anchor_share = sum(t in found for t in terms) / len(terms)
                if f.description <= 0 or not (card.description or card.aliases):
                    continue
                haystack = _word_stems(
                    f"{file.title}\n{' '.join(card.aliases)}\n{card.description}"
                )
                file.card_matched = frozenset(t for t in terms if t in haystack)
                coverage = len(file.card_matched) / len(terms)
                rank = card_ranks.get((source.root, file.path))
                rank_score = 1.0 / (1.0 + rank / 5.0) if rank is not None else 0.0
                if vector is None:
                    score = 0.7 * coverage + 0.3 * rank_score
                else:
                    stored = vectors.get(card.card_hash or "")
                    cosine = float(np.dot(stored, vector)) if stored is not None else 0.0
                    stretched = float(
                        np.clip(
                            (cosine - f.cosine_floor) / (f.cosine_ceiling - f.cosine_floor), 0, 1
                        )
                    )
                    score = f.cosine * stretched + f.coverage * coverage + f.rank * rank_score
                file.card_score = f.description * score

    def _choose_shown(
        self,
        file: _FileScore,
        terms: Sequence[str],
        vector: np.ndarray | None,
        mode: SearchMode,
        rare: frozenset[str],
    ) -> None:
        """The topic page first: a file matched by its name (or by most of the query's
        weight, `topic_share`) or by its card shows (and jumps to) its start, unless a
        passage beats the start by `page_start_margin`."""
        card_won = file.card_score > file.best.score
        named = file.name_share >= FILENAME_MATCH or file.topic_share >= FILENAME_MATCH
        if not card_won and not named:
            return
        first = next((c for c in file.chunks if c.chunk.index == 0), None)
        if first is None:
            chunks = file.source.store.chunks_of(file.path)[:1]
            if not chunks:
                return
            first = _Candidate(file.source, chunks[0])
            if vector is not None:
                self._fill_cosines(file.source, [first], vector)
            first.score = self._chunk_score(first, terms, file.title, file.path, mode, rare)
        if first is file.best:
            return
        if card_won or file.best.score <= first.score + self.fusion.page_start_margin:
            file.shown = first

    def _chunk_score(
        self,
        cand: _Candidate,
        terms: Sequence[str],
        title: str,
        path: str,
        mode: SearchMode,
        rare: frozenset[str] = frozenset(),
    ) -> float:
        f = self.fusion
        # Plain floats: np.clip on one number costs more than the rest of this line.
        stretched = (cand.cosine - f.cosine_floor) / (f.cosine_ceiling - f.cosine_floor)
        cosine = min(1.0, max(0.0, float(stretched)))
        if mode == "semantic":
            return cosine if cand.has_vector else 0.0
        stems, title_stems, name = _chunk_stems(cand.chunk), name_stems(title), _path_names(path)[0]
        cand.matched = frozenset(
            term for term in terms if term in stems or term in title_stems or term in name
        )
        coverage = len(cand.matched) / len(terms) if terms else 0.0
        if mode == "keyword":
            # Coverage says whether a chunk is about the query; BM25's rank orders the
            # many chunks that all contain a rare word.
            keyword_rank = cand.keyword_rank if cand.keyword_rank is not None else 10**6
            return 0.7 * coverage + 0.3 / (1.0 + keyword_rank / 5.0)
        if f.kind == "rrf":
            rrf = sum(
                1.0 / (f.rrf_k + r + 1)
                for r in (cand.vector_rank, cand.keyword_rank)
                if r is not None
            )
            return rrf / (2.0 / (f.rrf_k + 1))
        if not cand.has_vector:
            # Its vector is still being computed: the share of the query's words it holds
            # stands in for the cosine, so a file is not ranked down for waiting.
            cosine = coverage
        best_rank = min(r for r in (cand.vector_rank, cand.keyword_rank, 10**6) if r is not None)
        rank_score = 1.0 / (1.0 + best_rank / 5.0)
        # Only a chunk with every word of the query, one of them rare, earns the bonus: one
        # rare word of an otherwise unanswered question ("file my taxes") must not.
        exact_rare = coverage == 1.0 and bool(cand.matched & rare)
        return f.cosine * cosine + f.coverage * coverage + f.rank * rank_score + f.rare * exact_rare

    def _topic_shares(
        self, stats: TermStats, files: Iterable[_FileScore], terms: Sequence[str]
    ) -> None:
        """Each file's idf-weighted share of the query held by its names (`Fusion.topic`)."""
        chunks, found = stats.chunks, stats.counts
        weights = {t: math.log((chunks + 1) / (found.get(t, 0) + 1)) + 1.0 for t in terms}
        total = sum(weights.values())
        if total <= 0:
            return
        for file in files:
            card = file.card
            names = _path_names(file.path)[0] | name_stems(file.title)
            if card is not None:
                names |= _word_stems(" ".join(card.aliases)) | _word_stems(card.description)
            file.topic_share = sum(w for t, w in weights.items() if t in names) / total

    def _rare_terms(self, stats: TermStats) -> frozenset[str]:
        limit = max(self.fusion.rare_min, self.fusion.rare_share * stats.chunks)
        return frozenset(term for term, count in stats.counts.items() if 0 < count <= limit)

    @staticmethod
    def _marked_terms(stats: TermStats, terms: Sequence[str]) -> list[str]:
        """The query terms worth highlighting in snippets: not the ones most passages
        contain ("add" and "use" in a programming manual mark half of every snippet), unless
        every term is that common (then the query is about them)."""
        common = {t for t, count in stats.counts.items() if count > COMMON_SHARE * stats.chunks}
        distinctive = [term for term in terms if term not in common]
        return distinctive or list(terms)

    def _fill_cosines(
        self, source: SearchSource, candidates: Sequence[_Candidate], vector: np.ndarray
    ) -> None:
        if not candidates:
            return
        vectors = source.store.cached_vectors(c.chunk.text_hash for c in candidates)
        for cand in candidates:
            stored = vectors.get(cand.chunk.text_hash)
            if stored is not None:
                cand.cosine = float(np.dot(stored, vector))
                cand.has_vector = True

    @staticmethod
    def _allowed_paths(
        source: SearchSource, globs: list[str] | None, filter: FilterNode | None = None
    ) -> list[str] | None:
        """The paths of `source` that the globs and the filter keep; None for all."""
        allowed: list[str] | None = None
        if globs:
            spec = GlobList(globs)
            allowed = [p for p in source.store.manifest() if spec.matches(source.display(p))]
        if filter is not None:
            matching = source.store.filter_paths(filter, source.prefix)
            allowed = sorted(matching) if allowed is None else [p for p in allowed if p in matching]
        return allowed

    # --- output ----------------------------------------------------------------------------

    def _hit(
        self,
        n: int,
        file: _FileScore,
        terms: Sequence[str],
        label: Label | None = None,
        *,
        marked: Sequence[str] = (),
        match: str = "",
    ) -> SearchHit:
        shown = file.shown or file.best
        chunk = shown.chunk
        if label is None:
            # The label is about the path (and aliases) only: a title or heading that
            # holds the query ranks the file high (`_name_share`) but is a context match.
            # A front-matter alias is a name of the file too.
            named = _path_share(terms, chunk.path) >= FILENAME_MATCH or (
                file.card is not None and _alias_share(terms, file.card.aliases) >= FILENAME_MATCH
            )
            label = "filename match" if named else "context match"
        snippet = self._snippet(file, shown, terms, marked, match)
        return SearchHit(
            n=n,
            uri=_file_uri(file.source.root, chunk.path),
            path=file.source.display(chunk.path),
            root=file.source.root,
            title=file.title,
            label=label,
            score=round(file.score, 4),
            snippet=snippet,
            heading=chunk.heading,
            range=Range.of_lines(chunk.start_line, chunk.end_line),
            marks=snippet_marks(snippet, marked),
        )

    @staticmethod
    def _snippet(
        file: _FileScore,
        shown: _Candidate,
        terms: Sequence[str],
        marked: Sequence[str],
        match: str,
    ) -> str:
        # A note that won on its card is best described by its own description.
        if file.card is not None and file.card.description and file.card_score > file.best.score:
            return make_snippet(file.card.description, terms, None, distinctive=marked)
        rowid = shown.keyword_rowid
        fallback = None
        if rowid is not None and match:
            # Only for a chunk without readable text (rare): FTS's own snippet of it.
            def fallback() -> str | None:
                return file.source.store.keyword_snippet(match, rowid)

        return make_snippet(shown.chunk.text, terms, fallback, distinctive=marked)


def _alias_share(terms: Sequence[str], aliases: Sequence[str]) -> float:
    """How strongly the query names a note by one of its aliases (as `_name_share`)."""
    return max((_name_share(terms, alias, "") for alias in aliases), default=0.0)


def _with_meta(hits: list[SearchHit], files: Sequence[_FileScore]) -> list[SearchHit]:
    """Each hit with its file's key metadata (`SearchHit.meta`)."""
    by_store: dict[int, tuple[Store, list[str]]] = {}
    for file in files:
        by_store.setdefault(id(file.source.store), (file.source.store, []))[1].append(file.path)
    metas = {}
    for store, paths in by_store.values():
        for path, meta in hit_meta(store, paths).items():
            metas[(id(store), path)] = meta
    return [
        hit.model_copy(update={"meta": metas.get((id(file.source.store), file.path))})
        for hit, file in zip(hits, files, strict=True)
    ]


def _chunk_stems(chunk: StoredChunk) -> frozenset[str]:
    """The stems of a chunk's heading path and text: stored at index time; computed here
    only for a chunk stored before they were kept (until the next sync fills them)."""
    if chunk.stems is not None:
        return parse_stems(chunk.stems)
    return frozenset(_word_stems(f"{chunk.heading}\n{chunk.text}"))


def _placeholder(path: str) -> StoredChunk:
    return StoredChunk(path=path, root="", index=-1, text="", heading="", start_line=0, end_line=0)


@lru_cache(maxsize=16384)
def _path_names(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of a path's file name and of its folder names (cached: the same paths
    come back in every query, and parsing them was a tenth of a search)."""
    parsed = PurePosixPath(path)
    return name_stems(parsed.stem), name_stems(" ".join(parsed.parent.parts))


def _name_share(terms: Sequence[str], title: str, path: str) -> float:
    """How strongly the query names the file (0..1) from its name and title: a ranking
    signal (the label asks `_path_share`)."""
    file_name, folders = _path_names(path)
    return _share(terms, file_name | name_stems(title) | folders)


def _path_share(terms: Sequence[str], path: str) -> float:
    """How strongly the query names the file's path: its file and folder names."""
    file_name, folders = _path_names(path)
    return _share(terms, file_name | folders)


def _share(terms: Sequence[str], names: AbstractSet[str]) -> float:
    """All of the query's words among `names` is a full match; at least two words and half
    of them is a good one; a single shared word of a longer query ("payment system" vs
    "Deploy checklist: payments service") says little and counts a third."""
    if not terms:
        return 0.0
    matched = sum(term in names for term in terms)
    share = matched / len(terms)
    if share >= 1.0 or (matched >= 2 and share >= 0.5):
        return share
    return share / 3.0


@lru_cache(maxsize=16384)
def _file_uri(root: str, path: str) -> str:
    from pathlib import Path

    return Path(PurePosixPath(root) / path).as_uri()


_SENTENCE_ENDS = (".", "!", "?", ":", ";", "…")


def _around_first_match(line: str, wanted: set[str], width: int) -> str:
    """A line longer than the snippet, started a little before its first query word (a
    long line's match may be far from its start)."""
    if len(line) <= width:
        return line
    for match in _WORD.finditer(line):
        if match.start() > 20 * width:
            break  # not worth scanning a huge line further
        if _word_stems(match.group()) & wanted:
            if match.start() <= width // 3:
                break
            start = line.rfind(" ", 0, match.start() - width // 4) + 1
            return "…" + line[start:]
    return line


def make_snippet(
    text: str,
    terms: Sequence[str],
    fts_snippet: str | Callable[[], str | None] | None,
    width: int = 220,
    *,
    distinctive: Sequence[str] = (),
) -> str:
    """The most telling stretch of a chunk as one line of plain text (`snippets.py` says
    what markup is removed): it starts at the sentence with the most `distinctive` query
    words, then the most query words (or the first real sentence when none is there),
    and runs on to about `width` characters, cut at a word. A chunk without readable
    text shows `fts_snippet` (FTS5's snippet, or what gives it) as plain text."""
    blocks = readable_blocks(text)
    if not blocks:
        if callable(fts_snippet):
            fts_snippet = fts_snippet()
        return inline_text((fts_snippet or "").strip())[:width]
    wanted = set(terms)
    telling = set(distinctive)
    sentences = [
        (b, i, s) for b, block in enumerate(blocks) for i, s in enumerate(block.sentences())
    ]

    def hits(sentence: str) -> int:
        return len(_word_stems(sentence) & wanted)

    def rank(k: int) -> tuple[int, int, int]:
        stems = _word_stems(sentences[k][2])
        return (len(stems & telling), len(stems & wanted), -k)

    # Without query words (related notes) no sentence can rank above another.
    best = max(range(len(sentences)), key=rank) if wanted or telling else 0
    if not wanted or hits(sentences[best][2]) == 0:
        # A semantic match without shared words: start at the first real sentence.
        best = next(
            (k for k, (b, _, s) in enumerate(sentences) if len(s) > 40 and not blocks[b].code),
            0,
        )
    # A sentence longer than the snippet (a long line without full stops) starts a little
    # before its first query word rather than far away from it.
    snippet = _around_first_match(sentences[best][2], wanted, width)
    block = sentences[best][0]
    for b, _, extra in sentences[best + 1 :]:
        if len(snippet) >= width:
            break
        # Blocks that do not end a sentence (list items, table rows) need a visible break.
        joiner = " — " if b != block and not snippet.endswith(_SENTENCE_ENDS) else " "
        snippet += joiner + extra
        block = b
    if len(snippet) > width:
        cut = snippet[:width].rsplit(" ", 1)[0]
        snippet = cut.rstrip(" ,;:·-–—") + "…"
    return snippet


def snippet_marks(snippet: str, terms: Sequence[str]) -> list[str]:
    """The words of `snippet` to highlight: those whose stem is one of `terms`, as they
    are written there, each once, in order."""
    wanted = set(terms)
    marks: list[str] = []
    for word in _WORD.findall(snippet):
        if word not in marks and _word_stems(word) & wanted:
            marks.append(word)
    return marks
