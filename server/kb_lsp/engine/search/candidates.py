"""Where candidates come from and what they carry: the searched stores (`SearchSource`),
the query's term statistics, candidate chunks and scored files, and the batched reads
that fill them (first chunks, cached vectors, allowed paths, note cards)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata.cards import Card
from kb_lsp.engine.records import StoredChunk
from kb_lsp.engine.search.weights import CARD_CANDIDATES, Fusion
from kb_lsp.engine.store import KeywordHit, chunk_id
from kb_lsp.engine.terms import all_of, fts_query, terms_of
from kb_lsp.globs import GlobList

# numpy and the wire models load with the vector side only: a keyword search in a one-shot
# process reads SQLite alone (`store/reader.py`).
if TYPE_CHECKING:
    import numpy as np

    from kb_lsp.engine.metadata.filters import Node as FilterNode
    from kb_lsp.engine.store.store_reader import StoreReader
    from kb_lsp.protocol import SearchMode


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
            chunks += source.reader.figures().chunks
            for term, count in source.reader.term_counts(terms).items():
                found[term] = found.get(term, 0) + count
        return TermStats(chunks, found)


@dataclass(frozen=True)
class SearchSource:
    """One root's store as seen by search, through its reader: its display prefix makes
    paths unique."""

    reader: StoreReader
    root: str  # absolute root path
    prefix: str  # "" for a single root, "<folder name>/" with several

    def display(self, path: str) -> str:
        return self.prefix + path


@dataclass
class Candidate:
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
class FileScore:
    source: SearchSource
    path: str
    title: str
    best: Candidate
    score: float
    name_share: float
    chunks: list[Candidate] = field(default_factory=list)
    raw: float = 0.0
    card: Card | None = None
    card_score: float = 0.0
    card_matched: frozenset[str] = frozenset()
    anchor_share: float = 0.0
    topic_share: float = 0.0
    shown: Candidate | None = None  # what the hit shows and jumps to, when not `best`


def placeholder(path: str) -> StoredChunk:
    return StoredChunk(path=path, root="", index=-1, text="", heading="", start_line=0, end_line=0)


def keyword_queries(fusion: Fusion, words: Sequence[str], stats: TermStats) -> list[str]:
    """The FTS5 queries for a query's keyword candidates, in the order to try them: the
    next runs only when one found fewer than it was asked for (`Fusion.bounded_from`
    says why a big index leaves common words out)."""
    every = fts_query(words)
    if stats.chunks <= fusion.bounded_from or len(words) < 2:
        return [every]
    terms = terms_of(words)
    chunks = {w: min((stats.counts.get(t, 0) for t in terms[w]), default=0) for w in words}
    rare = [w for w in words if chunks[w] <= fusion.common_chunks]
    if len(rare) == len(words):
        return [every]
    if rare:
        return [fts_query(rare), every]
    return [all_of(words), every]


def keyword_candidates(
    source: SearchSource, queries: Sequence[str], k: int, allowed: list[str] | None
) -> list[KeywordHit]:
    """The best `k` chunks of the first of `queries` (`keyword_queries`) to find `k`."""
    hits: list[KeywordHit] = []
    for query in queries:
        hits = source.reader.keyword_search(query, k, allowed)
        if len(hits) >= k:
            break
    return hits


def first_chunks(
    wanted: Iterable[tuple[SearchSource, str]],
) -> dict[tuple[str, str], StoredChunk]:
    """(root, path) -> the file's first chunk, read with one query per root."""
    by_root: dict[str, tuple[SearchSource, list[str]]] = {}
    for source, path in wanted:
        by_root.setdefault(source.root, (source, []))[1].append(path)
    return {
        (root, path): chunk
        for root, (source, paths) in by_root.items()
        for path, chunk in source.reader.first_chunks(paths).items()
    }


def allowed_paths(
    source: SearchSource, globs: list[str] | None, filter: FilterNode | None = None
) -> list[str] | None:
    """The paths of `source` that the globs and the filter keep; None for all."""
    allowed: list[str] | None = None
    if globs:
        spec = GlobList(globs)
        allowed = [p for p in source.reader.manifest() if spec.matches(source.display(p))]
    if filter is not None:
        matching = source.reader.filter_paths(filter, source.prefix)
        allowed = sorted(matching) if allowed is None else [p for p in allowed if p in matching]
    return allowed


def fill_cosines(source: SearchSource, candidates: Sequence[Candidate], vector: np.ndarray) -> None:
    if not candidates:
        return
    import numpy as np

    vectors = source.reader.vectors_of(c.chunk.text_hash for c in candidates)
    for cand in candidates:
        stored = vectors.get(cand.chunk.text_hash)
        if stored is not None:
            cand.cosine = float(np.dot(stored, vector))
            cand.has_vector = True


def card_candidates(
    fusion: Fusion,
    sources: Sequence[SearchSource],
    candidates: dict[tuple[str, str], Candidate],
    match: str,
    allowed_by_root: dict[str, list[str] | None],
    mode: SearchMode,
) -> dict[tuple[str, str], int]:
    """Files that only their aliases, description or incoming anchor texts match join
    the candidates (their first chunk stands for them); returns their card ranks."""
    ranks: dict[tuple[str, str], int] = {}
    f = fusion
    if mode == "semantic" or (f.description <= 0 and f.anchors <= 0):
        return ranks
    for source in sources:
        named = source.reader.cards_matching(
            match, CARD_CANDIDATES, allowed_by_root.get(source.root)
        )
        have = {c.chunk.path for (root, _), c in candidates.items() if root == source.root}
        for rank, path in enumerate(named):
            ranks[(source.root, path)] = rank
        firsts = source.reader.first_chunks(p for p in named if p not in have)
        for path, first in firsts.items():
            candidates[(source.root, chunk_id(path, first.index))] = Candidate(source, first)
    return ranks


def resolve(
    sources: Sequence[SearchSource],
    candidates: dict[tuple[str, str], Candidate],
    keyword_order: list[tuple[float, tuple[str, str]]],
    vector: np.ndarray | None,
) -> None:
    """The candidates' real chunk rows (one query per root; a chunk deleted since the
    query ran leaves), every cosine from the vectors SQLite keeps, and both ranks.

    A vector hit's cosine too: the index only proposes neighbours, so a server (Chroma's
    float32 copy) and a one-shot process (exact, over the int8 cache) score a chunk alike."""
    for source in sources:
        ids = [cid for (root, cid) in candidates if root == source.root]
        rows = source.reader.chunks_by_id(ids)
        for cid in ids:
            cand = candidates[(source.root, cid)]
            row = rows.get(cid)
            if row is None:
                del candidates[(source.root, cid)]
                continue
            cand.chunk = row
            if cand.vector_hash and cand.vector_hash != row.text_hash:
                # Chroma still holds the vector of this chunk's previous text.
                cand.has_vector = cand.vector_hit = False
                cand.cosine = 0.0
        if vector is not None:
            mine = [c for (root, _), c in candidates.items() if root == source.root]
            fill_cosines(source, mine, vector)
    vector_order = [(c.cosine, key) for key, c in candidates.items() if c.vector_hit]
    kept = [(score, key) for score, key in keyword_order if key in candidates]
    for rank, (_, key) in enumerate(sorted(vector_order, key=lambda item: -item[0])):
        candidates[key].vector_rank = rank
    for rank, (_, key) in enumerate(sorted(kept, key=lambda item: -item[0])):
        candidates[key].keyword_rank = rank
