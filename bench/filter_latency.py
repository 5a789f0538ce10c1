"""Filtered search latency on tldr-pages: a selective and an unselective metadata filter
beside the same queries unfiltered.

    python -m bench filters [--quick] [--store DIR] [--queries N] [--embedder hashing]

Indexes a private copy of tldr-pages in-process (a `--store` folder from an earlier run is
reused) with the real MiniLM embedder, or with `--embedder hashing` the test suite's
deterministic 384-dimension hashing embedder: minutes instead of an hour on a busy 2-core
machine, and the vector query's cost depends on the number and dimension of the vectors,
not on the model (query embedding is cached and not timed either way). Then times
`KnowledgeBase.search` — what `kb/search` calls — for each query three ways, interleaved
so that machine load hits them alike: unfiltered; with a selective filter
(`folder:pages/<small folder>`, a few percent of the pages: vector candidates from a
Chroma `where` on those files); with an unselective one (`-folder:pages/<same folder>`: an
unfiltered vector query deep enough for the share the filter keeps). Also reports how
often each returns a full page (`limit` results): a filter applied after a top-k cut
would not.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.quality import QueryCache
from bench.report import percentiles, table, write_json
from bench.search_latency import make_queries
from kb_lsp.config import load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase, model_cache

LIMIT = 10


def build(store: Path, count: int | None, embedder: str = "minilm") -> KnowledgeBase:
    workspace = store / "tldr"
    if not workspace.exists():
        corpora.copy_tldr(workspace, count)
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase(
        [workspace],
        settings,
        embedder=QueryCache(_embedder(embedder)),  # type: ignore[arg-type]
        storage=store / f"store-{embedder}",
    )
    started = time.perf_counter()
    report = kb.sync()
    print(
        f"indexed {report.files_added + report.files_changed} files "
        f"({report.chunks_embedded} chunks embedded) in {time.perf_counter() - started:.1f} s"
    )
    return kb


def _embedder(name: str) -> Any:
    if name == "hashing":
        from tests.fakes.embedder import HashingEmbedder

        return HashingEmbedder(dimension=384)
    return MiniLMEmbedder(int8_cache=model_cache())


def smallest_folder(kb: KnowledgeBase) -> tuple[str, float]:
    """The folder of `pages/` holding the fewest pages (at least 20), and its share."""
    counts: dict[str, int] = {}
    files = kb.files()
    for info in files:
        parts = info.path.split("/")
        if len(parts) >= 3:
            counts[parts[1]] = counts.get(parts[1], 0) + 1
    name = min((n for n, c in counts.items() if c >= 20), key=lambda n: counts[n])
    return f"pages/{name}", counts[name] / len(files)


def run(store: Path, quick: bool, queries: int, embedder: str = "minilm") -> dict[str, Any]:
    kb = build(store, 800 if quick else None, embedder)
    try:
        folder, share = smallest_folder(kb)
        variants = {
            "unfiltered": None,
            f"selective folder:{folder} ({share:.1%} of pages)": f"folder:{folder}",
            f"unselective -folder:{folder} ({1 - share:.1%})": f"-folder:{folder}",
        }
        texts = make_queries(queries)
        for text in texts[:5]:  # warm up: embedder sessions, SQLite pages, Chroma index
            for filt in variants.values():
                kb.search(text, limit=LIMIT, filter=filt)
        times: dict[str, list[float]] = {name: [] for name in variants}
        full: dict[str, int] = {name: 0 for name in variants}
        for text in texts:
            kb.embedder.embed_query(text)  # cached: every variant pays the same (nothing)
            for name, filt in variants.items():
                started = time.perf_counter()
                hits = kb.search(text, limit=LIMIT, filter=filt)
                times[name].append(time.perf_counter() - started)
                full[name] += len(hits) == LIMIT
        rows = []
        out: dict[str, Any] = {
            "files": len(kb.files()),
            "queries": len(texts),
            "embedder": embedder,
            "variants": {},
        }
        base = percentiles(times["unfiltered"])
        for name in variants:
            p = percentiles(times[name])
            out["variants"][name] = {**p, "full_pages": full[name]}
            rows.append(
                [
                    name,
                    round(p["p50"] * 1000, 1),
                    round(p["p95"] * 1000, 1),
                    round(p["p50"] / base["p50"], 2),
                    f"{full[name]}/{len(texts)}",
                ]
            )
        table(
            ["filter", "p50 ms", "p95 ms", "p50 / unfiltered", f"{LIMIT} results"],
            rows,
            f"Filtered search latency, tldr-pages ({out['files']} files), in-process",
        )
    finally:
        kb.close()
    write_json("filters", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench filters", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="800 pages instead of all")
    parser.add_argument("--store", type=Path, help="keep the copy and its index here (reused)")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    args = parser.parse_args(argv)
    store = args.store or Path(tempfile.gettempdir()) / "kb-bench-filters"
    store.mkdir(parents=True, exist_ok=True)
    stamp.ensure(store)
    run(store, args.quick, args.queries, args.embedder)
