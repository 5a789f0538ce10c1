"""The editor's view of fastapi-docs over the LSP: status during a cold index, search
latency, save to searchable.

`python -m bench editor`: the real server (`python -m kb_lsp`) on a fresh copy of
fastapi-docs, driven over stdio as an editor drives it:

* while the cold index runs, `kb/status` is polled every 100 ms (what a status bar does)
  and each answer timed;
* when ready, the quality set's queries (`bench/queries/fastapi.json`: 76 of them, three
  rounds) through `kb/search`, timed as the client sees them;
* 20 saves, each adding a paragraph with a new word to a page, timed from the write until
  `kb/search` (hybrid, the default) returns that page with the word in its snippet — the
  watcher, its debounce (300 ms by default), the indexer and search, end to end.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora
from bench.live import save_to_searchable
from bench.lsp_client import LspClient
from bench.report import percentiles, table, write_json
from bench.search_latency import wait_indexed

QUERIES = Path(__file__).parent / "queries" / "fastapi.json"
ROUNDS = 3


def queries() -> list[str]:
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    items = [item for key in ("questions", "filename", "offtopic") for item in data[key]]
    # Off-topic entries are bare strings; the others carry their expected files.
    return [item if isinstance(item, str) else item["query"] for item in items]


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kb-bench-editor-") as tmp:
        base = Path(tmp)
        workspace = corpora.copy_fastapi(base / "fastapi")
        files = sorted(workspace.rglob("*.md"))
        (base / "store").mkdir()
        with LspClient([workspace], base / "store") as client:
            status_ms: list[float] = []
            index_seconds = wait_indexed(client, status_ms, len(files))
            search_ms = []
            for _ in range(ROUNDS):
                for query in queries():
                    started = time.perf_counter()
                    client.search(query)
                    search_ms.append((time.perf_counter() - started) * 1000)
            # Pages spread over the corpus, not one folder.
            pages = files[:: max(1, len(files) // 20)]
            saves = save_to_searchable(client, workspace, pages)
            rss = client.rss_mib()
    return {
        "corpus": "fastapi-docs",
        "files": len(files),
        "cold_index_seconds": index_seconds,
        "status_during_index_ms": {**percentiles(status_ms), "max": max(status_ms, default=0)},
        "search_ms": percentiles(search_ms),
        "save_to_searchable_s": percentiles(saves),
        "save_to_searchable_samples": saves,
        "rss_mib": rss,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench editor", description=__doc__)
    parser.parse_args(argv)
    out = run()
    status, search, saves = (
        out["status_during_index_ms"],
        out["search_ms"],
        out["save_to_searchable_s"],
    )
    table(
        ["measure (fastapi-docs, over LSP)", "p50", "p95", "max / n"],
        [
            [
                "kb/status during the cold index (ms)",
                status["p50"],
                status["p95"],
                status["max"],
            ],
            ["kb/search (ms)", search["p50"], search["p95"], search["n"]],
            ["save -> searchable (s)", saves["p50"], saves["p95"], saves["n"]],
        ],
        title=(
            f"cold index {out['cold_index_seconds']:.0f} s, server RSS {out['rss_mib']:.0f} MiB"
        ),
    )
    print(f"-> {write_json('editor', out)}")
