"""Cold index: kb-lsp's pipeline against the bare embedder and a naive Chroma indexer.

    python -m bench index [--quick] [--files N] [--store DIR]

On a private copy of fastapi-docs, in one run, on the same chunks:

* pipeline — `KnowledgeBase.sync()` from an empty store, what the server runs: scan,
  read, chunk, hash, embed (MiniLM, onnxruntime), write SQLite + FTS5 + Chroma;
* bare embedder — `MiniLMEmbedder.embed_documents` on the same chunk texts, nothing else:
  the floor, how close the pipeline gets to pure embedding;
* naive Chroma — what a user would write with Chroma alone: per file,
  `collection.add(documents=chunks, ids=…)` with Chroma's default embedding function
  (ONNXMiniLM_L6_V2) pointed at the same model files, so nothing is downloaded.

The machine is shared and its load drifts, so the two baselines are run in halves around
the pipeline (bare ½, Chroma ½, pipeline, Chroma ½, bare ½): all three are centred on the
same moment. Ratios from one run mean more than the absolute chunks/s.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora
from bench.embed_speed import chroma_model_dir
from bench.report import table, write_json
from kb_lsp.config import Settings, load_settings
from kb_lsp.embeddings import MiniLMEmbedder
from kb_lsp.indexer import embedding_text
from kb_lsp.knowledge import KnowledgeBase
from kb_lsp.markdown import parse_markdown

QUICK_FILES = 40


def file_chunks(workspace: Path, settings: Settings) -> list[tuple[str, list[str]]]:
    """(path, texts to embed) per Markdown file, chunked exactly as the pipeline does."""
    out = []
    for path in sorted(workspace.rglob("*.md")):
        doc = parse_markdown(
            path.read_text(encoding="utf-8", errors="replace"),
            file_name=path.name,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
        )
        texts = [embedding_text(" > ".join(c.heading_path), c.text) for c in doc.chunks]
        out.append((path.relative_to(workspace).as_posix(), texts))
    return out


def trim(workspace: Path, files: int) -> None:
    """Keep the first `files` Markdown files (sorted) of the copy, delete the rest."""
    for i, path in enumerate(sorted(workspace.rglob("*.md"))):
        if i >= files:
            path.unlink()


class NaiveChroma:
    """The indexer a user writes in ten lines with chromadb alone."""

    def __init__(self, folder: Path, model_dir: Path) -> None:
        import chromadb
        from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

        embed = ONNXMiniLM_L6_V2()
        embed.DOWNLOAD_PATH = str(model_dir)  # see embed_speed.chroma_model_dir
        embed(["warm up"])  # load outside the timed part, as the pipeline's embedder is
        self.client = chromadb.PersistentClient(path=str(folder))
        self.collection = self.client.create_collection(
            "naive", embedding_function=embed, metadata={"hnsw:space": "cosine"}
        )

    def add(self, files: list[tuple[str, list[str]]]) -> None:
        for path, texts in files:
            if texts:
                self.collection.add(documents=texts, ids=[f"{path}#{i}" for i in range(len(texts))])


def run(files: int = 0, store: Path | None = None) -> dict[str, Any]:
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    with tempfile.TemporaryDirectory(prefix="kb-bench-index-") as tmp:
        base = store or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        workspace = base / "fastapi-docs"
        if workspace.exists():
            shutil.rmtree(workspace)
        shutil.rmtree(base / "store", ignore_errors=True)  # a cold index, always
        corpora.copy_fastapi(workspace)
        if files:
            trim(workspace, files)
        per_file = file_chunks(workspace, settings)
        chunks = [t for _, ts in per_file for t in ts]
        half = len(per_file) // 2
        first, second = per_file[:half], per_file[half:]
        print(f"{len(per_file)} files, {len(chunks)} chunks ({workspace})")

        bare = MiniLMEmbedder(batch_size=settings.embedder.batch_size)
        bare.load()
        naive = NaiveChroma(Path(tmp) / "naive", chroma_model_dir(Path(tmp) / "chroma-model"))

        def timed(fn: Any, *args: Any) -> float:
            started = time.perf_counter()
            fn(*args)
            return time.perf_counter() - started

        def embed(part: list[tuple[str, list[str]]]) -> None:
            bare.embed_documents([t for _, ts in part for t in ts])

        t_bare = timed(embed, first)
        t_naive = timed(naive.add, first)

        embedder = MiniLMEmbedder(batch_size=settings.embedder.batch_size)
        embedder.load()  # the server loads the model before its first sync, too
        kb = KnowledgeBase([workspace], settings, embedder=embedder, storage=base / "store")
        started = time.perf_counter()
        report = kb.sync()
        t_pipeline = time.perf_counter() - started
        files_indexed, stored = kb.status().files, kb.status().chunks
        kb.close()

        t_naive += timed(naive.add, second)
        t_bare += timed(embed, second)
        naive_count = naive.collection.count()

    rates = {
        "pipeline": stored / t_pipeline,
        "bare_embedder": len(chunks) / t_bare,
        "naive_chroma": naive_count / t_naive,
    }
    out = {
        "corpus": "fastapi-docs" + (f" (first {files} files)" if files else ""),
        "files": files_indexed,
        "chunks": stored,
        "chunks_embedded": report.chunks_embedded,
        "seconds": {"pipeline": t_pipeline, "bare_embedder": t_bare, "naive_chroma": t_naive},
        "chunks_per_s": rates,
        "ratios": {
            "pipeline_vs_bare": rates["pipeline"] / rates["bare_embedder"],
            "pipeline_vs_naive_chroma": rates["pipeline"] / rates["naive_chroma"],
            "naive_chroma_vs_bare": rates["naive_chroma"] / rates["bare_embedder"],
        },
    }
    table(
        ["indexer", "chunks", "seconds", "chunks/s", "vs bare embedder"],
        [
            [
                "kb-lsp pipeline",
                stored,
                t_pipeline,
                rates["pipeline"],
                out["ratios"]["pipeline_vs_bare"],
            ],
            ["bare embedder", len(chunks), t_bare, rates["bare_embedder"], 1.0],
            [
                "naive Chroma",
                naive_count,
                t_naive,
                rates["naive_chroma"],
                out["ratios"]["naive_chroma_vs_bare"],
            ],
        ],
        f"Cold index, {out['corpus']}: {files_indexed} files",
    )
    print(
        f"pipeline / naive Chroma: {out['ratios']['pipeline_vs_naive_chroma']:.2f}x; "
        f"{report.chunks_embedded} of {stored} chunks embedded (identical chunks share a vector)"
    )
    write_json("index", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench index", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_FILES} files only")
    parser.add_argument("--files", type=int, default=0, help="first N files only (0: all)")
    parser.add_argument("--store", type=Path, help="build the copy and its index here (kept)")
    args = parser.parse_args(argv)
    run(files=args.files or (QUICK_FILES if args.quick else 0), store=args.store)
