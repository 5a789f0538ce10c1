"""GEMM bound: how close the MiniLM embedder comes to what this CPU's matrix multiplications allow.

    python -m bench gemm [--limit 400] [--rounds 3] [--threads 1,2] [--reps 20] [--cache DIR]

On the first `--limit` chunks of fastapi-docs, cut by the real chunker (`bench.index.
file_chunks`):

* the work — token ids from the embedder itself, grouped as it groups them (length-sorted
  batches, padded to the longest in each: `minilm.token_batches`), and the GEMM
  multiply-accumulates of all-MiniLM-L6-v2 (6 layers, hidden 384, FFN 1536) on the padded
  tokens: per layer and token Q, K, V, output 4·384·384, FFN 2·384·1536, attention scores
  and context 2·L·384 (L the batch's padded length); ops = 2 × MACs;
* the bound — one-node ONNX models timed on onnxruntime, opened as the embedder opens its
  model (`inference.open_session`): a float32 `MatMul` and an int8 `MatMulInteger` (uint8
  activations × int8 per-channel weights → int32, what dynamic quantisation runs) of 1,024
  rows (a full batch, `MAX_BATCH_TOKENS`) by each projection's shape, 384×384, 384×1536
  and 1536×384; their rates mixed as the layer mixes them (4:1:1) give the bound of the
  projections. Attention runs in float in both paths (the int8 copy fuses it into
  `MultiHeadAttention`), so its ops are bounded by the float rate;
* the embedder — `MiniLMEmbedder.embed_documents` of the same chunks, the int8 copy from
  the model cache (as the server runs; the existing copy, `--cache`) and the model file as
  it is (float), at each thread count: chunks/s and G ops/s achieved.

Rounds (`--rounds`) alternate the GEMM timings, the embedders and a tokenise-only pass,
the order reversed every other round; medians are reported, and the load average per
round. Efficiency = achieved ÷ bound: the share of the CPU's GEMM speed that reaches the
model's GEMM work, the rest going to tokenising, the non-GEMM operators (softmax, GELU,
LayerNorm, quantising activations) and the calls' overhead. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpora
from bench.index import file_chunks
from bench.report import table, write_json
from kb_lsp.config import load_settings
from kb_lsp.engine.embed import inference, quantize
from kb_lsp.engine.embed.minilm import MAX_BATCH_TOKENS, MiniLMEmbedder, token_batches
from kb_lsp.engine.knowledge import model_cache

LAYERS, HIDDEN, FFN = 6, 384, 1536
# (name, K, N, uses per layer and token): the projections every token goes through.
SHAPES = (("qkvo", HIDDEN, HIDDEN, 4), ("ffn_in", HIDDEN, FFN, 1), ("ffn_out", FFN, HIDDEN, 1))
ROWS = MAX_BATCH_TOKENS  # a full batch: the biggest GEMMs the embedder asks for
PATHS = ("int8", "float")


@dataclass(frozen=True)
class Work:
    """The GEMM work of embedding the chunks the way the embedder batches them."""

    chunks: int
    batches: int
    real_tokens: int
    padded_tokens: int
    linear_ops: float
    attention_ops: float

    @property
    def ops(self) -> float:
        return self.linear_ops + self.attention_ops


def gemm_work(ids: list[list[int]], batch_size: int) -> Work:
    lengths = [len(row) for row in ids]
    order = sorted(range(len(ids)), key=lengths.__getitem__)
    linear_macs = sum(k * n * uses for _, k, n, uses in SHAPES)
    padded = attention_macs = batches = 0
    for batch in token_batches(order, lengths, batch_size):
        width = max(lengths[i] for i in batch)
        padded += width * len(batch)
        attention_macs += width * len(batch) * 2 * width * HIDDEN
        batches += 1
    return Work(
        chunks=len(ids),
        batches=batches,
        real_tokens=sum(lengths),
        padded_tokens=padded,
        linear_ops=2.0 * LAYERS * linear_macs * padded,
        attention_ops=2.0 * LAYERS * attention_macs,
    )


def cpu_facts() -> dict[str, Any]:
    """The first CPU's name, family/model (AMD family 26 is Zen 5), MHz, and its kind as
    the int8 copy is keyed by it (`quantize.cpu_signature`: the int8/vector instruction
    sets it has)."""
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    fields: dict[str, str] = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return {
        "model": fields.get("model name", ""),
        "family": fields.get("cpu family", ""),
        "model_id": fields.get("model", ""),
        "mhz": fields.get("cpu MHz", ""),
        "cores": os.cpu_count(),
        "kind": quantize.cpu_signature(),
    }


def gemm_model(path: Path, kind: str, k: int, n: int) -> dict[str, np.ndarray]:
    """Write a one-node model multiplying [ROWS, k] activations by constant [k, n] weights
    (constant, as in the model: onnxruntime prepacks them); returns its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(26)
    if kind == "float":
        weights = (rng.standard_normal((k, n)) * 0.05).astype(np.float32)
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
        inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [ROWS, k])]
        initializers = [numpy_helper.from_array(weights, "b")]
        feeds = {"a": rng.standard_normal((ROWS, k)).astype(np.float32)}
        out_type = TensorProto.FLOAT
    else:
        # As quantize_dynamic writes it: the activations' zero point comes from
        # DynamicQuantizeLinear at run time, the weights' are per-channel zeros.
        weights = rng.integers(-127, 128, (k, n), dtype=np.int8)
        node = helper.make_node("MatMulInteger", ["a", "b", "a_zero", "b_zero"], ["y"])
        inputs = [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [ROWS, k]),
            helper.make_tensor_value_info("a_zero", TensorProto.UINT8, []),
        ]
        initializers = [
            numpy_helper.from_array(weights, "b"),
            numpy_helper.from_array(np.zeros(n, dtype=np.int8), "b_zero"),
        ]
        feeds = {
            "a": rng.integers(0, 256, (ROWS, k), dtype=np.uint8),
            "a_zero": np.array(128, dtype=np.uint8),
        }
        out_type = TensorProto.INT32
    output = helper.make_tensor_value_info("y", out_type, [ROWS, n])
    graph = helper.make_graph([node], f"{kind}_{k}x{n}", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return feeds


class Gemms:
    """A session per (path, threads, shape), opened once; `time()` gives G ops/s each."""

    def __init__(self, folder: Path, threads: Sequence[int], reps: int) -> None:
        self.reps = reps
        self.cases: dict[tuple[str, int, str], tuple[Any, dict[str, np.ndarray], float]] = {}
        for kind in PATHS:
            for name, k, n, _ in SHAPES:
                path = folder / f"{kind}-{name}.onnx"
                feeds = gemm_model(path, kind, k, n)
                for t in threads:
                    session = inference.open_session(path, t)
                    session.run(None, feeds)  # prepacking and the arena, outside the timing
                    self.cases[(kind, t, name)] = (session, feeds, 2.0 * ROWS * k * n)

    def time(self) -> dict[tuple[str, int, str], float]:
        rates = {}
        for key, (session, feeds, ops) in self.cases.items():
            seconds = []
            for _ in range(self.reps):
                started = time.perf_counter()
                session.run(None, feeds)
                seconds.append(time.perf_counter() - started)
            rates[key] = ops / statistics.median(seconds) / 1e9
        return rates


def mixed_rate(rates: dict[str, float]) -> float:
    """G ops/s of one layer's projections: each shape's ops at its own rate (4:1:1)."""
    ops = {name: k * n * uses for name, k, n, uses in SHAPES}
    return sum(ops.values()) / sum(ops[name] / rates[name] for name in ops)


def bound_seconds(
    work: Work, kind: str, threads: int, mixes: dict[tuple[str, int], float]
) -> float:
    """The least time the GEMMs of `work` take at the measured rates (G ops/s)."""
    linear = work.linear_ops / (mixes[(kind, threads)] * 1e9)
    return linear + work.attention_ops / (mixes[("float", threads)] * 1e9)


def corpus_chunks(limit: int) -> list[str]:
    settings = load_settings({}).settings
    chunks = [
        t for _, texts in file_chunks(corpora.require(corpora.FASTAPI), settings) for t in texts
    ]
    return chunks[:limit] if limit else chunks


def load_embedders(
    threads: list[int], cache: Path, batch: int
) -> dict[tuple[str, int], MiniLMEmbedder]:
    embedders = {
        (kind, t): MiniLMEmbedder(
            batch_size=batch, threads=t, int8_cache=cache if kind == "int8" else None
        )
        for kind in PATHS
        for t in threads
    }
    for embedder in embedders.values():
        embedder.load()  # loading (and, on a new machine, the int8 copy) is not timed
    if embedders[("int8", threads[0])].int8 is None:
        raise SystemExit("the int8 copy is not in use on this machine: see the log")
    return embedders


def measure(
    chunks: list[str],
    embedders: dict[tuple[str, int], MiniLMEmbedder],
    threads: list[int],
    rounds: int,
    reps: int,
) -> dict[str, Any]:
    tokenizer = embedders[("int8", threads[0])]
    with tempfile.TemporaryDirectory(prefix="kb-bench-gemm-") as tmp:
        gemms = Gemms(Path(tmp), threads, reps)
        steps: list[tuple[str, Callable[[], Any]]] = [("gemm", gemms.time)]
        steps += [
            (f"{kind}-{t}", lambda e=embedders[(kind, t)]: e.embed_documents(chunks))
            for kind in PATHS
            for t in threads
        ]
        steps.append(("tokenise", lambda: tokenizer.token_ids(chunks)))
        seconds: dict[str, list[float]] = {name: [] for name, _ in steps if name != "gemm"}
        gemm_rounds: list[dict[tuple[str, int, str], float]] = []
        loads = [os.getloadavg()[0]]
        for round_ in range(rounds):
            # Reversed every other round, so a drifting load meets every step early and late.
            for name, step in steps if round_ % 2 == 0 else steps[::-1]:
                started = time.perf_counter()
                result = step()
                if name == "gemm":
                    gemm_rounds.append(result)
                else:
                    seconds[name].append(time.perf_counter() - started)
            loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1}/{rounds} done, load {loads[-1]:.2f}", flush=True)
    gemm = {key: statistics.median(r[key] for r in gemm_rounds) for key in gemm_rounds[0]}
    return {
        "seconds": seconds,
        "gemm": gemm,
        "gemm_rounds": gemm_rounds,
        "loads": loads,
        "int8_copy": str(tokenizer.int8.path if tokenizer.int8 else ""),
    }


def report(work: Work, threads: list[int], measured: dict[str, Any]) -> dict[str, Any]:
    gemm, seconds = measured["gemm"], measured["seconds"]
    mixes = {
        (kind, t): mixed_rate({name: gemm[(kind, t, name)] for name, *_ in SHAPES})
        for kind in PATHS
        for t in threads
    }
    table(
        ["path", "threads", *(f"{name} {k}×{n}" for name, k, n, _ in SHAPES), "mix 4:1:1"],
        [
            [kind, t, *(gemm[(kind, t, name)] for name, *_ in SHAPES), mixes[(kind, t)]]
            for kind in PATHS
            for t in threads
        ],
        f"GEMM G ops/s on this CPU ({ROWS} rows; medians of {len(measured['gemm_rounds'])} rounds)",
    )
    rows, results = [], []
    for kind in PATHS:
        for t in threads:
            took = statistics.median(seconds[f"{kind}-{t}"])
            least = bound_seconds(work, kind, t, mixes)
            row = {
                "path": kind,
                "threads": t,
                "bound_gops": work.ops / least / 1e9,
                "achieved_gops": work.ops / took / 1e9,
                "efficiency": least / took,
                "chunks_per_s": work.chunks / took,
                "bound_chunks_per_s": work.chunks / least,
                "seconds": seconds[f"{kind}-{t}"],
            }
            results.append(row)
            rows.append([kind, t, *(row[k] for k in list(row)[2:7])])
    table(
        [
            "path",
            "threads",
            "bound G ops/s",
            "achieved G ops/s",
            "efficiency",
            "chunks/s",
            "chunks/s at the bound",
        ],
        rows,
        f"The embedder against the GEMM bound: {work.chunks} chunks, "
        f"{work.ops / work.chunks / 1e9:.2f} G ops each",
    )
    return {"mixes": {f"{k}-{t}": v for (k, t), v in mixes.items()}, "results": results}


def print_work(work: Work, cpu: dict[str, Any]) -> None:
    print(
        f"CPU: {cpu['model']} (family {cpu['family']}, model {cpu['model_id']}, "
        f"{cpu['mhz']} MHz), {cpu['cores']} cores; kind {cpu['kind']}"
    )
    print(
        f"{work.chunks} chunks in {work.batches} batches: {work.real_tokens} tokens, "
        f"{work.padded_tokens} padded ({work.padded_tokens / work.real_tokens - 1:.1%} "
        f"padding); {work.ops / 1e9:.1f} G ops, attention {work.attention_ops / work.ops:.1%}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench gemm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--limit", type=int, default=400, help="first N chunks (0: all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians)")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts (default 1,2)")
    parser.add_argument("--reps", type=int, default=20, help="runs per GEMM per round (median)")
    parser.add_argument("--cache", type=Path, default=model_cache(), help="int8 copy's cache")
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    batch = load_settings({}).settings.embedder.batch_size

    chunks = corpus_chunks(args.limit)
    cpu = cpu_facts()
    embedders = load_embedders(threads, args.cache, batch)
    work = gemm_work(embedders[("int8", threads[0])].token_ids(chunks), batch)
    print_work(work, cpu)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    measured = measure(chunks, embedders, threads, max(1, args.rounds), args.reps)
    out = report(work, threads, measured)
    tokenise = statistics.median(measured["seconds"]["tokenise"])
    print(f"tokenising alone: {tokenise:.2f} s ({work.chunks / tokenise:.0f} chunks/s)")
    print("load average (1 min) per round: " + " → ".join(f"{x:.2f}" for x in measured["loads"]))
    write_json(
        "gemm",
        {
            "started": started,
            "cpu": cpu,
            "batch_size": batch,
            "work": {**asdict(work), "ops": work.ops},
            "gemm_gops": {f"{k}-{t}-{n}": v for (k, t, n), v in measured["gemm"].items()},
            "gemm_gops_per_round": [
                {f"{k}-{t}-{n}": v for (k, t, n), v in r.items()} for r in measured["gemm_rounds"]
            ],
            "tokenise_seconds": measured["seconds"]["tokenise"],
            "load_average_1min": measured["loads"],
            "int8_copy": measured["int8_copy"],
            **out,
        },
    )
