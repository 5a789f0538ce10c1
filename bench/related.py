"""Related notes: how long `KnowledgeBase.related` takes for every file of the FastAPI docs.

    python -m bench related [--store DIR]

Indexes a private copy of fastapi-docs (the same index `bench quality --store DIR`
builds and reuses: the product's int8 MiniLM), then for each of its 155 files times
`kb.related(path, limit=10)` — what `kb/related` runs: the file's stored chunk vectors
averaged, the nearest chunks in Chroma, candidates scored by their own stored vectors,
nothing embedded — against, in the same run, a `kb.search` for the file's title (what
`kb/search` runs for a short query: one query embedding, hybrid ranking) and the obvious
alternative to stored vectors: embedding the file's text (its first 2,000 characters,
one model call) and taking the nearest files of a vector search. Medians and p95 of
each, and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.baselines import stores_beside
from bench.quality import build
from bench.report import percentiles, table, write_json
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.store import Store

NAIVE_CHARS = 2000


def naive_related(kb: KnowledgeBase, store: Store, path: str, limit: int = 10) -> list[str]:
    """Embed the file's text and list the files of the nearest chunks (the alternative)."""
    text = "\n".join(chunk.text for chunk in kb.chunks_of(path))[:NAIVE_CHARS]
    vector = np.asarray(kb.embedder.embed_documents([text])[0], dtype=np.float32)
    seen: list[str] = []
    for hit in store.vector_search(vector, limit * 8):
        if hit.path != path and hit.path not in seen:
            seen.append(hit.path)
    return seen[:limit]


def run(store: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kb-bench-related-") as tmp:
        kb, _, seconds = build(store or Path(tmp))
        try:
            with stores_beside(kb) as roots:
                ((_, beside),) = roots
                infos = kb.files()
                paths = [info.path for info in infos]
                title_of = {info.path: info.title for info in infos}
                kb.related(paths[0])  # warm: the first Chroma query loads the index
                ours: list[float] = []
                searches: list[float] = []
                naive: list[float] = []
                titles: set[str] = set()
                sizes: list[int] = []
                overlap: list[float] = []
                for path in paths:
                    started = time.perf_counter()
                    hits = kb.related(path, limit=10)
                    ours.append((time.perf_counter() - started) * 1000)
                    sizes.append(len(hits))
                    title = title_of[path]
                    if title not in titles:  # the bench's query cache would answer a repeat
                        titles.add(title)
                        started = time.perf_counter()
                        kb.search(title, limit=10)
                        searches.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    other = naive_related(kb, beside, path)
                    naive.append((time.perf_counter() - started) * 1000)
                    mine = [hit.path for hit in hits[:5]]
                    if mine:
                        overlap.append(len(set(mine) & set(other[:5])) / len(mine))
        finally:
            kb.close()
    out = {
        "files": len(paths),
        "index_seconds": seconds,
        "related_ms": percentiles(ours),
        "search_title_ms": percentiles(searches),
        "searches": len(searches),
        "embed_then_search_ms": percentiles(naive),
        "search_over_related_p50": statistics.median(searches) / statistics.median(ours),
        "ratio_p50": statistics.median(naive) / statistics.median(ours),
        "results_per_file_median": statistics.median(sizes),
        "top5_overlap_with_embed_then_search": statistics.mean(overlap) if overlap else 0.0,
    }
    table(
        ["method", "p50 ms", "p95 ms", "p99 ms"],
        [
            ["kb.related (stored vectors)", *_row(out["related_ms"])],
            [f"kb.search (file titles, {len(searches)})", *_row(out["search_title_ms"])],
            ["embed the file, then search", *_row(out["embed_then_search_ms"])],
        ],
        f"Related notes for each of {len(paths)} files (limit 10)",
    )
    print(
        f"a search takes {out['search_over_related_p50']:.1f}x the time of related at the "
        f"median; embedding the file {out['ratio_p50']:.1f}x; "
        f"{out['results_per_file_median']} related files per file (median); top-5 overlap "
        f"with embed-then-search {out['top5_overlap_with_embed_then_search']:.2f}"
    )
    write_json("related", out)
    return out


def _row(p: dict[str, float]) -> list[Any]:
    return [round(p["p50"], 1), round(p["p95"], 1), round(p["p99"], 1)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench related", description=__doc__)
    parser.add_argument("--store", type=Path, help="reuse (or keep) the index in this folder")
    args = parser.parse_args(argv)
    run(args.store)
