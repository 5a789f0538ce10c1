"""Plain retrieval baselines over the same index, for `bench quality`.

What a simple hybrid system does, with none of kb-lsp's own signals (coverage, names,
descriptions, anchor text, threshold):

* `bm25`: FTS5 BM25 over chunk text and headings (no path or title weight), files ranked
  by their best chunk;
* `dense`: MiniLM nearest chunks (Chroma, cosine), files by their best chunk;
* `rrf`: reciprocal rank fusion (k = 60) of those two chunk lists, files by best chunk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.search import fts_query, query_words
from kb_lsp.engine.store import Store

DEPTH = 100  # chunks taken from each list
RRF_K = 60


Root = tuple[Path, Store]  # a workspace folder and its store, opened beside the knowledge base


@contextmanager
def stores_beside(kb: KnowledgeBase) -> Iterator[list[Root]]:
    """Each root's store opened again beside `kb`, read-only as another window opens it:
    the baselines read the same index without going through kb-lsp's search."""
    with ExitStack() as stack:
        roots = []
        for root, (folder, _) in zip(kb.roots, kb.store_folders().items(), strict=True):
            store = Store(
                folder,
                root=root,
                embedder_identity=kb.embedder.identity,
                dimension=kb.embedder.dimension,
            )
            stack.callback(store.close)
            roots.append((root, store))
        yield roots


def _shown(kb: KnowledgeBase, root: Path, path: str) -> str:
    return kb.display_path(root / path) or path


def bm25_chunks(kb: KnowledgeBase, roots: list[Root], query: str) -> list[tuple[str, str]]:
    """(chunk id, path), best first."""
    match = fts_query(query_words(query))
    out: list[tuple[str, str]] = []
    for root, store in roots:
        db = store.db.reader()
        try:
            rows = db.execute(
                "SELECT f.chunk_id, c.path FROM chunks_fts f JOIN chunks c ON c.id = f.chunk_id "
                "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, 0, 0, 0, 1, 1) LIMIT ?",
                (match, DEPTH),
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
        out += [(str(cid), _shown(kb, root, str(path))) for cid, path in rows]
    return out


def dense_chunks(kb: KnowledgeBase, roots: list[Root], query: str) -> list[tuple[str, str]]:
    vector = np.asarray(kb.embedder.embed_query(query), dtype=np.float32)
    hits = []
    for root, store in roots:
        hits += [
            (h.similarity, h.chunk_id, _shown(kb, root, h.path))
            for h in store.vector_search(vector, DEPTH)
        ]
    hits.sort(key=lambda item: -item[0])
    return [(cid, path) for _, cid, path in hits]


def files_of(chunks: list[tuple[str, str]], limit: int = 10) -> list[str]:
    seen: list[str] = []
    for _, path in chunks:
        if path not in seen:
            seen.append(path)
        if len(seen) >= limit:
            break
    return seen


def rrf_files(kb: KnowledgeBase, roots: list[Root], query: str, limit: int = 10) -> list[str]:
    scores: dict[str, float] = {}
    paths: dict[str, str] = {}
    for ranked in (bm25_chunks(kb, roots, query), dense_chunks(kb, roots, query)):
        for rank, (cid, path) in enumerate(ranked):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
            paths[cid] = path
    best: dict[str, float] = {}
    for cid, score in scores.items():
        best[paths[cid]] = max(best.get(paths[cid], 0.0), score)
    return [p for p, _ in sorted(best.items(), key=lambda item: (-item[1], item[0]))][:limit]


def baseline_rankings(kb: KnowledgeBase, queries: list[str]) -> dict[str, dict[str, list[str]]]:
    with stores_beside(kb) as roots:
        return {
            "BM25": {q: files_of(bm25_chunks(kb, roots, q)) for q in queries},
            "dense": {q: files_of(dense_chunks(kb, roots, q)) for q in queries},
            "RRF": {q: rrf_files(kb, roots, q) for q in queries},
        }
