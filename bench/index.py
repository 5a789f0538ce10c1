"""Cold index: the pipeline with the shipped (float-computing) model against the int8 copy.

    python -m bench index [--quick] [--files N] [--store DIR] [--old SERVER_DIR] [--naive]
                          [--rounds N]

On a private copy of fastapi-docs, in one run, on the same chunks:

* pipeline, int8 — `KnowledgeBase.sync()` from an empty store, what the server runs:
  scan, read, chunk, FTS (phase 1), then embed with the int8 copy of the model and write
  SQLite + Chroma (phase 2);
* pipeline, float — the same with the shipped model file as it is (what ran before the
  int8 copy: onnxruntime folds its int8 weights into float32 MatMuls);
* old pipeline (`--old`) — another commit's `KnowledgeBase.sync()` in a child process on
  the same copy (e.g. `git worktree add /tmp/old <commit>`, `--old /tmp/old/server`);
* bare embedders — `embed_documents` of both models on the same chunk texts, nothing
  else: the floor; their vectors give the quality column (cosine of int8 to float, per
  chunk);
* naive Chroma (`--naive`) — per file `collection.add(documents=…)` with Chroma's default
  embedding function pointed at the same model file.

The machine is shared and its load drifts, so the runs are interleaved: the bare
embedders in halves around the pipelines (bare ½, pipelines, bare ½), and with
`--rounds N` each pipeline indexes from cold N times, the order reversed every other
round, and the medians are reported (the load average is printed per round). Ratios from one run
mean more than the absolute chunks/s. The int8 copy is made before timing (once per
machine; its time is reported).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import corpora, stamp
from bench.embed_speed import chroma_model_dir
from bench.report import table, write_json
from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.index.indexer import embedding_text
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.markdown.document import parse_markdown

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


_OLD_SYNC = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kb_lsp.config import load_settings
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase
settings = load_settings({"search": {"threshold": 0.0}}).settings
embedder = MiniLMEmbedder(batch_size=settings.embedder.batch_size)
embedder.load()
kb = KnowledgeBase([Path(sys.argv[2])], settings, embedder=embedder, storage=Path(sys.argv[3]))
started = time.perf_counter()
kb.sync()
took = time.perf_counter() - started
print(json.dumps({"seconds": took, "chunks": kb.status().chunks}))
"""


def old_pipeline(server: Path, workspace: Path, storage: Path) -> tuple[float, int]:
    """Another commit's cold sync of `workspace`, in a child process: (seconds, chunks)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _OLD_SYNC, str(server), str(workspace), str(storage)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), int(result["chunks"])


def run(
    files: int = 0,
    store: Path | None = None,
    old: Path | None = None,
    naive_chroma: bool = False,
    rounds: int = 1,
) -> dict[str, Any]:
    import numpy as np

    from bench.coldrun import make_model_cache

    settings = load_settings({"search": {"threshold": 0.0}}).settings
    with tempfile.TemporaryDirectory(prefix="kb-bench-index-") as tmp:
        base = store or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        stamp.ensure(base)
        workspace = base / "fastapi-docs"
        if workspace.exists():
            shutil.rmtree(workspace)
        corpora.copy_fastapi(workspace)
        if files:
            trim(workspace, files)
        per_file = file_chunks(workspace, settings)
        chunks = [t for _, ts in per_file for t in ts]
        half = len(chunks) // 2
        print(f"{len(per_file)} files, {len(chunks)} chunks ({workspace})")

        models = Path(tmp) / "models"
        derivation = make_model_cache(models)
        print(f"int8 copy made in {derivation['seconds']:.1f} s: {derivation['identity']}")

        def embedder(int8: bool) -> MiniLMEmbedder:
            made = MiniLMEmbedder(
                batch_size=settings.embedder.batch_size, int8_cache=models if int8 else None
            )
            made.load()  # the server loads the model before its first sync, too
            return made

        bare = {"float": embedder(False), "int8": embedder(True)}
        seconds: dict[str, float] = {"bare_float": 0.0, "bare_int8": 0.0}
        vectors: dict[str, list[list[float]]] = {"float": [], "int8": []}

        def embed_part(kind: str, texts: list[str]) -> None:
            started = time.perf_counter()
            vectors[kind] += bare[kind].embed_documents(texts)
            seconds[f"bare_{kind}"] += time.perf_counter() - started

        embed_part("float", chunks[:half])
        embed_part("int8", chunks[:half])

        def pipeline(int8: bool, folder: str) -> tuple[float, int, int]:
            kb = KnowledgeBase(
                [workspace], settings, embedder=embedder(int8), storage=base / folder
            )
            started = time.perf_counter()
            report = kb.sync()
            took = time.perf_counter() - started
            stored = kb.status().chunks
            kb.close()
            return took, stored, report.chunks_embedded

        # Each round indexes from cold once per pipeline; odd rounds in reverse order, so
        # a drifting load meets every pipeline early and late alike. Rates are medians.
        runs: dict[str, list[float]] = {"pipeline_float": [], "pipeline_int8": []}
        if old is not None:
            runs["pipeline_old"] = []
        loads = [os.getloadavg()[0]]
        for round_ in range(rounds):
            order = ["float", "old", "int8"] if round_ % 2 == 0 else ["int8", "old", "float"]
            for kind in order:
                folder = base / f"store-{kind}-{round_}"
                shutil.rmtree(folder, ignore_errors=True)
                if kind == "old" and old is not None:
                    took, old_chunks = old_pipeline(old, workspace, folder)
                    runs["pipeline_old"].append(old_chunks / took)
                elif kind == "float":
                    took, stored, _ = pipeline(False, folder.name)
                    runs["pipeline_float"].append(stored / took)
                elif kind == "int8":
                    took, stored_int8, embedded = pipeline(True, folder.name)
                    runs["pipeline_int8"].append(stored_int8 / took)
            loads.append(os.getloadavg()[0])
        naive_count = 0
        if naive_chroma:
            naive = NaiveChroma(Path(tmp) / "naive", chroma_model_dir(Path(tmp) / "chroma-model"))
            started = time.perf_counter()
            naive.add(per_file)
            seconds["naive_chroma"] = time.perf_counter() - started
            naive_count = naive.collection.count()

        embed_part("int8", chunks[half:])
        embed_part("float", chunks[half:])

    a, b = np.asarray(vectors["float"]), np.asarray(vectors["int8"])
    cosines = (a * b).sum(axis=1)
    rates = {name: float(np.median(values)) for name, values in runs.items()}
    rates["bare_int8"] = len(chunks) / seconds["bare_int8"]
    rates["bare_float"] = len(chunks) / seconds["bare_float"]
    if naive_chroma:
        rates["naive_chroma"] = naive_count / seconds["naive_chroma"]
    quality = {
        "mean_cosine": float(cosines.mean()),
        "min_cosine": float(cosines.min()),
        "p01_cosine": float(np.percentile(cosines, 1)),
    }
    out = {
        "corpus": "fastapi-docs" + (f" (first {files} files)" if files else ""),
        "files": len(per_file),
        "chunks": stored_int8,
        "chunks_embedded": embedded,
        "derivation": derivation,
        "rounds": rounds,
        "load_average_1min": loads,
        "seconds": seconds,
        "chunks_per_s": rates,
        "chunks_per_s_per_round": runs,
        "ratios": {
            "int8_vs_float_pipeline": rates["pipeline_int8"] / rates["pipeline_float"],
            "int8_vs_float_bare": rates["bare_int8"] / rates["bare_float"],
            **(
                {
                    "int8_vs_old_pipeline": rates["pipeline_int8"] / rates["pipeline_old"],
                    "int8_vs_old_pipeline_per_round": [
                        a / b
                        for a, b in zip(runs["pipeline_int8"], runs["pipeline_old"], strict=True)
                    ],
                }
                if old is not None
                else {}
            ),
        },
        "int8_vs_float_vectors": quality,
    }
    rows = [
        ["pipeline, int8", rates["pipeline_int8"], 1.0],
        ["pipeline, float (shipped model)", rates["pipeline_float"], rates["pipeline_float"]],
    ]
    if old is not None:
        rows.append(["old commit's pipeline (float)", rates["pipeline_old"], 0.0])
    rows += [
        ["bare embedder, int8", rates["bare_int8"], 0.0],
        ["bare embedder, float", rates["bare_float"], 0.0],
    ]
    if naive_chroma:
        rows.append(["naive Chroma", rates["naive_chroma"], 0.0])
    base_rate = rates["pipeline_int8"]
    table(
        ["indexer", "chunks/s", "int8 pipeline is ×"],
        [[name, rate, base_rate / rate] for name, rate, _ in rows],
        f"Cold index, {out['corpus']}: {len(per_file)} files, {stored_int8} chunks",
    )
    print(
        f"{rounds} round(s), pipelines' medians; load average (1 min) "
        + " → ".join(f"{load:.1f}" for load in loads)
    )
    print(
        f"int8 vs float vectors of the same {len(chunks)} chunks: cosine mean "
        f"{quality['mean_cosine']:.4f}, 1st percentile {quality['p01_cosine']:.4f}, "
        f"min {quality['min_cosine']:.4f}"
    )
    write_json("index", out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench index", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_FILES} files only")
    parser.add_argument("--files", type=int, default=0, help="first N files only (0: all)")
    parser.add_argument("--store", type=Path, help="build the copy and its index here (kept)")
    parser.add_argument("--old", type=Path, help="another commit's server/ folder to compare")
    parser.add_argument("--naive", action="store_true", help="also time a naive Chroma indexer")
    parser.add_argument(
        "--rounds", type=int, default=1, help="cold indexes per pipeline (medians; default 1)"
    )
    args = parser.parse_args(argv)
    run(
        files=args.files or (QUICK_FILES if args.quick else 0),
        store=args.store,
        old=args.old,
        naive_chroma=args.naive,
        rounds=max(1, args.rounds),
    )
