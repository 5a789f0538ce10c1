"""One cold index by the real server, watched from outside: what `timeline` and `memory`
report.

The server (`python -m kb_lsp`, this checkout's or another commit's with `--old`) starts
on a fresh copy of a corpus with an empty store; `kb/status` is polled every 100 ms and
the process's resident size read from /proc each time. Recorded:

* keyword complete — the first poll where every file of the corpus is in the index
  (`files` = the corpus's Markdown files, and `keywordComplete` where the server reports
  it), confirmed by a keyword search for a word of a known page;
* vectors complete — `ready`, nothing pending, `vectorsReady` 1 where reported;
* peak RSS (the kernel's high-water mark, VmHWM) and idle RSS 5 s after the index is
  complete, with no request in between.

The int8 copy of the model is made before the run, in a cache the server is pointed at
(`KB_MODEL_CACHE`), so the one-time derivation is reported apart, not inside the index.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import corpora
from bench.lsp_client import LspClient

# A word of one page each, to confirm that keyword search answers at "keyword complete".
PROBES = {
    "fastapi": ("CORSMiddleware", "docs/tutorial/cors.md"),
    "tldr": ("pdftotext", "pdftotext.md"),
}


def add_cold_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every cold-run bench takes: which corpus, how much of it, which servers."""
    parser.add_argument("--corpus", choices=["fastapi", "tldr"], default="fastapi")
    parser.add_argument("--files", type=int, help="tldr: the first N pages only")
    parser.add_argument("--old", type=Path, help="another commit's server/ folder to compare")
    parser.add_argument(
        "--only-old",
        action="store_true",
        help="run only the --old server (e.g. in parallel with a run of this one)",
    )


def proc_kib(pid: int, field: str) -> int:
    """A `/proc/PID/status` size field (`VmRSS`, `VmHWM`) in KiB; 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def make_model_cache(folder: Path) -> dict[str, Any]:
    """The int8 copy in `folder` (made now if missing), with how long that took."""
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder

    started = time.perf_counter()
    embedder = MiniLMEmbedder(int8_cache=folder)
    embedder.load()
    copy = embedder.int8
    return {
        "seconds": time.perf_counter() - started,
        "identity": embedder.identity,
        "min_cosine": copy.min_cosine if copy else None,
        "mean_cosine": copy.mean_cosine if copy else None,
        "threads": copy.threads if copy else None,
    }


def cold_run(
    corpus: str,
    *,
    server: Path | None = None,
    model_cache: Path | None = None,
    deadline: float = 3600.0,
    files: int | None = None,
) -> dict[str, Any]:
    """Index `corpus` ("fastapi" or "tldr", the first `files` tldr pages) from cold."""
    with tempfile.TemporaryDirectory(prefix="kb-bench-cold-") as tmp:
        base = Path(tmp)
        workspace = base / corpus
        if corpus == "fastapi":
            corpora.copy_fastapi(workspace)
        else:
            workspace.mkdir()
            corpora.copy_tldr(workspace, files)
        expected = sum(1 for _ in workspace.rglob("*.md"))
        word, page = PROBES[corpus]
        env = None
        if model_cache is not None:
            import os

            env = {**os.environ, "KB_MODEL_CACHE": str(model_cache)}
        storage = base / "store"
        storage.mkdir()
        client = LspClient([workspace], storage, env=env, server=server)
        samples: list[dict[str, Any]] = []
        out: dict[str, Any] = {"corpus": corpus, "files": expected, "server": str(client.server)}
        keyword_at = vectors_at = None
        with client:
            pid, t0 = client.pid, client.started_at
            while True:
                status = client.status()
                now = time.perf_counter() - t0
                rss = proc_kib(pid, "VmRSS") / 1024
                samples.append(
                    {
                        "t": now,
                        "files": status["files"],
                        "chunks": status["chunks"],
                        "state": status["state"],
                        "pending": status["pending"],
                        "vectorsReady": status.get("vectorsReady"),
                        "rss_mib": rss,
                    }
                )
                if (
                    keyword_at is None
                    and status["files"] >= expected
                    and status.get("keywordComplete", True)
                ):
                    keyword_at = now
                    hits = client.search(word, mode="keyword")["results"]
                    out["keyword_probe"] = {
                        "query": word,
                        "expected": page,
                        "found": any(h["path"].endswith(page) for h in hits),
                        "at_s": time.perf_counter() - t0,
                    }
                if (
                    status["state"] == "ready"
                    and status["pending"] == 0
                    and status["files"] >= expected
                    and status.get("vectorsReady", 1.0) >= 1.0
                ):
                    vectors_at = now
                    out["chunks"] = status["chunks"]
                    break
                if now > deadline:
                    break
                time.sleep(0.1)
            out["peak_rss_mib"] = proc_kib(pid, "VmHWM") / 1024
            if vectors_at is not None:
                time.sleep(5.0)
                out["idle_rss_mib"] = proc_kib(pid, "VmRSS") / 1024
        out.update(
            keyword_complete_s=keyword_at,
            vectors_complete_s=vectors_at,
            searchable_files_at_end=samples[-1]["files"] if samples else 0,
            stopped_at_s=samples[-1]["t"] if samples else 0.0,
            samples=samples,
        )
        if vectors_at is not None and out.get("chunks"):
            out["chunks_per_s"] = out["chunks"] / vectors_at
        return out
