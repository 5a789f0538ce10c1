"""Search latency, memory and store size as the corpus grows to 100k+ chunks.

    python -m bench scaling [--copies 1,3,8,12] [--store DIR] [--old PATH/server]
                            [--rounds 3] [--queries 200] [--modes hybrid,keyword] [--rebuild]
    python -m bench scaling --draw     # only the plot of `bench search`'s results

tldr-pages taken 1, 3, 8 and 12 times over (`corpora.copy_tldr_scaled`: about 9k, 27k,
72k and 108k chunks; every mirror page is a new text made of real pages' words) and
indexed in-process with the test suite's deterministic hashing embedder at MiniLM's 384
dimensions (no model: a 108k-chunk index with the real one takes hours on two cores; the
search path is the same but for the query's embedding, 3-4 ms with MiniLM). Each code base
builds its own store of each size (`--store DIR` keeps them for the next run; an older
commit may not read a newer store's format), in a worker process of its own. A store is
the code base's own, named by the hash of its Python files (another `--old` gets another
store) and stamped with the commit that built it (`bench/stamp.py`); the index time is
reported only for a store built in this run (`--rebuild` builds them all again), and the
chunk count is read from the store by the run's own search workers.

Then per round, per size, per code base (this code, the old one, alternating so machine
load hits both alike): a worker process opens the index, searches 200 other queries
untimed (warm: SQLite pages, the HNSW index, the term counts), then every query once timed
per mode, and reports the
times and its resident memory (VmRSS) after the warm pass. The queries are `bench
search`'s 200 seeded tldr queries. Reported per size: p50/p95 per mode, the growth
exponent of p95 between the smallest and the largest size (time ∝ chunks^e), idle RSS per
chunk over the smallest size's, and the store's size against the Markdown's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.report import RESULTS, percentiles, table, write_json

REPO = Path(__file__).resolve().parent.parent
LIMIT = 10
COPIES = "1,3,8,12"
WARM_SEED = 7

# Runs in a worker under whichever code base PYTHONPATH names: only the API both have.
BUILD = """
import json, sys, time
from pathlib import Path
from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from tests.fakes.embedder import HashingEmbedder

workspace, storage = sys.argv[1:3]
settings = load_settings({}).settings
started = time.perf_counter()
kb = KnowledgeBase([Path(workspace)], settings, embedder=HashingEmbedder(dimension=384),
                   storage=Path(storage))
kb.sync()
took = time.perf_counter() - started
chunks = kb.status().chunks
kb.close()
print(json.dumps({"seconds": took, "chunks": chunks}))
"""

SEARCH = """
import json, sys, time
from pathlib import Path
from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from tests.fakes.embedder import HashingEmbedder

workspace, storage, warm_file, queries_file, modes, limit = sys.argv[1:7]
warm, queries = (json.loads(Path(f).read_text()) for f in (warm_file, queries_file))
settings = load_settings({"search": {"threshold": 0.0}}).settings
kb = KnowledgeBase([Path(workspace)], settings, embedder=HashingEmbedder(dimension=384),
                   storage=Path(storage))
out = {}
for mode in modes.split(","):
    for q in warm:
        kb.search(q, limit=int(limit), mode=mode)
rss = next(int(line.split()[1]) for line in open("/proc/self/status")
           if line.startswith("VmRSS"))
chunks = kb.status().chunks
for mode in modes.split(","):
    times = []
    for q in queries:
        started = time.perf_counter()
        kb.search(q, limit=int(limit), mode=mode)
        times.append(time.perf_counter() - started)
    out[mode] = times
kb.close()
print(json.dumps({"times": out, "rss_kib": rss, "chunks": chunks}))
"""


def _worker(code: Path, script: str, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"worker under {code} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _markdown_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.md"))


def prepare(
    base: Path, copies: int, codes: dict[str, Path], rebuild: bool = False
) -> dict[str, Any]:
    """The workspace of `copies` and each code base's store of it: built when missing (or
    with `rebuild`), its index time measured then; reused otherwise, with its stamp."""
    folder = base / f"x{copies}"
    workspace = folder / "ws"
    if not (folder / "ws.done").exists():
        shutil.rmtree(workspace, ignore_errors=True)
        corpora.copy_tldr_scaled(workspace, copies)
        (folder / "ws.done").touch()
    size: dict[str, Any] = {
        "copies": copies,
        "workspace": str(workspace),
        "markdown_bytes": _markdown_bytes(workspace),
    }
    for label, code in codes.items():
        storage = folder / f"store-{label}-{stamp.content_hash(code)}"
        built = storage / "bench-built.json"  # written once the index is complete
        seconds = None
        if rebuild or not built.exists():
            shutil.rmtree(storage, ignore_errors=True)
            made = stamp.fresh(storage, code)
            print(f"indexing {copies}x tldr with the {label} code…", flush=True)
            seconds = _worker(code, BUILD, str(workspace), str(storage / "kb"))["seconds"]
            built.write_text(json.dumps({"seconds": seconds}))
        else:
            made = stamp.ensure(storage, code)
            print(f"  (its index took {json.loads(built.read_text())['seconds']:.1f} s then)")
        size[label] = {
            "storage": str(storage / "kb"),
            "built_by": made,
            "index_seconds": seconds,  # None: a store built by an earlier run
            "store_bytes": _bytes(storage / "kb"),
        }
    return size


def exponent(x0: float, y0: float, x1: float, y1: float) -> float:
    """e in y ∝ x^e through two points."""
    return math.log(y1 / y0) / math.log(x1 / x0) if x1 != x0 and y0 > 0 and y1 > 0 else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.search_latency import make_queries

    codes = {"this": REPO / "server"}
    if args.old:
        codes["old"] = Path(args.old).resolve()
    base = Path(args.store).resolve() if args.store else Path(args.tmp)
    base.mkdir(parents=True, exist_ok=True)
    copies = [int(c) for c in args.copies.split(",")]
    sizes = [prepare(base, c, codes, args.rebuild) for c in copies]
    queries_file, warm_file = base / "queries.json", base / "warm.json"
    queries_file.write_text(json.dumps(make_queries(args.queries)))
    # Other queries warm the worker: a query timed is never one it has answered.
    warm_file.write_text(json.dumps(make_queries(args.queries, seed=WARM_SEED)))
    modes = args.modes
    times: dict[tuple[int, str, str], list[float]] = {}
    rss: dict[tuple[int, str], list[int]] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for size in sizes:
            for label, code in codes.items():
                got = _worker(
                    code,
                    SEARCH,
                    size["workspace"],
                    size[label]["storage"],
                    str(warm_file),
                    str(queries_file),
                    modes,
                    str(LIMIT),
                )
                for mode, taken in got["times"].items():
                    times.setdefault((size["copies"], label, mode), []).extend(taken)
                size[label]["chunks"] = got["chunks"]  # read from the store by this run
                rss.setdefault((size["copies"], label), []).append(got["rss_kib"])
        loads.append(os.getloadavg()[0])
    for size in sizes:
        for label in codes:
            entry = size[label]
            entry["rss_kib"] = statistics.median(rss[(size["copies"], label)])
            for mode in modes.split(","):
                entry[mode] = percentiles(times[(size["copies"], label, mode)])
    return {"queries": args.queries, "rounds": args.rounds, "load": loads, "sizes": sizes}


def report(out: dict[str, Any]) -> None:
    sizes = out["sizes"]
    labels = [k for k in ("this", "old") if k in sizes[0]]
    modes = [m for m in ("hybrid", "keyword", "semantic") if m in sizes[0]["this"]]
    rows = []
    for size in sizes:
        for label in labels:
            e = size[label]
            row: list[Any] = [f"{size['copies']}x", label, e["chunks"]]
            for mode in modes:
                row += [round(e[mode]["p50"] * 1000, 1), round(e[mode]["p95"] * 1000, 1)]
            row += [
                round(e["rss_kib"] / 1024, 1),
                round(e["store_bytes"] / size["markdown_bytes"], 1),
                "reused" if e["index_seconds"] is None else round(e["index_seconds"], 1),
            ]
            rows.append(row)
    headers = ["tldr", "code", "chunks"]
    for mode in modes:
        headers += [f"{mode} p50 ms", f"{mode} p95 ms"]
    headers += ["idle RSS MiB", "store / Markdown", "index s"]
    table(headers, rows, "Search as the corpus grows (in-process, warm)")
    first, last = sizes[0], sizes[-1]
    growth = []
    for label in labels:
        a, b = first[label], last[label]
        row = [label, f"{a['chunks']} → {b['chunks']}"]
        for mode in modes:
            row.append(round(exponent(a["chunks"], a[mode]["p95"], b["chunks"], b[mode]["p95"]), 2))
        per_chunk = (b["rss_kib"] - a["rss_kib"]) / max(1, b["chunks"] - a["chunks"])
        row.append(round(per_chunk, 2))
        growth.append(row)
    table(
        ["code", "chunks", *[f"{m} p95 exponent" for m in modes], "RSS KiB per chunk"],
        growth,
        "Growth between the smallest and the largest size",
    )
    print(f"load (1 min) at the start and after each round: {out['load']}")


def draw(search: dict[str, Any], target: Path) -> Path:
    """The plot of `bench search`'s results: index time and search latency by size."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    import matplotlib.pyplot as plt

    sizes = search["sizes"]
    chunks = [s["chunks"] for s in sizes]
    files = [s["files"] for s in sizes]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))

    left.plot(chunks, [s["index_seconds_cumulative"] for s in sizes], "o-", label="kb-lsp (LSP)")
    left.set_title("Cold index time (tldr-pages)")
    left.set_xlabel("chunks")
    left.set_ylabel("seconds")
    left.set_ylim(bottom=0)

    right.plot(
        chunks, [s["lsp"]["p95"] * 1000 for s in sizes], "o-", label="kb/search over LSP p95"
    )
    right.plot(
        chunks, [s["lsp"]["p50"] * 1000 for s in sizes], "o--", alpha=0.6, label="kb/search p50"
    )
    if all("rg" in s for s in sizes):
        right.plot(chunks, [s["rg"]["p95"] * 1000 for s in sizes], "s-", label="ripgrep p95")
        right.plot(
            chunks, [s["rg"]["p50"] * 1000 for s in sizes], "s--", alpha=0.6, label="ripgrep p50"
        )
    right.set_title(f"Search latency, {search['queries']} queries")
    right.set_xlabel("chunks")
    right.set_ylabel("milliseconds")
    right.set_ylim(bottom=0)

    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.legend(loc="upper left")
        for x, n in zip(chunks, files, strict=True):
            axis.annotate(
                f"{n} files",
                (x, 0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
    cpu = search.get("machine", {})
    fig.suptitle(f"kb-lsp on {cpu.get('cores', '?')} cores: {cpu.get('cpu', '')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target


def draw_search() -> Path:
    source = RESULTS / "search.json"
    if not source.exists():
        raise SystemExit(f"{source} is missing: run `python -m bench search` first")
    target = draw(json.loads(source.read_text()), RESULTS / "scaling.png")
    print(f"-> {target.relative_to(RESULTS.parent.parent)}")
    return target


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench scaling", description=__doc__)
    parser.add_argument("--draw", action="store_true", help="only draw bench search's plot")
    parser.add_argument("--quick", action="store_true", help="sizes 1,2 and 40 queries")
    parser.add_argument("--copies", default=COPIES, help=f"tldr copies per size ({COPIES})")
    parser.add_argument("--store", help="keep workspaces and stores here for the next run")
    parser.add_argument("--old", help="the server/ folder of an older checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--modes", default="hybrid,keyword")
    parser.add_argument(
        "--rebuild", action="store_true", help="build every store again (its index time measured)"
    )
    args = parser.parse_args(argv)
    if args.draw:
        draw_search()
        return
    if args.quick:
        args.copies, args.queries, args.rounds = "1,2", 40, 1
    import tempfile

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kb-bench-scaling-") as tmp:
        args.tmp = tmp
        out = run(args)
    report(out)
    out["seconds"] = round(time.perf_counter() - started, 1)
    write_json("scaling", out)
