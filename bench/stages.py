"""Where a search's time goes, stage by stage, on a store `bench scaling` built.

    python -m bench stages --store DIR [--copies 12] [--queries 200] [--modes hybrid,keyword]

Opens `DIR/x<copies>/ws` with this code's store of it (what `python -m bench scaling
--store DIR` keeps, named by the code's hash) in-process with the hashing embedder, warms
it with 200 other queries as `bench scaling` does, then times each of the 200 seeded tldr
queries once per mode with a clock around every stage `Searcher` calls, in the order it
calls them:

* term counts — how many chunks hold each query word (`TermStats.of`, FTS5's vocabulary);
* keyword candidates — the FTS5 BM25 queries (`keyword_candidates`);
* vector search — the nearest chunks in the vector index (`StoreReader.vector_search`: Chroma's
  HNSW in a long-lived process);
* note cards, resolve — the cards' candidates, then the candidates' rows and cached
  vectors read from SQLite (`card_candidates`, `resolve`);
* scoring — chunk and file scores (`group_files`, `score_cards`, `topic_shares`,
  `score_files`) and the passage each file shows (`choose_shown`);
* hits — numbering, snippets and metadata (`numbered_hits`, `with_meta`);
* the rest — query parsing, waiting for the query's embedding, Python between stages.

Reported per mode: each stage's median and p95 share of the query (ms), and the total's
p50/p95 — the stage breakdown issue 26 asks for where a target is not met. One process,
the load average beside it; no comparison with another code base (the stages moved).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import stamp
from bench.report import percentiles, table, write_json
from bench.search_latency import make_queries

REPO = Path(__file__).resolve().parent.parent

LIMIT = 10
WARM_SEED = 7

# (module, attribute, stage): what `Searcher` calls, by the name it calls it.
STAGES = (
    ("kb_lsp.engine.search.searcher", "keyword_candidates", "keyword candidates (FTS5)"),
    ("kb_lsp.engine.search.searcher", "card_candidates", "note cards"),
    ("kb_lsp.engine.search.searcher", "resolve", "resolve (SQLite rows, cached vectors)"),
    ("kb_lsp.engine.search.searcher", "group_files", "scoring"),
    ("kb_lsp.engine.search.searcher", "score_cards", "scoring"),
    ("kb_lsp.engine.search.searcher", "topic_shares", "scoring"),
    ("kb_lsp.engine.search.searcher", "score_files", "scoring"),
    ("kb_lsp.engine.search.searcher", "choose_shown", "scoring"),
    ("kb_lsp.engine.search.searcher", "numbered_hits", "hits (numbers, snippets)"),
    ("kb_lsp.engine.search.searcher", "with_meta", "hits (numbers, snippets)"),
)
ORDER = (
    "term counts (FTS5 vocabulary)",
    "keyword candidates (FTS5)",
    "vector search",
    "note cards",
    "resolve (SQLite rows, cached vectors)",
    "scoring",
    "hits (numbers, snippets)",
    "the rest",
)


class Clock:
    """Seconds per stage for the query being timed."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def wrap(self, function: Callable[..., Any], stage: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.spent[stage] = self.spent.get(stage, 0.0) + time.perf_counter() - started

        return timed


def instrument(clock: Clock) -> None:
    import importlib

    from kb_lsp.engine.search.candidates import TermStats
    from kb_lsp.engine.store.store_reader import StoreReader

    for module_name, name, stage in STAGES:
        module = importlib.import_module(module_name)
        setattr(module, name, clock.wrap(getattr(module, name), stage))
    of = TermStats.of
    TermStats.of = staticmethod(clock.wrap(of, ORDER[0]))  # type: ignore[method-assign]
    StoreReader.vector_search = clock.wrap(StoreReader.vector_search, "vector search")  # type: ignore[method-assign]


def measure(workspace: Path, storage: Path, queries: int, modes: Sequence[str]) -> dict[str, Any]:
    from tests.fakes.embedder import HashingEmbedder

    from kb_lsp.config import load_settings
    from kb_lsp.engine.knowledge import KnowledgeBase

    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase(
        [workspace], settings, embedder=HashingEmbedder(dimension=384), storage=storage
    )
    for mode in modes:
        for query in make_queries(queries, seed=WARM_SEED):
            kb.search(query, limit=LIMIT, mode=mode)
    clock = Clock()
    instrument(clock)
    out: dict[str, Any] = {"chunks": kb.status().chunks, "load": [os.getloadavg()[0]]}
    for mode in modes:
        rows: list[dict[str, float]] = []
        for query in make_queries(queries):
            clock.spent = {}
            started = time.perf_counter()
            kb.search(query, limit=LIMIT, mode=mode)
            total = time.perf_counter() - started
            row = {stage: clock.spent.get(stage, 0.0) * 1000 for stage in ORDER[:-1]}
            row["the rest"] = max(0.0, total * 1000 - sum(row.values()))
            row["total"] = total * 1000
            rows.append(row)
        out[mode] = rows
        out["load"].append(os.getloadavg()[0])
    kb.close()
    return out


def summary(rows: list[dict[str, float]]) -> list[list[Any]]:
    total = statistics.median(r["total"] for r in rows)
    lines = []
    for stage in ORDER:
        values = [r[stage] for r in rows]
        mean_share = sum(values) / max(1e-9, sum(r["total"] for r in rows))
        p = percentiles(values)
        lines.append([stage, round(p["p50"], 2), round(p["p95"], 2), f"{mean_share:.0%}"])
    p = percentiles([r["total"] for r in rows])
    lines.append(["whole search", round(total, 2), round(p["p95"], 2), "100%"])
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench stages", description=__doc__.split("\n\n")[2]
    )
    parser.add_argument("--store", required=True, help="the --store DIR of bench scaling")
    parser.add_argument("--copies", type=int, default=12)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--modes", default="hybrid,keyword")
    args = parser.parse_args(argv)
    folder = Path(args.store).resolve() / f"x{args.copies}"
    store = folder / f"store-this-{stamp.content_hash(REPO / 'server')}"
    if not (store / "bench-built.json").is_file():
        raise SystemExit(f"no store of this code at {store}: run python -m bench scaling first")
    built = stamp.ensure(store)
    modes = args.modes.split(",")
    out = measure(folder / "ws", store / "kb", args.queries, modes)
    out["built_by"] = built
    for mode in modes:
        table(
            ["stage", "p50 ms", "p95 ms", "share of the time"],
            summary(out[mode]),
            f"{mode}, {out['chunks']:,} chunks (tldr × {args.copies}), {args.queries} queries",
        )
    print(f"load (1 min) at the start and after each mode: {out['load']}")
    write_json("stages", {"copies": args.copies, "queries": args.queries, **out})


if __name__ == "__main__":
    main()
