"""`kb/search` latency over the LSP at growing corpus sizes, against ripgrep.

    python -m bench search [--quick] [--sizes 500,2000,all] [--store DIR]
    python -m bench search --old PATH/server --store DIR [--rounds 3] [--queries N]

One real server (`python -m kb_lsp`, stdio) on a private tldr-pages copy that grows
through the sizes: the first size is a cold index, each next size is copied in and picked
up by the server's own watcher, as a `git pull` would be. At each size, when the index is
ready: 200 varied queries (page descriptions, command names, example captions; the same
200 at every size) timed as a client sees them, the same queries with ripgrep (any of
the words, files listed), and the server's RSS. While the server indexes, `kb/status` is
polled every 100 ms and its latency recorded: the editor's status bar must not freeze.

With `--old` (the `server` folder of an older checkout): this code's server against the
old one's on all of tldr-pages, indexed once in `--store DIR` (in-process, reused by
later runs) — each round starts one server on that index, waits until it is ready,
searches 5 queries untimed and then every query timed, and stops it; rounds alternate
between the two code bases (this, old, this, …) so machine load hits both alike.
The servers open the index read-only (this process holds its writer lock:
`bench/frozen.py`), so neither re-indexes it with its own embedder.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.frozen import read_only_index
from bench.lsp_client import REPO, LspClient
from bench.quality import content_words
from bench.report import percentiles, table, write_json

SIZES = "500,2000,all"
QUICK_SIZES = "150,400,800"
QUERIES = 200
QUICK_QUERIES = 60
SEED = 6


def make_queries(count: int, seed: int = SEED) -> list[str]:
    """`count` queries from seeded random tldr pages, three kinds in turn: the page's
    description (a sentence), its command name (one word), an example's caption."""
    rng = random.Random(seed)
    pages = rng.sample(corpora.tldr_order(), count)
    queries = []
    for i, rel in enumerate(pages):
        text = (corpora.TLDR_PAGES / rel).read_text(encoding="utf-8")
        description = next((ln[2:] for ln in text.splitlines() if ln.startswith("> ")), "")
        captions = [ln[2:].rstrip(":") for ln in text.splitlines() if ln.startswith("- ")]
        kind = i % 3
        if kind == 0 and description:
            query = description
        elif kind == 2 and captions:
            query = rng.choice(captions)
        else:
            query = rel.stem.replace("-", " ")
        queries.append(re.sub(r"[`\[\]{}<>]", "", query).strip().rstrip("."))
    return queries


def rg_search(workspace: Path, query: str) -> float:
    """Seconds for `rg` to list the files holding any of the query's words (or the
    query itself when it has no content words), spawn included, as a user runs it."""
    words = content_words(query) or [query]
    args = ["rg", "-i", "-F", "-l", "--no-messages", "-g", "*.md"]
    for word in words:
        args += ["-e", word]
    started = time.perf_counter()
    subprocess.run(args, cwd=workspace, capture_output=True, check=False)
    return time.perf_counter() - started


def wait_indexed(client: LspClient, status_ms: list[float], expected_files: int) -> float:
    """Poll kb/status every 100 ms until all `expected_files` are in and the index is
    ready; records each poll's latency while indexing. Returns seconds waited."""
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        status = client.status()
        took = time.perf_counter() - t0
        done = status["state"] == "ready" and status["pending"] == 0
        if done and status["files"] >= expected_files:
            return time.perf_counter() - started
        if status["state"] == "indexing" or status["pending"]:
            status_ms.append(took * 1000)
        if status["state"] == "error":
            raise RuntimeError(f"index error: {status.get('message')}")
        time.sleep(0.1)


def parse_sizes(text: str, total: int) -> list[int]:
    sizes = sorted({total if s == "all" else min(int(s), total) for s in text.split(",")})
    return sizes


def run(sizes_text: str, count: int, store: Path | None = None) -> dict[str, Any]:
    total = corpora.tldr_size_all()
    sizes = parse_sizes(sizes_text, total)
    queries = make_queries(count)
    have_rg = shutil.which("rg") is not None
    if not have_rg:
        print("ripgrep (rg) is not installed: the rg baseline is skipped (apt-get install ripgrep)")
    out: dict[str, Any] = {"queries": len(queries), "sizes": []}
    status_ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-search-") as tmp:
        base = store or Path(tmp)
        workspace, storage = base / "tldr", base / "tldr-store"
        for path in (workspace, storage):
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        stamp.fresh(base)
        corpora.copy_tldr(workspace, sizes[0])
        client = LspClient([workspace], storage)
        with client:
            copied = sizes[0]
            cumulative = 0.0
            for size in sizes:
                started = time.perf_counter()
                if size > copied:
                    _copy_range(workspace, copied, size)
                    copied = size
                waited = wait_indexed(client, status_ms, size)
                # The first size counts from the process start: spawn, model load, index.
                seconds = waited if size != sizes[0] else time.perf_counter() - client.started_at
                cumulative += time.perf_counter() - started if size != sizes[0] else seconds
                status = client.status()
                row = _measure(client, workspace, queries, have_rg)
                row.update(
                    files=status["files"],
                    chunks=status["chunks"],
                    index_seconds=seconds,
                    index_seconds_cumulative=cumulative,
                    rss_mib=client.rss_mib(),
                )
                out["sizes"].append(row)
                print(
                    f"{status['files']} files, {status['chunks']} chunks: indexed in "
                    f"{seconds:.1f} s; search p50 {row['lsp']['p50'] * 1000:.1f} ms",
                    flush=True,
                )
            out["syncs"] = client.syncs()
    out["status_during_index_ms"] = percentiles(status_ms)
    out["status_during_index_ms"]["max"] = max(status_ms, default=float("nan"))
    _print(out, have_rg)
    write_json("search", out)
    return out


def compare(store: Path, old: Path, rounds: int, count: int) -> dict[str, Any]:
    """This code's `kb/search` over LSP against `old`'s, on one tldr-pages index (see
    the module docstring)."""
    workspace, storage = store / "tldr", store / "tldr-store"
    stamp.ensure(store)
    if not workspace.exists():
        corpora.copy_tldr(workspace)
    _index_in_process(workspace, storage)
    queries = make_queries(count)
    codes = {"this code": REPO / "server", "old code": old.resolve()}
    times: dict[str, list[float]] = {name: [] for name in codes}
    with read_only_index(storage, workspace):
        for r in range(rounds):
            order = list(codes.items()) if r % 2 == 0 else list(reversed(codes.items()))
            for name, server in order:
                with LspClient([workspace], storage, server=server) as client:
                    status = client.wait_ready()
                    for query in queries[:5]:  # warm caches; not counted
                        client.search(query)
                    took = []
                    for query in queries:
                        started = time.perf_counter()
                        client.search(query)
                        took.append(time.perf_counter() - started)
                times[name] += took
                print(
                    f"round {r + 1} {name}: {status['chunks']} chunks, p50 "
                    f"{percentiles(took)['p50'] * 1000:.1f} ms (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    out: dict[str, Any] = {"queries": len(queries), "rounds": rounds, "old": str(old)}
    base = percentiles(times["this code"])
    rows = []
    for name, samples in times.items():
        p = percentiles(samples)
        out[name] = p
        rows.append(
            [
                name,
                round(p["p50"] * 1000, 1),
                round(p["p95"] * 1000, 1),
                round(p["p99"] * 1000, 1),
                round(p["p50"] / base["p50"], 2),
                round(p["p95"] / base["p95"], 2),
            ]
        )
    table(
        ["server", "p50 ms", "p95 ms", "p99 ms", "p50 / this", "p95 / this"],
        rows,
        f"kb/search over LSP, tldr-pages ({len(queries)} queries x {rounds} rounds), "
        f"load {os.getloadavg()[0]:.1f}",
    )
    write_json("search-lsp-vs-old", out)
    return out


def _index_in_process(workspace: Path, storage: Path) -> None:
    """Index (or bring up to date) the copy as the server would, in this process: the
    servers then start on a ready index. The int8 model is derived in the cache the
    servers use (`LspClient` points XDG_CACHE_HOME at the storage folder)."""
    os.environ["XDG_CACHE_HOME"] = str(storage / "xdg-cache")
    from kb_lsp.config import load_settings
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import KnowledgeBase, model_cache

    kb = KnowledgeBase(
        [workspace],
        load_settings().settings,
        embedder=MiniLMEmbedder(int8_cache=model_cache()),
        storage=storage,
    )
    started = time.perf_counter()
    report = kb.sync()
    status = kb.status()
    kb.close()
    print(
        f"index: {status.files} files, {status.chunks} chunks ({report.chunks_embedded} "
        f"embedded now, {time.perf_counter() - started:.1f} s)",
        flush=True,
    )


def _copy_range(workspace: Path, start: int, end: int) -> None:
    order = corpora.tldr_order()
    for rel in order[start:end]:
        dest = workspace / "pages" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpora.TLDR_PAGES / rel, dest)


def _measure(
    client: LspClient, workspace: Path, queries: list[str], have_rg: bool
) -> dict[str, Any]:
    for query in queries[:5]:  # warm caches; not counted
        client.search(query)
    lsp, rg, hits = [], [], []
    # Interleaved per query, so load from other processes hits both alike.
    for query in queries:
        started = time.perf_counter()
        result = client.search(query)
        lsp.append(time.perf_counter() - started)
        hits.append(len(result["results"]))
        if have_rg:
            rg.append(rg_search(workspace, query))
    row: dict[str, Any] = {"lsp": percentiles(lsp), "mean_results": sum(hits) / len(hits)}
    if have_rg:
        row["rg"] = percentiles(rg)
    return row


def _print(out: dict[str, Any], have_rg: bool) -> None:
    rows = []
    for s in out["sizes"]:
        ms = {k: v * 1000 for k, v in s["lsp"].items() if k != "n"}
        rg = {k: v * 1000 for k, v in s.get("rg", {}).items() if k != "n"}
        rows.append(
            [
                s["files"],
                s["chunks"],
                s["index_seconds"],
                ms["p50"],
                ms["p95"],
                ms["p99"],
                rg.get("p50", "-") if have_rg else "-",
                rg.get("p95", "-") if have_rg else "-",
                s["rss_mib"],
            ]
        )
    table(
        [
            "files",
            "chunks",
            "index s",
            "search p50 ms",
            "p95 ms",
            "p99 ms",
            "rg p50 ms",
            "rg p95 ms",
            "RSS MiB",
        ],
        rows,
        f"kb/search over LSP ({out['queries']} queries) vs ripgrep",
    )
    st = out["status_during_index_ms"]
    print(
        f"kb/status while indexing: p50 {st['p50']:.1f} ms, p95 {st['p95']:.1f} ms, "
        f"max {st['max']:.1f} ms ({st['n']} polls)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench search", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}, fewer queries")
    parser.add_argument("--sizes", help=f"comma-separated page counts or 'all' (default {SIZES})")
    parser.add_argument("--queries", type=int, help=f"queries per size (default {QUERIES})")
    parser.add_argument("--store", type=Path, help="build the copy and its index here (kept)")
    parser.add_argument("--old", type=Path, help="the server/ folder of an older checkout")
    parser.add_argument("--rounds", type=int, default=3, help="with --old: rounds per server")
    args = parser.parse_args(argv)
    if args.old is not None:
        if args.store is None:
            parser.error("--old needs --store DIR (the tldr index, reused between runs)")
        compare(args.store, args.old, args.rounds, args.queries or QUERIES)
        return
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    count = args.queries or (QUICK_QUERIES if args.quick else QUERIES)
    run(sizes, count, store=args.store)
