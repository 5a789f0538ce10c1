"""Warm in-process search latency on fastapi-docs or tldr-pages, this code against an
older commit's on the same index, in one run.

    python -m bench speed [--corpus fastapi|tldr] [--pages N] [--store DIR]
                          [--old PATH/server] [--rounds 3] [--queries N] [--vectors]

Indexes a private copy once (real int8 MiniLM, the product's default; a `--store` folder
from an earlier run is reused), then times `KnowledgeBase.search` — what `kb/search`
calls, query embedding included — in separate worker processes, one per round and code
base, alternating (this code, the old code, this code, …) so that machine load hits both
alike. Each worker opens the index, searches every query once untimed (warm: model
sessions, SQLite pages, the HNSW index), then once timed. The queries: the quality set's
(`bench/queries/fastapi.json`: questions, file names, off-topic) on fastapi-docs, the
search benchmark's 200 seeded tldr queries on tldr-pages. `--old` is the `server` folder of
a checkout of the older commit (`git worktree add /tmp/old <commit>`); the old code opens
the same store (a newer store's extra columns are invisible to it). While the rounds run
this process holds the store's writer lock, so both open it read-only: an older commit
with another embedder identity would otherwise re-embed it (`bench/frozen.py`).

`--vectors`: instead, the vector half of a search alone, in this process — Chroma's
HNSW query (what search asks: the 50 nearest chunks) against an exact search (one
matrix product over every stored vector, held in memory), per query in turn: time of
each, and how many of the exact 50 nearest the HNSW answer holds (recall@50).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.frozen import read_only_index
from bench.report import percentiles, table, write_json

REPO = Path(__file__).resolve().parent.parent
LIMIT = 10

# Runs in the worker, under whichever code base PYTHONPATH names: only the API both have.
WORKER = """
import json, sys, time
from pathlib import Path
from kb_lsp.config import load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase, model_cache

workspace, storage, queries_file = sys.argv[1:4]
LIMIT = int(sys.argv[4])
queries = json.loads(Path(queries_file).read_text())
settings = load_settings({"search": {"threshold": 0.0}}).settings
kb = KnowledgeBase([Path(workspace)], settings,
                   embedder=MiniLMEmbedder(int8_cache=model_cache()), storage=Path(storage))
for q in queries:
    kb.search(q, limit=LIMIT)
times = []
for q in queries:
    started = time.perf_counter()
    kb.search(q, limit=LIMIT)
    times.append(time.perf_counter() - started)
kb.close()
print(json.dumps(times))
"""


def queries_for(corpus: str, count: int | None) -> list[str]:
    if corpus == "tldr":
        from bench.search_latency import make_queries

        return make_queries(count or 200)
    from bench.quality import load_queries

    data = load_queries()
    every = [
        *(q["query"] for q in data["questions"]),
        *(q["query"] for q in data["filename"]),
        *data["offtopic"],
    ]
    return every[:count] if count else every


def build(store: Path, corpus: str, pages: int | None) -> tuple[Path, Path]:
    from kb_lsp.config import load_settings
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import KnowledgeBase, model_cache

    workspace = store / corpus
    if not workspace.exists():
        if corpus == "tldr":
            corpora.copy_tldr(workspace, pages)
        else:
            corpora.copy_fastapi(workspace)
    storage = store / "store"
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase(
        [workspace], settings, embedder=MiniLMEmbedder(int8_cache=model_cache()), storage=storage
    )
    started = time.perf_counter()
    report = kb.sync()
    files, chunks = kb.status().files, kb.status().chunks
    kb.close()
    print(
        f"index: {files} files, {chunks} chunks ({report.chunks_embedded} embedded now, "
        f"{time.perf_counter() - started:.1f} s)"
    )
    return workspace, storage


def one_round(server: Path, workspace: Path, storage: Path, queries: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(server)}
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(workspace), str(storage), str(queries), str(LIMIT)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"worker for {server} failed:\n{out.stderr[-3000:]}")
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def run(
    store: Path, corpus: str, pages: int | None, old: Path | None, rounds: int, count: int | None
) -> dict[str, Any]:
    workspace, storage = build(store, corpus, pages)
    texts = queries_for(corpus, count)
    queries = store / "queries.json"
    queries.write_text(json.dumps(texts))
    codes = {"this code": REPO / "server"}
    if old is not None:
        codes["old code"] = old.resolve()
    times: dict[str, list[float]] = {name: [] for name in codes}
    with read_only_index(storage, workspace):
        for r in range(rounds):
            for name, server in codes.items():
                took = one_round(server, workspace, storage, queries)
                times[name] += took
                print(
                    f"round {r + 1} {name}: p50 {percentiles(took)['p50'] * 1000:.1f} ms "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    out: dict[str, Any] = {"corpus": corpus, "queries": len(texts), "rounds": rounds}
    rows = []
    base = percentiles(times["this code"])
    for name, samples in times.items():
        p = percentiles(samples)
        out[name] = p
        rows.append(
            [
                name,
                round(p["p50"] * 1000, 1),
                round(p["p95"] * 1000, 1),
                round(p["p50"] / base["p50"], 2),
                round(p["p95"] / base["p95"], 2),
            ]
        )
    table(
        ["code", "p50 ms", "p95 ms", "p50 / this", "p95 / this"],
        rows,
        f"Warm search latency, {corpus} ({len(texts)} queries x {rounds} rounds), in-process, "
        f"load {os.getloadavg()[0]:.1f}",
    )
    write_json(f"speed-{corpus}", out)
    return out


def vectors(store: Path, corpus: str, pages: int | None, count: int | None) -> dict[str, Any]:
    """HNSW (Chroma) against exact nearest chunks on one index (module docstring)."""
    import sqlite3
    from contextlib import closing

    import chromadb
    import numpy as np
    from chromadb.config import Settings as ChromaSettings

    from kb_lsp.config import load_settings
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import KnowledgeBase, model_cache
    from kb_lsp.engine.storage import DATABASE
    from kb_lsp.engine.store.chroma import LIVE_COLLECTION

    workspace, storage = build(store, corpus, pages)
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    embedder = MiniLMEmbedder(int8_cache=model_cache())
    kb = KnowledgeBase([workspace], settings, embedder=embedder, storage=storage)
    ((folder, _),) = kb.store_folders().items()
    kb.close()  # the store's files are read with sqlite3's and chromadb's own clients
    k = 50  # `Searcher._rank_files` asks for max(40, 5 * limit) at limit 10
    started = time.perf_counter()
    with closing(sqlite3.connect(folder / DATABASE)) as db:
        rows = db.execute(
            "SELECT c.id, v.embedding FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash"
        ).fetchall()
        live = db.execute("SELECT value FROM meta WHERE key = ?", (LIVE_COLLECTION,)).fetchone()
    ids = [row[0] for row in rows]
    matrix = np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    load_s = time.perf_counter() - started
    queries = [embedder.embed_query(q) for q in queries_for(corpus, count)]
    hnsw_s: list[float] = []
    exact_s: list[float] = []
    recall: list[float] = []
    client = chromadb.PersistentClient(
        path=str(folder / "chroma"), settings=ChromaSettings(anonymized_telemetry=False)
    )
    collection = client.get_collection(
        live[0] if live else f"kb_{folder.name}", embedding_function=None
    )
    for vector in queries:
        q = np.asarray(vector, dtype=np.float32)
        for _ in range(2):  # the first of each pair warms; the second is timed
            t0 = time.perf_counter()
            hits = collection.query(query_embeddings=[q.tolist()], n_results=k, include=[])
            t1 = time.perf_counter()
            sims = matrix @ q
            top = np.argpartition(-sims, k)[:k]
            nearest = {ids[i] for i in top[np.argsort(-sims[top])]}
            t2 = time.perf_counter()
        hnsw_s.append(t1 - t0)
        exact_s.append(t2 - t1)
        recall.append(len(nearest & set(hits["ids"][0])) / k)
    hnsw, exact = percentiles(hnsw_s), percentiles(exact_s)
    out: dict[str, Any] = {
        "corpus": corpus,
        "chunks": len(ids),
        "queries": len(queries),
        "hnsw": hnsw,
        "exact": exact,
        "recall@50": {"mean": float(np.mean(recall)), "min": float(np.min(recall))},
        "exact_load_s": load_s,
        "exact_matrix_mib": matrix.nbytes / 2**20,
    }
    table(
        ["vector search", "p50 ms", "p95 ms", "recall@50 mean / min"],
        [
            [
                "Chroma HNSW",
                round(hnsw["p50"] * 1000, 2),
                round(hnsw["p95"] * 1000, 2),
                f"{np.mean(recall):.3f} / {np.min(recall):.2f}",
            ],
            [
                "exact (numpy)",
                round(exact["p50"] * 1000, 2),
                round(exact["p95"] * 1000, 2),
                "1 / 1",
            ],
        ],
        f"{corpus}: {len(ids)} chunks, {len(queries)} queries, k = {k}; exact matrix "
        f"{matrix.nbytes / 2**20:.1f} MiB loaded in {load_s:.2f} s; load {os.getloadavg()[0]:.1f}",
    )
    write_json(f"speed-vectors-{corpus}", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench speed", description=__doc__)
    parser.add_argument("--corpus", choices=("fastapi", "tldr"), default="fastapi")
    parser.add_argument("--pages", type=int, help="tldr: only the first N pages")
    parser.add_argument("--store", type=Path, help="keep the copy and its index here (reused)")
    parser.add_argument("--old", type=Path, help="the server/ folder of an older checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, help="at most N queries")
    parser.add_argument("--vectors", action="store_true", help="HNSW vs exact vector search")
    args = parser.parse_args(argv)
    store = args.store or Path(tempfile.mkdtemp(prefix="kb-bench-speed-"))
    store.mkdir(parents=True, exist_ok=True)
    stamp.ensure(store)
    if args.vectors:
        vectors(store, args.corpus, args.pages, args.queries)
        return
    run(store, args.corpus, args.pages, args.old, args.rounds, args.queries)


if __name__ == "__main__":
    main()
